"""The runs' inputs and outputs, kept between refreshes and replaced from each changed dataset's tail start.

The rows are the dataset version each run read (``runs_input_mapping``: the version current at its input
sightings) and each version a run wrote (``runs_output_mapping``). Both views read revision tables: a build
recomputes, for every dataset with new events, its timeline from the earliest position the new events can
change (``int_lineage_build_tails.tail_from``), and the rows before that position stay as they were. So the
snapshot keeps each row with its dataset and its position on that dataset's timeline: the earliest of the
run's sightings of that version (an input), or the version's own position (an output). A refresh reads the
tail starts of the builds past its mark and the live rows those builds wrote, then drops the kept rows at or
after each changed dataset's tail start and adds the new ones. An input row whose run read the version both
before and after a tail start stays once, with its earlier position, as ``select distinct`` keeps it.

The mark is the build through which both the tails and the sighting revisions are written (their
``lineage.input_through``, which the windowed build sets after the rows through it are written). Rows of a
build past the mark that a refresh reads anyway are read again by the next refresh, whose tails include that
build. The kept rows are trusted only while the revision tables have grown by appends alone (watermarks.py).
A Spark test compares the rows with the two views.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

from python_jobs.marquez_api.columns import decoded
from python_jobs.marquez_api.watermarks import Watermark, can_extend, least_mark, table_files
from python_jobs.settings import Settings

TIMESTAMP = pa.timestamp("us", tz="UTC")
# What the read API serves of each row, then the dataset and the position that place it on a timeline.
ROW_SCHEMA = pa.schema([
    pa.field("run_uuid", pa.string()),
    pa.field("io_type", pa.string()),
    pa.field("namespace_name", pa.string()),
    pa.field("name", pa.string()),
    pa.field("dataset_version_uuid", pa.string()),
    pa.field("dataset_uuid", pa.string()),
    pa.field("key_at", TIMESTAMP),
    pa.field("key_seq", pa.int64()),
    pa.field("key_kind", pa.int8()),
])
SERVED = tuple(ROW_SCHEMA.names[:5])
POSITION = ("dataset_uuid", "key_at", "key_seq", "key_kind")
IDENTITY = ("run_uuid", "io_type", "dataset_version_uuid", "dataset_uuid")
TAIL_SCHEMA = pa.schema([
    pa.field("dataset_uuid", pa.string()),
    pa.field("tail_at", TIMESTAMP),
    pa.field("tail_seq", pa.int64()),
    pa.field("tail_kind", pa.int8()),
])
# Written by the build after int_lineage_version_revisions, each with a mark in its build_seq.
MARKED_TABLES = ("int_lineage_build_tails", "int_lineage_sighting_revisions")
SOURCE_TABLES = ("int_lineage_version_revisions", *MARKED_TABLES)


@dataclass(frozen=True)
class KeptRunIo:
    """What a snapshot keeps to extend its runs' inputs and outputs: each row's ``POSITION`` columns, in the
    order of the snapshot's rows (the rest of each row is the snapshot's table); ``watermark``: the build mark
    they are complete through and the revision tables' files."""

    positions: pa.Table
    watermark: Watermark = field(default_factory=Watermark)
    rows_read: int = 0  # rows read from the warehouse to make these (all of them, or the changed tails' rows)


def kept_rows(served: pa.Table, kept: KeptRunIo) -> pa.Table:
    """The full rows (``ROW_SCHEMA``) of a snapshot's inputs and outputs and the positions it kept."""
    columns = [decoded(served.column(name)) for name in SERVED]
    columns += [kept.positions.column(name) for name in POSITION]
    return pa.Table.from_arrays(columns, schema=ROW_SCHEMA)


def split_positions(rows: pa.Table, kept: KeptRunIo) -> tuple[pa.Table, KeptRunIo]:
    """``rows`` (in the snapshot's order) without the position columns, and ``kept`` holding them."""
    positions = rows.select(list(POSITION))
    dataset = positions.column("dataset_uuid").combine_chunks()
    if pa.types.is_string(dataset.type):  # few datasets, many rows: each stored once
        positions = positions.set_column(0, "dataset_uuid", dataset.dictionary_encode())
    return rows.drop_columns(list(POSITION)), KeptRunIo(positions, kept.watermark, kept.rows_read)


def _micros(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    # Arrow has no comparison kernels for zoned timestamps against nulls filled in; integers compare the same.
    return pc.fill_null(column.cast(pa.int64()), -(2**63))


def at_or_after_tail(rows: pa.Table, tails: pa.Table) -> pa.ChunkedArray:
    """Per row, whether its dataset has a tail start in ``tails`` and the row's position is at or after it:
    the rows a build past the mark may have recomputed. Positions compare as (time, ingest_seq, kind)."""
    dataset = decoded(rows.column("dataset_uuid"))
    where = pc.index_in(dataset, value_set=tails.column("dataset_uuid").combine_chunks())
    touched = where.is_valid()
    if tails.num_rows == 0:
        return touched  # all false
    tail = tails.combine_chunks().take(pc.fill_null(where, 0))
    at, tail_at = _micros(rows.column("key_at")), _micros(tail.column("tail_at"))
    seq, tail_seq = pc.fill_null(rows.column("key_seq"), -(2**63)), pc.fill_null(tail.column("tail_seq"), -(2**63))
    kind, tail_kind = pc.fill_null(rows.column("key_kind"), -128), pc.fill_null(tail.column("tail_kind"), -128)
    after = pc.or_(pc.greater(at, tail_at), pc.and_(pc.equal(at, tail_at), pc.or_(
        pc.greater(seq, tail_seq), pc.and_(pc.equal(seq, tail_seq), pc.greater_equal(kind, tail_kind)))))
    return pc.and_(touched, after)


def merged(kept: pa.Table, tails: pa.Table, newer: pa.Table) -> pa.Table:
    """The kept rows before their dataset's tail start and the ``newer`` rows (the live rows of the builds
    whose tails those are), each row once: where a row is both, the kept one, whose position is earlier."""
    if tails.num_rows == 0 and newer.num_rows == 0:
        return kept
    staying = kept.filter(pc.invert(at_or_after_tail(kept, tails)))
    runs = pc.unique(newer.column("run_uuid").combine_chunks())
    candidates = staying.filter(pc.is_in(staying.column("run_uuid"), value_set=runs)).select(list(IDENTITY))
    fresh = newer.join(candidates, keys=list(IDENTITY), join_type="left anti") if candidates.num_rows else newer
    return pa.concat_tables([staying, fresh.select(ROW_SCHEMA.names).cast(ROW_SCHEMA)]).combine_chunks()


def read_rows(spark: SparkSession, settings: Settings, after: int | None) -> pa.Table:
    """The runs' inputs and outputs (``ROW_SCHEMA``) from the live revision rows of the builds past ``after``
    (every build where None), in no order."""
    staging, lineage = settings.schema("staging"), settings.schema("lineage")
    newer = f"and build_seq > {int(after)}" if after is not None else ""
    return spark.sql(f"""
        with inputs as (
            select run_uuid, dataset_version_uuid, dataset_uuid, min(timeline_key) as timeline_key
            from {staging}.int_lineage_dataset_sightings
            where io_type = 'input' and event_kind = 'RunEvent' {newer}
            group by run_uuid, dataset_version_uuid, dataset_uuid
        ),

        outputs as (
            select run_uuid, dataset_version_uuid, dataset_uuid, timeline_key
            from {staging}.int_lineage_dataset_versions
            where run_uuid is not null {newer}
        ),

        io as (
            select run_uuid, 'input' as io_type, dataset_version_uuid, dataset_uuid, timeline_key from inputs
            union all
            select run_uuid, 'output' as io_type, dataset_version_uuid, dataset_uuid, timeline_key from outputs
        )

        select
            io.run_uuid, io.io_type, datasets.namespace_name, datasets.name, io.dataset_version_uuid,
            io.dataset_uuid, io.timeline_key.at_time as key_at, io.timeline_key.at_seq as key_seq,
            cast(io.timeline_key.kind as tinyint) as key_kind
        from io
        inner join {lineage}.datasets as datasets on io.dataset_uuid = datasets.uuid
    """).toArrow().cast(ROW_SCHEMA)


def read_tails(spark: SparkSession, settings: Settings, after: int) -> pa.Table:
    """Per dataset a build past ``after`` recomputed, the earliest tail start of those builds."""
    return spark.sql(f"""
        select
            dataset_uuid, min(tail_from).at_time as tail_at, min(tail_from).at_seq as tail_seq,
            cast(min(tail_from).kind as tinyint) as tail_kind
        from {settings.table("staging", "int_lineage_build_tails")}
        where build_seq > {int(after)}
        group by dataset_uuid
    """).toArrow().cast(TAIL_SCHEMA)


def load_run_io(spark: SparkSession, settings: Settings,
                previous: tuple[pa.Table, KeptRunIo] | None = None) -> tuple[pa.Table, KeptRunIo]:
    """Every run input and output (``ROW_SCHEMA``, in no order) with what the snapshot keeps of them (its
    positions still empty: ``split_positions`` fills them once the rows are in the snapshot's order).
    ``previous``: the previous snapshot's rows and what it kept, extended by the builds past its mark where
    they can be (``can_extend``), else everything is read again."""
    current = Watermark(least_mark(spark, [settings.table("staging", t) for t in MARKED_TABLES]),
                        table_files(spark, [settings.table("staging", t) for t in SOURCE_TABLES]))
    if previous is not None and can_extend(previous[1].watermark, current):
        after = previous[1].watermark.through
        assert after is not None  # can_extend says so
        newer = read_rows(spark, settings, after)
        rows = merged(kept_rows(*previous), read_tails(spark, settings, after), newer)
    else:
        newer = rows = read_rows(spark, settings, None)
    return rows, KeptRunIo(rows.select(list(POSITION)).slice(0, 0), current, newer.num_rows)

"""What the builds past a mark changed on the datasets' timelines: each changed dataset's tail start.

The lineage core is written as revisions (models/intermediate): a build recomputes, for every dataset with new
events, its timeline from the earliest position the new events can change (``int_lineage_build_tails``'
``tail_from``); the rows before that position stay as they were, and a later build's rows supersede an earlier
build's from its tail start on. So rows the read API derived from the live revisions (the runs' inputs and
outputs, the dataset versions) can be kept with their dataset and timeline position, and a refresh replaces
only the rows at or after each changed dataset's tail start with the live rows of the builds past the mark.

Positions are the models' timeline keys (``lineage_timeline_key``: event time, ingest_seq, kind), held as
three columns. The mark is the build through which every revision table the kept rows come from is written
(their ``lineage.input_through``, which the windowed build sets after the rows through it are written). Rows of
a build past the mark that a refresh reads anyway are read again by the next one, whose tails include that
build. Kept rows are trusted only while the revision tables have grown by appends alone (watermarks.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

from python_jobs.marquez_api.columns import TIMESTAMP, decoded, encode_repeated, positions_in
from python_jobs.marquez_api.watermarks import Watermark, can_extend, least_mark, table_files
from python_jobs.settings import Settings

# A row's position on its dataset's timeline, as the kept rows hold it.
POSITION_FIELDS = [pa.field("key_at", TIMESTAMP), pa.field("key_seq", pa.int64()), pa.field("key_kind", pa.int8())]
POSITION = tuple(f.name for f in POSITION_FIELDS)
TAIL_SCHEMA = pa.schema([
    pa.field("dataset_uuid", pa.string()),
    pa.field("tail_at", TIMESTAMP),
    pa.field("tail_seq", pa.int64()),
    pa.field("tail_kind", pa.int8()),
])
# Written by the build after int_lineage_version_revisions, each with a build_seq mark.
MARKED_TABLES = ("int_lineage_build_tails", "int_lineage_sighting_revisions", "int_lineage_version_schema_revisions")
SOURCE_TABLES = ("int_lineage_version_revisions", *MARKED_TABLES)


@dataclass(frozen=True)
class TimelineChanges:
    """``watermark``: the builds' mark now and the revision tables' files; ``after``: the mark the kept rows are
    complete through (None: they cannot be extended, read everything); ``tails``: per dataset a build past
    ``after`` recomputed, the earliest tail start of those builds (``TAIL_SCHEMA``)."""

    watermark: Watermark
    after: int | None
    tails: pa.Table

    @property
    def extends(self) -> bool:
        return self.after is not None


@dataclass(frozen=True)
class KeptColumns:
    """What a snapshot keeps of a slice it extends past the mark: the columns it does not serve (a row's
    dataset, its position), one row per row of the snapshot's table and in its order."""

    table: pa.Table
    rows_read: int = 0  # rows read from the warehouse to make the slice (all of them, or the changed tails')


def full_rows(served: pa.Table, kept: KeptColumns, schema: pa.Schema) -> pa.Table:
    """A snapshot's rows with what it kept of them, as ``schema`` (each column from the kept ones or the served
    table, compacted columns decoded)."""
    kept_names = set(kept.table.column_names)
    return pa.Table.from_arrays([decoded((kept.table if name in kept_names else served).column(name))
                                 for name in schema.names], schema=schema)


def split_kept(rows: pa.Table, names: tuple[str, ...], rows_read: int) -> tuple[pa.Table, KeptColumns]:
    """``rows`` (in the snapshot's order) without the columns ``names``, and those kept (strings stored once per
    value: few datasets, many rows)."""
    return rows.drop_columns(list(names)), KeptColumns(encode_repeated(rows.select(list(names)), names), rows_read)


def position_sql(key: str) -> str:
    """The select list of a timeline key expression as the ``POSITION`` columns."""
    return f"{key}.at_time as key_at, {key}.at_seq as key_seq, cast({key}.kind as tinyint) as key_kind"


def timeline_changes(spark: SparkSession, settings: Settings, kept: Watermark | None) -> TimelineChanges:
    """The changes since ``kept`` (the watermark of the rows a snapshot kept), or a full read where it cannot be
    extended (``can_extend``)."""
    current = Watermark(least_mark(spark, [settings.table("staging", t) for t in MARKED_TABLES]),
                        table_files(spark, [settings.table("staging", t) for t in SOURCE_TABLES]))
    if kept is None or not can_extend(kept, current):
        return TimelineChanges(current, None, TAIL_SCHEMA.empty_table())
    after = kept.through
    assert after is not None  # can_extend says so
    tails = spark.sql(f"""
        select
            dataset_uuid, min(tail_from).at_time as tail_at, min(tail_from).at_seq as tail_seq,
            cast(min(tail_from).kind as tinyint) as tail_kind
        from {settings.table("staging", "int_lineage_build_tails")}
        where build_seq > {int(after)}
        group by dataset_uuid
    """).toArrow().cast(TAIL_SCHEMA)
    return TimelineChanges(current, after, tails)


def newer_builds(changes: TimelineChanges) -> str:
    """A SQL condition on ``build_seq``: the builds a refresh reads (every build on a full read)."""
    return f"build_seq > {int(changes.after)}" if changes.after is not None else "true"


def _orderable(column: pa.ChunkedArray | pa.Array, least: int) -> pa.ChunkedArray | pa.Array:
    # Zoned timestamps compare as their microseconds. A null field sorts first (there are none: the models keep
    # observations without an event time off the timelines).
    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.int64())
    return pc.fill_null(column, least)


def at_or_after_tail(rows: pa.Table, tails: pa.Table) -> pa.ChunkedArray:
    """Per row (``dataset_uuid`` and the ``POSITION`` columns), whether its dataset has a tail start in
    ``tails`` and the row's position is at or after it: the rows the builds past the mark may have changed.
    Positions compare as (time, ingest_seq, kind)."""
    where = positions_in(rows.column("dataset_uuid"), tails.column("dataset_uuid").combine_chunks())
    touched = where.is_valid()
    if tails.num_rows == 0:
        return touched  # all false
    tail = tails.combine_chunks().take(pc.fill_null(where, 0))
    at, tail_at = _orderable(rows.column("key_at"), -(2**63)), _orderable(tail.column("tail_at"), -(2**63))
    seq, tail_seq = _orderable(rows.column("key_seq"), -(2**63)), _orderable(tail.column("tail_seq"), -(2**63))
    kind, tail_kind = _orderable(rows.column("key_kind"), -128), _orderable(tail.column("tail_kind"), -128)
    after = pc.or_(pc.greater(at, tail_at), pc.and_(pc.equal(at, tail_at), pc.or_(
        pc.greater(seq, tail_seq), pc.and_(pc.equal(seq, tail_seq), pc.greater_equal(kind, tail_kind)))))
    return pc.and_(touched, after)


def may_reach_kept_rows(rows: pa.Table, tails: pa.Table) -> bool:
    """Whether some tail start lies at or before the time of its dataset's latest row in ``rows``: only then can a
    row be at or after a tail start. Builds that append later events (the common case) are told apart with one
    grouped maximum per dataset, where ``at_or_after_tail`` compares every row (about 1 s of a refresh at 1M
    events). Times alone are compared, so a tail start at the very time of a dataset's latest row counts."""
    if tails.num_rows == 0 or rows.num_rows == 0:
        return False
    if tails.column("tail_at").null_count:
        return True  # an unplaced tail start: let the rows be compared
    latest = rows.select(["dataset_uuid", "key_at"]).unify_dictionaries().group_by("dataset_uuid").aggregate(
        [("key_at", "max")])
    least = -(2**63)
    latest_at = dict(zip(decoded(latest.column("dataset_uuid")).to_pylist(),
                         _orderable(latest.column("key_at_max"), least).to_pylist(), strict=True))
    starts = zip(tails.column("dataset_uuid").to_pylist(), _orderable(tails.column("tail_at"), least).to_pylist(),
                 strict=True)
    return any(dataset in latest_at and latest_at[dataset] >= at for dataset, at in starts)


def before_tails(rows: pa.Table, changes: TimelineChanges) -> pa.Table:
    """The kept rows the builds past the mark left as they were: ``rows`` itself, not a copy, where the builds
    only appended to every timeline they touched (the common case: no kept row lies at or after a tail start)."""
    if not may_reach_kept_rows(rows, changes.tails):
        return rows
    changed = at_or_after_tail(rows, changes.tails)
    return rows.filter(pc.invert(changed)) if pc.any(changed).as_py() else rows

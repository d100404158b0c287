"""The datasets' versions, kept between refreshes and replaced from each changed dataset's tail start.

The rows are the ``dataset_versions`` view's: each live version (``int_lineage_dataset_versions``) with the
schema version it points at now (``int_lineage_dataset_version_schemas`` where ``is_current``: its live
pointer row latest on the timeline) and whether it is its dataset's current version (the latest by creation,
then first ``ingest_seq``). The snapshot keeps each version with its position on its dataset's timeline, its
first ``ingest_seq`` and its pointer's position (tails.py). A refresh:

- drops the kept versions at or after each changed dataset's tail start and adds the live versions of the
  builds past the mark (positions before a tail start are never recomputed);
- reads the live pointer rows of the builds past the mark (a narrow read the build's mark prunes; reading
  every version's current pointer again cost 4.6 s at 3M events, since the view ranks every pointer). A new
  version's pointers are all among them. Of the kept versions only the one current at a tail start can gain or
  lose pointers (sightings after the tail start are matched to it or to a later version): its pointers before
  the tail start stay, those from the tail start on are the builds'. So a kept version takes its latest new
  pointer row where it has one, else keeps its pointer, unless that pointer lay at or after the tail start
  and was superseded: then its live pointers are read again by name (rare: its pointer chain shrank);
- sets each dataset's current version again.

A Spark test compares the rows with the ``dataset_versions`` view.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from python_jobs.marquez_api.columns import TIMESTAMP
from python_jobs.marquez_api.tails import (
    POSITION,
    POSITION_FIELDS,
    KeptColumns,
    TimelineChanges,
    at_or_after_tail,
    before_tails,
    full_rows,
    newer_builds,
    position_sql,
)
from python_jobs.settings import Settings

# Where a version's current schema pointer lies on its dataset's timeline (``pointer_timeline_key``).
POINTER_POSITION_FIELDS = [pa.field("pointer_at", TIMESTAMP), pa.field("pointer_seq", pa.int64()),
                           pa.field("pointer_kind", pa.int8())]
POINTER_POSITION = tuple(f.name for f in POINTER_POSITION_FIELDS)
# What the read API serves of each version, then what places it and its pointer on its dataset's timeline.
VERSION_SCHEMA = pa.schema([
    pa.field("dataset_uuid", pa.string()),
    pa.field("version", pa.string()),
    pa.field("created_at", TIMESTAMP),
    pa.field("dataset_schema_version_uuid", pa.string()),
    pa.field("run_uuid", pa.string()),
    pa.field("is_current_version", pa.bool_()),
    pa.field("first_ingest_seq", pa.int64()),
    *POSITION_FIELDS,
    *POINTER_POSITION_FIELDS,
])
# What the snapshot keeps of each version besides what it serves.
KEPT = ("first_ingest_seq", *POSITION, *POINTER_POSITION)
POINTER_SCHEMA = pa.schema([pa.field("version", pa.string()), pa.field("dataset_schema_version_uuid", pa.string()),
                            *POINTER_POSITION_FIELDS])
# The live pointer rows of some versions (POINTER_SCHEMA, any number per version), read by version.
PointerReader = Callable[[list[str]], pa.Table]


def with_current_flags(rows: pa.Table) -> pa.Table:
    """``is_current_version`` set again: per dataset, the version created last (then the later first
    ``ingest_seq``), as the view's ``row_number``."""
    if rows.num_rows == 0:
        return rows
    order = pc.sort_indices(rows, sort_keys=[("dataset_uuid", "ascending", "at_end"),
                                             ("created_at", "descending", "at_end"),
                                             ("first_ingest_seq", "descending", "at_end")])
    datasets = rows.column("dataset_uuid").take(order).combine_chunks()
    # The first row of each dataset in that order: where the dataset differs from the row before.
    first = pc.not_equal(datasets.slice(1), datasets.slice(0, len(datasets) - 1))
    starts = pa.concat_arrays([pa.array([True]), pc.fill_null(first, True)])
    flags = _scattered(starts, order)
    return rows.set_column(rows.schema.get_field_index("is_current_version"), "is_current_version", flags)


def _scattered(values: pa.Array, positions: pa.Array) -> pa.Array:
    """``values`` placed at ``positions`` (``result[positions[i]] = values[i]``): the inverse of a take, in
    one linear pass rather than a second sort."""
    placed = np.empty(len(values), dtype=values.type.to_pandas_dtype())
    placed[positions.to_numpy(zero_copy_only=False)] = values.to_numpy(zero_copy_only=False)
    return pa.array(placed, type=values.type)


def with_pointers(rows: pa.Table, pointers: pa.Table) -> pa.Table:
    """The schema pointer (and its position) of each version in ``pointers`` (one row per version) replaced; the
    others as they were."""
    if pointers.num_rows == 0:
        return rows
    where = pc.index_in(rows.column("version"), value_set=pointers.column("version").combine_chunks())
    for name in ("dataset_schema_version_uuid", *POINTER_POSITION):
        found = pointers.column(name).combine_chunks().take(where)
        rows = rows.set_column(rows.schema.get_field_index(name), name,
                               pc.if_else(where.is_valid(), found, rows.column(name).combine_chunks()))
    return rows


def latest_pointers(rows: pa.Table) -> pa.Table:
    """Per version, its pointer row latest on the timeline (the view's ``is_current``), of live pointer rows."""
    if rows.num_rows == 0:
        return rows
    order = pc.sort_indices(rows, sort_keys=[("version", "ascending"), *((name, "descending")
                                                                          for name in POINTER_POSITION)])
    ordered = rows.take(order)
    versions = ordered.column("version").combine_chunks()
    first = pc.not_equal(versions.slice(1), versions.slice(0, len(versions) - 1))
    return ordered.filter(pa.concat_arrays([pa.array([True]), pc.fill_null(first, True)]))


def superseded_pointers(rows: pa.Table, changes: TimelineChanges) -> pa.ChunkedArray:
    """Per kept version, whether its pointer lies at or after its dataset's tail start: the builds past the mark
    recomputed that part of the timeline."""
    positions = rows.select(["dataset_uuid", *POINTER_POSITION]).rename_columns(["dataset_uuid", *POSITION])
    return at_or_after_tail(positions, changes.tails)


def _having_pointers(newer: pa.Table, pointers: pa.Table) -> pa.Table:
    """The new versions that have a pointer; one without is left out, as the view's inner join does."""
    return newer.filter(pc.is_in(newer.column("version"), value_set=pointers.column("version").combine_chunks()))


def with_own_pointers(newer: pa.Table, pointers: pa.Table) -> pa.Table:
    """The new versions with their pointers; a version without one is left out, as the view's inner join does."""
    return with_pointers(_having_pointers(newer, pointers), pointers)


def merged(kept: pa.Table, changes: TimelineChanges, newer: pa.Table, new_pointers: pa.Table,
           reread: PointerReader) -> pa.Table:
    """The kept versions before their dataset's tail start, then the ``newer`` ones (the live versions of the
    builds whose tails those are), each with its current pointer: its latest row of ``new_pointers`` (the live
    pointer rows of those builds), else the kept one, unless that one was superseded (then ``reread``)."""
    staying = before_tails(kept, changes)
    pointers = latest_pointers(new_pointers)
    has_new = pc.is_in(staying.column("version"), value_set=pointers.column("version").combine_chunks())
    lost = pc.and_(superseded_pointers(staying, changes), pc.invert(has_new))
    lost_versions = staying.filter(lost).column("version").to_pylist()
    if lost_versions:
        found = latest_pointers(reread(lost_versions).cast(POINTER_SCHEMA))
        pointers = pa.concat_tables([pointers, found])
        # A version left with no live pointer is left out, as the view's inner join leaves it out.
        missing = pc.invert(pc.is_in(staying.column("version"), value_set=found.column("version").combine_chunks()))
        staying = staying.filter(pc.invert(pc.and_(lost, missing)))
    rows = pa.concat_tables([staying, _having_pointers(newer, pointers)])
    return with_current_flags(with_pointers(rows.combine_chunks(), pointers))


def read_versions(spark: SparkSession, settings: Settings, changes: TimelineChanges) -> pa.Table:
    """The live versions of the builds the changes name (every build on a full read), without their
    pointers and flags, in no order."""
    return spark.sql(f"""
        select
            dataset_uuid, dataset_version_uuid as version, created_at,
            cast(null as string) as dataset_schema_version_uuid, run_uuid, false as is_current_version,
            first_ingest_seq, {position_sql("timeline_key")}, cast(null as timestamp) as pointer_at,
            cast(null as bigint) as pointer_seq, cast(null as tinyint) as pointer_kind
        from {settings.table("staging", "int_lineage_dataset_versions")}
        where {newer_builds(changes)}
    """).toArrow().cast(VERSION_SCHEMA)


def _pointer_columns() -> list[str]:
    return ["dataset_version_uuid as version", "dataset_schema_version_uuid",
            "pointer_timeline_key.at_time as pointer_at", "pointer_timeline_key.at_seq as pointer_seq",
            "cast(pointer_timeline_key.kind as tinyint) as pointer_kind"]


def read_pointers(spark: SparkSession, settings: Settings) -> pa.Table:
    """Every version's current schema pointer."""
    return (spark.table(settings.table("staging", "int_lineage_dataset_version_schemas")).where("is_current")
            .selectExpr(*_pointer_columns()).toArrow().cast(POINTER_SCHEMA))


def new_pointer_rows(spark: SparkSession, settings: Settings, changes: TimelineChanges) -> DataFrame:
    """The live pointer rows of the builds past the mark. ``is_current`` is not read: without it Spark drops
    the view's ranking of every pointer and reads only those builds' revision files."""
    return (spark.table(settings.table("staging", "int_lineage_dataset_version_schemas"))
            .where(newer_builds(changes)).selectExpr(*_pointer_columns()))


def read_pointers_of(spark: SparkSession, settings: Settings, versions: list[str]) -> pa.Table:
    """The live pointer rows of ``versions`` (an IN of values, not SQL text)."""
    return (spark.table(settings.table("staging", "int_lineage_dataset_version_schemas"))
            .where(F.col("dataset_version_uuid").isin(versions)).selectExpr(*_pointer_columns())
            .toArrow().cast(POINTER_SCHEMA))


def load_versions(spark: SparkSession, settings: Settings, changes: TimelineChanges,
                  previous: tuple[pa.Table, KeptColumns] | None = None) -> tuple[pa.Table, int]:
    """Every dataset version (``VERSION_SCHEMA``, in no order; ``split_kept`` takes the ``KEPT`` columns off
    once they are in the snapshot's order) and how many versions were read. ``previous``: the previous
    snapshot's versions and what it kept of them, extended by the changes where they extend."""
    newer = read_versions(spark, settings, changes)
    if previous is not None and changes.extends:
        new_pointers = new_pointer_rows(spark, settings, changes).toArrow()
        return merged(full_rows(*previous, VERSION_SCHEMA), changes, newer, new_pointers,
                      lambda versions: read_pointers_of(spark, settings, versions)), newer.num_rows
    return with_current_flags(with_own_pointers(newer, read_pointers(spark, settings))), newer.num_rows

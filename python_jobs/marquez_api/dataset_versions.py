"""The datasets' versions, kept between refreshes and replaced from each changed dataset's tail start.

The rows are the ``dataset_versions`` view's: each live version (``int_lineage_dataset_versions``) with the
schema version it points at now (``int_lineage_dataset_version_schemas`` where ``is_current``) and whether it
is its dataset's current version (the latest by creation, then first ``ingest_seq``). The snapshot keeps each
version with its position on its dataset's timeline and its first ``ingest_seq`` (tails.py). A refresh:

- drops the kept versions at or after each changed dataset's tail start and adds the live versions of the
  builds past the mark (positions before a tail start are never recomputed);
- reads every version's current schema pointer again: the version current at a tail start keeps its
  position, but its pointers from the tail start on are recomputed (a sighting after it may now belong to a
  later version, or reveal new fields). That is one narrow read of two columns, about 1.6 s at 1M events
  against 3.4 s for the whole view; naming the changed versions in the read was slower still (3.8 s for 5,204
  of them), since Spark scans the pointer revisions either way;
- sets each dataset's current version again.

A Spark test compares the rows with the ``dataset_versions`` view.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

from python_jobs.marquez_api.columns import TIMESTAMP
from python_jobs.marquez_api.tails import (
    POSITION,
    POSITION_FIELDS,
    KeptColumns,
    TimelineChanges,
    before_tails,
    full_rows,
    newer_builds,
    position_sql,
)
from python_jobs.settings import Settings

# What the read API serves of each version, then what places it on its dataset's timeline.
VERSION_SCHEMA = pa.schema([
    pa.field("dataset_uuid", pa.string()),
    pa.field("version", pa.string()),
    pa.field("created_at", TIMESTAMP),
    pa.field("dataset_schema_version_uuid", pa.string()),
    pa.field("run_uuid", pa.string()),
    pa.field("is_current_version", pa.bool_()),
    pa.field("first_ingest_seq", pa.int64()),
    *POSITION_FIELDS,
])
# What the snapshot keeps of each version besides what it serves.
KEPT = ("first_ingest_seq", *POSITION)
POINTER_SCHEMA = pa.schema([pa.field("version", pa.string()), pa.field("dataset_schema_version_uuid", pa.string())])


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
    """The schema pointer of each version in ``pointers`` replaced; the others as they were."""
    if pointers.num_rows == 0:
        return rows
    where = pc.index_in(rows.column("version"), value_set=pointers.column("version").combine_chunks())
    found = pointers.column("dataset_schema_version_uuid").combine_chunks().take(where)
    column = pc.coalesce(found, rows.column("dataset_schema_version_uuid").combine_chunks())
    return rows.set_column(rows.schema.get_field_index("dataset_schema_version_uuid"),
                           "dataset_schema_version_uuid", column)


def _having_pointers(newer: pa.Table, pointers: pa.Table) -> pa.Table:
    """The new versions that have a pointer; one without is left out, as the view's inner join does."""
    return newer.filter(pc.is_in(newer.column("version"), value_set=pointers.column("version").combine_chunks()))


def with_own_pointers(newer: pa.Table, pointers: pa.Table) -> pa.Table:
    """The new versions with their pointers; a version without one is left out, as the view's inner join does."""
    return with_pointers(_having_pointers(newer, pointers), pointers)


def merged(kept: pa.Table, changes: TimelineChanges, newer: pa.Table, pointers: pa.Table) -> pa.Table:
    """The kept versions before their dataset's tail start, then the ``newer`` ones (the live versions of the
    builds whose tails those are), each with its pointer from ``pointers`` (every version's current one)."""
    rows = pa.concat_tables([before_tails(kept, changes), _having_pointers(newer, pointers)])
    return with_current_flags(with_pointers(rows, pointers).combine_chunks())


def read_versions(spark: SparkSession, settings: Settings, changes: TimelineChanges) -> pa.Table:
    """The live versions of the builds the changes name (every build on a full read), without their
    pointers and flags, in no order."""
    return spark.sql(f"""
        select
            dataset_uuid, dataset_version_uuid as version, created_at,
            cast(null as string) as dataset_schema_version_uuid, run_uuid, false as is_current_version,
            first_ingest_seq, {position_sql("timeline_key")}
        from {settings.table("staging", "int_lineage_dataset_versions")}
        where {newer_builds(changes)}
    """).toArrow().cast(VERSION_SCHEMA)


def read_pointers(spark: SparkSession, settings: Settings) -> pa.Table:
    """Every version's current schema pointer."""
    return spark.sql(f"""
        select dataset_version_uuid as version, dataset_schema_version_uuid
        from {settings.table("staging", "int_lineage_dataset_version_schemas")}
        where is_current
    """).toArrow().cast(POINTER_SCHEMA)


def load_versions(spark: SparkSession, settings: Settings, changes: TimelineChanges,
                  previous: tuple[pa.Table, KeptColumns] | None = None) -> tuple[pa.Table, int]:
    """Every dataset version (``VERSION_SCHEMA``, in no order; ``split_kept`` takes the ``KEPT`` columns off
    once they are in the snapshot's order) and how many versions were read. ``previous``: the previous
    snapshot's versions and what it kept of them, extended by the changes where they extend."""
    newer, pointers = read_versions(spark, settings, changes), read_pointers(spark, settings)
    if previous is not None and changes.extends:
        return merged(full_rows(*previous, VERSION_SCHEMA), changes, newer, pointers), newer.num_rows
    return with_current_flags(with_own_pointers(newer, pointers)), newer.num_rows

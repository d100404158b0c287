"""The runs' inputs and outputs, kept between refreshes and replaced from each changed dataset's tail start.

The rows are the dataset version each run read (``runs_input_mapping``: the version current at its input
sightings) and each version a run wrote (``runs_output_mapping``). Both views read the live revisions, so the
snapshot keeps each row with its dataset and its position on that dataset's timeline (tails.py): the earliest
of the run's sightings of that version (an input), or the version's own position (an output). A refresh drops
the kept rows at or after each changed dataset's tail start and adds the live rows of the builds past the mark.
An input row whose run read the version both before and after a tail start stays once, with its earlier
position, as the view's ``select distinct`` keeps it. A Spark test compares the rows with the two views.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

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

# What the read API serves of each row, then the dataset and the position that place it on a timeline.
ROW_SCHEMA = pa.schema([
    pa.field("run_uuid", pa.string()),
    pa.field("io_type", pa.string()),
    pa.field("namespace_name", pa.string()),
    pa.field("name", pa.string()),
    pa.field("dataset_version_uuid", pa.string()),
    pa.field("dataset_uuid", pa.string()),
    *POSITION_FIELDS,
])
# What the snapshot keeps of each row besides what it serves.
KEPT = ("dataset_uuid", *POSITION)
IDENTITY = ("run_uuid", "io_type", "dataset_version_uuid", "dataset_uuid")


def merged(kept: pa.Table, changes: TimelineChanges, newer: pa.Table) -> pa.Table:
    """The kept rows before their dataset's tail start and the ``newer`` rows (the live rows of the builds
    whose tails those are), each row once: where a row is both, the kept one, whose position is earlier."""
    if changes.tails.num_rows == 0 and newer.num_rows == 0:
        return kept
    staying = before_tails(kept, changes)
    runs = pc.unique(newer.column("run_uuid").combine_chunks())
    candidates = staying.filter(pc.is_in(staying.column("run_uuid"), value_set=runs)).select(list(IDENTITY))
    fresh = newer.join(candidates, keys=list(IDENTITY), join_type="left anti") if candidates.num_rows else newer
    return pa.concat_tables([staying, fresh.select(ROW_SCHEMA.names).cast(ROW_SCHEMA)]).combine_chunks()


def read_rows(spark: SparkSession, settings: Settings, changes: TimelineChanges) -> pa.Table:
    """The runs' inputs and outputs (``ROW_SCHEMA``) from the live revision rows of the builds the changes
    name (every build on a full read), in no order."""
    staging, lineage = settings.schema("staging"), settings.schema("lineage")
    return spark.sql(f"""
        with inputs as (
            select run_uuid, dataset_version_uuid, dataset_uuid, min(timeline_key) as timeline_key
            from {staging}.int_lineage_dataset_sightings
            where io_type = 'input' and event_kind = 'RunEvent' and {newer_builds(changes)}
            group by run_uuid, dataset_version_uuid, dataset_uuid
        ),

        outputs as (
            select run_uuid, dataset_version_uuid, dataset_uuid, timeline_key
            from {staging}.int_lineage_dataset_versions
            where run_uuid is not null and {newer_builds(changes)}
        ),

        io as (
            select run_uuid, 'input' as io_type, dataset_version_uuid, dataset_uuid, timeline_key from inputs
            union all
            select run_uuid, 'output' as io_type, dataset_version_uuid, dataset_uuid, timeline_key from outputs
        )

        select
            io.run_uuid, io.io_type, datasets.namespace_name, datasets.name, io.dataset_version_uuid,
            io.dataset_uuid, {position_sql("io.timeline_key")}
        from io
        inner join {lineage}.datasets as datasets on io.dataset_uuid = datasets.uuid
    """).toArrow().cast(ROW_SCHEMA)


def load_run_io(spark: SparkSession, settings: Settings, changes: TimelineChanges,
                previous: tuple[pa.Table, KeptColumns] | None = None) -> tuple[pa.Table, int]:
    """Every run input and output (``ROW_SCHEMA``, in no order; ``split_kept`` takes the ``KEPT`` columns off
    once they are in the snapshot's order) and how many rows were read. ``previous``: the previous snapshot's
    rows and what it kept of them, extended by the changes where they extend."""
    newer = read_rows(spark, settings, changes)
    if previous is not None and changes.extends:
        return merged(full_rows(*previous, ROW_SCHEMA), changes, newer), newer.num_rows
    return newer, newer.num_rows

{{ config(
    materialized='incremental',
    incremental_strategy='insert_overwrite',
    partition_by=['dataset_bucket'],
) }}

{#
  Every sighting of a dataset that is not a run's output (an input, a DatasetEvent, a JobEvent's
  datasets), matched to the dataset version current at that moment: the latest output version
  started before it, ordered by (event time, ingest_seq). An input read by the run that writes
  the same dataset sorts first: it read the previous version. A sighting before any output
  belongs to the dataset's input version (run_uuid null). Recomputed per bucket of datasets
  touched by new observations (insert_overwrite of those partitions only).
#}
with observations as (
    select
        dataset_uuid,
        namespace_name,
        dataset_name,
        run_uuid,
        io_type,
        event_kind,
        event_time,
        ingest_seq,
        observed_schema_uuid
    from {{ ref('int_lineage_dataset_observations') }}
    where {{ lineage_touched_buckets_filter('dataset_uuid') }}
),

output_versions as (
    select
        dataset_uuid,
        {{ dataset_version_uuid('namespace_name', 'dataset_name', 'run_uuid') }} as dataset_version_uuid,
        min(event_time) as created_at,
        min(ingest_seq) as first_ingest_seq
    from observations
    where io_type = 'output' and event_kind = 'RunEvent'
    group by dataset_uuid, namespace_name, dataset_name, run_uuid
),

sightings as (
    select
        dataset_uuid,
        namespace_name,
        dataset_name,
        run_uuid,
        io_type,
        event_kind,
        event_time,
        ingest_seq,
        observed_schema_uuid
    from observations
    where not (io_type = 'output' and event_kind = 'RunEvent')
),

timeline as (
    select
        dataset_uuid,
        created_at as at_time,
        first_ingest_seq as at_seq,
        1 as kind_order,
        dataset_version_uuid,
        cast(null as string) as namespace_name,
        cast(null as string) as dataset_name,
        cast(null as string) as run_uuid,
        cast(null as string) as io_type,
        cast(null as string) as event_kind,
        cast(null as string) as observed_schema_uuid
    from output_versions
    union all
    select
        dataset_uuid,
        event_time as at_time,
        ingest_seq as at_seq,
        0 as kind_order,
        cast(null as string) as dataset_version_uuid,
        namespace_name,
        dataset_name,
        run_uuid,
        io_type,
        event_kind,
        observed_schema_uuid
    from sightings
),

timeline_matched as (
    select
        dataset_uuid,
        namespace_name,
        dataset_name,
        run_uuid,
        io_type,
        event_kind,
        at_time,
        at_seq,
        kind_order,
        observed_schema_uuid,
        last(dataset_version_uuid, true) over (
            partition by dataset_uuid
            order by at_time, at_seq, kind_order
            rows between unbounded preceding and current row
        ) as output_version_uuid
    from timeline
)

select
    dataset_uuid,
    namespace_name,
    dataset_name,
    run_uuid,
    io_type,
    event_kind,
    at_time as sighted_at,
    at_seq as sighted_at_seq,
    observed_schema_uuid,
    coalesce(
        output_version_uuid,
        {{ dataset_version_uuid('namespace_name', 'dataset_name', "''") }}
    ) as dataset_version_uuid,
    output_version_uuid is null as is_input_version,
    {{ lineage_observations_end() }} as built_through_seq,
    {{ lineage_dataset_bucket('dataset_uuid') }} as dataset_bucket
from timeline_matched
where kind_order = 0

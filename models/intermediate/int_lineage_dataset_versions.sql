{{ config(
    materialized='incremental',
    incremental_strategy='insert_overwrite',
    partition_by=['dataset_bucket'],
) }}

{#
  Every dataset version: one per run that wrote the dataset (its START and COMPLETE collapse
  into it), plus one input version for a dataset sighted before any run wrote it. The own
  schema is the field set of the version's latest event that carries a schema facet (null when
  none does). Recomputed per bucket of touched datasets, like int_lineage_dataset_sightings.
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
        has_schema,
        observed_schema_uuid
    from {{ ref('int_lineage_dataset_observations') }}
    where
        io_type = 'output' and event_kind = 'RunEvent'
        and {{ lineage_touched_buckets_filter('dataset_uuid') }}
),

output_versions as (
    select
        {{ dataset_version_uuid('namespace_name', 'dataset_name', 'run_uuid') }} as dataset_version_uuid,
        dataset_uuid,
        namespace_name,
        dataset_name,
        run_uuid,
        min(event_time) as created_at,
        min(ingest_seq) as first_ingest_seq,
        max_by(observed_schema_uuid, if(has_schema, struct(event_time, ingest_seq), null)) as own_schema_uuid
    from observations
    group by dataset_uuid, namespace_name, dataset_name, run_uuid
),

input_versions as (
    select
        dataset_version_uuid,
        dataset_uuid,
        min(namespace_name) as namespace_name,
        min(dataset_name) as dataset_name,
        cast(null as string) as run_uuid,
        min(sighted_at) as created_at,
        min(sighted_at_seq) as first_ingest_seq,
        cast(null as string) as own_schema_uuid
    from {{ ref('int_lineage_dataset_sightings') }}
    where is_input_version and {{ lineage_touched_buckets_filter('dataset_uuid') }}
    group by dataset_version_uuid, dataset_uuid
),

all_versions as (
    select
        dataset_version_uuid,
        dataset_uuid,
        namespace_name,
        dataset_name,
        run_uuid,
        created_at,
        first_ingest_seq,
        own_schema_uuid
    from output_versions
    union all
    select
        dataset_version_uuid,
        dataset_uuid,
        namespace_name,
        dataset_name,
        run_uuid,
        created_at,
        first_ingest_seq,
        own_schema_uuid
    from input_versions
)

select
    dataset_version_uuid,
    dataset_uuid,
    namespace_name,
    dataset_name,
    run_uuid,
    created_at,
    first_ingest_seq,
    own_schema_uuid,
    {{ lineage_observations_end() }} as built_through_seq,
    {{ lineage_dataset_bucket('dataset_uuid') }} as dataset_bucket
from all_versions

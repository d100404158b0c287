{{ config(materialized='incremental', incremental_strategy='append') }}

{#- One row per dataset named by an event: narrow, no field lists (those live once per distinct
    field set in int_lineage_observed_schemas). Appends the events past the watermark. -#}
with dataset_references as (
    {{ lineage_dataset_references(lineage_watermark() if is_incremental() else '-1') }}
),

with_schema as (
    select
        event_id,
        ingest_seq,
        event_time,
        event_kind,
        event_type,
        run_id,
        job_namespace,
        job_name,
        io_type,
        ref_index,
        namespace_name,
        dataset_name,
        coalesce(get_json_object(schema_facet, '$.fields') is not null, false) as has_schema,
        {{ schema_facet_fields('schema_facet') }} as schema_fields
    from dataset_references
)

select
    {{ name_uuid("concat_ws(':', 'observation', event_id, io_type, cast(ref_index as string))") }}
        as observation_id,
    event_id,
    ingest_seq,
    event_time,
    event_kind,
    event_type,
    run_id as run_uuid,
    {{ job_uuid('job_namespace', 'job_name') }} as job_uuid,
    job_namespace,
    job_name,
    io_type,
    ref_index,
    namespace_name,
    dataset_name,
    {{ dataset_uuid('namespace_name', 'dataset_name') }} as dataset_uuid,
    has_schema,
    case
        when has_schema then {{ schema_version_uuid('namespace_name', 'dataset_name', 'schema_fields') }}
    end as observed_schema_uuid,
    case when has_schema then size(schema_fields) end as field_count
from with_schema

{{ config(materialized='incremental', incremental_strategy='append',
    post_hook="{{ lineage_record_input_through() }}") }}
{%- set window = lineage_input_window(ref('stg_lineage_events'), 'ingest_seq', own_column='built_through_seq') %}
{{ lineage_input_marker(window) }}

{#- Each distinct field set seen on a dataset, stored once with its fields. `built_through_seq`
    records how far the events were read, so the next build starts after it. Each distinct
    facet text is parsed once (many texts may give one field set: descriptions do not count). -#}
with dataset_references as (
    {{ lineage_dataset_references(window) }}
),

schema_texts as (
    select
        namespace_name,
        dataset_name,
        schema_facet,
        min(ingest_seq) as first_ingest_seq,
        min(event_time) as first_seen_at
    from dataset_references
    where get_json_object(schema_facet, '$.fields') is not null
    group by namespace_name, dataset_name, schema_facet
),

observed as (
    select
        namespace_name,
        dataset_name,
        first_ingest_seq,
        first_seen_at,
        {{ schema_facet_fields('schema_facet') }} as schema_fields
    from schema_texts
),

keyed as (
    select
        namespace_name,
        dataset_name,
        first_ingest_seq,
        first_seen_at,
        schema_fields,
        {{ schema_version_uuid('namespace_name', 'dataset_name', 'schema_fields') }} as observed_schema_uuid
    from observed
),

distinct_schemas as (
    select
        observed_schema_uuid,
        min(namespace_name) as namespace_name,
        min(dataset_name) as dataset_name,
        min_by(schema_fields, first_ingest_seq) as fields,
        min(first_seen_at) as first_seen_at,
        min(first_ingest_seq) as first_ingest_seq
    from keyed
    group by observed_schema_uuid
),

batch_end as (
    select max(ingest_seq) as built_through_seq from dataset_references
)

select
    distinct_schemas.observed_schema_uuid,
    {{ dataset_uuid('distinct_schemas.namespace_name', 'distinct_schemas.dataset_name') }} as dataset_uuid,
    distinct_schemas.namespace_name,
    distinct_schemas.dataset_name,
    distinct_schemas.fields,
    size(array_distinct(transform(distinct_schemas.fields, f -> struct(f.name, f.type)))) as field_count,
    distinct_schemas.first_seen_at,
    distinct_schemas.first_ingest_seq,
    batch_end.built_through_seq
from distinct_schemas
cross join batch_end
{% if is_incremental() %}
    left anti join {{ this }} as existing
        on distinct_schemas.observed_schema_uuid = existing.observed_schema_uuid
{% endif %}

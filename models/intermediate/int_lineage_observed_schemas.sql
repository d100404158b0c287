{{ config(materialized='windowed_append', input_window={'from': 'int_lineage_dataset_observations', 'column': 'ingest_seq', 'own_column': 'built_through_seq'}) }}

{#- Each distinct field set seen on a dataset, stored once with its fields. `built_through_seq`
    records how far the observations were read, so the next build starts after it. The fields
    come parsed from int_lineage_dataset_observations (on the first reference of each distinct
    facet text); many texts may give one field set, as descriptions do not count, and the first
    one seen supplies the stored fields. -#}
with new_observations as (
    select
        observed_schema_uuid,
        namespace_name,
        dataset_name,
        event_time,
        ingest_seq,
        io_type,
        ref_index,
        schema_fields
    from {{ ref('int_lineage_dataset_observations') }}
    where
        {{ in_input_window() }}
        and has_schema
),

distinct_schemas as (
    select
        observed_schema_uuid,
        min(namespace_name) as namespace_name,
        min(dataset_name) as dataset_name,
        min_by(schema_fields, if(schema_fields is null, null, struct(ingest_seq, io_type, ref_index))) as fields,
        min(event_time) as first_seen_at,
        min(ingest_seq) as first_ingest_seq
    from new_observations
    group by observed_schema_uuid
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
    {{ input_window_high() }} as built_through_seq
from distinct_schemas
{{ except_existing('distinct_schemas.observed_schema_uuid = existing.observed_schema_uuid') }}

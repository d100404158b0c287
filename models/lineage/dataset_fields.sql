{{ config(materialized='windowed_append', input_window={'from': 'int_lineage_observed_schemas', 'column': 'built_through_seq'}) }}

{#- Marquez's dataset_fields: one row per (dataset, field name, type), from each new field set.
    Nested fields appear under their dot-joined path. -#}
with new_schemas as (
    {{ input_window_rows('int_lineage_observed_schemas', [
        'dataset_uuid', 'namespace_name', 'dataset_name', 'fields', 'first_seen_at', 'first_ingest_seq']) }}
),

fields as (
    select
        new_schemas.dataset_uuid,
        new_schemas.namespace_name,
        new_schemas.dataset_name,
        field.name as field_name,
        field.type as field_type,
        field.description,
        new_schemas.first_seen_at,
        new_schemas.first_ingest_seq
    from new_schemas
        lateral view explode(new_schemas.fields) exploded as field
),

first_seen as (
    select
        dataset_uuid,
        namespace_name,
        dataset_name,
        field_name,
        field_type,
        min_by(description, first_ingest_seq) as description,
        min(first_seen_at) as created_at,
        min(first_ingest_seq) as ingest_seq
    from fields
    group by dataset_uuid, namespace_name, dataset_name, field_name, field_type
),

keyed as (
    select
        {{ dataset_field_uuid('namespace_name', 'dataset_name', 'field_name', 'field_type') }} as uuid,
        dataset_uuid,
        field_name as name,
        field_type as type,
        description,
        created_at,
        ingest_seq
    from first_seen
)

select
    keyed.uuid,
    keyed.dataset_uuid,
    keyed.name,
    keyed.type,
    keyed.description,
    keyed.created_at,
    keyed.ingest_seq
from keyed
{{ except_existing('keyed.uuid = existing.uuid') }}

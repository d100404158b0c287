{{ config(materialized='windowed_append', input_window={'from': 'dataset_schema_versions', 'column': 'built_through_seq', 'own_column': 'built_through_seq'}) }}

{#- Marquez's dataset_schema_versions_field_mapping: the fields of each schema version, written
    once per schema version (not once per dataset version). -#}
with new_versions as (
    {{ input_window_rows('dataset_schema_versions', [
        'uuid', 'namespace_name', 'dataset_name', 'is_merged', 'built_through_seq']) }}
),

merged as (
    select distinct
        pointers.dataset_schema_version_uuid,
        field.name as field_name,
        field.type as field_type
    from {{ ref('int_lineage_version_schema_revisions') }} as pointers
    left semi join new_versions
        on
            pointers.dataset_schema_version_uuid = new_versions.uuid
            and new_versions.is_merged
        lateral view explode(pointers.merged_fields) exploded as field
    where {{ in_input_window('pointers', 'build_seq') }}
),

observed as (
    select distinct
        observed_schemas.observed_schema_uuid as dataset_schema_version_uuid,
        field.name as field_name,
        field.type as field_type
    from {{ ref('int_lineage_observed_schemas') }} as observed_schemas
    left semi join new_versions
        on
            observed_schemas.observed_schema_uuid = new_versions.uuid
            and not new_versions.is_merged
        lateral view explode(observed_schemas.fields) exploded as field
),

version_fields as (
    select
        dataset_schema_version_uuid,
        field_name,
        field_type
    from merged
    union
    select
        dataset_schema_version_uuid,
        field_name,
        field_type
    from observed
)

select
    version_fields.dataset_schema_version_uuid,
    {{ dataset_field_uuid('new_versions.namespace_name', 'new_versions.dataset_name',
        'version_fields.field_name', 'version_fields.field_type') }} as dataset_field_uuid,
    new_versions.built_through_seq
from version_fields
inner join new_versions
    on version_fields.dataset_schema_version_uuid = new_versions.uuid

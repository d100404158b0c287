{{ config(materialized='view') }}

{#- Marquez's legacy dataset_versions_field_mapping, derived through the schema versions: the
    old shape for existing queries, without storing fields once per dataset version. -#}
select
    dataset_versions.uuid as dataset_version_uuid,
    field_mapping.dataset_field_uuid
from {{ ref('dataset_versions') }} as dataset_versions
inner join {{ ref('dataset_schema_versions_field_mapping') }} as field_mapping
    on dataset_versions.dataset_schema_version_uuid = field_mapping.dataset_schema_version_uuid

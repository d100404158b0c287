{{ config(materialized='windowed_append', input_window={'from': 'int_lineage_version_schema_revisions', 'column': 'build_seq', 'own_column': 'built_through_seq'}) }}

{#- Marquez's dataset_schema_versions: each distinct field set a dataset version pointed at, once.
    Never updated: a changed or merged field set is a new row with a new id. -#}
-- only the pointers that builds after this model's last run recomputed
with pointers as (
    {{ input_window_rows('int_lineage_version_schema_revisions', [
        'dataset_schema_version_uuid', 'dataset_uuid', 'namespace_name', 'dataset_name',
        'is_empty_schema', 'merged_fields', 'pointed_at', 'pointed_at_seq']) }}
),

candidates as (
    select
        dataset_schema_version_uuid,
        min(dataset_uuid) as dataset_uuid,
        min(namespace_name) as namespace_name,
        min(dataset_name) as dataset_name,
        bool_or(merged_fields is not null) as is_merged,
        max(if(is_empty_schema, 0, null)) as empty_field_count,
        max(if(merged_fields is null, null, size(array_distinct(merged_fields)))) as merged_field_count,
        min(pointed_at) as created_at,
        min(pointed_at_seq) as ingest_seq
    from pointers
    group by dataset_schema_version_uuid
),

new_candidates as (
    select
        candidates.dataset_schema_version_uuid,
        candidates.dataset_uuid,
        candidates.namespace_name,
        candidates.dataset_name,
        candidates.is_merged,
        candidates.empty_field_count,
        candidates.merged_field_count,
        candidates.created_at,
        candidates.ingest_seq
    from candidates
    {{ except_existing('candidates.dataset_schema_version_uuid = existing.uuid') }}
),

batch_end as (
    select {{ input_window_high() }} as built_through_seq
)

select
    new_candidates.dataset_schema_version_uuid as uuid,
    new_candidates.dataset_uuid,
    new_candidates.namespace_name,
    new_candidates.dataset_name,
    coalesce(
        new_candidates.merged_field_count, observed.field_count, new_candidates.empty_field_count
    ) as field_count,
    new_candidates.is_merged,
    new_candidates.created_at,
    new_candidates.ingest_seq,
    batch_end.built_through_seq
from new_candidates
left join {{ ref('int_lineage_observed_schemas') }} as observed
    on new_candidates.dataset_schema_version_uuid = observed.observed_schema_uuid
cross join batch_end

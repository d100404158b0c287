{{ config(materialized='view') }}

{#- The live schema pointers of every dataset version; `is_current` marks the one it points at now. -#}
with live_pointers as (
    {{ lineage_live_revisions(ref('int_lineage_version_schema_revisions'), 'pointer_timeline_key', [
        'dataset_version_uuid', 'dataset_uuid', 'namespace_name', 'dataset_name', 'run_uuid', 'version_created_at',
        'version_first_ingest_seq', 'version_timeline_key', 'dataset_schema_version_uuid', 'is_empty_schema',
        'merged_fields', 'pointed_at', 'pointed_at_seq', 'pointer_timeline_key', 'build_seq',
    ]) | indent(4) }}
)

select
    dataset_version_uuid,
    dataset_uuid,
    namespace_name,
    dataset_name,
    run_uuid,
    version_created_at,
    version_first_ingest_seq,
    version_timeline_key,
    dataset_schema_version_uuid,
    is_empty_schema,
    merged_fields,
    pointed_at,
    pointed_at_seq,
    pointer_timeline_key,
    row_number() over (
        partition by dataset_version_uuid order by pointer_timeline_key desc
    ) = 1 as is_current,
    build_seq
from live_pointers

{{ config(materialized='view') }}

{#- The live schema pointers of every dataset version; `is_current` marks the one it points at now. -#}
{{ lineage_live_revisions(ref('int_lineage_version_schema_revisions'), 'version_timeline_key', [
    'dataset_version_uuid', 'dataset_uuid', 'namespace_name', 'dataset_name', 'run_uuid', 'version_created_at',
    'version_first_ingest_seq', 'version_timeline_key', 'dataset_schema_version_uuid', 'is_empty_schema',
    'merged_fields', 'pointed_at', 'pointed_at_seq', 'is_current', 'build_seq',
]) }}

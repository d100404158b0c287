{{ config(materialized='view') }}

{#- The live dataset versions: the latest revision of every position of each dataset's timeline
    (carried rows only repeat a version for the models after int_lineage_version_revisions). -#}
{{ lineage_live_revisions(ref('int_lineage_version_revisions'), 'timeline_key', [
    'dataset_version_uuid', 'dataset_uuid', 'namespace_name', 'dataset_name', 'run_uuid', 'created_at',
    'first_ingest_seq', 'own_schema_uuid', 'timeline_key', 'build_seq',
], row_filter='not revisions.is_carried') }}

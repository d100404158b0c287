{{ config(materialized='view') }}

{#- The live sightings, each matched to the dataset version current at that moment. -#}
{{ lineage_live_revisions(ref('int_lineage_sighting_revisions'), 'timeline_key', [
    'dataset_uuid', 'namespace_name', 'dataset_name', 'run_uuid', 'io_type', 'event_kind', 'sighted_at',
    'sighted_at_seq', 'observed_schema_uuid', 'dataset_version_uuid', 'is_input_version', 'timeline_key',
    'build_seq',
]) }}

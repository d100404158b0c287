{{ config(materialized='view') }}
{#- Marquez's dataset_facets shape, over the deduplicated storage: the body is joined back by hash. -#}
{{ facet_scope_view('dataset', [
    'dataset_uuid',
    'dataset_version_uuid',
    'run_id',
    'lineage_event_time',
    'lineage_event_type',
    'type',
    'name',
    'derived_at',
    'dataset_namespace',
    'dataset_name',
    'dataset_role',
    'body_hash',
    'ingest_seq',
]) }}

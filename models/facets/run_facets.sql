{{ config(materialized='view') }}
{#- Marquez's run_facets shape, over the deduplicated storage: the body is joined back by hash. -#}
{{ facet_scope_view('run', [
    'run_id',
    'job_uuid',
    'lineage_event_time',
    'lineage_event_type',
    'name',
    'derived_at',
    'body_hash',
    'ingest_seq',
]) }}

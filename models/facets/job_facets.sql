{{ config(materialized='view') }}
{#- Marquez's job_facets shape, over the deduplicated storage: the body is joined back by hash. -#}
{{ facet_scope_view('job', [
    'job_uuid',
    'run_id',
    'lineage_event_time',
    'lineage_event_type',
    'name',
    'derived_at',
    'job_namespace',
    'job_name',
    'body_hash',
    'ingest_seq',
]) }}

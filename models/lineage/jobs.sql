{{ config(materialized='windowed_append', input_window=lineage_events_input()) }}

{#- Every job of a RunEvent or JobEvent; appended once, when first seen. -#}
with new_events as (
    {{ input_window_rows('stg_lineage_events', [
        'ingest_seq', 'event_time', 'job_namespace', 'job_name'], where='job_name is not null') }}
),

first_seen as (
    select
        job_namespace,
        job_name,
        min(event_time) as created_at,
        min(ingest_seq) as ingest_seq
    from new_events
    group by job_namespace, job_name
)

select
    {{ job_uuid('first_seen.job_namespace', 'first_seen.job_name') }} as uuid,
    {{ namespace_uuid('first_seen.job_namespace') }} as namespace_uuid,
    first_seen.job_namespace as namespace_name,
    first_seen.job_name as name,
    first_seen.created_at,
    first_seen.ingest_seq
from first_seen
{{ except_existing('first_seen.job_namespace = existing.namespace_name and first_seen.job_name = existing.name') }}

{{ config(materialized='windowed_append', input_window=lineage_events_input(own_column='ingest_seq')) }}

{#- One row per run event (Marquez's run_states): append-only, so a COMPLETE that arrives in a
    later ingest than its START is simply another row; `runs` reads the latest. -#}
select
    {{ name_uuid("concat('run_state:', event_id)") }} as uuid,
    run_id as run_uuid,
    coalesce(event_type, 'OTHER') as state,
    event_time as transitioned_at,
    {{ job_uuid('job_namespace', 'job_name') }} as job_uuid,
    job_namespace as namespace_name,
    job_name,
    parent_run_id as parent_run_uuid,
    event_id,
    ingest_seq
from {{ ref('stg_lineage_events') }}
where event_kind = 'RunEvent' and {{ in_input_window() }}

{{ config(materialized='incremental', incremental_strategy='append',
    post_hook="{{ lineage_record_input_through() }}") }}
{%- set window = lineage_input_window(ref('stg_lineage_events'), 'ingest_seq', own_column='ingest_seq',
    block_column='ingest_block') %}
{{ lineage_input_marker(window) }}

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
where event_kind = 'RunEvent' and {{ lineage_event_window(window) }}

{{ config(materialized='view') }}

{#- The latest state of each run, from run_states. A view: Parquet tables cannot update a row
    in place, and this stays correct whatever order the START and COMPLETE events arrive in. -#}
with states as (
    select
        run_uuid,
        state,
        transitioned_at,
        job_uuid,
        namespace_name,
        job_name,
        parent_run_uuid,
        ingest_seq,
        state in ('COMPLETE', 'FAIL', 'ABORT') as is_terminal
    from {{ ref('run_states') }}
)

select
    run_uuid as uuid,
    min(transitioned_at) as created_at,
    max(transitioned_at) as updated_at,
    min(job_uuid) as job_uuid,
    min(namespace_name) as namespace_name,
    min(job_name) as job_name,
    min(parent_run_uuid) as parent_run_uuid,
    -- OTHER never changes the state; a terminal state wins over a late RUNNING.
    max_by(
        state,
        if(state = 'OTHER', null, struct(is_terminal, transitioned_at, ingest_seq))
    ) as current_run_state,
    min(if(state = 'START', transitioned_at, null)) as started_at,
    max(if(is_terminal, transitioned_at, null)) as ended_at,
    count(*) as event_count
from states
group by run_uuid

{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        clustered_by=['run_id'],
        buckets=facet_winner_buckets(),
    )
}}
{#- Runs grow with history, and so would copies of their bodies (plans repeat run after run): hashes only. -#}
{{ facet_winner_revisions('run', 'run_id', ['job_uuid']) }}

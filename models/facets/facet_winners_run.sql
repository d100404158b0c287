{{ facet_winner_config('run_id') }}
{#- Runs grow with history, and so would copies of their bodies (plans repeat run after run): hashes only. -#}
{{ facet_winner_revisions('run', 'run_id', ['job_uuid']) }}

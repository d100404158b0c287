{{
    config(
        materialized='windowed_append',
        input_window=facet_refs_input('last_ingest_seq'),
        clustered_by=['run_id'],
        buckets=facet_winner_buckets(),
    )
}}
{#- Runs grow with history, and so would copies of their bodies (plans repeat run after run): hashes only. -#}
{{ facet_winner_revisions('run', 'run_id', ['job_uuid']) }}

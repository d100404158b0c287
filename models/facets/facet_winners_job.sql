{{
    config(
        materialized='windowed_append',
        input_window=facet_refs_input('last_ingest_seq'),
        clustered_by=['job_uuid'],
        buckets=facet_winner_buckets(),
    )
}}
{{ facet_winner_revisions('job', 'job_uuid', ['job_namespace', 'job_name'], inline_bodies=true) }}

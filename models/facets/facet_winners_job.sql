{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        clustered_by=['job_uuid'],
        buckets=facet_winner_buckets(),
    )
}}
{{ facet_winner_revisions('job', 'job_uuid', ['job_namespace', 'job_name'], inline_bodies=true) }}

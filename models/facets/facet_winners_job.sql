{{ facet_winner_config('job_uuid') }}
{{ facet_winner_revisions('job', 'job_uuid', ['job_namespace', 'job_name'], inline_bodies=true) }}

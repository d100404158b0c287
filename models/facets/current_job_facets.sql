{{ config(materialized='view') }}
{{ current_facets('job', 'job_uuid', ['job_namespace', 'job_name'], broadcast_latest=true) }}

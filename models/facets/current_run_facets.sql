{{ config(materialized='view') }}
{{ current_facets('run', 'run_id', ['job_uuid']) }}

{{ config(materialized='view') }}
{{ current_facets(ref('facet_winners_run'), 'run_id', ['job_uuid']) }}

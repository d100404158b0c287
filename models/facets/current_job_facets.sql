{{ config(materialized='view') }}
{{ current_facets(ref('facet_winners_job'), 'job_uuid', ['job_namespace', 'job_name'], inline_bodies=true) }}

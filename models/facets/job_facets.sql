{{ config(materialized='view') }}
{#- Marquez's job_facets shape, over the deduplicated storage: the body is joined back by hash. -#}
with job_rows as (
    select
        facet_row_key,
        job_uuid,
        run_id,
        lineage_event_time,
        lineage_event_type,
        name,
        derived_at,
        job_namespace,
        job_name,
        body_hash,
        ingest_seq
    from {{ ref('facet_refs') }}
    where
        ingest_seq <= {{ facet_published_through() }}
        and scope = 'job' and disposition = 'accepted'
),

bodies as (
    select
        body_shard,
        body_hash,
        body
    from {{ ref('facet_bodies') }}
)

select
    job_rows.facet_row_key as job_facet_key,
    job_rows.job_uuid,
    job_rows.run_id,
    job_rows.lineage_event_time,
    job_rows.lineage_event_type,
    job_rows.name,
    {{ facet_json_object('job_rows.name', 'bodies.body') }} as facet,
    job_rows.derived_at,
    job_rows.job_namespace,
    job_rows.job_name,
    job_rows.body_hash,
    job_rows.ingest_seq
from job_rows
inner join bodies
    on
        {{ facet_body_shard('job_rows.body_hash') }} = bodies.body_shard
        and job_rows.body_hash = bodies.body_hash

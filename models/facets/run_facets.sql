{{ config(materialized='view') }}
{#- Marquez's run_facets shape, over the deduplicated storage: the body is joined back by hash. -#}
with run_rows as (
    select
        facet_row_key,
        run_id,
        job_uuid,
        lineage_event_time,
        lineage_event_type,
        name,
        derived_at,
        body_hash,
        ingest_seq
    from {{ ref('facet_refs') }}
    where
        ingest_seq <= {{ facet_published_through() }}
        and scope = 'run' and disposition = 'accepted'
),

bodies as (
    select
        body_shard,
        body_hash,
        body
    from {{ ref('facet_bodies') }}
)

select
    run_rows.facet_row_key as run_facet_key,
    run_rows.run_id,
    run_rows.job_uuid,
    run_rows.lineage_event_time,
    run_rows.lineage_event_type,
    run_rows.name,
    {{ facet_json_object('run_rows.name', 'bodies.body') }} as facet,
    run_rows.derived_at,
    run_rows.body_hash,
    run_rows.ingest_seq
from run_rows
inner join bodies
    on
        {{ facet_body_shard('run_rows.body_hash') }} = bodies.body_shard
        and run_rows.body_hash = bodies.body_hash

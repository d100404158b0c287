{{ config(materialized='view') }}
{#- Marquez's dataset_facets shape, over the deduplicated storage: the body is joined back by hash. -#}
with dataset_rows as (
    select
        facet_row_key,
        dataset_uuid,
        dataset_version_uuid,
        run_id,
        lineage_event_time,
        lineage_event_type,
        type,
        name,
        derived_at,
        dataset_namespace,
        dataset_name,
        dataset_role,
        body_hash,
        ingest_seq
    from {{ ref('facet_refs') }}
    where
        ingest_seq <= {{ facet_published_through() }}
        and scope = 'dataset' and disposition = 'accepted'
),

bodies as (
    select
        body_shard,
        body_hash,
        body
    from {{ ref('facet_bodies') }}
)

select
    dataset_rows.facet_row_key as dataset_facet_key,
    dataset_rows.dataset_uuid,
    dataset_rows.dataset_version_uuid,
    dataset_rows.run_id,
    dataset_rows.lineage_event_time,
    dataset_rows.lineage_event_type,
    dataset_rows.type,
    dataset_rows.name,
    {{ facet_json_object('dataset_rows.name', 'bodies.body') }} as facet,
    dataset_rows.derived_at,
    dataset_rows.dataset_namespace,
    dataset_rows.dataset_name,
    dataset_rows.dataset_role,
    dataset_rows.body_hash,
    dataset_rows.ingest_seq
from dataset_rows
inner join bodies
    on
        {{ facet_body_shard('dataset_rows.body_hash') }} = bodies.body_shard
        and dataset_rows.body_hash = bodies.body_hash

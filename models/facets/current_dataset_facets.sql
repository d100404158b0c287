{{ config(materialized='view') }}
with current_facets as (
    {{ current_facets(ref('facet_winners_dataset'), 'dataset_uuid', ['dataset_namespace', 'dataset_name'], inline_bodies=true) | indent(4) }}
),

current_versions as (
    select
        dataset_uuid,
        max_by(dataset_version_uuid, version_order) as current_version_uuid
    from {{ ref('facet_winners_dataset_version') }}
    where last_ingest_seq <= {{ facet_published_through() }}
    group by dataset_uuid
)

select
    current_facets.dataset_uuid,
    current_facets.dataset_namespace,
    current_facets.dataset_name,
    current_versions.current_version_uuid,
    current_facets.facets,
    current_facets.facet_count,
    current_facets.last_lineage_event_time,
    current_facets.last_ingest_seq
from current_facets
left join current_versions
    on current_facets.dataset_uuid = current_versions.dataset_uuid

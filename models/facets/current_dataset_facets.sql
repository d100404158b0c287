{{ config(materialized='view') }}
{#-
  Types DATASET, UNKNOWN and OUTPUT describe the dataset itself; INPUT facets (row counts and
  quality checks of one read) describe a run's use of it and stay in `dataset_facets`. This is
  the selection Marquez makes for a dataset's facets.
-#}
with current_facets as (
    {{ current_facets('dataset', 'dataset_uuid', ['dataset_namespace', 'dataset_name'], "type in ('DATASET', 'UNKNOWN', 'OUTPUT')", broadcast_latest=true) | indent(4) }}
),

current_versions as (
    select
        dataset_uuid,
        max_by(dataset_version_uuid, named_struct('event_time', lineage_event_time, 'ingest_seq', ingest_seq))
            as current_version_uuid
    from {{ ref('facet_refs') }}
    where scope = 'dataset' and dataset_version_uuid is not null
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

-- Every OpenLineage schema version has its schema event once the build is done.
select
    versions.uuid as schema_version_uuid,
    versions.dataset_uuid
from {{ ref('dataset_schema_versions') }} as versions
left anti join {{ ref('dataset_schema_events') }} as events
    on
        versions.dataset_uuid = events.dataset_uuid
        and versions.uuid = events.schema_version_uuid

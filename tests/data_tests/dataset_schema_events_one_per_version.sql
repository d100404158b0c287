-- A schema version gets exactly one schema event per dataset: an unchanged schema writes nothing new.
select
    dataset_uuid,
    schema_version_uuid,
    count(*) as event_count
from {{ ref('dataset_schema_events') }}
group by dataset_uuid, schema_version_uuid
having count(*) > 1

{{ config(materialized='windowed_append', input_window={'from': 'int_lineage_dataset_observations', 'column': 'ingest_seq'}) }}

{#- Every dataset named by an event; appended once, when first seen. -#}
with new_observations as (
    {{ input_window_rows('int_lineage_dataset_observations', [
        'dataset_uuid', 'namespace_name', 'dataset_name', 'event_time', 'ingest_seq']) }}
),

first_seen as (
    select
        dataset_uuid,
        namespace_name,
        dataset_name,
        min(event_time) as created_at,
        min(ingest_seq) as ingest_seq
    from new_observations
    group by dataset_uuid, namespace_name, dataset_name
)

select
    first_seen.dataset_uuid as uuid,
    {{ namespace_uuid('first_seen.namespace_name') }} as namespace_uuid,
    first_seen.namespace_name,
    first_seen.dataset_name as name,
    first_seen.created_at,
    first_seen.ingest_seq
from first_seen
{{ except_existing('first_seen.dataset_uuid = existing.uuid') }}

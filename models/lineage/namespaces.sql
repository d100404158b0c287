{{ config(materialized='windowed_append', input_window=lineage_events_input()) }}

{#- Every namespace named by a job or a dataset; appended once, when first seen. -#}
with new_events as (
    select
        events.ingest_seq,
        events.event_time,
        events.job_namespace,
        -- Only the namespace of each dataset: reading whole references would read their facets.
        events.inputs.namespace as input_namespaces,
        events.outputs.namespace as output_namespaces,
        events.dataset.namespace as event_dataset_namespace
    from {{ ref('stg_lineage_events') }} as events
    where {{ in_input_window('events') }}
),

named as (
    select
        job_namespace as namespace_name,
        event_time,
        ingest_seq
    from new_events
    where job_namespace is not null
    union all
    select
        dataset_namespaces.namespace_name,
        new_events.event_time,
        new_events.ingest_seq
    from new_events
        lateral view explode(
            concat(
                coalesce(new_events.input_namespaces, array()),
                coalesce(new_events.output_namespaces, array()),
                array(new_events.event_dataset_namespace)
            )
        ) dataset_namespaces as namespace_name
),

first_seen as (
    select
        namespace_name,
        min(event_time) as created_at,
        min(ingest_seq) as ingest_seq
    from named
    where namespace_name is not null
    group by namespace_name
)

select
    {{ namespace_uuid('first_seen.namespace_name') }} as uuid,
    first_seen.namespace_name as name,
    first_seen.created_at,
    first_seen.ingest_seq
from first_seen
{{ except_existing('first_seen.namespace_name = existing.name') }}

{{ config(materialized='incremental', incremental_strategy='append',
    post_hook="{{ lineage_record_input_through() }}") }}
{%- set window = lineage_input_window(ref('stg_lineage_events'), 'ingest_seq') %}
{{ lineage_input_marker(window) }}

{#- Every namespace named by a job or a dataset; appended once, when first seen. -#}
with new_events as (
    select
        ingest_seq,
        event_time,
        job_namespace,
        inputs,
        outputs,
        dataset
    from {{ ref('stg_lineage_events') }}
    where ingest_seq > {{ window.low }} and ingest_seq <= {{ window.high }}
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
        dataset_ref.namespace as namespace_name,
        new_events.event_time,
        new_events.ingest_seq
    from new_events
        lateral view explode(
            concat(
                coalesce(new_events.inputs, array()), coalesce(new_events.outputs, array()),
                if(new_events.dataset is null, array(), array(new_events.dataset))
            )
        ) refs as dataset_ref
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
{% if is_incremental() %}
    left anti join {{ this }} as existing
        on first_seen.namespace_name = existing.name
{% endif %}

{#
  One row per dataset named by an event in `window` (lineage_input_window over ingest_seq): its inputs, its outputs and
  the dataset of a DatasetEvent. `io_type` is input, output or dataset; `ref_index` is the
  position in the event's list (0 for a DatasetEvent). Facets stay JSON text.
#}
{% macro lineage_dataset_references(window) -%}
    with new_events as (
        select
            event_id,
            ingest_seq,
            event_time,
            event_kind,
            event_type,
            run_id,
            job_namespace,
            job_name,
            inputs,
            outputs,
            dataset
        from {{ ref('stg_lineage_events') }}
        where ingest_seq > {{ window.low }} and ingest_seq <= {{ window.high }}
    ),

    input_references as (
        select
            event_id,
            ingest_seq,
            event_time,
            event_kind,
            event_type,
            run_id,
            job_namespace,
            job_name,
            'input' as io_type,
            posexplode(inputs) as (ref_index, ref)
        from new_events
    ),

    output_references as (
        select
            event_id,
            ingest_seq,
            event_time,
            event_kind,
            event_type,
            run_id,
            job_namespace,
            job_name,
            'output' as io_type,
            posexplode(outputs) as (ref_index, ref)
        from new_events
    ),

    static_references as (
        select
            event_id,
            ingest_seq,
            event_time,
            event_kind,
            event_type,
            run_id,
            job_namespace,
            job_name,
            'dataset' as io_type,
            0 as ref_index,
            dataset as ref
        from new_events
        where dataset is not null
    ),

    all_references as (
        select * from input_references
        union all
        select * from output_references
        union all
        select * from static_references
    )

    select
        event_id,
        ingest_seq,
        event_time,
        event_kind,
        event_type,
        run_id,
        job_namespace,
        job_name,
        io_type,
        ref_index,
        ref.namespace as namespace_name,
        ref.name as dataset_name,
        ref.facets['schema'] as schema_facet
    from all_references
{%- endmacro %}

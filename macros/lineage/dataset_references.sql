{#
  One row per dataset named by an event in the model's input window (a windowed_append model reading
  stg_lineage_events, lineage_events_input): its inputs, its outputs and the dataset of a DatasetEvent. `io_type` is input, output or dataset; `ref_index` is the
  position in the event's list (0 for a DatasetEvent). Facets stay JSON text.
#}
{% macro lineage_dataset_references() -%}
    with new_events as (
        {{ input_window_rows('stg_lineage_events', lineage_reference_event_columns() + ['inputs', 'outputs', 'dataset'])
            | indent(4) }}
    )

    -- One inline over the three lists, each entry cut down to the fields used first: a union of
    -- three branches scanned the raw table three times, and exploding whole entries copied
    -- their facet maps into every row.
    select
        {%- for column in lineage_reference_event_columns() %}
        {{ column }},
        {%- endfor %}
        inline(concat(
            {{ lineage_reference_entries('inputs', 'input') }},
            {{ lineage_reference_entries('outputs', 'output') }},
            if(dataset is null, array(), array({{ lineage_reference_entry('dataset', "'dataset'", '0') }}))
        ))
    from new_events
{%- endmacro %}

{#- The event columns each dataset reference row carries. -#}
{% macro lineage_reference_event_columns() -%}
    {{ return(['event_id', 'ingest_seq', 'event_time', 'event_kind', 'event_type', 'run_id', 'job_namespace',
        'job_name']) }}
{%- endmacro %}

{#- The entries of the list column `list_column` as lineage_reference_entry structs (empty when absent). -#}
{% macro lineage_reference_entries(list_column, io_type) -%}
    coalesce(
        transform({{ list_column }}, (entry, position) -> {{ lineage_reference_entry('entry', "'" ~ io_type ~ "'", 'position') }}),
        array()
    )
{%- endmacro %}

{#- The fields of one dataset reference that observations keep. -#}
{% macro lineage_reference_entry(entry, io_type_expr, index_expr) -%}
    named_struct(
        'io_type', {{ io_type_expr }}, 'ref_index', {{ index_expr }}, 'namespace_name', {{ entry }}.namespace,
        'dataset_name', {{ entry }}.name, 'schema_facet', {{ entry }}.facets['schema']
    )
{%- endmacro %}

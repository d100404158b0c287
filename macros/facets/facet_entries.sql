{#
  facet_entry_ctes(events, predicate): CTEs that split the facet maps of the events matching
  `predicate` into one row per facet (the last CTE is `facet_entries`). Only the map columns are
  read, never `event_json`. Sections: runFacets, jobFacets, and for datasets `facets` plus
  `inputFacets` / `outputFacets`; dataset_role is input, output or dataset (DatasetEvent).
#}
{#- The event's columns that every facet row carries, each qualified by `alias` when given. -#}
{% macro facet_event_columns(alias=none) -%}
    {{ facet_qualified_columns(alias, ['event_id', 'ingest_seq', 'event_kind', 'event_type', 'event_time', 'run_id',
        'job_namespace', 'job_name', 'source_file', 'source_line']) }}
{%- endmacro %}

{#- Where a facet sits in its event, and its name: each qualified by `alias` when given. -#}
{% macro facet_place_columns(alias=none) -%}
    {{ facet_qualified_columns(alias, ['scope', 'section', 'dataset_role', 'entry_position', 'dataset_namespace',
        'dataset_name', 'facet_name']) }}
{%- endmacro %}

{% macro facet_qualified_columns(alias, columns) -%}
    {%- for column in columns -%}
        {{ alias ~ '.' if alias }}{{ column }}{{ ',' if not loop.last }}
    {% endfor -%}
{%- endmacro %}

{% macro facet_entry_ctes(events, predicate) -%}
facet_window_events as (
    select
        {{ facet_event_columns('source_events') }},
        source_events.run_facets,
        source_events.job_facets,
        source_events.inputs,
        source_events.outputs,
        source_events.dataset
    from {{ events }} as source_events
    where {{ predicate }}
),

facet_run_entries as (
    select
        {{ facet_event_columns('facet_window_events') }},
        'run' as scope,
        'runFacets' as section,
        cast(null as string) as dataset_role,
        0 as entry_position,
        cast(null as string) as dataset_namespace,
        cast(null as string) as dataset_name,
        run_facet.facet_name,
        run_facet.body_text
    from facet_window_events
    lateral view explode(facet_window_events.run_facets) run_facet as facet_name, body_text
),

facet_job_entries as (
    select
        {{ facet_event_columns('facet_window_events') }},
        'job' as scope,
        'jobFacets' as section,
        cast(null as string) as dataset_role,
        0 as entry_position,
        cast(null as string) as dataset_namespace,
        cast(null as string) as dataset_name,
        job_facet.facet_name,
        job_facet.body_text
    from facet_window_events
    lateral view explode(facet_window_events.job_facets) job_facet as facet_name, body_text
),

facet_dataset_references as (
    select
        {{ facet_event_columns('facet_window_events') }},
        'input' as dataset_role,
        input_reference.entry_position,
        input_reference.dataset_reference.namespace as dataset_namespace,
        input_reference.dataset_reference.name as dataset_name,
        input_reference.dataset_reference.facets as shared_facets,
        input_reference.dataset_reference.input_facets as role_facets
    from facet_window_events
    lateral view posexplode(facet_window_events.inputs) input_reference as entry_position, dataset_reference

    union all

    select
        {{ facet_event_columns('facet_window_events') }},
        'output' as dataset_role,
        output_reference.entry_position,
        output_reference.dataset_reference.namespace as dataset_namespace,
        output_reference.dataset_reference.name as dataset_name,
        output_reference.dataset_reference.facets as shared_facets,
        output_reference.dataset_reference.output_facets as role_facets
    from facet_window_events
    lateral view posexplode(facet_window_events.outputs) output_reference as entry_position, dataset_reference

    union all

    select
        {{ facet_event_columns('facet_window_events') }},
        'dataset' as dataset_role,
        0 as entry_position,
        facet_window_events.dataset.namespace as dataset_namespace,
        facet_window_events.dataset.name as dataset_name,
        facet_window_events.dataset.facets as shared_facets,
        cast(null as map<string, string>) as role_facets
    from facet_window_events
    where facet_window_events.dataset is not null
),

facet_dataset_entries as (
    select
        {{ facet_event_columns('facet_dataset_references') }},
        'dataset' as scope,
        'facets' as section,
        facet_dataset_references.dataset_role,
        facet_dataset_references.entry_position,
        facet_dataset_references.dataset_namespace,
        facet_dataset_references.dataset_name,
        shared_facet.facet_name,
        shared_facet.body_text
    from facet_dataset_references
    lateral view explode(facet_dataset_references.shared_facets) shared_facet as facet_name, body_text

    union all

    select
        {{ facet_event_columns('facet_dataset_references') }},
        'dataset' as scope,
        case facet_dataset_references.dataset_role when 'input' then 'inputFacets' else 'outputFacets' end as section,
        facet_dataset_references.dataset_role,
        facet_dataset_references.entry_position,
        facet_dataset_references.dataset_namespace,
        facet_dataset_references.dataset_name,
        role_facet.facet_name,
        role_facet.body_text
    from facet_dataset_references
    lateral view explode(facet_dataset_references.role_facets) role_facet as facet_name, body_text
),

facet_entries_unkeyed as (
    select
        {{ facet_event_columns('facet_run_entries') }},
        {{ facet_place_columns('facet_run_entries') }},
        facet_run_entries.body_text
    from facet_run_entries
    union all
    select
        {{ facet_event_columns('facet_job_entries') }},
        {{ facet_place_columns('facet_job_entries') }},
        facet_job_entries.body_text
    from facet_job_entries
    union all
    select
        {{ facet_event_columns('facet_dataset_entries') }},
        {{ facet_place_columns('facet_dataset_entries') }},
        facet_dataset_entries.body_text
    from facet_dataset_entries
),

facet_entries as (
    select
        {{ facet_event_columns('facet_entries_unkeyed') }},
        {{ facet_place_columns('facet_entries_unkeyed') }},
        facet_entries_unkeyed.body_text,
        {#- the facet's place in its event, as a JSON array: unambiguous whatever the names contain -#}
        {{ name_uuid("to_json(array('facet', facet_entries_unkeyed.event_id, facet_entries_unkeyed.section, coalesce(facet_entries_unkeyed.dataset_role, ''), cast(facet_entries_unkeyed.entry_position as string), facet_entries_unkeyed.facet_name))") }} as facet_row_key
    from facet_entries_unkeyed
)
{%- endmacro %}

{#
  Position of a row on a dataset's timeline: event time, then ingest_seq, then kind (0 for a
  sighting, 1 for an output version, so that a run reading the dataset it writes reads the
  previous version). Structs compare field by field.
#}
{% macro lineage_timeline_key(time_expr, seq_expr, kind_expr) -%}
    named_struct('at_time', {{ time_expr }}, 'at_seq', cast({{ seq_expr }} as bigint), 'kind', {{ kind_expr }})
{%- endmacro %}

{#- The columns of a dataset version revision that describe the version itself. -#}
{% macro lineage_version_columns() -%}
    {{ return([
        'dataset_version_uuid', 'dataset_uuid', 'namespace_name', 'dataset_name', 'run_uuid', 'created_at',
        'first_ingest_seq', 'own_schema_uuid', 'timeline_key',
    ]) }}
{%- endmacro %}

{#- The columns of a schema pointer revision (int_lineage_version_schema_revisions): the version it is
    about, the schema version it points at, and when the pointer was set. -#}
{% macro lineage_schema_pointer_columns() -%}
    {{ return([
        'dataset_version_uuid', 'dataset_uuid', 'namespace_name', 'dataset_name', 'run_uuid', 'version_created_at',
        'version_first_ingest_seq', 'version_timeline_key', 'dataset_schema_version_uuid', 'is_empty_schema',
        'merged_fields', 'pointed_at', 'pointed_at_seq', 'pointer_timeline_key',
    ]) }}
{%- endmacro %}

{#- A timeline key before every real one: "recompute the dataset from its beginning". -#}
{% macro lineage_timeline_start() -%}
    {{ lineage_timeline_key("timestamp'0001-01-01 00:00:00'", '-1', '0') }}
{%- endmacro %}

{#- True for an observation that is a run's output (it makes or extends a dataset version). -#}
{% macro lineage_is_output(io_type_expr='io_type', event_kind_expr='event_kind') -%}
    ({{ io_type_expr }} = 'output' and {{ event_kind_expr }} = 'RunEvent')
{%- endmacro %}

{#
  SELECT of the live rows of a revision table (int_lineage_*_revisions): a row written by build
  b for timeline position k is live unless a later build recomputed the dataset from a position
  at or before k (`int_lineage_tail_ranges`). `row_filter`, when given, is a further condition on
  the revision rows (alias `revisions`).
#}
{% macro lineage_live_revisions(revisions_relation, key_column, columns, row_filter=none) -%}
    select
        {%- for column in columns %}
        revisions.{{ column }}{{ ',' if not loop.last }}
        {%- endfor %}
    from {{ revisions_relation }} as revisions
    inner join {{ ref('int_lineage_tail_ranges') }} as tail_ranges
        on
            revisions.dataset_uuid = tail_ranges.dataset_uuid
            and revisions.build_seq = tail_ranges.build_seq
    where
        (
            tail_ranges.superseded_from is null
            or revisions.{{ key_column }} < tail_ranges.superseded_from
        )
        {%- if row_filter is not none %}
        and {{ row_filter }}
        {%- endif %}
{%- endmacro %}

{#
  A broadcast hint for a relation whose size follows the new input of `window` (rows derived from
  new events only), given while the window is small enough (var lineage_broadcast_max_events) that
  broadcasting it is safe. Without the hint Spark sizes such a relation by its whole table and
  shuffles the big side of the join instead.
#}
{% macro lineage_broadcast_new(window, relation_name) -%}
    {%- set span = (window.high - window.low) if window.high is number else none -%}
    {%- if span is not none and span <= var('lineage_broadcast_max_events', 200000) -%}
        /*+ broadcast({{ relation_name }}) */
    {%- endif -%}
{%- endmacro %}

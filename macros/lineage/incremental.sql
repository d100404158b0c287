{#
  An integer computed by a query over `relation` at build time, inlined into the model's SQL as a
  literal. Spark pushes a literal filter into the Parquet scan (file and row-group pruning on
  min/max), which a scalar subquery does not get. `fallback_sql` is used when dbt only parses,
  or compiles without the relation (sqlfluff's templater, `dbt compile` on an empty warehouse).
#}
{% macro lineage_scalar(query, fallback_sql, relation) -%}
    {%- if not execute or not lineage_relation_exists(relation) -%}
        {{ return(fallback_sql) }}
    {%- endif -%}
    {%- set value = run_query(query).columns[0].values()[0] -%}
    {{ return(-1 if value is none else value | int) }}
{%- endmacro %}

{#- True when `relation` exists in the warehouse. -#}
{% macro lineage_relation_exists(relation) -%}
    {%- set found = adapter.get_relation(
        database=relation.database, schema=relation.schema, identifier=relation.identifier
    ) -%}
    {{ return(found is not none) }}
{%- endmacro %}

{#- The highest value of `column` already in the model's own table; -1 when it is empty or on a full build. -#}
{% macro lineage_watermark(column='ingest_seq') -%}
    {%- if not is_incremental() -%}
        {{ return(-1) }}
    {%- endif -%}
    {%- set query = 'select coalesce(max(' ~ column ~ '), -1) from ' ~ this -%}
    {{ return(lineage_scalar(query, '(' ~ query ~ ')', this)) }}
{%- endmacro %}

{#
  Position of a row on a dataset's timeline: event time, then ingest_seq, then kind (0 for a
  sighting, 1 for an output version, so that a run reading the dataset it writes reads the
  previous version). Structs compare field by field.
#}
{% macro lineage_timeline_key(time_expr, seq_expr, kind_expr) -%}
    named_struct('at_time', {{ time_expr }}, 'at_seq', cast({{ seq_expr }} as bigint), 'kind', {{ kind_expr }})
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

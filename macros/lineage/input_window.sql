{#
  The slice of an upstream relation one build of an incremental lineage model reads: rows whose
  `column` is in (low, high]. Returns {'low', 'high', 'has_new'}.

  low: how far earlier builds read. A build records its `high` in the table property
  `lineage.input_through` (post-hook lineage_record_input_through). A model whose rows carry the
  upstream position (`own_column`) raises low to the highest one past the property: a build
  that appended rows and then failed before its post-hook is not read twice. Without the
  property (a table built before it existed) low is the highest `own_column` in the table, the
  rule used before. A full build starts from -1.

  high: the highest `column` upstream past low, found with a literal filter so that Parquet
  skips every file that holds nothing new. `has_new` is false when there is none: the model
  then compiles to an empty slice and lineage_input_marker tells the materialization to skip
  the insert (see dbt_spark_get_incremental_sql).

  Models whose own rows do not record how far they read (first-seen tables: jobs, datasets)
  need the property: their highest own `ingest_seq` is when the newest entity first appeared,
  and reading from there re-read almost every event on each build.
#}
{% macro lineage_input_window(upstream, column='ingest_seq', own_column=none) -%}
    {%- if not execute or not lineage_relation_exists(upstream) -%}
        {#- parse time, sqlfluff's templater, or an empty warehouse: bounds stay SQL -#}
        {%- set everything = 'select max(' ~ column ~ ') from ' ~ upstream -%}
        {{ return({'low': -1, 'high': '(' ~ everything ~ ')', 'has_new': true}) }}
    {%- endif -%}
    {%- set low = lineage_input_low(own_column) -%}
    {%- set high = lineage_scalar(
        'select coalesce(max(' ~ column ~ '), -1) from ' ~ upstream ~ ' where ' ~ column ~ ' > ' ~ low,
        none, upstream) -%}
    {{ return({'low': low, 'high': high if high > low else low, 'has_new': high > low}) }}
{%- endmacro %}

{#- Where this model's earlier builds stopped reading: see lineage_input_window. -#}
{% macro lineage_input_low(own_column=none) -%}
    {%- if not is_incremental() -%}
        {{ return(-1) }}
    {%- endif -%}
    {%- set recorded = lineage_recorded_input_through() -%}
    {%- if own_column is none -%}
        {{ return(recorded if recorded is not none else lineage_watermark()) }}
    {%- endif -%}
    {%- set floor = -1 if recorded is none else recorded -%}
    {%- set own = lineage_scalar(
        'select coalesce(max(' ~ own_column ~ '), -1) from ' ~ this ~ ' where ' ~ own_column ~ ' > ' ~ floor,
        none, this) -%}
    {{ return([floor, own] | max) }}
{%- endmacro %}

{#- The `lineage.input_through` property of this model's table, or none. -#}
{% macro lineage_recorded_input_through() -%}
    {%- set recorded = lineage_relation_property(this, 'lineage.input_through') -%}
    {{ return(none if recorded is none else recorded | int) }}
{%- endmacro %}

{#
  A comment in the compiled SQL that carries the window's high end to the post-hook
  (lineage_record_input_through) and, when nothing is new, tells the materialization to skip
  the insert: an empty insert still writes an empty Parquet file on every build.
#}
{% macro lineage_input_marker(window) -%}
    /* lineage_input_through={{ window.high if window.has_new else 'nothing-new' }} */
{%- endmacro %}

{#- The high end the marker recorded in the compiled SQL of the model being run, or none. -#}
{% macro lineage_marked_input_through(compiled_sql) -%}
    {%- set found = modules.re.search('/\\* lineage_input_through=([0-9-]+|nothing-new) \\*/', compiled_sql or '') -%}
    {%- if found is none or found.group(1) == 'nothing-new' -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(found.group(1) | int) }}
{%- endmacro %}

{#- True when the compiled SQL of a model says its window held nothing new. -#}
{% macro lineage_nothing_new(compiled_sql) -%}
    {{ return('/* lineage_input_through=nothing-new */' in (compiled_sql or '')) }}
{%- endmacro %}

{#
  Post-hook of the windowed models: record the window's high end once the insert succeeded,
  so the next build starts after it. Nothing to record when nothing was new.
#}
{% macro lineage_record_input_through() -%}
    {%- set through = lineage_marked_input_through(model.compiled_code) -%}
    {%- if through is not none -%}
        alter table {{ this }} set tblproperties ('lineage.input_through' = '{{ through }}')
    {%- else -%}
        select 'lineage_input_through: unchanged' as lineage_input
    {%- endif -%}
{%- endmacro %}

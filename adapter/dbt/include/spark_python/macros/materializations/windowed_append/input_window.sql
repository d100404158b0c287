{#
  The input window of a windowed_append model (see windowed_append.sql): how the materialization
  finds it, binds it for its statement and records it, and how the model's query reads it.
#}

{#- The model's input_window config, checked. -#}
{% macro windowed_append_spec() -%}
    {%- set spec = config.require('input_window') -%}
    {%- if spec is not mapping or 'from' not in spec or 'column' not in spec -%}
        {{ exceptions.raise_compiler_error(
            "windowed_append needs input_window={'from': <model>, 'column': <position column>, ...}; got "
            ~ spec) }}
    {%- endif -%}
    {{ return(spec) }}
{%- endmacro %}

{#- The session variable that holds the window while the model's statement runs: one per model, so
    models built at once on other threads of the same Spark session do not share it. -#}
{% macro windowed_append_variable() -%}
    {{ return('`windowed_append__' ~ this.schema ~ '__' ~ this.identifier ~ '`') }}
{%- endmacro %}

{#- True while the materialization binds the window: a model compiled to run, not only to show. -#}
{% macro windowed_append_binds() -%}
    {{ return(execute and flags.WHICH in ['run', 'build', 'retry']
        and config.get('materialized') == 'windowed_append') }}
{%- endmacro %}

{#
  {low, high, low_partition, high_partition} for this build; low: see windowed_append.sql. The
  upstream is asked first, past the recorded low: when it holds nothing new the build does nothing,
  whatever the table's own_column says, so a build with no new input never reads the model's own
  table (that read grows with the table; the upstream's is pruned to the recorded low's files and
  partitions).
#}
{% macro windowed_append_window(spec, target, full_build) -%}
    {%- set recorded = -1 if full_build else windowed_append_recorded(target) -%}
    {%- set found = windowed_append_upstream_high(spec, recorded) -%}
    {%- if full_build or found <= recorded -%}
        {{ return(windowed_append_span(spec, recorded, [found, recorded] | max)) }}
    {%- endif -%}
    {%- set low = [recorded, windowed_append_own_high(spec, target, recorded)] | max -%}
    {{ return(windowed_append_span(spec, low, [found, low] | max)) }}
{%- endmacro %}

{#- The highest input_window.column upstream past `low` (and at most input_window.upto), or `low`. -#}
{% macro windowed_append_upstream_high(spec, low) -%}
    {%- set partition = spec.get('partition') -%}
    {%- set upto = spec.get('upto') -%}
    {%- set query -%}
        select coalesce(max({{ spec['column'] }}), -1) from {{ ref(spec['from']) }}
        where {{ spec['column'] }} > {{ low }}
        {%- if upto is not none %} and {{ spec['column'] }} <= {{ upto | int }}{% endif %}
        {%- if partition %} and {{ partition['column'] }} >= {{ (low + 1) // partition['rows'] }}
        {%- if upto is not none %} and {{ partition['column'] }} <= {{ (upto | int) // partition['rows'] }}{% endif %}
        {%- endif %}
    {%- endset -%}
    {#- Asked once per invocation: models reading one upstream from one mark share the answer. -#}
    {{ return([adapter.upstream_scalar(query, invocation_id) | int, low] | max) }}
{%- endmacro %}

{#- The window (low, high] with the partitions it spans. -#}
{% macro windowed_append_span(spec, low, high) -%}
    {%- set partition = spec.get('partition') -%}
    {{ return({
        'low': low,
        'high': high,
        'low_partition': (low + 1) // partition['rows'] if partition else none,
        'high_partition': high // partition['rows'] if partition else none,
    }) }}
{%- endmacro %}

{#
  The windows this build runs one statement each for, oldest first: none when nothing is new (a
  full build still runs one, which creates the table); the whole window; or, with each_position,
  one per upstream position in it. A full build over more than one position stops: the model's
  query is compiled once, for a first build, and a later position needs its incremental form.
#}
{% macro windowed_append_steps(spec, window, full_build) -%}
    {%- if window.high <= window.low -%}
        {{ return([window] if full_build else []) }}
    {%- endif -%}
    {%- if not spec.get('each_position') -%}
        {{ return([window]) }}
    {%- endif -%}
    {%- set query -%}
        select distinct {{ spec['column'] }} from {{ ref(spec['from']) }}
        where {{ spec['column'] }} > {{ window.low }} and {{ spec['column'] }} <= {{ window.high }}
        order by 1
    {%- endset -%}
    {%- set positions = run_query(query).columns[0].values() | map('int') | list -%}
    {%- if full_build and positions | length > 1 -%}
        {{ exceptions.raise_compiler_error(
            this ~ ' is built from scratch but ' ~ ref(spec['from']) ~ ' holds ' ~ positions | length
            ~ ' positions it continues one by one: full-refresh them together (see docs/DEVELOPING.md).') }}
    {%- endif -%}
    {%- set steps = [] -%}
    {%- set low = namespace(value=window.low) -%}
    {%- for position in positions -%}
        {%- do steps.append(windowed_append_span(spec, low.value, position)) -%}
        {%- set low.value = position -%}
    {%- endfor -%}
    {{ return(steps) }}
{%- endmacro %}

{#
  Where this table's earlier builds stopped reading: its property `lineage.input_through`. A table
  without it (built by an older version of the project, or whose property was lost) counts as
  having read nothing, raised to its own_column as always (windowed_append_own_high): a model
  without own_column must then tolerate a re-read, which the first-seen models do (they append
  only what their table lacks).
#}
{% macro windowed_append_recorded(target) -%}
    {%- set recorded = adapter.table_property(target, 'lineage.input_through') -%}
    {{ return(-1 if recorded is none else recorded | int) }}
{%- endmacro %}

{#- The highest input_window.own_column in the table past `low` (a build that appended and then
    failed before recording), or `low`; `low` for a model without own_column. -#}
{% macro windowed_append_own_high(spec, target, low) -%}
    {%- set own_column = spec.get('own_column') -%}
    {%- if not own_column -%}
        {{ return(low) }}
    {%- endif -%}
    {%- set own = run_query('select coalesce(max(' ~ own_column ~ '), -1) from ' ~ target
        ~ ' where ' ~ own_column ~ ' > ' ~ low).columns[0].values()[0] | int -%}
    {{ return([low, own] | max) }}
{%- endmacro %}

{#- Binds the window, and the prepare step's `values` (SQL literals), as the model's session variable. -#}
{% macro windowed_append_bind(window, values) -%}
    {%- set fields = [] -%}
    {%- for name in ['low', 'high', 'low_partition', 'high_partition'] -%}
        {%- do fields.append("'" ~ name ~ "', cast(" ~ (-1 if window[name] is none else window[name]) ~ ' as bigint)') -%}
    {%- endfor -%}
    {%- for name, value in values.items() -%}
        {%- do fields.append("'" ~ name ~ "', " ~ value) -%}
    {%- endfor -%}
    {%- do run_query('declare or replace variable ' ~ windowed_append_variable()
        ~ ' default named_struct(' ~ fields | join(', ') ~ ')') -%}
{%- endmacro %}

{#- Runs the model's prepare macro (input_window.prepare) for one statement: {values, scratch}. -#}
{% macro windowed_append_prepare(spec, window) -%}
    {%- set prepared = {'values': {}, 'scratch': []} -%}
    {%- if spec.get('prepare') -%}
        {%- if spec['prepare'] not in context -%}
            {{ exceptions.raise_compiler_error('input_window.prepare names no macro: ' ~ spec['prepare']) }}
        {%- endif -%}
        {%- do prepared.update(context[spec['prepare']](window) or {}) -%}
    {%- endif -%}
    {{ return(prepared) }}
{%- endmacro %}

{#
  For a prepare macro: makes the scratch relation `name` that the model's statement reads through
  input_window_scratch(name), from `query`. Stored (the default), the rows are written once to a
  Parquet table next to the model: Spark inlines a view or CTE at every reference, and does not
  match a cached view defined with a CTE (SPARK-46741), so a relation read several times is
  computed once only when stored. Not stored, it is a temporary view. Returns the relation's name.
#}
{% macro windowed_append_scratch(name, query, stored=true) -%}
    {%- set view = windowed_append_scratch_view(name) -%}
    {%- if stored -%}
        {%- set table = windowed_append_scratch_table(name) -%}
        {%- do run_query('drop table if exists ' ~ table) -%}
        {%- do run_query('create table ' ~ table ~ ' using parquet as ' ~ query) -%}
        {%- do run_query('create or replace temporary view ' ~ view ~ ' as select * from ' ~ table) -%}
    {%- else -%}
        {%- do run_query('create or replace temporary view ' ~ view ~ ' as ' ~ query) -%}
    {%- endif -%}
    {{ return(view) }}
{%- endmacro %}

{% macro windowed_append_scratch_table(name) -%}
    {{ return(this.schema ~ '.' ~ this.identifier ~ '__' ~ name) }}
{%- endmacro %}

{% macro windowed_append_scratch_view(name) -%}
    {{ return('`windowed_append__' ~ this.schema ~ '__' ~ this.identifier ~ '__' ~ name ~ '`') }}
{%- endmacro %}

{% macro windowed_append_drop_scratch(names) -%}
    {%- for name in names -%}
        {%- do run_query('drop view if exists ' ~ windowed_append_scratch_view(name)) -%}
        {%- do run_query('drop table if exists ' ~ windowed_append_scratch_table(name)) -%}
    {%- endfor -%}
{%- endmacro %}

{% macro windowed_append_unbind() -%}
    {%- do run_query('drop temporary variable if exists ' ~ windowed_append_variable()) -%}
{%- endmacro %}

{#- After the statement: where the next build starts (`lineage.input_through`), and the window this
    build read (`lineage.input_window`, for whoever debugs or tests a build). -#}
{% macro windowed_append_record(target, window) -%}
    {%- set described = '(' ~ window.low ~ ', ' ~ window.high ~ ']' -%}
    {%- if window.low_partition is not none -%}
        {%- set described = described ~ ' partitions ' ~ window.low_partition ~ '..' ~ window.high_partition -%}
    {%- endif -%}
    {%- do run_query('alter table ' ~ target ~ " set tblproperties ('lineage.input_through' = '"
        ~ window.high ~ "', 'lineage.input_window' = '" ~ described ~ "')") -%}
{%- endmacro %}

{#- The window's low end in the model's query: the bound variable, or -1 when dbt only compiles. -#}
{% macro input_window_low() -%}
    {{ return(windowed_append_variable() ~ '.low' if windowed_append_binds() else '-1') }}
{%- endmacro %}

{#- The window's high end in the model's query: the bound variable, or the upstream's highest
    position when dbt only compiles. -#}
{% macro input_window_high() -%}
    {%- if windowed_append_binds() -%}
        {{ return(windowed_append_variable() ~ '.high') }}
    {%- elif not execute -%}
        {{ return('-1') }}
    {%- endif -%}
    {%- set spec = windowed_append_spec() -%}
    {{ return('(select max(' ~ spec['column'] ~ ') from ' ~ ref(spec['from']) ~ ')') }}
{%- endmacro %}

{#
  The condition that keeps the rows of the window, on the upstream's position column (qualified by
  `alias`), and on its partition column when input_window.partition names one, so that Spark lists
  only the window's partitions. `column` reads the window on another column holding the same
  positions.
#}
{% macro in_input_window(alias=none, column=none) -%}
    {%- if not execute -%}
        {{ return('true') }}
    {%- endif -%}
    {%- set spec = windowed_append_spec() -%}
    {%- set prefix = alias ~ '.' if alias else '' -%}
    {%- set position = prefix ~ (column or spec['column']) -%}
    {%- set condition = position ~ ' > ' ~ input_window_low() ~ ' and ' ~ position ~ ' <= ' ~ input_window_high() -%}
    {%- set partition = spec.get('partition') -%}
    {%- if partition and windowed_append_binds() -%}
        {%- set variable = windowed_append_variable() -%}
        {%- set condition = condition ~ ' and ' ~ prefix ~ partition['column'] ~ ' between '
            ~ variable ~ '.low_partition and ' ~ variable ~ '.high_partition' -%}
    {%- endif -%}
    {{ return(condition) }}
{%- endmacro %}

{#- A select of `columns` (names or `expression as name`) from the rows of `model` in this build's
    window, and `where` (SQL) if given: how a windowed_append model usually reads its input. -#}
{% macro input_window_rows(model, columns, where=none) -%}
    select
        {{ columns | join(',\n        ') }}
    from {{ ref(model) }}
    where {% if where %}{{ where }} and {% endif %}{{ in_input_window() }}
{%- endmacro %}

{#- For a model that appends each key once: a left anti join of its own table (alias `existing`) on
    `condition` when the build appends to an existing table, so only keys the table lacks are written;
    nothing on a first or full build. -#}
{% macro except_existing(condition) -%}
    {%- if appends_to_existing() %}
    left anti join {{ this }} as existing
        on {{ condition }}
    {%- endif %}
{%- endmacro %}

{#- A value the prepare step bound (`name`), or `fallback` (SQL) when dbt only compiles. -#}
{% macro input_window_value(name, fallback) -%}
    {{ return(windowed_append_variable() ~ '.' ~ name if windowed_append_binds() else fallback) }}
{%- endmacro %}

{#- The scratch relation `name` that the prepare step made (windowed_append_scratch). -#}
{% macro input_window_scratch(name) -%}
    {{ return(windowed_append_scratch_view(name)) }}
{%- endmacro %}

{#- True when this build appends to the model's existing table, false on a full build and when dbt
    only compiles (the compiled SQL then shows a first build over the whole history): what
    is_incremental() says for dbt's incremental materialization. -#}
{% macro appends_to_existing() -%}
    {%- if not windowed_append_binds() -%}
        {{ return(false) }}
    {%- endif -%}
    {{ return(load_cached_relation(this) is not none and not should_full_refresh()) }}
{%- endmacro %}

{#
  The input_window config of a windowed_append model that reads stg_lineage_events: positions are
  ingest_seq, and the raw table is partitioned into blocks of lineage_ingest_block_events()
  positions (ingest_block), so that a build lists only the blocks its window touches.
  `own_column`: the model's column that holds the upstream position of each of its rows.
#}
{% macro lineage_events_input(own_column=none) -%}
    {%- set spec = {'from': 'stg_lineage_events', 'column': 'ingest_seq',
        'partition': {'column': 'ingest_block', 'rows': lineage_ingest_block_events()}} -%}
    {%- if own_column -%}
        {%- do spec.update({'own_column': own_column}) -%}
    {%- endif -%}
    {{ return(spec) }}
{%- endmacro %}

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
  skips every file that holds nothing new; given `block_column` (the partition column of
  raw.lineage_events), only the partitions from low's block on are listed. `has_new` is false when
  there is none: the model
  then compiles to an empty slice and lineage_input_marker tells the materialization to skip
  the insert (see dbt_spark_get_incremental_sql).

  Models whose own rows do not record how far they read (first-seen tables: jobs, datasets)
  need the property: their highest own `ingest_seq` is when the newest entity first appeared,
  and reading from there re-read almost every event on each build.
#}
{% macro lineage_input_window(upstream, column='ingest_seq', own_column=none, block_column=none) -%}
    {%- if not execute or not lineage_relation_exists(upstream) -%}
        {#- parse time, sqlfluff's templater, or an empty warehouse: bounds stay SQL -#}
        {%- set everything = 'select max(' ~ column ~ ') from ' ~ upstream -%}
        {{ return({'low': -1, 'high': '(' ~ everything ~ ')', 'has_new': true}) }}
    {%- endif -%}
    {%- set low = lineage_input_low(own_column) -%}
    {%- set blocks = '' if block_column is none else
        ' and ' ~ block_column ~ ' >= ' ~ lineage_ingest_block(low + 1) -%}
    {%- set high = lineage_scalar(
        'select coalesce(max(' ~ column ~ '), -1) from ' ~ upstream ~ ' where ' ~ column ~ ' > ' ~ low ~ blocks,
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

{#
  The windows of `window` one build each, for the models that continue the revisions of
  int_lineage_version_revisions build by build (sightings, schema pointers): a build of theirs
  starts from what their own earlier builds wrote, so two builds of the versions cannot be
  handled in one statement. Normally the window holds one build; it holds more when a dbt run
  stopped after the versions (a failure, a partial selection). Returns a list of windows
  {low, high, has_new}, oldest first; the model appends every one but the last itself
  (lineage_append_revisions) and selects the last. When dbt only compiles, just the last one.
#}
{% macro lineage_build_windows(window, builds_relation) -%}
    {%- if not execute or not window.has_new or window.high is not number -%}
        {{ return([window]) }}
    {%- endif -%}
    {%- set query -%}
        select distinct build_seq from {{ builds_relation }}
        where build_seq > {{ window.low }} and build_seq <= {{ window.high }}
        order by build_seq
    {%- endset -%}
    {%- set builds = run_query(query).columns[0].values() | map('int') | list -%}
    {%- if builds | length <= 1 -%}
        {{ return([window]) }}
    {%- endif -%}
    {%- if not is_incremental() -%}
        {{ exceptions.raise_compiler_error(
            this ~ ' is built from scratch but ' ~ builds_relation ~ ' holds ' ~ builds | length
            ~ ' builds: full-refresh the lineage revision models together (see docs/DEVELOPING.md).') }}
    {%- endif -%}
    {%- set windows = [] -%}
    {%- set low = namespace(value=window.low) -%}
    {%- for build in builds -%}
        {%- do windows.append({'low': low.value, 'high': build, 'has_new': true}) -%}
        {%- set low.value = build -%}
    {%- endfor -%}
    {{ return(windows if flags.WHICH in ['run', 'build', 'retry'] else windows[-1:]) }}
{%- endmacro %}

{#
  The model's SELECT for one window of lineage_build_windows: the last one is the model's own
  query; an earlier one is appended here (lineage_append_revisions) and leaves nothing behind.
#}
{% macro lineage_build_statement(select_sql, is_last) -%}
    {%- if is_last -%}
        {{ return(select_sql) }}
    {%- endif -%}
    {%- do lineage_append_revisions(select_sql) -%}
    {{ return('') }}
{%- endmacro %}

{#
  Appends the rows of `select_sql` to the model's table, by column name (lineage_build_windows:
  the builds before the last of a window). Only when dbt runs models, never when it compiles.
#}
{% macro lineage_append_revisions(select_sql) -%}
    {%- if flags.WHICH not in ['run', 'build', 'retry'] -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set view = this.identifier ~ '__earlier_build' -%}
    {%- set columns = adapter.get_columns_in_relation(this) | map(attribute='name') | map('string') | list -%}
    {%- set column_list = '`' ~ columns | join('`, `') ~ '`' -%}
    {%- do run_query('create or replace temporary view ' ~ view ~ ' as ' ~ select_sql) -%}
    {%- do run_query('insert into table ' ~ this ~ ' (' ~ column_list ~ ') select ' ~ column_list ~ ' from ' ~ view) -%}
    {%- do run_query('drop view if exists ' ~ view) -%}
{%- endmacro %}

{#- How many ingest_seq values a block of raw.lineage_events spans: INGEST_BLOCK_EVENTS of
    python_jobs/ingest/lineage_contract.py (a test compares them). -#}
{% macro lineage_ingest_block_events() -%}
    {{ return(65536) }}
{%- endmacro %}

{#- The block of a known ingest_seq. -#}
{% macro lineage_ingest_block(ingest_seq) -%}
    {{ return((ingest_seq | int) // lineage_ingest_block_events()) }}
{%- endmacro %}

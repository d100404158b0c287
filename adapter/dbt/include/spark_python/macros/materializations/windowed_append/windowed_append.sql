{#
  windowed_append: an append-only table that reads, on each build, only the upstream rows its
  earlier builds have not read.

      W = (low, high] over input_window.column of the relation input_window.from
      append to this <the model's query, filtered to W> (published_append: all rows at once)

  low   the table property `lineage.input_through`, which each build sets to its `high` after its
        insert; raised to the highest input_window.own_column already in the table, when the model
        carries the upstream position in its rows, so that a build that appended and then failed
        before recording is not read twice (read only when the upstream has rows past the
        property: a build with no new input never reads the table itself). -1 on a full build or
        without the property.
  high  the highest input_window.column upstream past low (a literal filter, so Parquet skips the
        files that hold nothing new; with input_window.partition only the partitions from low's on
        are listed). When there is none, nothing runs at all: Spark writes an empty Parquet file for
        every empty insert, so a build with no new input would add a file per model and build.

  The model reads W through input_window_low(), input_window_high() and in_input_window(), which
  name a Spark session variable the materialization declares for its one statement. Spark folds
  a session variable into a literal before planning, so file and partition pruning still apply.
  When dbt compiles without running (compile, docs, sqlfluff) they stand for the whole history.

  Two options serve models that continue their own earlier builds:

  each_position  one statement per upstream position in W, oldest first, recording after each:
                 W_i = (p_{i-1}, p_i]. A model whose build b continues what its build b-1 wrote
                 (the revision models downstream of int_lineage_version_revisions) cannot take two
                 upstream builds in one statement; W holds more than one only after a dbt run
                 stopped between the upstream and this model.
  prepare        a macro name, called with the window once the variable is bound and before the
                 statement: it may write scratch relations the statement reads
                 (windowed_append_scratch) and return {'values': {name: SQL literal},
                 'scratch': [names]}. The values join the session variable
                 (input_window_value(name)); the scratch relations are dropped after the statement.
                 Only `dbt run`/`build` get here, so `dbt compile` never writes.

  Config: input_window = {'from': model name, 'column': upstream position column,
  'own_column': optional, 'partition': optional {'column': upstream partition column,
  'rows': positions per partition}, 'upto': optional highest position this build may read (a
  backfill's chunk; none reads all), 'each_position': optional bool, 'prepare': optional macro
  name}. on_schema_change: ignore (default), append_new_columns, fail.
#}
{% materialization windowed_append, adapter='spark' %}
    {%- set spec = windowed_append_spec() -%}
    {%- set existing = load_cached_relation(this) -%}
    {%- set target = this.incorporate(type='table') -%}
    {%- set full_build = existing is none or should_full_refresh() -%}
    {%- set grant_config = config.get('grants') -%}

    {{ run_hooks(pre_hooks) }}

    {%- if full_build and existing is not none -%}
        {%- do adapter.drop_relation(existing) -%}
    {%- endif -%}
    {%- set window = windowed_append_window(spec, target, full_build) -%}
    {%- set steps = windowed_append_steps(spec, window, full_build) -%}

    {%- for step in steps -%}
        {%- do windowed_append_bind(step, {}) -%}
        {%- set prepared = windowed_append_prepare(spec, step) -%}
        {%- if prepared['values'] -%}
            {%- do windowed_append_bind(step, prepared['values']) -%}
        {%- endif -%}
        {%- if full_build and loop.first -%}
            {%- call statement('main') -%}
                {{ create_table_as(False, target, sql) }}
            {%- endcall -%}
        {%- else -%}
            {%- do published_append_main(target, sql) -%}
        {%- endif -%}
        {%- do windowed_append_unbind() -%}
        {%- do windowed_append_record(target, step) -%}
        {%- do windowed_append_drop_scratch(prepared['scratch']) -%}
    {%- else -%}
        {%- call noop_statement('main', 'nothing new in ' ~ spec['from'], 'SKIP') -%}{%- endcall -%}
    {%- endfor -%}

    {{ run_hooks(post_hooks) }}
    {%- do apply_grants(target, grant_config, should_revoke(existing, full_build)) -%}
    {%- do persist_docs(target, model) -%}
    {{ return({'relations': [target]}) }}
{% endmaterialization %}

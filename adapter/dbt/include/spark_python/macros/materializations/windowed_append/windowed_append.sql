{#
  windowed_append: an append-only table that reads, on each build, only the upstream rows its
  earlier builds have not read.

      W = (low, high] over input_window.column of the relation input_window.from
      insert into this select <the model's query, filtered to W>

  low   the table property `lineage.input_through`, which each build sets to its `high` after its
        insert; raised to the highest input_window.own_column already in the table, when the model
        carries the upstream position in its rows, so that a build that appended and then failed
        before recording is not read twice. -1 on a full build or without the property.
  high  the highest input_window.column upstream past low (a literal filter, so Parquet skips the
        files that hold nothing new; with input_window.partition only the partitions from low's on
        are listed). When there is none, nothing runs at all: Spark writes an empty Parquet file for
        every empty insert, so a build with no new input would add a file per model and build.

  The model reads W through input_window_low(), input_window_high() and in_input_window(), which
  name a Spark session variable the materialization declares for its one statement. Spark folds
  a session variable into a literal before planning, so file and partition pruning still apply.
  When dbt compiles without running (compile, docs, sqlfluff) they stand for the whole history.

  Config: input_window = {'from': model name, 'column': upstream position column,
  'own_column': optional, 'partition': optional {'column': upstream partition column,
  'rows': positions per partition}}. on_schema_change: ignore (default), append_new_columns, fail.
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

    {%- if full_build or window.high > window.low -%}
        {%- do windowed_append_bind(window) -%}
        {%- if full_build -%}
            {%- call statement('main') -%}
                {{ create_table_as(False, target, sql) }}
            {%- endcall -%}
        {%- else -%}
            {%- set columns = windowed_append_columns(target, sql) -%}
            {%- call statement('main') -%}
                insert into table {{ target }} ({{ columns }})
                select {{ columns }} from (
                    {{ sql }}
                ) as new_rows
            {%- endcall -%}
        {%- endif -%}
        {%- do windowed_append_unbind() -%}
        {%- do windowed_append_record(target, window) -%}
    {%- else -%}
        {%- call noop_statement('main', 'nothing new in ' ~ spec['from'], 'SKIP') -%}{%- endcall -%}
    {%- endif -%}

    {{ run_hooks(post_hooks) }}
    {%- do apply_grants(target, grant_config, should_revoke(existing, full_build)) -%}
    {%- do persist_docs(target, model) -%}
    {{ return({'relations': [target]}) }}
{% endmaterialization %}

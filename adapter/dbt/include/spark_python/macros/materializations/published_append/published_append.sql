{#
  published_append: new rows become visible to readers all at once (the adapter's
  published_writes.py has the protocol).

      insert overwrite table <target>__staged_append (columns) select columns from (<query>)
      rename <target folder>/_staged_append to <target folder>/append-<UTC stamp>
      refresh table <target>

  The staging table has the target's columns and bucketing and lives in a hidden folder inside the
  target's, so its files are never listed as the target's until the rename. A table that cannot
  publish (partitioned, not Parquet, or a connection without a local Spark session) gets a plain
  `insert into`, which a reader may see half-committed.

  published_append_statement returns the SQL a materialization runs as its main statement; the
  staged insert and the rename run while it is rendered, so the caller needs no second step.
#}
{% macro published_append_statement(target, columns, select_sql) -%}
    {%- set staging = adapter.append_staging(target) -%}
    {%- if not staging -%}
        {{ return(append_rows_sql('into', target, columns, select_sql)) }}
    {%- endif -%}
    {%- do run_query(append_rows_sql('overwrite', staging['staging'], columns, select_sql)) -%}
    {%- do adapter.publish_staged(target, staging) -%}
    {{ return('refresh table ' ~ target) }}
{%- endmacro %}

{% macro append_rows_sql(mode, relation, columns, select_sql) -%}
    insert {{ mode }} table {{ relation }} ({{ columns }})
    select {{ columns }} from (
        {{ select_sql }}
    ) as new_rows
{%- endmacro %}

{#
  The columns to insert, by name: the table's own. With on_schema_change=append_new_columns the
  columns the query has and the table lacks are added first (a table built by an older version);
  with fail, they stop the build.
-#}
{% macro append_columns(target, sql) -%}
    {%- set on_schema_change = config.get('on_schema_change') or 'ignore' -%}
    {%- set existing = adapter.column_names(target) -%}
    {%- if on_schema_change != 'ignore' -%}
        {%- set known = existing | map('lower') | list -%}
        {%- set added = [] -%}
        {%- for row in run_query('describe query ' ~ sql) if row[0] | lower not in known -%}
            {%- do added.append('`' ~ row[0] ~ '` ' ~ row[1]) -%}
        {%- endfor -%}
        {%- if added and on_schema_change == 'fail' -%}
            {{ exceptions.raise_compiler_error(target ~ ' lacks columns ' ~ added | join(', ')
                ~ ' that its model selects (on_schema_change=fail)') }}
        {%- elif added -%}
            {%- do run_query('alter table ' ~ target ~ ' add columns (' ~ added | join(', ') ~ ')') -%}
            {%- set existing = adapter.get_columns_in_relation(target) | map(attribute='name') | list -%}
        {%- endif -%}
    {%- endif -%}
    {{ return('`' ~ existing | join('`, `') ~ '`') }}
{%- endmacro %}

{#- The main statement of an append to an existing table: the query's rows, by the table's own columns
    (after append_columns applies on_schema_change), published all at once. -#}
{% macro published_append_main(target, select_sql) -%}
    {%- set columns = append_columns(target, select_sql) -%}
    {%- call statement('main') -%}
        {{ published_append_statement(target, columns, select_sql) }}
    {%- endcall -%}
{%- endmacro %}

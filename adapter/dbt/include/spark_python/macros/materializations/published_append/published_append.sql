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

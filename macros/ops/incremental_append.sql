{#
  Incremental models (dataset_schema_events; a user's own) append through the adapter's
  published_append, so readers see all of an append's rows or none. The new rows are in dbt's
  temporary relation; they are inserted by the table's current column names (on_schema_change may
  have added some in this run). Other strategies are dbt-spark's. The project's copy of this
  adapter macro takes precedence over the adapter's.
#}
{% macro dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) -%}
    {%- if strategy == 'append' -%}
        {%- set names = adapter.get_columns_in_relation(target) | map(attribute='name') | list -%}
        {{ published_append_statement(target, '`' ~ names | join('`, `') ~ '`', 'select * from ' ~ source) }}
    {%- else -%}
        {{ dbt.dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) }}
    {%- endif -%}
{%- endmacro %}

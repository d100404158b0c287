{#
  dbt-spark's incremental materialization builds its insert with this macro; the project's copy
  takes precedence over the adapter's. When a model's compiled SQL says its input window held
  nothing new (lineage_input_marker), the insert is replaced by a query that reads nothing:
  Spark writes an empty Parquet file for every empty insert, so a build with no new events
  would otherwise add one file per model and per build. Everything else goes to dbt-spark.
#}
{% macro dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) -%}
    {%- if lineage_nothing_new(model.compiled_code) -%}
        select '{{ target }}: nothing new, insert skipped' as lineage_input
    {%- else -%}
        {{ dbt.dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) }}
    {%- endif -%}
{%- endmacro %}

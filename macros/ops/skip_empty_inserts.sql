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

{#
  The incremental materialization first stores the new rows in a temporary view. With nothing
  new there is nothing to store, so the view reads the model's own table with `where false`
  instead of the model's query, whose analysis alone costs up to a second on the revision models.
#}
{% macro spark_python__create_table_as(temporary, relation, compiled_code, language='sql') -%}
    {%- if temporary and language == 'sql' and lineage_nothing_new(compiled_code) -%}
        create or replace temporary view {{ relation }} as select * from {{ this }} where false
    {%- else -%}
        {{ dbt.spark__create_table_as(temporary, relation, compiled_code, language) }}
    {%- endif -%}
{%- endmacro %}

{#
  dbt-spark's incremental materialization (the facet and changelog models) first stores the new
  rows in a temporary view, then inserts from it, so Spark analyses the model's query twice: up to
  a second per model and build. The view only matters to on_schema_change, which compares its
  columns with the table's. An append that ignores schema changes (lineage_direct_append) inserts
  the model's query straight away, by column name, and its view reads the table `where false`.
  Every append goes through the adapter's published_append, so readers see all of its rows or none.
  The project's copies of these two adapter macros take precedence over the adapter's.
#}
{% macro dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) -%}
    {%- if strategy == 'append' and lineage_direct_append() -%}
        {%- set columns = '`' ~ adapter.column_names(target) | join('`, `') ~ '`' -%}
        {{ published_append_statement(target, columns, model.compiled_code) }}
    {%- elif strategy == 'append' -%}
        {#- Fresh columns: on_schema_change may have added some to the table in this run. -#}
        {%- set names = adapter.get_columns_in_relation(target) | map(attribute='name') | list -%}
        {{ published_append_statement(target, '`' ~ names | join('`, `') ~ '`', 'select * from ' ~ source) }}
    {%- else -%}
        {{ dbt.dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) }}
    {%- endif -%}
{%- endmacro %}

{% macro spark_python__create_table_as(temporary, relation, compiled_code, language='sql') -%}
    {%- if temporary and language == 'sql' and lineage_direct_append() -%}
        create or replace temporary view {{ relation }} as select * from {{ this }} where false
    {%- else -%}
        {{ dbt.spark__create_table_as(temporary, relation, compiled_code, language) }}
    {%- endif -%}
{%- endmacro %}

{#- True for the incremental SQL model being run when it appends and ignores schema changes. -#}
{% macro lineage_direct_append() -%}
    {{ return(
        model.resource_type == 'model' and model.language == 'sql'
        and config.get('materialized') == 'incremental'
        and (config.get('incremental_strategy') or 'append') == 'append'
        and (config.get('on_schema_change') or 'ignore') == 'ignore'
    ) }}
{%- endmacro %}

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
    {%- elif lineage_direct_append() -%}
        {%- set columns = '`' ~ lineage_table_columns(target) | join('`, `') ~ '`' -%}
        insert into table {{ target }}
        select {{ columns }} from (
            {{ model.compiled_code }}
        ) as new_rows
    {%- else -%}
        {{ dbt.dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) }}
    {%- endif -%}
{%- endmacro %}

{#
  The incremental materialization first stores the new rows in a temporary view, then inserts
  from it. Spark analyses the model's query for the view and again for the insert: up to a
  second on the revision models. The view only matters to on_schema_change, which compares its
  columns with the table's; an append that ignores schema changes (lineage_direct_append)
  inserts the model's query straight away, and with nothing new there is nothing to store. In
  both cases the view reads the model's own table with `where false` instead of the model's query.
#}
{% macro spark_python__create_table_as(temporary, relation, compiled_code, language='sql') -%}
    {%- if temporary and language == 'sql' and (lineage_nothing_new(compiled_code) or lineage_direct_append()) -%}
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

{#-
  The column names of a table, in order: from the schema tree in dbt's relation cache (filled
  by `show table extended` at the start of the run; a direct append never changes a table's
  columns), or from `describe` when the table was created during the run.
-#}
{% macro lineage_table_columns(relation) -%}
    {%- set cached = adapter.get_relation(
        database=relation.database, schema=relation.schema, identifier=relation.identifier) -%}
    {%- set names = modules.re.findall('(?m)^ \\|-- ([^:]+): ', cached.information or '')
        if cached is not none else [] -%}
    {%- if names -%}
        {{ return(names) }}
    {%- endif -%}
    {{ return(adapter.get_columns_in_relation(relation) | map(attribute='name') | list) }}
{%- endmacro %}

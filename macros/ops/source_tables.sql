{#
  Creates the table of a dbt source from its YAML when it does not exist yet. The source's columns are
  the one definition of a raw or audit table that ingest writes too (python_jobs/contracts.py reads the
  same YAML): `data_type` in order, `not null` where the column has a not_null constraint, partitioned
  by the table's `config.meta.partition_by`. Only at execute time, when dbt's graph holds the sources.
  Returns the table's relation: the listed one (with its schema text) when it existed.
#}
{% macro create_source_table(source_name, table_name, file_format, listed) -%}
    {%- set table = source_node(source_name, table_name) -%}
    {#- One listing per schema and hook (none for a schema dbt's relation cache holds): every build runs the
        hooks, and a statement per table, even `create table if not exists`, cost more than the listing. -#}
    {%- if table.schema not in listed -%}
        {%- do listed.update({table.schema: adapter.relations_in(table.database, table.schema)}) -%}
    {%- endif -%}
    {%- for relation in listed[table.schema] if relation.identifier | lower == table.identifier | lower -%}
        {{ return(relation) }}
    {%- endfor -%}
    {%- set columns = [] -%}
    {%- for column in table.columns.values() -%}
        {%- set not_null = column.constraints | selectattr('type', 'equalto', 'not_null') | list -%}
        {%- do columns.append(column.name ~ ' ' ~ column.data_type ~ (' not null' if not_null else '')) -%}
    {%- endfor -%}
    {%- set partition_by = table.config.meta.get('partition_by') or [] -%}
    {%- set partitioning = ' partitioned by (' ~ partition_by | join(', ') ~ ')' if partition_by else '' -%}
    {%- do run_query('create database if not exists ' ~ table.schema) -%}
    {%- do run_query(
        'create table if not exists ' ~ table.schema ~ '.' ~ table.identifier ~ ' (' ~ columns | join(', ')
        ~ ') using ' ~ file_format ~ partitioning
    ) -%}
    {{ return(api.Relation.create(database=table.database, schema=table.schema, identifier=table.identifier,
                                  type='table')) }}
{%- endmacro %}

{#- The graph entry of one source table; stops the run when the project's YAML lacks it. -#}
{% macro source_node(source_name, table_name) -%}
    {%- for node in graph.sources.values() if node.source_name == source_name and node.name == table_name -%}
        {{ return(node) }}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error(
        'No source table ' ~ source_name ~ '.' ~ table_name ~ ' in the project: its YAML defines the table.') }}
{%- endmacro %}

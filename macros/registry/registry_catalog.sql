{#
  Readers of the registry catalog tables that python_jobs.registry computes (models
  registry_columns and registry_versions). Before those tables exist (parsing, linting, a first
  run with an empty registry) they return empty lists.
#}
{% macro registry_literal(text) -%}
    '{{ text | string | replace("\\", "\\\\") | replace("'", "\\'") }}'
{%- endmacro %}

{% macro registry_catalog_rows(catalog, query) %}
    {%- if not execute -%}{{ return([]) }}{%- endif -%}
    {%- set existing = adapter.get_relation(database=catalog.database, schema=catalog.schema, identifier=catalog.identifier) -%}
    {%- if existing is none -%}{{ return([]) }}{%- endif -%}
    {{ return(run_query(query).rows) }}
{% endmacro %}

{% macro registry_family_filter(vendor, name, model) -%}
    vendor = {{ registry_literal(vendor) }} and name = {{ registry_literal(name) }} and model = {{ model | int }}
{%- endmacro %}

{% macro registry_columns(vendor, name, model, table_suffix='') %}
    {%- set catalog = ref('registry_columns') -%}
    {%- set query -%}
        select column_position, column_name, spark_type, column_kind, is_nullable, introduced_in, json_path
        from {{ catalog }}
        where {{ registry_family_filter(vendor, name, model) }} and table_suffix = {{ registry_literal(table_suffix) }}
        order by column_position
    {%- endset -%}
    {%- set columns = [] -%}
    {%- for row in registry_catalog_rows(catalog, query) -%}
        {%- do columns.append({
            'position': row[0], 'name': row[1], 'spark_type': row[2], 'kind': row[3],
            'nullable': row[4], 'introduced_in': row[5], 'json_path': row[6]
        }) -%}
    {%- endfor -%}
    {{ return(columns) }}
{% endmacro %}

{% macro registry_versions(vendor, name, model, table_suffix='') %}
    {%- set catalog = ref('registry_versions') -%}
    {%- set query -%}
        select version, conflicts
        from {{ catalog }}
        where {{ registry_family_filter(vendor, name, model) }} and table_suffix = {{ registry_literal(table_suffix) }}
        order by version_order
    {%- endset -%}
    {%- set versions = [] -%}
    {%- for row in registry_catalog_rows(catalog, query) -%}
        {%- do versions.append({'version': row[0], 'conflicts': row[1]}) -%}
    {%- endfor -%}
    {{ return(versions) }}
{% endmacro %}

{% macro registry_recovery_suffixes(vendor, name, model) %}
    {%- set catalog = ref('registry_versions') -%}
    {%- set query -%}
        select distinct table_suffix
        from {{ catalog }}
        where {{ registry_family_filter(vendor, name, model) }} and is_recovery
        order by table_suffix
    {%- endset -%}
    {{ return(registry_catalog_rows(catalog, query) | map(attribute=0) | list) }}
{% endmacro %}

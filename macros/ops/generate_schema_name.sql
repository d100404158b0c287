{#
  Custom schemas map one to one onto Spark databases: `+schema: lineage` builds in database
  `lineage`, not `<target schema>_lineage`. The `schema_prefix` var namespaces a whole copy of
  the warehouse (tests use it to stay isolated inside one metastore).
#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- set base_schema = custom_schema_name if custom_schema_name is not none else target.schema -%}
    {{ var('schema_prefix', '') ~ (base_schema | trim) }}
{%- endmacro %}

{# The database name for one of the warehouse's layers (raw, audit, lineage, ...). #}
{% macro warehouse_schema(layer) -%}
    {{ var('schema_prefix', '') ~ layer }}
{%- endmacro %}

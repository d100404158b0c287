{% macro generate_schema_name(custom_schema_name, node) -%}
    {{ var('schema_prefix', '') ~ (custom_schema_name or target.schema) }}
{%- endmacro %}

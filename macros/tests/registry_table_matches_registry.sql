{#
  Fails with one row per position where a typed table's columns differ from the registry: the
  event columns, then the registry columns in registry order, with their Spark types. Columns
  beyond the registry's (a newer registry already migrated the table) are allowed.
#}
{% test registry_table_matches_registry(model, vendor, schema_name, registry_model) %}
    {%- set expected = registry_event_columns() + registry_columns(vendor, schema_name, registry_model) -%}
    {%- set actual = adapter.get_columns_in_relation(model) if execute else [] -%}
    {%- set problems = [] -%}
    {%- for column in expected if execute -%}
        {%- set want = column.name ~ ' ' ~ column.spark_type | lower -%}
        {%- if loop.index0 >= actual | length -%}
            {%- do problems.append('position ' ~ loop.index ~ ': expected ' ~ want ~ ', the table has no column') -%}
        {%- else -%}
            {%- set have = actual[loop.index0].name | lower ~ ' ' ~ actual[loop.index0].data_type | lower -%}
            {%- if have != want -%}
                {%- do problems.append('position ' ~ loop.index ~ ': expected ' ~ want ~ ', found ' ~ have) -%}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if problems -%}
        {%- for problem in problems %}
    select {{ registry_literal(problem) }} as problem
            {%- if not loop.last %} union all{% endif %}
        {%- endfor %}
    {%- else %}
    select 'none' as problem
    where false
    {%- endif %}
{% endtest %}

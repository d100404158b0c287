{#-
  The first column of the first row of `sql`, run now (at compile time when dbt only compiles), or
  none when the query returns no row. The one helper for the few values a model's SQL is built
  from (a table's own high mark, a count for a table property).
-#}
{% macro scalar_value(sql) -%}
    {%- set result = run_query(sql) -%}
    {{ return(result.columns[0].values()[0] if result.rows | length > 0 else none) }}
{%- endmacro %}

{#
  The changelog op codes (ODF RFC-015) and the reserved column names, for the macros. They are defined
  once, as vars in dbt_project.yml, which python_jobs reads too (python_jobs/contracts.py).
  Models and tests call changelog_op('retract') instead of writing 1.
#}
{% macro changelog_op_codes() -%}
    {{ return(var('changelog_op_codes')) }}
{%- endmacro %}

{% macro changelog_op(name) -%}
    {%- set codes = changelog_op_codes() -%}
    {%- if name not in codes -%}
        {{ exceptions.raise_compiler_error("unknown changelog op '" ~ name ~ "'; known: " ~ codes.keys() | list | join(', ')) }}
    {%- endif -%}
    {{ return(codes[name]) }}
{%- endmacro %}

{#- System columns leading every changelog table, in order. -#}
{% macro changelog_system_columns() -%}
    {{ return(var('changelog_system_columns')) }}
{%- endmacro %}

{#- Columns python_jobs/ingest/snapshot.py appends after the data columns of raw.<dataset>_snapshots. -#}
{% macro changelog_raw_metadata_columns() -%}
    {{ return(var('changelog_raw_metadata_columns')) }}
{%- endmacro %}

{#- A quoted, comma-separated column list, optionally qualified (`alias.`col``). -#}
{% macro changelog_column_list(columns, qualifier=none) -%}
    {%- for column in columns -%}
        {{ (qualifier ~ '.') if qualifier else '' }}{{ adapter.quote(column) }}{{ ', ' if not loop.last }}
    {%- endfor -%}
{%- endmacro %}

{#
  The changelog models this project builds, by name. A model's refs are fixed when dbt parses the
  project, before it knows which models exist, so they come from vars: `changelog_models` (a project's
  own) and `sample_changelog_models` (the sample's, enabled with `sample_inputs`). The model
  changelog_streams refs each one, which orders dataset_schema_events after every changelog model.
#}
{% macro changelog_stream_models() -%}
    {%- set names = var('changelog_models', []) | list -%}
    {%- if var('sample_inputs', false) -%}
        {%- set names = names + (var('sample_changelog_models', []) | list) -%}
    {%- endif -%}
    {{ return(names | unique | sort) }}
{%- endmacro %}

{#- At run time: fail the build when an enabled changelog model is missing from the vars above; dbt would
    not order it before dataset_schema_events, whose result would then depend on thread timing. -#}
{% macro changelog_check_streams_listed(names) -%}
    {%- if execute -%}
        {%- set unlisted = [] -%}
        {%- for node in graph.nodes.values() -%}
            {%- if node.resource_type == 'model' and node.package_name == project_name
                and node.config.materialized == 'changelog' and node.name not in names -%}
                {%- do unlisted.append(node.name) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- if unlisted -%}
            {{ exceptions.raise_compiler_error(
                "changelog model(s) " ~ (unlisted | sort | join(', ')) ~ " not listed in the var changelog_models"
                ~ " (dbt_project.yml): add them, so that dbt builds them before dataset_schema_events") }}
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}

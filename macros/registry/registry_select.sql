{#
  The select list that extracts registry columns from an event's data, parsed once per row into
  a VARIANT. `variant_get` with a type fails the load on a value that does not cast (it never
  turns one into NULL), so a bad value can only stop a run, not be stored silently.
#}
{% macro registry_column_expression(column, variant='data_variant') -%}
    {%- set path = registry_literal(column.json_path) -%}
    {%- if column.kind == 'json' -%}
        case
            when is_variant_null(variant_get({{ variant }}, {{ path }})) then null
            else to_json(variant_get({{ variant }}, {{ path }}))
        end
    {%- else -%}
        variant_get({{ variant }}, {{ path }}, {{ registry_literal(column.spark_type | lower) }})
    {%- endif -%}
{%- endmacro %}

{% macro registry_select_list(columns, variant='data_variant') -%}
    {%- for column in columns %}
    {{ registry_column_expression(column, variant) }} as {{ column.name }}{{ "," if not loop.last }}
    {%- endfor %}
{%- endmacro %}

{#- The event columns that lead every typed table; python_jobs/registry/ddl.py lists the same. -#}
{% macro registry_event_columns() %}
    {{ return([
        {'name': 'event_id', 'spark_type': 'STRING'},
        {'name': 'schema_version', 'spark_type': 'STRING'},
        {'name': 'source_file', 'spark_type': 'STRING'},
        {'name': 'source_line', 'spark_type': 'BIGINT'},
        {'name': 'loaded_at', 'spark_type': 'TIMESTAMP'}
    ]) }}
{% endmacro %}

{#
  New events of one vendor/name/model whose version loads into `target` (the model's table, or
  a recovery table when table_suffix is set), anti-joined on event_id against `target`.
#}
{% macro registry_event_select(vendor, name, model, table_suffix, target) -%}
    {%- set columns = registry_columns(vendor, name, model, table_suffix) -%}
    {%- set versions = registry_versions(vendor, name, model, table_suffix) | map(attribute='version') | list -%}
with family_events as (
    select
        event_id,
        version,
        source_file,
        source_line,
        data_json
    from {{ ref('stg_sd_events') }}
    where
        {{ registry_family_filter(vendor, name, model) }}
        and {% if versions %}version in ({% for v in versions %}{{ registry_literal(v) }}{{ ", " if not loop.last }}{% endfor %}){% else %}false{% endif %}
),

loaded_events as (
    select event_id
    from {{ target }}
),

new_events as (
    select
        family_events.event_id,
        family_events.version,
        family_events.source_file,
        family_events.source_line,
        parse_json(family_events.data_json) as data_variant
    from family_events
    left anti join loaded_events
        on family_events.event_id = loaded_events.event_id
)

select
    event_id,
    version as schema_version,
    source_file,
    source_line,
    current_timestamp() as loaded_at{{ "," if columns }}
    {{- registry_select_list(columns) }}
from new_events
{%- endmacro %}

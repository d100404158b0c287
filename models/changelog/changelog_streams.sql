{{ config(materialized='view') }}

{#- One row per changelog stream this project builds, with its first and last system_time. The refs make
    every changelog model an upstream of this view and so of dataset_schema_events, which reads it. -#}
{%- set streams = changelog_stream_models() -%}
{{ changelog_check_streams_listed(streams) }}
{%- for name in streams %}
    {%- set stream = ref(name) %}
    select
        '{{ name }}' as model_name,
        '{{ stream.identifier }}' as table_name,
        '{{ stream }}' as relation_name,
        min(system_time) as first_system_time,
        max(system_time) as last_system_time
    from {{ stream }}
    {% if not loop.last %}union all{% endif %}
{%- else %}
select
    model_name,
    table_name,
    relation_name,
    first_system_time,
    last_system_time
from values (
    cast(null as string), cast(null as string), cast(null as string), cast(null as timestamp), cast(null as timestamp)
) as no_streams (model_name, table_name, relation_name, first_system_time, last_system_time)
where false
{%- endfor %}

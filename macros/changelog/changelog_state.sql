{#
  State projected from a changelog: per key, the latest row by offset, unless that row is a
  retraction (-R) or a correct-from (-C, which a +C always follows). The projection reads the whole
  changelog, so snapshot_to_changelog uses it only as a fallback; its incremental runs read the
  state table that changelog_save_state keeps beside the changelog.
#}
{% macro changelog_data_columns(changelog_relation) -%}
    {%- set system_columns = changelog_system_columns() -%}
    {%- set names = [] -%}
    {%- for column in adapter.get_columns_in_relation(changelog_relation) -%}
        {%- if column.name | lower not in system_columns -%}{%- do names.append(column.name) -%}{%- endif -%}
    {%- endfor -%}
    {{ return(names) }}
{%- endmacro %}

{#- The state after every changelog row up to `as_of_offset` and/or `as_of_system_time` (inclusive). -#}
{% macro changelog_state(changelog_relation, primary_key, as_of_offset=none, as_of_system_time=none) -%}
    {%- set keys = [primary_key] if primary_key is string else primary_key -%}
    {%- set columns = (changelog_data_columns(changelog_relation) if execute else []) or keys -%}
    {%- set conditions = ['true'] -%}
    {%- if as_of_offset is not none -%}{%- do conditions.append('`offset` <= ' ~ as_of_offset) -%}{%- endif -%}
    {%- if as_of_system_time is not none -%}
        {%- do conditions.append("system_time <= timestamp'" ~ as_of_system_time ~ "'") -%}
    {%- endif %}
    with latest_rows as (
        select
            {{ changelog_column_list(columns) }},
            event_time,
            `offset`,
            op,
            row_number() over (partition by {{ changelog_column_list(keys) }} order by `offset` desc) as cl_recency
        from {{ changelog_relation }}
        where {{ conditions | join(' and ') }}
    )

    select {{ changelog_column_list(columns) }}, event_time, `offset`
    from latest_rows
    where cl_recency = 1 and op in ({{ changelog_op('append') }}, {{ changelog_op('correct_to') }})
{%- endmacro %}

{% macro changelog_current_state(changelog_relation, primary_key) -%}
    {{ changelog_state(changelog_relation, primary_key) }}
{%- endmacro %}

{% macro changelog_state_as_of(changelog_relation, primary_key, offset=none, system_time=none) -%}
    {%- if offset is none and system_time is none -%}
        {{ exceptions.raise_compiler_error("changelog_state_as_of needs an offset or a system_time") }}
    {%- endif -%}
    {{ changelog_state(changelog_relation, primary_key, as_of_offset=offset, as_of_system_time=system_time) }}
{%- endmacro %}

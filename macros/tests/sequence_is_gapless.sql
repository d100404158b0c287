{#
  Fails for every group whose sequence is not exactly start, start+1, ..., start+n-1: a gap, a
  duplicate or a wrong first value all show up as a failing row.
#}
{% test sequence_is_gapless(model, column_name, group_by=none, start=1) %}
    {%- set group_columns = [] if group_by is none else ([group_by] if group_by is string else group_by) -%}
    with sequence_stats as (
        select
            {% for column in group_columns %}{{ column }},{% endfor %}
            count(*) as row_count,
            count(distinct {{ column_name }}) as distinct_count,
            min({{ column_name }}) as first_value,
            max({{ column_name }}) as last_value
        from {{ model }}
        {% if group_columns %}group by {{ group_columns | join(', ') }}{% endif %}
    )

    select
        {% for column in group_columns %}{{ column }},{% endfor %}
        row_count,
        distinct_count,
        first_value,
        last_value
    from sequence_stats
    where
        distinct_count != row_count
        or first_value != {{ start }}
        or last_value != {{ start }} + row_count - 1
{% endtest %}

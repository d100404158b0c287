{#- Fails for every combination of `columns` that occurs more than once. -#}
{% test unique_combination(model, columns) %}
    select
        {{ columns | join(', ') }},
        count(1) as occurrences
    from {{ model }}
    group by {{ columns | join(', ') }}
    having count(1) > 1
{% endtest %}

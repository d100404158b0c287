{#- Fails for every row whose `column_name` is null or matches zero or several rows of `to.field`. -#}
{% test references_exactly_one(model, column_name, to, field) %}
    with referenced as (
        select
            {{ field }} as ref_key,
            count(1) as matches
        from {{ to }}
        group by {{ field }}
    )

    select
        source_rows.{{ column_name }} as ref_key,
        coalesce(referenced.matches, 0) as matches
    from {{ model }} as source_rows
    left join referenced
        on source_rows.{{ column_name }} = referenced.ref_key
    where source_rows.{{ column_name }} is null or coalesce(referenced.matches, 0) != 1
{% endtest %}

{#- Fails unless the model has exactly one row: the grain of a one-row summary (no key columns). -#}
{% test single_row(model) %}
    with row_counts as (
        select count(1) as row_count
        from {{ model }}
    )

    select row_count
    from row_counts
    where row_count != 1
{% endtest %}

{#- Fails for every row whose `column_name` (a count) differs from its number of rows in `mapping`
    (joined on `key` = `mapping_key`). -#}
{% test count_matches_mapping(model, column_name, key, mapping, mapping_key) %}
    with mapped as (
        select
            {{ mapping_key }} as map_key,
            count(1) as mapped_rows
        from {{ mapping }}
        group by {{ mapping_key }}
    )

    select
        source_rows.{{ key }} as row_key,
        source_rows.{{ column_name }} as expected_rows,
        coalesce(mapped.mapped_rows, 0) as mapped_rows
    from {{ model }} as source_rows
    left join mapped
        on source_rows.{{ key }} = mapped.map_key
    where source_rows.{{ column_name }} != coalesce(mapped.mapped_rows, 0)
{% endtest %}

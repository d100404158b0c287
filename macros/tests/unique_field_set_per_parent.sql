{#- Fails when two rows of `model` with the same `parent` (e.g. two schema versions of one dataset)
    map to the same set of `member` values in `mapping` (joined on `key` = `mapping_key`). -#}
{% test unique_field_set_per_parent(model, key, parent, mapping, mapping_key, member) %}
    with member_sets as (
        select
            {{ mapping_key }} as set_key,
            array_join(array_sort(collect_set({{ member }})), ',') as member_set
        from {{ mapping }}
        group by {{ mapping_key }}
    ),

    keyed as (
        select
            source_rows.{{ parent }} as parent_key,
            coalesce(member_sets.member_set, '') as member_set
        from {{ model }} as source_rows
        left join member_sets
            on source_rows.{{ key }} = member_sets.set_key
    )

    select
        parent_key,
        member_set,
        count(1) as occurrences
    from keyed
    group by parent_key, member_set
    having count(1) > 1
{% endtest %}

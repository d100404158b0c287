{#- Generic tests for changelog streams (ODF RFC-015). Each returns the offending rows. -#}

{#- Every op is one of the codes named in changelog_op_codes(). -#}
{% test changelog_valid_op(model, column_name) %}
    {%- set codes = changelog_op_codes().values() | list | sort -%}
    select `offset`, {{ column_name }} as op
    from {{ model }}
    where {{ column_name }} is null or {{ column_name }} not in ({{ codes | join(', ') }})
{% endtest %}

{#- Offsets are unique and gapless from 0: count = distinct count = max + 1. -#}
{% test changelog_gapless_offsets(model, column_name) %}
    with offset_summary as (
        select
            count(*) as row_count,
            count(distinct {{ column_name }}) as distinct_offsets,
            min({{ column_name }}) as first_offset,
            max({{ column_name }}) as last_offset,
            count({{ column_name }}) as non_null_offsets
        from {{ model }}
    )

    select row_count, distinct_offsets, first_offset, last_offset, non_null_offsets
    from offset_summary
    where
        row_count > 0
        and (
            distinct_offsets != row_count
            or non_null_offsets != row_count
            or first_offset != 0
            or last_offset != row_count - 1
        )
{% endtest %}

{#- Every -C is immediately followed (by offset) by a +C with the same key, and every +C follows such a -C. -#}
{% test changelog_paired_corrections(model, primary_key) %}
    {%- set keys = [primary_key] if primary_key is string else primary_key -%}
    {%- set same_next_key = [] -%}
    {%- set same_previous_key = [] -%}
    {%- for key in keys -%}
        {%- do same_next_key.append('next_' ~ loop.index ~ ' <=> ' ~ adapter.quote(key)) -%}
        {%- do same_previous_key.append('previous_' ~ loop.index ~ ' <=> ' ~ adapter.quote(key)) -%}
    {%- endfor %}
    with neighbours as (
        select
            `offset`,
            op,
            {%- for key in keys %}
            {{ adapter.quote(key) }},
            lead({{ adapter.quote(key) }}) over (order by `offset`) as next_{{ loop.index }},
            lag({{ adapter.quote(key) }}) over (order by `offset`) as previous_{{ loop.index }},
            {%- endfor %}
            lead(op) over (order by `offset`) as next_op,
            lag(op) over (order by `offset`) as previous_op
        from {{ model }}
    )

    select `offset`, op, next_op, previous_op
    from neighbours
    where
        (op = {{ changelog_op('correct_from') }}
            and not (next_op <=> {{ changelog_op('correct_to') }} and {{ same_next_key | join(' and ') }}))
        or (op = {{ changelog_op('correct_to') }}
            and not (previous_op <=> {{ changelog_op('correct_from') }} and {{ same_previous_key | join(' and ') }}))
{% endtest %}

{#-
  Round trip: for every snapshot the changelog has processed, the state projected from the
  changelog up to that snapshot's system_time equals the snapshot, row for row (key plus the
  compared columns; all data columns when compare_columns is none). A changelog row belongs to
  the state at snapshot s when it is +A/+C, was written at or before s, and its key's next row
  was written after s.
-#}
{% test changelog_round_trip(model, snapshots, primary_key, compare_columns=none) %}
    {%- set keys = [primary_key] if primary_key is string else primary_key -%}
    {%- if execute and load_relation(snapshots) is none %}
    {#- No snapshot loaded yet (the changelog waits for its first): any changelog row is one too many. #}
    select
        cast(null as bigint) as snapshot_seq,
        'in the changelog, but no snapshot is loaded' as problem,
        {{ changelog_column_list(keys) }}
    from {{ model }}
    {%- else %}
    {%- set compared = keys + ((compare_columns if compare_columns is not none else []) | reject('in', keys) | list) -%}
    {%- if compare_columns is none and execute -%}
        {%- set compared = changelog_data_columns(model) -%}
    {%- endif -%}
    {%- set state = changelog_read_state(changelog_state_relation(model)) if execute else {'exists': false} -%}
    {%- set join_on = [] -%}
    {%- for key in keys -%}
        {%- do join_on.append('expected.' ~ adapter.quote(key) ~ ' = projected.' ~ adapter.quote(key)) -%}
    {%- endfor -%}
    {%- set same_row = [] -%}
    {%- for column in compared -%}
        {%- do same_row.append('expected.' ~ adapter.quote(column) ~ ' <=> projected.' ~ adapter.quote(column)) -%}
    {%- endfor %}
    {%- set loaded = changelog_loaded_snapshots(snapshots) if execute else [] -%}
    {%- set checked = [] -%}
    {%- for snapshot in loaded if not state.exists or snapshot.seq <= state.seq -%}
        {%- do checked.append("(" ~ snapshot.seq ~ ", timestamp'" ~ snapshot.system_time ~ "')") -%}
    {%- endfor -%}
    {%- if checked | length == 0 -%}{%- do checked.append("(-1, timestamp'1970-01-01 00:00:00')") -%}{%- endif %}
    with processed_snapshots as (
        select snapshot_seq, system_time
        from values {{ checked | join(', ') }} as loaded (snapshot_seq, system_time)
    ),

    changelog_rows as (
        select
            {{ changelog_column_list(compared) }},
            op,
            system_time,
            lead(system_time) over (partition by {{ changelog_column_list(keys) }} order by `offset`) as cl_superseded_at
        from {{ model }}
    ),

    projected as (
        select processed_snapshots.snapshot_seq, {{ changelog_column_list(compared, 'changelog_rows') }}
        from changelog_rows
        inner join processed_snapshots
            on
                changelog_rows.system_time <= processed_snapshots.system_time
                and (changelog_rows.cl_superseded_at is null or changelog_rows.cl_superseded_at > processed_snapshots.system_time)
        where changelog_rows.op in ({{ changelog_op('append') }}, {{ changelog_op('correct_to') }})
    ),

    expected as (
        select snapshot_rows.snapshot_seq, {{ changelog_column_list(compared, 'snapshot_rows') }}
        from {{ snapshots }} as snapshot_rows
        inner join processed_snapshots on snapshot_rows.snapshot_seq = processed_snapshots.snapshot_seq
    )

    select
        coalesce(expected.snapshot_seq, projected.snapshot_seq) as snapshot_seq,
        case when projected.snapshot_seq is null then 'missing from changelog state'
            when expected.snapshot_seq is null then 'not in snapshot'
            else 'values differ' end as problem,
        {%- for key in keys %}
        coalesce(expected.{{ adapter.quote(key) }}, projected.{{ adapter.quote(key) }}) as {{ adapter.quote(key) }}{{ ',' if not loop.last }}
        {%- endfor %}
    from expected
    full outer join projected
        on expected.snapshot_seq = projected.snapshot_seq and {{ join_on | join(' and ') }}
    where
        expected.snapshot_seq is null
        or projected.snapshot_seq is null
        or not ({{ same_row | join(' and ') }})
    {%- endif %}
{% endtest %}

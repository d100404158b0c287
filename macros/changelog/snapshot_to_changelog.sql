{#
  snapshot_to_changelog: an ODF changelog stream (RFC-015) from the full snapshots in
  raw.<dataset>_snapshots. A model is one line:

      {{ snapshot_to_changelog(source('snapshots', 'crm_accounts'), ['account_id']) }}

  Each run diffs every snapshot not yet processed against its predecessor, in one pass: the state
  before the first pending snapshot (from the state table, plus any changelog rows the state has
  not absorbed yet) and the pending snapshots form one timeline per key, ordered by snapshot.
  Window functions over that timeline classify every (key, snapshot): +A when the key was absent
  in the previous snapshot, -C/+C when a compared column differs null-safely, -R in the snapshot
  after the key's last appearance. -R and -C carry the row as last emitted (with its event time),
  so a consumer can retract rows without knowing the key. The post-hook changelog_save_state
  folds the new rows into the state table, so the next run reads neither the history of
  snapshots nor the whole changelog.
#}
{% macro snapshot_to_changelog(source_relation, primary_key, compare_columns=none, event_time_column=none) -%}
    {%- set keys = [primary_key] if primary_key is string else primary_key -%}
    {{ config(
        materialized='incremental',
        incremental_strategy='append',
        file_format=var('file_format', 'parquet'),
        on_schema_change='fail',
        post_hook="{{ changelog_save_state(" ~ tojson(keys) ~ ") }}"
    ) }}
    {%- if not execute -%}
        select cast(null as bigint) as `offset`
    {%- else -%}
        {%- set plan = changelog_plan(source_relation, keys, compare_columns, event_time_column) -%}
        /* changelog_plan {{ tojson({'through_seq': plan.through_seq, 'rebuild': plan.rebuild}) }} */
        {%- if plan.pending | length == 0 %}
        {{ changelog_empty_batch(source_relation, plan.columns) }}
        {%- else %}
        {{ changelog_batch(source_relation, plan) }}
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}

{#- The output's shape with no rows: a run without new snapshots appends nothing. -#}
{% macro changelog_empty_batch(source_relation, columns) -%}
    select
        cast(null as bigint) as `offset`,
        cast(null as int) as op,
        cast(null as timestamp) as system_time,
        cast(null as timestamp) as event_time,
        {{ changelog_column_list(columns) }}
    from {{ source_relation }}
    where false
{%- endmacro %}

{% macro changelog_batch(source_relation, plan) -%}
    {%- set columns = plan.columns -%}
    {%- set keys = plan.key_columns -%}
    {%- set image_fields = [] -%}
    {%- for column in columns -%}
        {%- do image_fields.append("'" ~ column ~ "', " ~ adapter.quote(column)) -%}
    {%- endfor -%}
    {%- set by_key_so_far = 'partition by ' ~ changelog_column_list(keys) ~ ' order by snapshot_seq rows between unbounded preceding and ' -%}
with

prior_state as (
    {{ changelog_prior_state(source_relation, plan) }}
),

pending_snapshots as (
    select snapshot_seq, snapshot_time, system_time
    from values
    {%- for snapshot in plan.pending %}
        ({{ snapshot.seq }}, timestamp'{{ snapshot.snapshot_time }}', timestamp'{{ snapshot.system_time }}'){{ ',' if not loop.last }}
    {%- endfor %}
        as pending (snapshot_seq, snapshot_time, system_time)
),

incoming as (
    select {{ changelog_column_list(columns) }}, snapshot_seq
    from {{ source_relation }}
    where snapshot_seq > {{ plan.processed_seq }} and snapshot_seq <= {{ plan.through_seq }}
),

timeline as (
    select
        {{ changelog_column_list(columns) }},
        cast({{ plan.processed_seq }} as bigint) as snapshot_seq,
        event_time as cl_state_event_time,
        true as cl_is_state
    from prior_state
    union all
    select
        {{ changelog_column_list(columns) }},
        snapshot_seq,
        cast(null as timestamp) as cl_state_event_time,
        false as cl_is_state
    from incoming
),

sequenced as (
    select
        {{ changelog_column_list(columns, 'timeline') }},
        timeline.snapshot_seq,
        timeline.cl_state_event_time,
        timeline.cl_is_state,
        pending_snapshots.snapshot_time,
        pending_snapshots.system_time,
        lag(timeline.snapshot_seq) over by_key as cl_previous_seq,
        lead(timeline.snapshot_seq) over by_key as cl_next_seq,
        {%- for column in plan.compared %}
        (lag(timeline.{{ adapter.quote(column) }}) over by_key <=> timeline.{{ adapter.quote(column) }}) and
        {%- endfor %}
        true as cl_same_as_previous
    from timeline
    left join pending_snapshots on timeline.snapshot_seq = pending_snapshots.snapshot_seq
    window by_key as (partition by {{ changelog_column_list(keys, 'timeline') }} order by timeline.snapshot_seq)
),

classified as (
    select
        {{ changelog_column_list(columns) }},
        snapshot_seq,
        system_time,
        cl_is_state,
        cl_state_event_time,
        cl_next_seq,
        case
            when cl_is_state then null
            when cl_previous_seq is null or cl_previous_seq < snapshot_seq - 1 then {{ changelog_op('append') }}
            when not cl_same_as_previous then {{ changelog_op('correct_to') }}
        end as cl_change_op,
        {%- if plan.event_time_column is not none %}
        coalesce(cast({{ adapter.quote(plan.event_time_column) }} as timestamp), snapshot_time) as cl_new_event_time
        {%- else %}
        snapshot_time as cl_new_event_time
        {%- endif %}
    from sequenced
),

imaged as (
    select
        {{ changelog_column_list(columns) }},
        snapshot_seq,
        system_time,
        cl_change_op,
        cl_new_event_time,
        cl_next_seq,
        last(
            case
                when cl_is_state then named_struct({{ image_fields | join(', ') }}, 'event_time', cl_state_event_time)
                when cl_change_op is not null then named_struct({{ image_fields | join(', ') }}, 'event_time', cl_new_event_time)
            end,
            true
        ) over ({{ by_key_so_far }} current row) as cl_emitted_image,
        last(
            case
                when cl_is_state then named_struct({{ image_fields | join(', ') }}, 'event_time', cl_state_event_time)
                when cl_change_op is not null then named_struct({{ image_fields | join(', ') }}, 'event_time', cl_new_event_time)
            end,
            true
        ) over ({{ by_key_so_far }} 1 preceding) as cl_previous_image
    from classified
),

changes as (
    select
        snapshot_seq,
        system_time,
        cl_change_op as op,
        cl_new_event_time as event_time,
        {{ changelog_column_list(columns) }}
    from imaged
    where cl_change_op is not null
    union all
    select
        snapshot_seq,
        system_time,
        {{ changelog_op('correct_from') }} as op,
        cl_previous_image.event_time as event_time,
        {{ changelog_column_list(columns, 'cl_previous_image') }}
    from imaged
    where cl_change_op = {{ changelog_op('correct_to') }}
    union all
    select
        pending_snapshots.snapshot_seq,
        pending_snapshots.system_time,
        {{ changelog_op('retract') }} as op,
        imaged.cl_emitted_image.event_time as event_time,
        {{ changelog_column_list(columns, 'imaged.cl_emitted_image') }}
    from imaged
    inner join pending_snapshots on imaged.snapshot_seq + 1 = pending_snapshots.snapshot_seq
    where imaged.cl_next_seq is null or imaged.cl_next_seq > imaged.snapshot_seq + 1
)

select
    cast(
        {{ plan.next_offset }} + row_number() over (order by snapshot_seq, {{ changelog_column_list(keys) }}, op) - 1
        as bigint
    ) as `offset`,
    cast(op as int) as op,
    system_time,
    event_time,
    {{ changelog_column_list(columns) }}
from changes
{%- endmacro %}

{#- The state before the first pending snapshot: the state table, plus changelog rows it has not absorbed. -#}
{% macro changelog_prior_state(source_relation, plan) -%}
    {%- if plan.has_tail -%}
        {{ changelog_fold(plan.columns, plan.key_columns, plan.state_relation if plan.state_exists else none,
                          plan.state_offset, this, plan.state_offset) }}
    {%- elif plan.state_exists -%}
        select {{ changelog_column_list(plan.columns) }}, event_time
        from {{ plan.state_relation }}
        where cl_state_offset = {{ plan.state_offset }}
    {%- else -%}
        select {{ changelog_column_list(plan.columns) }}, cast(null as timestamp) as event_time
        from {{ source_relation }}
        where false
    {%- endif -%}
{%- endmacro %}

{#
  snapshot_to_changelog: an ODF changelog stream (RFC-015) from the full snapshots in
  raw.<dataset>_snapshots. A model is one line:

      {{ snapshot_to_changelog(source('snapshots', 'crm_accounts'), ['account_id']) }}

  Each run diffs every snapshot not yet processed against its predecessor, in one pass: the state
  before the first pending snapshot and the pending snapshots form one timeline per key, ordered by
  snapshot. The keys and hashes of that state are the processed snapshot's own rows, hashed from
  its raw partition (raw keeps every snapshot); only when raw lost it do they come from the state
  table plus the changelog rows it has not absorbed yet (its tail).
  Window functions over that timeline classify every (key, snapshot): +A when the key was absent
  in the previous snapshot, -C/+C when a compared column differs null-safely (seen through a
  128-bit hash of the compared columns, changelog_hash.sql), -R in the snapshot after the key's
  last appearance. The timeline holds keys and hashes only; full rows are fetched for the changes. -R and -C carry the row as last emitted (with its event time),
  so a consumer can retract rows without knowing the key; those few rows come from the state table
  plus its tail, read for the changed keys only. The last step, changelog_save_state, folds the tail
  into the state table once it passes `changelog_compact_ratio` of the state, so no run reads the
  history of snapshots or the whole changelog, and no run rewrites the whole state. The changelog
  materialization (changelog_materialization.sql) runs the plan, the append and the state step.
#}
{% macro snapshot_to_changelog(source_relation, primary_key, compare_columns=none, event_time_column=none) -%}
    {%- set keys = [primary_key] if primary_key is string else primary_key -%}
    {{ config(
        materialized='changelog',
        file_format=var('file_format', 'parquet'),
        on_schema_change='fail',
        changelog={'primary_key': keys, 'compare_columns': compare_columns, 'event_time_column': event_time_column}
    ) }}
    {%- if not execute or changelog_materializes() -%}
        {#- Parsing, or a run: the changelog materialization plans and writes the rows itself. -#}
        select cast(null as bigint) as `offset`
    {%- else -%}
        {#- Compiling, docs, linting: the query the next run would append, planned without writing. -#}
        {%- set appends = load_relation(this) is not none and not should_full_refresh() -%}
        {{ changelog_select(source_relation,
            changelog_plan(source_relation, keys, compare_columns, event_time_column, appends)) }}
    {%- endif -%}
{%- endmacro %}

{#- True while a run builds the model: the materialization, not the model's SQL, makes its query. -#}
{% macro changelog_materializes() -%}
    {{ return(execute and flags.WHICH in ['run', 'build', 'retry'] and config.get('materialized') == 'changelog') }}
{%- endmacro %}

{#- The rows a run appends under `plan`: none while the source waits for its first snapshot or has no
    new one, else the diff of the pending snapshots. -#}
{% macro changelog_select(source_relation, plan) -%}
    {%- if plan.get('waiting') -%}
        {{ return(changelog_waiting_batch(plan.key_columns)) }}
    {%- elif plan.pending | length == 0 -%}
        {{ return(changelog_empty_batch(source_relation, plan.columns)) }}
    {%- endif -%}
    {{ return(changelog_batch(source_relation, plan)) }}
{%- endmacro %}

{#-
  Before the first snapshot: no rows, the changelog's own columns and the key columns (as strings; the
  snapshots' types are not known yet), so tests and current-state views over it run and find nothing.
-#}
{% macro changelog_waiting_batch(keys) -%}
    select
        cast(null as bigint) as `offset`,
        cast(null as int) as op,
        cast(null as timestamp) as system_time,
        cast(null as timestamp) as event_time,
        {%- for key in keys %}
        cast(null as string) as {{ adapter.quote(key) }}{{ ',' if not loop.last }}
        {%- endfor %}
    from values (1) as nothing (n)
    where false
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

{#-
  The diff runs on narrow rows: (key, snapshot, 128-bit hash of the compared columns). Window
  functions over each key's timeline classify every (key, snapshot) and name the snapshot whose
  row each output row carries (its image); only then are the full rows of those few images fetched,
  by joining a broadcast of the changes against the prior state and the pending snapshots. So the
  one shuffle and sort of the run moves keys and hashes, never whole rows.
-#}
{% macro changelog_batch(source_relation, plan) -%}
    {%- set columns = plan.columns -%}
    {%- set keys = plan.key_columns -%}
    {%- set row_hash = changelog_row_hash(plan.compared, plan.column_types) -%}
    {%- set same_image = [] -%}
    {%- for key in keys -%}
        {%- do same_image.append('wanted.' ~ adapter.quote(key) ~ ' = images.' ~ adapter.quote(key)) -%}
    {%- endfor -%}
    {%- do same_image.append('wanted.cl_image_seq = images.cl_image_seq') -%}
    {%- set by_key_so_far = 'partition by ' ~ changelog_column_list(keys) ~ ' order by snapshot_seq rows between unbounded preceding and ' -%}
with

pending_snapshots as (
    select snapshot_seq, snapshot_time, system_time
    from values
    {%- for snapshot in plan.pending %}
        ({{ snapshot.seq }}, timestamp'{{ snapshot.snapshot_time }}', timestamp'{{ snapshot.system_time }}'){{ ',' if not loop.last }}
    {%- endfor %}
        as pending (snapshot_seq, snapshot_time, system_time)
),

{%- if plan.prior_from_raw %}
{#- The processed snapshot's partition stands for the narrow prior state: one scan of raw, no state read, no tail fold. #}
timeline as (
    select
        {{ changelog_column_list(keys) }},
        snapshot_seq,
        {{ row_hash }} as cl_row_hash,
        snapshot_seq = {{ plan.processed_seq }} as cl_is_state
    from {{ source_relation }}
    where snapshot_seq >= {{ plan.processed_seq }} and snapshot_seq <= {{ plan.through_seq }}
),
{%- else %}
prior_hashes as (
    {{ changelog_prior_state(source_relation, plan, narrow=true) }}
),

incoming_hashes as (
    select {{ changelog_column_list(keys) }}, snapshot_seq, {{ row_hash }} as cl_row_hash
    from {{ source_relation }}
    where snapshot_seq > {{ plan.processed_seq }} and snapshot_seq <= {{ plan.through_seq }}
),

timeline as (
    select {{ changelog_column_list(keys) }}, cast({{ plan.processed_seq }} as bigint) as snapshot_seq, cl_row_hash, true as cl_is_state
    from prior_hashes
    union all
    select {{ changelog_column_list(keys) }}, snapshot_seq, cl_row_hash, false as cl_is_state
    from incoming_hashes
),
{%- endif %}

sequenced as (
    select
        {{ changelog_column_list(keys) }},
        snapshot_seq,
        cl_is_state,
        lag(snapshot_seq) over by_key as cl_previous_seq,
        lead(snapshot_seq) over by_key as cl_next_seq,
        coalesce(lag(cl_row_hash) over by_key = cl_row_hash, false) as cl_same_as_previous
    from timeline
    window by_key as (partition by {{ changelog_column_list(keys) }} order by snapshot_seq)
),

classified as (
    select
        {{ changelog_column_list(keys) }},
        snapshot_seq,
        cl_is_state,
        cl_next_seq,
        case
            when cl_is_state then null
            when cl_previous_seq is null or cl_previous_seq < snapshot_seq - 1 then {{ changelog_op('append') }}
            when not cl_same_as_previous then {{ changelog_op('correct_to') }}
        end as cl_change_op
    from sequenced
),

imaged as (
    select
        {{ changelog_column_list(keys) }},
        snapshot_seq,
        cl_change_op,
        cl_next_seq,
        last(case when cl_is_state or cl_change_op is not null then snapshot_seq end, true)
            over ({{ by_key_so_far }} current row) as cl_emitted_seq,
        last(case when cl_is_state or cl_change_op is not null then snapshot_seq end, true)
            over ({{ by_key_so_far }} 1 preceding) as cl_previous_emitted_seq
    from classified
),

changes as (
    select
        {{ changelog_column_list(keys) }},
        snapshot_seq,
        cl_change_op,
        cl_emitted_seq,
        cl_previous_emitted_seq,
        (cl_next_seq is null or cl_next_seq > snapshot_seq + 1) and snapshot_seq < {{ plan.through_seq }} as cl_gone_next
    from imaged
    where
        cl_change_op is not null
        or ((cl_next_seq is null or cl_next_seq > snapshot_seq + 1) and snapshot_seq < {{ plan.through_seq }})
),

{#- Each (key, snapshot) yields up to three rows: +A/+C (its own row), -C (the row emitted before), -R in the next snapshot (the row last emitted). #}
wanted as (
    select
        {{ changelog_column_list(keys) }},
        wanted_rows.snapshot_seq,
        wanted_rows.op,
        wanted_rows.cl_image_seq
    from changes
    lateral view stack(
        3,
        cl_change_op, snapshot_seq, snapshot_seq,
        if(cl_change_op = {{ changelog_op('correct_to') }}, {{ changelog_op('correct_from') }}, null), snapshot_seq, cl_previous_emitted_seq,
        if(cl_gone_next, {{ changelog_op('retract') }}, null),
        snapshot_seq + 1,
        cl_emitted_seq
    ) wanted_rows as op, snapshot_seq, cl_image_seq
    where wanted_rows.op is not null
),

{#- Only the keys whose image is a prior row: the rest of the prior state is neither read in full nor shuffled. #}
image_keys as (
    select distinct {{ changelog_column_list(keys) }}
    from wanted
    where cl_image_seq = {{ plan.processed_seq }}
),

prior_rows as (
    {{ changelog_prior_state(source_relation, plan, narrow=false, restrict_to='image_keys') }}
),

images as (
    select {{ changelog_column_list(columns) }}, event_time, cast({{ plan.processed_seq }} as bigint) as cl_image_seq
    from prior_rows
    union all
    select
        {{ changelog_column_list(columns, 'incoming') }},
        {%- if plan.event_time_column is not none %}
        coalesce(cast(incoming.{{ adapter.quote(plan.event_time_column) }} as timestamp), pending_snapshots.snapshot_time) as event_time,
        {%- else %}
        pending_snapshots.snapshot_time as event_time,
        {%- endif %}
        incoming.snapshot_seq as cl_image_seq
    from {{ source_relation }} as incoming
    inner join pending_snapshots on incoming.snapshot_seq = pending_snapshots.snapshot_seq
),

imaged_changes as (
    {#- Against a prior state the changes are a small share of the rows: broadcast them, stream the images. #}
    select {% if plan.processed_seq >= 0 %}/*+ broadcast(wanted) */{% endif %}
        wanted.snapshot_seq,
        wanted.op,
        images.event_time,
        {{ changelog_column_list(columns, 'images') }}
    from wanted
    inner join images on {{ same_image | join(' and ') }}
)

select
    cast(
        {{ plan.next_offset }} + row_number() over (order by imaged_changes.snapshot_seq, {{ changelog_column_list(keys, 'imaged_changes') }}, imaged_changes.op) - 1
        as bigint
    ) as `offset`,
    cast(imaged_changes.op as int) as op,
    pending_snapshots.system_time,
    imaged_changes.event_time,
    {{ changelog_column_list(columns, 'imaged_changes') }}
from imaged_changes
inner join pending_snapshots on imaged_changes.snapshot_seq = pending_snapshots.snapshot_seq
{%- endmacro %}

{#- The state before the first pending snapshot: the state table, plus changelog rows it has not absorbed. -#}
{% macro changelog_prior_state(source_relation, plan, narrow=false, restrict_to=none) -%}
    {%- set output = plan.key_columns if narrow else plan.columns -%}
    {%- set extra = '' if narrow else 'event_time, ' -%}
    {%- if plan.has_tail -%}
        {{ changelog_fold(plan.columns, plan.key_columns, plan.state_relation if plan.state_exists else none,
                          plan.state_offset, this, plan.state_offset, none,
                          changelog_row_hash(plan.compared, plan.column_types), narrow, restrict_to) }}
    {%- elif plan.state_exists -%}
        select {% if restrict_to is not none %}/*+ broadcast({{ restrict_to }}) */ {% endif %}{{ changelog_column_list(output, 'state_rows') }}, {{ extra }}state_rows.cl_row_hash
        from {{ plan.state_relation }} as state_rows
        {%- if restrict_to is not none %}
        left semi join {{ restrict_to }} on
            {%- for key in plan.key_columns %} {{ 'and ' if not loop.first }}state_rows.{{ adapter.quote(key) }} = {{ restrict_to }}.{{ adapter.quote(key) }}{% endfor %}
        {%- endif %}
        where state_rows.cl_state_offset = {{ plan.state_offset }}
    {%- else -%}
        select {{ changelog_column_list(output) }}, {{ '' if narrow else 'cast(null as timestamp) as event_time, ' }}cast(null as binary) as cl_row_hash
        from {{ source_relation }}
        where false
    {%- endif -%}
{%- endmacro %}

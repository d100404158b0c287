{#- Expectations of the hand-written samples/changelog exports: enabled by the test that loads them
    (var hand_written_crm_sample, with sample_inputs, which enables the crm_accounts model), not in
    the main job, which loads the generated exports. -#}
{{ config(enabled=var('sample_inputs', false) and var('hand_written_crm_sample', false)) }}
{#- Adventure Works (A-1005) is appended, retracted with its original event time, then appended again. -#}
with history as (
    select
        offset,
        op,
        event_time,
        row_number() over (order by offset) as position
    from {{ ref('crm_accounts') }}
    where account_id = 'A-1005'
),

expected as (
    select
        expected_history.position,
        expected_history.op,
        expected_history.event_time
    from
        values
        (1, 0, timestamp '2023-09-01 10:30:00'),
        (2, 1, timestamp '2023-09-01 10:30:00'),
        (3, 0, timestamp '2024-03-02 08:15:00') as expected_history (position, op, event_time)
)

select
    coalesce(expected.position, history.position) as position,
    expected.op as expected_op,
    history.op as actual_op
from expected
full outer join history on expected.position = history.position
where not (expected.op <=> history.op and expected.event_time <=> history.event_time)

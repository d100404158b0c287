{#- Expectations of the hand-written samples/changelog exports: enabled by the test that loads them
    (var hand_written_crm_sample, with sample_inputs, which enables the crm_accounts model), not in
    the main job, which loads the generated exports. -#}
{{ config(enabled=var('sample_inputs', false) and var('hand_written_crm_sample', false)) }}
{#-
  The CRM sample's four nightly snapshots, op by op: a fixed expectation, so a change in the
  changelog semantics shows up in the main job. Returns every (snapshot, op) whose count differs.
  Night 2: Contoso loses its industry (value -> NULL), Fabrikam churns, Litware gets an owner
  (NULL -> value), Adventure Works disappears, Alpine Ski House arrives. Night 3: Tailspin grows,
  Adventure Works comes back, Blue Yonder disappears. Night 4: Alpine Ski House is renamed and an
  account with nothing but an id arrives.
-#}
with expected as (
    select
        expected_counts.system_time,
        expected_counts.op,
        expected_counts.row_count
    from
        values
        (timestamp '2024-03-01 02:07:00', 0, 10),
        (timestamp '2024-03-02 02:06:30', 0, 1),
        (timestamp '2024-03-02 02:06:30', 1, 1),
        (timestamp '2024-03-02 02:06:30', 2, 3),
        (timestamp '2024-03-02 02:06:30', 3, 3),
        (timestamp '2024-03-03 02:08:10', 0, 1),
        (timestamp '2024-03-03 02:08:10', 1, 1),
        (timestamp '2024-03-03 02:08:10', 2, 1),
        (timestamp '2024-03-03 02:08:10', 3, 1),
        (timestamp '2024-03-04 02:05:45', 0, 1),
        (timestamp '2024-03-04 02:05:45', 2, 1),
        (timestamp '2024-03-04 02:05:45', 3, 1) as expected_counts (system_time, op, row_count)
),

actual as (
    select
        system_time,
        op,
        count(*) as row_count
    from {{ ref('crm_accounts') }}
    group by system_time, op
)

select
    coalesce(expected.system_time, actual.system_time) as system_time,
    coalesce(expected.op, actual.op) as op,
    expected.row_count as expected_rows,
    actual.row_count as actual_rows
from expected
full outer join actual
    on expected.system_time = actual.system_time and expected.op = actual.op
where not (expected.row_count <=> actual.row_count)

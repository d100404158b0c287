{{ config(materialized='windowed_append',
    input_window={'from': 'int_lineage_dataset_observations', 'column': 'ingest_seq', 'own_column': 'build_seq',
        'prepare': 'lineage_prepare_version_tails'}) }}

{#
  Dataset versions, written as revisions: a build recomputes, for each dataset with new
  observations, only the tail of its timeline that the new observations can change, and appends
  the result with `build_seq`. The tail starts (`tail_from`) at the earliest new observation (or
  at the earliest live version a new event extends); everything earlier is unchanged. The version
  current at the tail start is appended again as a carried row (`is_carried`): it is not
  recomputed, but the models after this one match the tail's sightings to it and continue its
  schema pointers. A build thus costs in proportion to new events; a late event reaching far back
  recomputes further back. `int_lineage_tail_ranges` says which revision of a timeline position
  is live.
#}
-- noqa: disable=LT02
{#- (sqlfluff indents the if and for blocks' bodies below as if their tags were SQL.)
    On a build that appends, the prepare step finds the tails and the live versions they read
    (lineage_prepare_version_tails); a first build recomputes every dataset from its start. #}
with
{%- if appends_to_existing() %}
{{ lineage_scratch_cte('tails', ['dataset_uuid', 'tail_from', 'carried_version_uuid']) }},

{{ lineage_scratch_cte('live_versions', lineage_version_columns()) }},
{%- else %}
tails as (
    select distinct
        dataset_uuid,
        {{ lineage_timeline_start() }} as tail_from,
        cast(null as string) as carried_version_uuid
    from {{ ref('int_lineage_dataset_observations') }}
    where {{ in_input_window() }}
),
{%- endif %}

dataset_observations as (
    select
        observations.dataset_uuid,
        observations.namespace_name,
        observations.dataset_name,
        observations.run_uuid,
        observations.event_time,
        observations.ingest_seq,
        observations.has_schema,
        observations.observed_schema_uuid,
        {{ lineage_timeline_key('observations.event_time', 'observations.ingest_seq',
            'if(' ~ lineage_is_output('observations.io_type', 'observations.event_kind') ~ ', 1, 0)') }}
            as timeline_key,
        {{ lineage_is_output('observations.io_type', 'observations.event_kind') }} as is_output,
        tails.tail_from,
        tails.carried_version_uuid is not null as has_carried_version
    from {{ ref('int_lineage_dataset_observations') }} as observations
    inner join tails
        on observations.dataset_uuid = tails.dataset_uuid
    where
        observations.event_time >= {{ input_window_value('time_bound', "timestamp'0001-01-01 00:00:00'") }}
        and tails.tail_from <= {{ lineage_timeline_key('observations.event_time', 'observations.ingest_seq',
            'if(' ~ lineage_is_output('observations.io_type', 'observations.event_kind') ~ ', 1, 0)') }}
),

-- Output versions grouped over their events in the tail. A run with events before the tail has
-- a live version from an earlier build that began before the tail: it is unchanged (a new event
-- of it would have moved the tail start before it), so it is left out.
output_versions as (
    select
        dataset_observations.dataset_uuid,
        {{ dataset_version_uuid('dataset_observations.namespace_name', 'dataset_observations.dataset_name',
            'dataset_observations.run_uuid') }} as dataset_version_uuid,
        dataset_observations.namespace_name,
        dataset_observations.dataset_name,
        dataset_observations.run_uuid,
        -- The first event by (time, ingest_seq), so that the version's key is a real position of the tail.
        min(struct(dataset_observations.event_time, dataset_observations.ingest_seq)).event_time as created_at,
        min(struct(dataset_observations.event_time, dataset_observations.ingest_seq)).ingest_seq
            as first_ingest_seq,
        max_by(
            dataset_observations.observed_schema_uuid,
            if(
                dataset_observations.has_schema,
                struct(dataset_observations.event_time, dataset_observations.ingest_seq),
                null
            )
        ) as own_schema_uuid,
        min(dataset_observations.tail_from) as tail_from
    from dataset_observations
    {%- if appends_to_existing() %}
        left anti join live_versions
            on
                dataset_observations.dataset_uuid = live_versions.dataset_uuid
                and dataset_observations.run_uuid = live_versions.run_uuid
                and live_versions.timeline_key < dataset_observations.tail_from
    {%- endif %}
    where dataset_observations.is_output
    group by
        dataset_observations.dataset_uuid,
        dataset_observations.namespace_name,
        dataset_observations.dataset_name,
        dataset_observations.run_uuid
),

tail_output_versions as (
    select
        dataset_uuid,
        dataset_version_uuid,
        namespace_name,
        dataset_name,
        run_uuid,
        created_at,
        first_ingest_seq,
        own_schema_uuid,
        {{ lineage_timeline_key('created_at', 'first_ingest_seq', '1') }} as timeline_key,
        tail_from
    from output_versions
    where {{ lineage_timeline_key('created_at', 'first_ingest_seq', '1') }} >= tail_from
),

first_outputs as (
    select
        dataset_uuid,
        min(timeline_key) as first_output_key
    from tail_output_versions
    group by dataset_uuid
),

-- Sightings before the dataset's first output version belong to its input version; it can
-- only change when no live version precedes the tail (there is nothing to carry).
input_versions as (
    select
        dataset_observations.dataset_uuid,
        {{ dataset_version_uuid('min(dataset_observations.namespace_name)',
            'min(dataset_observations.dataset_name)', "''") }} as dataset_version_uuid,
        min(dataset_observations.namespace_name) as namespace_name,
        min(dataset_observations.dataset_name) as dataset_name,
        cast(null as string) as run_uuid,
        min(struct(dataset_observations.event_time, dataset_observations.ingest_seq)).event_time as created_at,
        min(struct(dataset_observations.event_time, dataset_observations.ingest_seq)).ingest_seq
            as first_ingest_seq,
        cast(null as string) as own_schema_uuid,
        {{ lineage_timeline_key(
            'min(struct(dataset_observations.event_time, dataset_observations.ingest_seq)).event_time',
            'min(struct(dataset_observations.event_time, dataset_observations.ingest_seq)).ingest_seq', '0') }}
            as timeline_key,
        min(dataset_observations.tail_from) as tail_from
    from dataset_observations
    left join first_outputs
        on dataset_observations.dataset_uuid = first_outputs.dataset_uuid
    where
        not dataset_observations.is_output
        and not dataset_observations.has_carried_version
        and (
            first_outputs.first_output_key is null
            or dataset_observations.timeline_key < first_outputs.first_output_key
        )
    group by dataset_observations.dataset_uuid
){%- if appends_to_existing() %},

carried_versions as (
    select
        {%- for column in lineage_version_columns() %}
        live_versions.{{ column }},
        {%- endfor %}
        tails.tail_from
    from tails
    inner join live_versions
        on tails.carried_version_uuid = live_versions.dataset_version_uuid
){%- endif %}

{#- The recomputed versions, then the carried ones: one column list for every branch. -#}
{%- set parts = [('tail_output_versions', 'false'), ('input_versions', 'false')] %}
{%- if appends_to_existing() %}{% do parts.append(('carried_versions', 'true')) %}{% endif %}
{%- for relation, is_carried in parts %}
select
    {%- for column in lineage_version_columns() + ['tail_from'] %}
    {{ column }},
    {%- endfor %}
    {{ is_carried }} as is_carried,
    {{ input_window_high() }} as build_seq
from {{ relation }}
{%- if not loop.last %}
union all
{%- endif %}
{%- endfor %}

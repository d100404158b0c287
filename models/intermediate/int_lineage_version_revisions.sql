{{ config(materialized='incremental', incremental_strategy='append') }}

{#
  Dataset versions, written as revisions: a build recomputes, for each dataset with new
  observations, only the tail of its timeline that the new observations can change, and appends
  the result with `build_seq`. The tail starts (`tail_from`) at the output version current just
  before the earliest new observation (or before the earliest version a new event extends);
  everything earlier is unchanged. In-order events make the tail the dataset's current version,
  so a build costs in proportion to new events; a late event reaching far back recomputes
  further back, and a sighting before every output recomputes the whole dataset.
  `int_lineage_tail_ranges` says which revision of a timeline position is live.
#}
{%- set build_seq = lineage_build_seq() -%}
{%- set built_seq = lineage_watermark('build_seq') -%}

with new_observations as (
    select
        dataset_uuid,
        run_uuid,
        {{ lineage_timeline_key('event_time', 'ingest_seq', 'if(' ~ lineage_is_output() ~ ', 1, 0)') }}
            as timeline_key,
        {{ lineage_is_output() }} as is_output
    from {{ ref('int_lineage_dataset_observations') }}
    where ingest_seq > {{ built_seq }}
),

{% if is_incremental() %}
    previous_revisions as (
        select
            revisions.dataset_uuid,
            revisions.run_uuid,
            revisions.timeline_key,
            revisions.tail_from,
            revisions.build_seq
        from {{ this }} as revisions
        left semi join new_observations
            on revisions.dataset_uuid = new_observations.dataset_uuid
    ),

    previous_builds as (
        select
            dataset_uuid,
            build_seq,
            min(tail_from) as tail_from
        from previous_revisions
        group by dataset_uuid, build_seq
    ),

    previous_ranges as (
        select
            dataset_uuid,
            build_seq,
            min(tail_from) over (
                partition by dataset_uuid order by build_seq
                rows between 1 following and unbounded following
            ) as superseded_from
        from previous_builds
    ),

    live_output_versions as (
        select
            previous_revisions.dataset_uuid,
            previous_revisions.run_uuid,
            previous_revisions.timeline_key
        from previous_revisions
        inner join previous_ranges
            on
                previous_revisions.dataset_uuid = previous_ranges.dataset_uuid
                and previous_revisions.build_seq = previous_ranges.build_seq
        where
            previous_revisions.run_uuid is not null
            and (
                previous_ranges.superseded_from is null
                or previous_revisions.timeline_key < previous_ranges.superseded_from
            )
    ),

    -- A run with new events may move its version earlier (a late START), so its old position counts too.
    extended_versions as (
        select
            live_output_versions.dataset_uuid,
            live_output_versions.timeline_key
        from live_output_versions
        left semi join new_observations
            on
                live_output_versions.dataset_uuid = new_observations.dataset_uuid
                and live_output_versions.run_uuid = new_observations.run_uuid
                and new_observations.is_output
    ),

    change_points as (
        select
            dataset_uuid,
            timeline_key
        from new_observations
        union all
        select
            dataset_uuid,
            timeline_key
        from extended_versions
    ),

    earliest_changes as (
        select
            dataset_uuid,
            min(timeline_key) as changed_from
        from change_points
        group by dataset_uuid
    ),

    tails as (
        select
            earliest_changes.dataset_uuid,
            coalesce(max(live_output_versions.timeline_key), {{ lineage_timeline_start() }}) as tail_from
        from earliest_changes
        left join live_output_versions
            on
                earliest_changes.dataset_uuid = live_output_versions.dataset_uuid
                and live_output_versions.timeline_key <= earliest_changes.changed_from
        group by earliest_changes.dataset_uuid
    ),
{% else %}
    tails as (
        select distinct
            dataset_uuid,
            {{ lineage_timeline_start() }} as tail_from
        from new_observations
    ),
{% endif %}

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
        tails.tail_from
    from {{ ref('int_lineage_dataset_observations') }} as observations
    inner join tails
        on observations.dataset_uuid = tails.dataset_uuid
),

-- The runs that wrote the dataset within the tail. Their versions are grouped over all of their
-- events; one that began before the tail is not part of this revision (it is unchanged and
-- stays live), which the key filter below drops.
tail_runs as (
    select distinct
        dataset_uuid,
        run_uuid
    from dataset_observations
    where is_output and timeline_key >= tail_from
),

output_versions as (
    select
        dataset_observations.dataset_uuid,
        {{ dataset_version_uuid('dataset_observations.namespace_name', 'dataset_observations.dataset_name',
            'dataset_observations.run_uuid') }} as dataset_version_uuid,
        dataset_observations.namespace_name,
        dataset_observations.dataset_name,
        dataset_observations.run_uuid,
        min(dataset_observations.event_time) as created_at,
        min(dataset_observations.ingest_seq) as first_ingest_seq,
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
    left semi join tail_runs
        on
            dataset_observations.dataset_uuid = tail_runs.dataset_uuid
            and dataset_observations.run_uuid = tail_runs.run_uuid
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
-- only change when the tail covers the whole dataset.
input_versions as (
    select
        dataset_observations.dataset_uuid,
        {{ dataset_version_uuid('min(dataset_observations.namespace_name)',
            'min(dataset_observations.dataset_name)', "''") }} as dataset_version_uuid,
        min(dataset_observations.namespace_name) as namespace_name,
        min(dataset_observations.dataset_name) as dataset_name,
        cast(null as string) as run_uuid,
        min(dataset_observations.event_time) as created_at,
        min(dataset_observations.ingest_seq) as first_ingest_seq,
        cast(null as string) as own_schema_uuid,
        {{ lineage_timeline_key('min(dataset_observations.event_time)', 'min(dataset_observations.ingest_seq)', '0') }}
            as timeline_key,
        min(dataset_observations.tail_from) as tail_from
    from dataset_observations
    left join first_outputs
        on dataset_observations.dataset_uuid = first_outputs.dataset_uuid
    where
        not dataset_observations.is_output
        and dataset_observations.tail_from = {{ lineage_timeline_start() }}
        and (
            first_outputs.first_output_key is null
            or dataset_observations.timeline_key < first_outputs.first_output_key
        )
    group by dataset_observations.dataset_uuid
)

select
    dataset_version_uuid,
    dataset_uuid,
    namespace_name,
    dataset_name,
    run_uuid,
    created_at,
    first_ingest_seq,
    own_schema_uuid,
    timeline_key,
    tail_from,
    {{ build_seq }} as build_seq
from tail_output_versions
union all
select
    dataset_version_uuid,
    dataset_uuid,
    namespace_name,
    dataset_name,
    run_uuid,
    created_at,
    first_ingest_seq,
    own_schema_uuid,
    timeline_key,
    tail_from,
    {{ build_seq }} as build_seq
from input_versions

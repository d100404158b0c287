{{ config(materialized='windowed_append',
    input_window={'from': 'int_lineage_version_revisions', 'column': 'build_seq', 'own_column': 'build_seq',
        'each_position': true, 'prepare': 'lineage_prepare_sighting_bound'}) }}

{#
  Every sighting of a dataset that is not a run's output (an input, a DatasetEvent, a JobEvent's
  datasets), matched to the dataset version current at that moment: the latest output version
  before it on the timeline (event time, ingest_seq, and an input read by the run that writes the
  same dataset sorts first: it read the previous version). A sighting before any output belongs
  to the dataset's input version (run_uuid null). Written as revisions: only the sightings in the
  tails that int_lineage_version_revisions recomputed in this build, matched to that build's versions
  (its carried rows are the versions current at each tail start). One statement per build of
  the versions (each_position).
#}
with build_versions as (
    {{ input_window_rows('int_lineage_version_revisions', [
        'dataset_uuid', 'dataset_version_uuid', 'run_uuid', 'timeline_key', 'tail_from']) }}
),

tails as (
    select
        dataset_uuid,
        min(tail_from) as tail_from
    from build_versions
    group by dataset_uuid
),

sightings as (
    select
        observations.dataset_uuid,
        observations.namespace_name,
        observations.dataset_name,
        observations.run_uuid,
        observations.io_type,
        observations.event_kind,
        observations.event_time,
        observations.ingest_seq,
        observations.observed_schema_uuid,
        {{ lineage_timeline_key('observations.event_time', 'observations.ingest_seq', '0') }} as timeline_key
    from {{ ref('int_lineage_dataset_observations') }} as observations
    inner join tails
        on observations.dataset_uuid = tails.dataset_uuid
    where
        observations.event_time >= {{ input_window_value('time_bound', "timestamp'0001-01-01 00:00:00'") }}
        -- what the versions of this build were computed from
        and observations.ingest_seq <= {{ input_window_high() }}
        and not {{ lineage_is_output('observations.io_type', 'observations.event_kind') }}
        and {{ lineage_timeline_key('observations.event_time', 'observations.ingest_seq', '0') }} >= tails.tail_from
),

timeline as (
    select
        dataset_uuid,
        timeline_key,
        dataset_version_uuid,
        cast(null as string) as namespace_name,
        cast(null as string) as dataset_name,
        cast(null as string) as run_uuid,
        cast(null as string) as io_type,
        cast(null as string) as event_kind,
        cast(null as timestamp) as event_time,
        cast(null as bigint) as ingest_seq,
        cast(null as string) as observed_schema_uuid
    from build_versions
    where run_uuid is not null
    union all
    select
        dataset_uuid,
        timeline_key,
        cast(null as string) as dataset_version_uuid,
        namespace_name,
        dataset_name,
        run_uuid,
        io_type,
        event_kind,
        event_time,
        ingest_seq,
        observed_schema_uuid
    from sightings
),

timeline_matched as (
    select
        dataset_uuid,
        timeline_key,
        namespace_name,
        dataset_name,
        run_uuid,
        io_type,
        event_kind,
        event_time,
        ingest_seq,
        observed_schema_uuid,
        dataset_version_uuid is null as is_sighting,
        last(dataset_version_uuid, true) over (
            partition by dataset_uuid
            order by timeline_key
            rows between unbounded preceding and current row
        ) as output_version_uuid
    from timeline
)

select
    dataset_uuid,
    namespace_name,
    dataset_name,
    run_uuid,
    io_type,
    event_kind,
    event_time as sighted_at,
    ingest_seq as sighted_at_seq,
    observed_schema_uuid,
    coalesce(
        output_version_uuid,
        {{ dataset_version_uuid('namespace_name', 'dataset_name', "''") }}
    ) as dataset_version_uuid,
    output_version_uuid is null as is_input_version,
    timeline_key,
    {{ input_window_high() }} as build_seq
from timeline_matched
where is_sighting

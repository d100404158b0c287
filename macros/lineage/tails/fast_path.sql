{#
  The fast path of the tail search of int_lineage_version_revisions, one row per dataset d with
  observations in the window:

      changed_from(d)  min timeline key of d's new observations
      head(d)          d's last version after the last recorded build that touched it
                       (int_lineage_build_tails.head)
      is_fast(d)       int_lineage_build_tails is complete for d (a row with a head, or no row:
                       a new dataset)
                       and no run with a new output event already has a version of d
                       and no earlier observation of d lies at or after changed_from(d)

  When is_fast(d), d's tail is (changed_from(d), carried head(d)) and the live versions it needs
  are head(d) alone: no revision history is read.
#}

{#- The query of the `tail_candidates` scratch relation: reads only the new observations, the
    observations from the earliest new event time on, and one column of the revisions. -#}
{% macro lineage_tail_candidates(window, recorded) -%}
    {%- set new_from = scalar_value('select cast(min(event_time) as string) from '
        ~ ref('int_lineage_dataset_observations') ~ ' where ingest_seq > ' ~ window.low) -%}
    {%- set observation_key = lineage_timeline_key('observations.event_time', 'observations.ingest_seq',
        'if(' ~ lineage_is_output('observations.io_type', 'observations.event_kind') ~ ', 1, 0)') -%}
    with new_observations as (
        select
            observations.dataset_uuid,
            observations.namespace_name,
            observations.dataset_name,
            observations.run_uuid,
            {{ observation_key }} as timeline_key,
            {{ lineage_is_output('observations.io_type', 'observations.event_kind') }} as is_output
        from {{ ref('int_lineage_dataset_observations') }} as observations
        where observations.ingest_seq > {{ window.low }}
    ),

    touched_datasets as (
        select
            dataset_uuid,
            min(timeline_key) as changed_from
        from new_observations
        group by dataset_uuid
    ),

    new_output_versions as (
        select distinct
            dataset_uuid,
            {{ dataset_version_uuid('namespace_name', 'dataset_name', 'run_uuid') }} as dataset_version_uuid
        from new_observations
        where is_output
    ),

    -- A version, once made, stays (a late event can only move it), so any revision row counts.
    -- The new versions are the side to broadcast: left to its size estimates, Spark broadcast
    -- the revision history (every version uuid) instead, a cost that grew with every build.
    extended_datasets as (
        select {{ lineage_broadcast_new(window, 'new_output_versions') }} distinct new_output_versions.dataset_uuid
        from {{ this }} as revisions
        inner join new_output_versions
            on revisions.dataset_version_uuid = new_output_versions.dataset_version_uuid
    ),

    overtaken_datasets as (
        select {{ lineage_broadcast_new(window, 'touched_datasets') }} distinct touched_datasets.dataset_uuid
        from {{ ref('int_lineage_dataset_observations') }} as observations
        inner join touched_datasets
            on observations.dataset_uuid = touched_datasets.dataset_uuid
        where
            observations.event_time >= timestamp'{{ new_from }}'
            and observations.ingest_seq <= {{ window.low }}
            and {{ observation_key }} >= touched_datasets.changed_from
    ),

    last_builds as (
        select {{ lineage_broadcast_new(window, 'touched_datasets') }}
            build_tails.dataset_uuid,
            max_by(build_tails.head, build_tails.build_seq) as head
        from {{ recorded.relation }} as build_tails
        inner join touched_datasets
            on build_tails.dataset_uuid = touched_datasets.dataset_uuid
        where build_tails.build_seq <= {{ recorded.through }}
        group by build_tails.dataset_uuid
    )

    -- One row per touched dataset on every side: broadcast joins, not four shuffles and sorts.
    select {{ lineage_broadcast_new(window, 'last_builds, extended_datasets, overtaken_datasets') }}
        touched_datasets.dataset_uuid,
        touched_datasets.changed_from,
        last_builds.head,
        (last_builds.dataset_uuid is null or last_builds.head is not null)
        and extended_datasets.dataset_uuid is null
        and overtaken_datasets.dataset_uuid is null as is_fast
    from touched_datasets
    left join last_builds
        on touched_datasets.dataset_uuid = last_builds.dataset_uuid
    left join extended_datasets
        on touched_datasets.dataset_uuid = extended_datasets.dataset_uuid
    left join overtaken_datasets
        on touched_datasets.dataset_uuid = overtaken_datasets.dataset_uuid
{%- endmacro %}

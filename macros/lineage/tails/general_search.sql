{#
  The general tail search of int_lineage_version_revisions, for datasets the fast path cannot take
  (lineage_tail_candidates).

      earliest change  c(d) = min over d's new observations, and over the timeline keys of d's live
                       versions whose run has a new output event (a late START moves a version
                       earlier), of the timeline key
      tail             (d, c(d), the live version of d with the greatest key below c(d), if any)
      live versions    the non-carried revision rows of d not superseded by a later build's tail:
                       row r of build b is live when no build after b starts a tail at or before r

  The revision rows of d are read once (previous_revisions, restricted to the touched datasets);
  the builds' tail starts come from int_lineage_build_tails and, for builds it has not recorded
  yet, from the revisions themselves.
#}

{#
  CTEs (no leading `with`) ending in `tails` (dataset_uuid, tail_from, carried_version_uuid), with
  `live_versions` among them. `recorded`: lineage_recorded_build_tails. `only_datasets`: a
  parenthesised query of dataset_uuid restricting the search, or none. `earliest_changes`: a
  relation that already holds them, or none.
#}
{% macro lineage_general_tail_ctes(window, recorded, only_datasets=none, earliest_changes=none) -%}
    new_observations as (
        select
            dataset_uuid,
            run_uuid,
            {{ lineage_timeline_key('event_time', 'ingest_seq', 'if(' ~ lineage_is_output() ~ ', 1, 0)') }}
                as timeline_key,
            {{ lineage_is_output() }} as is_output
        from {{ ref('int_lineage_dataset_observations') }}
        where
            {{ in_input_window() }}
            {%- if only_datasets is not none %}
            and dataset_uuid in {{ only_datasets }}
            {%- endif %}
    ),

    -- At most one row per dataset, so broadcasting it spares a shuffle of the whole revision table.
    touched_datasets as (
        select distinct dataset_uuid
        from new_observations
    ),

    previous_revisions as (
        select /*+ broadcast(touched_datasets) */
            {%- for column in lineage_version_columns() %}
            revisions.{{ column }},
            {%- endfor %}
            revisions.tail_from,
            revisions.is_carried,
            revisions.build_seq
        from {{ this }} as revisions
        left semi join touched_datasets
            on revisions.dataset_uuid = touched_datasets.dataset_uuid
    ),

    previous_builds as (
        {%- if recorded.through >= 0 %}
        select /*+ broadcast(touched_datasets) */
            build_tails.dataset_uuid,
            build_tails.build_seq,
            build_tails.tail_from
        from {{ recorded.relation }} as build_tails
        left semi join touched_datasets
            on build_tails.dataset_uuid = touched_datasets.dataset_uuid
        where build_tails.build_seq <= {{ recorded.through }}
        {%- endif %}
        {%- if recorded.through < window.low %}
        {{- '\n        union all' if recorded.through >= 0 }}
        -- Builds int_lineage_build_tails has not recorded yet (it failed or was not selected).
        -- Grouping by tail_from (one per build and dataset) keeps this a hash aggregation.
        select
            dataset_uuid,
            build_seq,
            tail_from
        from previous_revisions
        where build_seq > {{ recorded.through }}
        group by dataset_uuid, build_seq, tail_from
        {%- endif %}
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

    live_versions as (
        {{ lineage_previous_live_rows('previous_revisions') }}
    ),

    -- A run with new events may move its version earlier (a late START), so its old position counts too.
    new_output_runs as (
        select distinct
            dataset_uuid,
            run_uuid
        from new_observations
        where is_output
    ),

    extended_versions as (
        select {{ lineage_broadcast_new(window, 'new_output_runs') }}
            live_versions.dataset_uuid,
            live_versions.timeline_key
        from live_versions
        left semi join new_output_runs
            on
                live_versions.dataset_uuid = new_output_runs.dataset_uuid
                and live_versions.run_uuid = new_output_runs.run_uuid
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
        {%- if earliest_changes is not none %}
        select
            dataset_uuid,
            changed_from
        from {{ earliest_changes }}
        {%- else %}
        select
            dataset_uuid,
            min(timeline_key) as changed_from
        from change_points
        group by dataset_uuid
        {%- endif %}
    ),

    -- One row per touched dataset: broadcast, the live versions are joined where they lie.
    carried_versions as (
        select /*+ broadcast(earliest_changes) */
            earliest_changes.dataset_uuid,
            max_by(live_versions.dataset_version_uuid, live_versions.timeline_key) as carried_version_uuid
        from live_versions
        inner join earliest_changes
            on
                live_versions.dataset_uuid = earliest_changes.dataset_uuid
                and live_versions.timeline_key < earliest_changes.changed_from
        group by earliest_changes.dataset_uuid
    ),

    tails as (
        select
            earliest_changes.dataset_uuid,
            earliest_changes.changed_from as tail_from,
            carried_versions.carried_version_uuid
        from earliest_changes
        left join carried_versions
            on earliest_changes.dataset_uuid = carried_versions.dataset_uuid
    )
{%- endmacro %}

{#
  Runs the general search for the datasets of `only_datasets` (none: every dataset with new
  observations) into stored scratch relations: the earliest changes (the tails read them twice,
  and they read the live versions, so stored first the live versions are scanned once for them and
  once for the carried versions), the tails, and the live versions still read
  (lineage_needed_live_versions_ctes). Returns {tails, live_versions, time_bound, scratch}.
#}
{% macro lineage_prepare_general_tails(window, recorded, only_datasets) -%}
    {%- set earliest_changes = windowed_append_scratch('earliest_changes',
        'with ' ~ lineage_general_tail_ctes(window, recorded, only_datasets)
        ~ ' select dataset_uuid, changed_from from earliest_changes') -%}
    {%- set tails = windowed_append_scratch('general_tails',
        'with ' ~ lineage_general_tail_ctes(window, recorded, only_datasets, earliest_changes)
        ~ ' select dataset_uuid, tail_from, carried_version_uuid from tails') -%}
    {%- set bound = scalar_value('select cast(coalesce(min(tail_from.at_time), timestamp\'9999-12-31 00:00:00\') as string) from '
        ~ tails) -%}
    {%- set time_bound = "timestamp'" ~ bound ~ "'" -%}
    {%- set live_versions = windowed_append_scratch('general_live_versions',
        'with ' ~ lineage_general_tail_ctes(window, recorded, only_datasets) ~ ', '
        ~ lineage_needed_live_versions_ctes(tails, time_bound)
        ~ ' select ' ~ lineage_version_columns() | join(', ') ~ ' from needed_live_versions') -%}
    {{ return({'tails': tails, 'live_versions': live_versions, 'time_bound': time_bound,
        'scratch': ['earliest_changes', 'general_tails', 'general_live_versions']}) }}
{%- endmacro %}

{#
  CTEs (after lineage_general_tail_ctes) ending in `needed_live_versions`: the live versions the
  statement still reads once the tails are known. Those are the versions of runs with observations
  in a tail (an earlier version of such a run keeps its events in the tail out of the recompute)
  and the carried ones. Only their revisions go through the liveness join, so the scratch relation
  holds a few rows per touched dataset instead of its whole history.
#}
{% macro lineage_needed_live_versions_ctes(tails_relation, time_bound) -%}
    tail_runs as (
        select distinct
            observations.dataset_uuid,
            observations.run_uuid
        from {{ ref('int_lineage_dataset_observations') }} as observations
        inner join {{ tails_relation }} as build_tails
            on observations.dataset_uuid = build_tails.dataset_uuid
        where
            observations.event_time >= {{ time_bound }}
            and observations.run_uuid is not null
            and build_tails.tail_from <= {{ lineage_timeline_key('observations.event_time', 'observations.ingest_seq',
                'if(' ~ lineage_is_output('observations.io_type', 'observations.event_kind') ~ ', 1, 0)') }}
    ),

    carried_version_uuids as (
        select distinct carried_version_uuid
        from {{ tails_relation }}
        where carried_version_uuid is not null
    ),

    -- Both lists are distinct, so each revision row matches at most once: one scan of the
    -- revisions serves both, where a union of two semi-joins scanned them twice.
    needed_revisions as (
        select /*+ broadcast(tail_runs, carried_version_uuids) */
            {%- for column in lineage_version_columns() %}
            previous_revisions.{{ column }},
            {%- endfor %}
            previous_revisions.is_carried,
            previous_revisions.build_seq
        from previous_revisions
        left join tail_runs
            on
                previous_revisions.dataset_uuid = tail_runs.dataset_uuid
                and previous_revisions.run_uuid = tail_runs.run_uuid
        left join carried_version_uuids
            on previous_revisions.dataset_version_uuid = carried_version_uuids.carried_version_uuid
        where
            tail_runs.run_uuid is not null
            or carried_version_uuids.carried_version_uuid is not null
    ),

    needed_live_versions as (
        {{ lineage_previous_live_rows('needed_revisions') }}
    )
{%- endmacro %}

{#- The live, non-carried version rows of a CTE of earlier builds' revisions (it needs the
    `previous_ranges` CTE of lineage_general_tail_ctes). -#}
{% macro lineage_previous_live_rows(revisions_cte) -%}
    select
        {%- for column in lineage_version_columns() %}
        {{ revisions_cte }}.{{ column }}{{ ',' if not loop.last }}
        {%- endfor %}
    from {{ revisions_cte }}
    inner join previous_ranges
        on
            {{ revisions_cte }}.dataset_uuid = previous_ranges.dataset_uuid
            and {{ revisions_cte }}.build_seq = previous_ranges.build_seq
    where
        not {{ revisions_cte }}.is_carried
        and (
            previous_ranges.superseded_from is null
            or {{ revisions_cte }}.timeline_key < previous_ranges.superseded_from
        )
{%- endmacro %}

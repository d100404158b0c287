{#
  CTEs (no leading `with`) that find, for each dataset with observations past `built_seq`, where
  this build's recomputed tail of its timeline starts: `tails` (dataset_uuid, tail_from,
  carried_version_uuid). The tail starts at the earliest new observation, or at the earliest live
  version a new event extends; every row before it stays as earlier builds wrote it. The carried
  version is the live version (output or input) current at the tail start: later models continue
  its sightings and schema pointers from there instead of recomputing it. On an incremental build
  they also give `live_versions`, the live versions of earlier builds of the touched datasets.
  `prepared` (from lineage_prepare_tails) names relations that already hold both; the CTEs then
  read them instead of computing them again. Its `only_datasets` (a parenthesised query of
  dataset_uuid, optional) restricts the search to those datasets.
#}
{% macro lineage_tail_ctes(window, prepared=none) -%}
    {%- set built_seq = window.low -%}
    {%- if prepared is not none and prepared.tails is not none -%}
    {{ lineage_prepared_live_cte(prepared) }},

    tails as (
        select
            dataset_uuid,
            tail_from,
            carried_version_uuid
        from {{ prepared.tails }}
    )
    {%- else -%}
    new_observations as (
        select
            dataset_uuid,
            run_uuid,
            {{ lineage_timeline_key('event_time', 'ingest_seq', 'if(' ~ lineage_is_output() ~ ', 1, 0)') }}
                as timeline_key,
            {{ lineage_is_output() }} as is_output
        from {{ ref('int_lineage_dataset_observations') }}
        where
            ingest_seq > {{ built_seq }}
            {%- if prepared is not none and prepared.get('only_datasets') is not none %}
            and dataset_uuid in {{ prepared.only_datasets }}
            {%- endif %}
    ),
    {%- if is_incremental() %}
    {%- if prepared is not none and prepared.live_versions is not none %}

    {{ lineage_prepared_live_cte(prepared) }},
    {%- else %}

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

    {%- set recorded = lineage_recorded_build_tails(built_seq) %}

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
        {%- if recorded.through < 0 or recorded.through < built_seq %}
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
    {%- endif %}

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
        {%- if prepared is not none and prepared.earliest_changes is not none %}
        select
            dataset_uuid,
            changed_from
        from {{ prepared.earliest_changes }}
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
    {%- else %}

    tails as (
        select distinct
            dataset_uuid,
            {{ lineage_timeline_start() }} as tail_from,
            cast(null as string) as carried_version_uuid
        from new_observations
    )
    {%- endif %}
    {%- endif %}
{%- endmacro %}

{#- The columns of a dataset version revision that describe the version itself. -#}
{% macro lineage_version_columns() -%}
    {{ return([
        'dataset_version_uuid', 'dataset_uuid', 'namespace_name', 'dataset_name', 'run_uuid', 'created_at',
        'first_ingest_seq', 'own_schema_uuid', 'timeline_key',
    ]) }}
{%- endmacro %}

{#- The live, non-carried version rows of a CTE of earlier builds' revisions (it needs the
    `previous_ranges` CTE of lineage_tail_ctes). -#}
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

{#- The live versions CTE read from the scratch table lineage_prepare_tails wrote. -#}
{% macro lineage_prepared_live_cte(prepared) -%}
    live_versions as (
        select
            {%- for column in lineage_version_columns() %}
            {{ column }}{{ ',' if not loop.last }}
            {%- endfor %}
        from {{ prepared.live_versions }}
    )
{%- endmacro %}

{#
  On an incremental build with new observations, computes this build's tails and the live
  versions it still reads once, before the model's query: the model reads them, and so does the
  time bound. Returns {tails, live_versions, time_bound}: relations (a table name or a
  parenthesised query; none on a full build, without new input, or when dbt only compiles) and
  the earliest event time of any tail as a timestamp literal, so the observation scan prunes
  Parquet files and row groups.

  Most datasets take a fast path (lineage_tail_candidates): when all of a dataset's new events
  come after its history, the tail starts at the earliest new event and the version carried into
  it is the dataset's last version, which int_lineage_build_tails keeps (`head`); nothing of the
  revision history is read. The others (late events, new events of runs that already have a
  version) go through the general search (lineage_prepare_general_tails), restricted to them.
#}
{% macro lineage_prepare_tails(window) -%}
    {%- set prepared = {'earliest_changes': none, 'tails': none, 'live_versions': none,
        'time_bound': "timestamp'0001-01-01 00:00:00'"} -%}
    {%- if not execute or not is_incremental()
        or not lineage_relation_exists(ref('int_lineage_dataset_observations')) -%}
        {{ return(prepared) }}
    {%- endif -%}
    {%- if not window.has_new -%}
        {%- do prepared.update({'time_bound': "timestamp'9999-12-31 00:00:00'"}) -%}
        {{ return(prepared) }}
    {%- endif -%}
    {%- set recorded = lineage_recorded_build_tails(window.low) -%}
    {%- if recorded.through < window.low
        or 'head' not in adapter.get_columns_in_relation(recorded.relation) | map(attribute='name') | list -%}
        {#- Builds the table has not recorded (an unselected model, an upgrade), or a table from
            before `head` (int_lineage_build_tails adds the column after this model): no heads. -#}
        {{ return(lineage_prepare_general_tails(window, prepared, none)) }}
    {%- endif -%}
    {%- set candidates = lineage_scratch_table_name('tail_candidates') -%}
    {%- do lineage_write_scratch_table(candidates, lineage_tail_candidates(window, recorded)) -%}
    {%- set summary = run_query('select count_if(not is_fast), '
        ~ 'cast(min(if(is_fast, changed_from.at_time, null)) as string) from ' ~ candidates).rows[0] -%}
    {%- set fast_tails -%}
        select dataset_uuid, changed_from as tail_from, head.dataset_version_uuid as carried_version_uuid
        from {{ candidates }} where is_fast
    {%- endset -%}
    {%- set fast_live -%}
        select head.* from {{ candidates }} where is_fast and head is not null
    {%- endset -%}
    {%- if summary[0] == 0 -%}
        {%- do prepared.update({'tails': '(' ~ fast_tails ~ ')', 'live_versions': '(' ~ fast_live ~ ')',
            'time_bound': "timestamp'" ~ summary[1] ~ "'"}) -%}
        {{ return(prepared) }}
    {%- endif -%}
    {%- set general = lineage_prepare_general_tails(window, prepared,
        '(select dataset_uuid from ' ~ candidates ~ ' where not is_fast)') -%}
    {%- set bounds = ["timestamp'" ~ summary[1] ~ "'" if summary[1] is not none else none, general.time_bound]
        | reject('none') | list -%}
    {%- do prepared.update({
        'tails': '(' ~ fast_tails ~ ' union all select dataset_uuid, tail_from, carried_version_uuid from '
            ~ general.tails ~ ')',
        'live_versions': '(' ~ fast_live ~ ' union all select ' ~ lineage_version_columns() | join(', ')
            ~ ' from ' ~ general.live_versions ~ ')',
        'time_bound': bounds | min}) -%}
    {{ return(prepared) }}
{%- endmacro %}

{#
  The query of the `tail_candidates` scratch table: one row per dataset with new observations,
  with where its new events start (`changed_from`), its last version (`head`, from
  int_lineage_build_tails) and whether the fast path of lineage_prepare_tails holds (`is_fast`):
  the dataset's table of build tails is complete (a row with a head, or no row at all: a new
  dataset), no run with a new output already has a version of it (its version would move or
  grow), and no earlier observation lies at or after the new events (the tail would hold old
  events). Reads only the new observations, the observations from the earliest new event time
  on, and one column of the revisions.
#}
{% macro lineage_tail_candidates(window, recorded) -%}
    {%- set new_from = run_query('select cast(min(event_time) as string) from '
        ~ ref('int_lineage_dataset_observations') ~ ' where ingest_seq > ' ~ window.low).columns[0].values()[0] -%}
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

{#
  The general tail search of lineage_prepare_tails, for the datasets of `only_datasets` (a
  parenthesised query of dataset_uuid; none: every dataset with new observations): computes the
  tails and the live versions still read (lineage_needed_live_versions_ctes) once, into scratch
  Parquet tables next to the model (lineage_drop_scratch_tables drops them in the post-hook).
  Tables, not cached temporary views: Spark does not match a cached view defined with a CTE when
  a query reads it again (SPARK-46741), so every reference silently recomputed the whole chain.
  Returns `prepared` updated with the two table names and the time bound of their tails.
#}
{% macro lineage_prepare_general_tails(window, prepared, only_datasets) -%}
    {%- set names = {'earliest_changes': lineage_scratch_table_name('earliest_changes'),
        'tails': lineage_scratch_table_name('build_tails'),
        'live_versions': lineage_scratch_table_name('live_versions')} -%}
    {%- set restricted = {'earliest_changes': none, 'tails': none, 'live_versions': none,
        'only_datasets': only_datasets} -%}
    {#- The tails read the earliest changes twice (and those read the live versions): stored
        first, the live versions are scanned once for them and once for the carried versions. -#}
    {%- do lineage_write_scratch_table(names.earliest_changes, 'with ' ~ lineage_tail_ctes(window, restricted)
        ~ ' select dataset_uuid, changed_from from earliest_changes') -%}
    {%- do lineage_write_scratch_table(names.tails, 'with '
        ~ lineage_tail_ctes(window, dict(restricted, earliest_changes=names.earliest_changes))
        ~ ' select dataset_uuid, tail_from, carried_version_uuid from tails') -%}
    {%- set bound = run_query('select cast(coalesce(min(tail_from.at_time), timestamp\'9999-12-31 00:00:00\') as string) from '
        ~ names.tails).columns[0].values()[0] -%}
    {%- set time_bound = "timestamp'" ~ bound ~ "'" -%}
    {%- do lineage_write_scratch_table(names.live_versions, 'with ' ~ lineage_tail_ctes(window, restricted) ~ ', '
        ~ lineage_needed_live_versions_ctes(names.tails, time_bound)
        ~ ' select ' ~ lineage_version_columns() | join(', ') ~ ' from needed_live_versions') -%}
    {{ return(dict(prepared, tails=names.tails, live_versions=names.live_versions, time_bound=time_bound)) }}
{%- endmacro %}

{#
  CTEs (after lineage_tail_ctes) ending in `needed_live_versions`: the live versions the model
  still reads once the tails are known. Those are the versions of runs with observations in a tail
  (an earlier version of such a run keeps its events in the tail out of the recompute) and the
  carried ones. Only their revisions go through the liveness join, so the scratch table holds a few
  rows per touched dataset instead of its whole history.
#}
{% macro lineage_needed_live_versions_ctes(tails_table, time_bound) -%}
    tail_runs as (
        select distinct
            observations.dataset_uuid,
            observations.run_uuid
        from {{ ref('int_lineage_dataset_observations') }} as observations
        inner join {{ tails_table }} as build_tails
            on observations.dataset_uuid = build_tails.dataset_uuid
        where
            observations.event_time >= {{ time_bound }}
            and observations.run_uuid is not null
            and build_tails.tail_from <= {{ lineage_timeline_key('observations.event_time', 'observations.ingest_seq',
                'if(' ~ lineage_is_output('observations.io_type', 'observations.event_kind') ~ ', 1, 0)') }}
    ),

    carried_version_uuids as (
        select distinct carried_version_uuid
        from {{ tails_table }}
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

{#- (Re)writes a scratch Parquet table from a query; a failed earlier build may have left one behind. -#}
{% macro lineage_write_scratch_table(name, query) -%}
    {%- do run_query('drop table if exists ' ~ name) -%}
    {%- do run_query('create table ' ~ name ~ ' using parquet as ' ~ query) -%}
{%- endmacro %}

{#
  The same bound once int_lineage_version_revisions has run: the earliest tail start of the rows
  written by the build at the high end of `window`, as a timestamp literal (for the sightings scan).
#}
{% macro lineage_build_time_bound(window) -%}
    {%- if not execute or not lineage_relation_exists(ref('int_lineage_version_revisions')) -%}
        {{ return("timestamp'0001-01-01 00:00:00'") }}
    {%- endif -%}
    {%- if not window.has_new -%}
        {{ return("timestamp'9999-12-31 00:00:00'") }}
    {%- endif -%}
    {%- set query -%}
        select cast(coalesce(min(tail_from.at_time), timestamp'9999-12-31 00:00:00') as string)
        from {{ ref('int_lineage_version_revisions') }}
        where build_seq = {{ window.high }}
    {%- endset -%}
    {{ return("timestamp'" ~ run_query(query).columns[0].values()[0] ~ "'") }}
{%- endmacro %}

{#
  int_lineage_build_tails (read by name: it is built from this model's rows, so a ref would make a
  cycle) and the highest build it has recorded up to `built_seq`: {relation, through}, through
  -1 when it holds nothing yet (first build after an upgrade, a failed or unselected run, dbt
  only compiling).
#}
{% macro lineage_recorded_build_tails(built_seq) -%}
    {%- set node = graph.nodes.get('model.' ~ project_name ~ '.int_lineage_build_tails') -%}
    {%- set relation = api.Relation.create(database=node.database, schema=node.schema, identifier=node.alias) -%}
    {%- set through = lineage_scalar(
        'select coalesce(max(build_seq), -1) from ' ~ relation ~ ' where build_seq <= ' ~ built_seq, -1, relation) -%}
    {{ return({'relation': relation, 'through': through}) }}
{%- endmacro %}

{#
  CTEs that a model references several times, written once to scratch Parquet tables next to the
  model when its input window holds anything (Spark inlines a CTE at every reference, and a
  chain of them multiplies the scans). `steps` are done in order, each a dict {name, ctes,
  columns}: `ctes` is CTE text (no leading `with`) ending in the CTE `name`, which may read
  `source_ctes` and the earlier steps. Returns, per name, the CTE text the model uses: a read of
  the scratch table, or the CTEs themselves when nothing is written (dbt only parsing, an
  empty warehouse). lineage_drop_scratch_tables drops the tables in the post-hook.
#}
{% macro lineage_scratch_ctes(window, source_ctes, steps) -%}
    {%- set written = execute and window.has_new and window.high is number -%}
    {%- set result = {} -%}
    {%- set earlier = [] -%}
    {%- for step in steps -%}
        {%- if written -%}
            {%- set table = lineage_scratch_table_name(step.name) -%}
            {%- do lineage_write_scratch_table(table, 'with ' ~ ([source_ctes] + earlier + [step.ctes]) | join(',\n')
                ~ '\nselect ' ~ step.columns | join(', ') ~ ' from ' ~ step.name) -%}
            {%- set cte -%}
{{ step.name }} as (
    select
        {{ step.columns | join(',\n        ') }}
    from {{ table }}
)
            {%- endset -%}
        {%- else -%}
            {%- set cte = step.ctes -%}
        {%- endif -%}
        {%- do earlier.append(cte) -%}
        {%- do result.update({step.name: cte}) -%}
    {%- endfor -%}
    {{ return(result) }}
{%- endmacro %}

{#- The scratch table `name` of the model being built, in its schema. -#}
{% macro lineage_scratch_table_name(name) -%}
    {{ return(this.schema ~ '.' ~ this.identifier ~ '__' ~ name) }}
{%- endmacro %}

{#- Post-hook: drops the model's scratch tables `names` (lineage_scratch_ctes). -#}
{% macro lineage_drop_scratch_tables(names) -%}
    {%- for name in names[:-1] if execute -%}
        {%- do run_query('drop table if exists ' ~ lineage_scratch_table_name(name)) -%}
    {%- endfor -%}
    drop table if exists {{ lineage_scratch_table_name(names[-1]) }}
{%- endmacro %}

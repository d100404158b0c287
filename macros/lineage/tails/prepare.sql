{#
  The prepare steps (input_window.prepare of the windowed_append materialization) of the three
  revision models. The materialization calls them with the statement's window bound, before the
  statement and only when dbt runs models: whatever they query or write happens then, never when
  dbt compiles. Each returns {'values': bound values, 'scratch': the scratch relations it made}.

      int_lineage_version_revisions          tails, live_versions and time_bound (see below)
      int_lineage_sighting_revisions         time_bound of the build it continues
      int_lineage_version_schema_revisions   base_schemas and differing_sightings
#}

{#
  int_lineage_version_revisions on a build that appends: for each dataset with observations in the
  window, where its recomputed tail starts and which live version it carries (`tails`), the live
  versions the statement still reads (`live_versions`), and `time_bound`, the earliest event time
  of any tail, so that the observation scan prunes Parquet files and row groups.

  Most datasets take the fast path (lineage_tail_candidates): when all of a dataset's new events
  come after its history, the tail starts at the earliest new event and the carried version is
  the dataset's last one, which int_lineage_build_tails keeps (`head`); nothing of the revision
  history is read. The others (late events, new events of runs that already have a version) go
  through the general search (lineage_prepare_general_tails), restricted to them.
#}
{% macro lineage_prepare_version_tails(window) -%}
    {%- if not appends_to_existing() -%}
        {{ return({'values': {'time_bound': "timestamp'0001-01-01 00:00:00'"}}) }}
    {%- endif -%}
    {%- set scratch = ['tails', 'live_versions', 'tail_candidates'] -%}
    {%- set recorded = lineage_recorded_build_tails(window.low) -%}
    {%- if recorded.through < window.low or not recorded.has_heads -%}
        {#- Builds the table has not recorded (an unselected model, an upgrade), or a table from
            before `head`: no heads, every dataset takes the general search. -#}
        {%- set general = lineage_prepare_general_tails(window, recorded, none) -%}
        {%- do windowed_append_scratch('tails', 'select dataset_uuid, tail_from, carried_version_uuid from '
            ~ general.tails, stored=false) -%}
        {%- do windowed_append_scratch('live_versions', 'select ' ~ lineage_version_columns() | join(', ')
            ~ ' from ' ~ general.live_versions, stored=false) -%}
        {{ return({'values': {'time_bound': general.time_bound}, 'scratch': scratch + general.scratch}) }}
    {%- endif -%}
    {%- set candidates = windowed_append_scratch('tail_candidates', lineage_tail_candidates(window, recorded)) -%}
    {%- set summary = run_query('select count_if(not is_fast), '
        ~ 'cast(min(if(is_fast, changed_from.at_time, null)) as string) from ' ~ candidates).rows[0] -%}
    {%- set tails -%}
        select dataset_uuid, changed_from as tail_from, head.dataset_version_uuid as carried_version_uuid
        from {{ candidates }} where is_fast
    {%- endset -%}
    {%- set live -%}
        select head.* from {{ candidates }} where is_fast and head is not null
    {%- endset -%}
    {%- set bounds = [] if summary[1] is none else ["timestamp'" ~ summary[1] ~ "'"] -%}
    {%- if summary[0] > 0 -%}
        {%- set general = lineage_prepare_general_tails(window, recorded,
            '(select dataset_uuid from ' ~ candidates ~ ' where not is_fast)') -%}
        {%- set tails = tails ~ ' union all select dataset_uuid, tail_from, carried_version_uuid from ' ~ general.tails -%}
        {%- set live = live ~ ' union all select ' ~ lineage_version_columns() | join(', ')
            ~ ' from ' ~ general.live_versions -%}
        {%- do bounds.append(general.time_bound) -%}
        {%- set scratch = scratch + general.scratch -%}
    {%- endif -%}
    {%- do windowed_append_scratch('tails', tails, stored=false) -%}
    {%- do windowed_append_scratch('live_versions', live, stored=false) -%}
    {{ return({'values': {'time_bound': bounds | min if bounds else "timestamp'9999-12-31 00:00:00'"},
        'scratch': scratch}) }}
{%- endmacro %}

{#
  int_lineage_sighting_revisions: the earliest tail start of the build of the versions that this
  statement continues, as a timestamp literal (for the observation scan).
#}
{% macro lineage_prepare_sighting_bound(window) -%}
    {{ return({'values': {'time_bound': lineage_build_time_bound(window)}}) }}
{%- endmacro %}

{#
  int_lineage_version_schema_revisions: the base schema of each version of the build (its own, or
  the carried version's at the tail start) and the sightings whose fields differ from it. Both are
  read several times by the statement, so they are stored once.
#}
{% macro lineage_prepare_version_schemas(window) -%}
    {%- set source_ctes = lineage_version_schema_source_ctes() -%}
    {%- do windowed_append_scratch('base_schemas', 'with ' ~ source_ctes ~ ',\n'
        ~ lineage_version_schema_base_ctes() ~ '\nselect ' ~ lineage_version_schema_base_columns() | join(', ')
        ~ ' from base_schemas') -%}
    {%- do windowed_append_scratch('differing_sightings', 'with ' ~ source_ctes ~ ',\n'
        ~ lineage_scratch_cte('base_schemas', lineage_version_schema_base_columns()) ~ ',\n'
        ~ lineage_version_schema_differing_cte() ~ '\nselect '
        ~ lineage_version_schema_differing_columns() | join(', ') ~ ' from differing_sightings') -%}
    {{ return({'scratch': ['base_schemas', 'differing_sightings']}) }}
{%- endmacro %}

{#
  The CTE `name` of a revision model's statement: a read of the scratch relation its prepare step
  made, or, when dbt only compiles, the CTEs that compute it (`inline_ctes`, ending in `name`).
#}
{% macro lineage_scratch_cte(name, columns, inline_ctes=none) -%}
    {%- if inline_ctes is not none and not windowed_append_binds() -%}
        {{ return(inline_ctes) }}
    {%- endif -%}
    {%- set cte -%}
{{ name }} as (
    select
        {{ columns | join(',\n        ') }}
    from {{ input_window_scratch(name) }}
)
    {%- endset -%}
    {{ return(cte) }}
{%- endmacro %}

{#
  The earliest tail start of the rows written by the build of int_lineage_version_revisions at the
  high end of `window`, as a timestamp literal.
#}
{% macro lineage_build_time_bound(window) -%}
    {%- set query -%}
        select cast(coalesce(min(tail_from.at_time), timestamp'9999-12-31 00:00:00') as string)
        from {{ ref('int_lineage_version_revisions') }}
        where build_seq = {{ window.high }}
    {%- endset -%}
    {{ return("timestamp'" ~ scalar_value(query) ~ "'") }}
{%- endmacro %}

{#
  int_lineage_build_tails (read by name: it is built from the revisions, so a ref would make a
  cycle) and what it holds for builds up to `built_seq`: {relation, through, has_heads}; through is
  -1 when it holds none (first build after an upgrade, a failed or unselected run).
#}
{% macro lineage_recorded_build_tails(built_seq) -%}
    {%- set node = graph.nodes.get('model.' ~ project_name ~ '.int_lineage_build_tails') -%}
    {%- set relation = api.Relation.create(database=node.database, schema=node.schema, identifier=node.alias) -%}
    {%- set existing = adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias) -%}
    {%- if existing is none -%}
        {{ return({'relation': relation, 'through': -1, 'has_heads': false}) }}
    {%- endif -%}
    {%- set through = scalar_value('select coalesce(max(build_seq), -1) from ' ~ relation
        ~ ' where build_seq <= ' ~ built_seq) | int -%}
    {{ return({'relation': relation, 'through': through,
        'has_heads': 'head' in adapter.column_names(existing) | map('lower') | list}) }}
{%- endmacro %}

{#
  changelog: the materialization of snapshot_to_changelog models. One run, in three steps that hand
  the plan to each other as a value:

      plan   = changelog_plan(...)          the pending snapshots, the prior state, the next offset
      append = changelog_select(plan)       created on the first build, else a published append
                                            (readers see all of it or none); nothing when no
                                            snapshot is pending (an empty insert writes a file)
      state  = changelog_save_state(plan)   how far the run got, and the state table folded
                                            forward once its tail passes changelog_compact_ratio

  The table property `changelog.last_run` records what the run did (snapshots, prior state source).
  A full refresh, or the first snapshot of a table that waited empty for it, drops the changelog and
  builds it from every snapshot. Config (set by snapshot_to_changelog): changelog = {primary_key,
  compare_columns, event_time_column}; the model reads exactly one source, its raw snapshot table.
#}
{% materialization changelog, adapter='spark' -%}
    {%- set spec = config.require('changelog') -%}
    {%- set source_relation = changelog_source_relation() -%}
    {%- set existing = load_cached_relation(this) -%}
    {%- set target = this.incorporate(type='table') -%}
    {%- set grant_config = config.get('grants') -%}
    {%- set full_refresh = existing is not none and should_full_refresh() -%}

    {{ run_hooks(pre_hooks) }}

    {%- set plan = changelog_plan(source_relation, spec['primary_key'], spec.get('compare_columns'),
        spec.get('event_time_column'), existing is not none and not full_refresh) -%}
    {%- if existing is not none and (full_refresh or plan.get('replaces_waiting')) -%}
        {%- if plan.get('replaces_waiting') -%}
            {{ log("snapshot_to_changelog: the first snapshot of " ~ source_relation ~ " is loaded; " ~ this
                   ~ " is built from it", info=true) }}
        {%- endif -%}
        {%- do adapter.drop_relation(existing) -%}
    {%- endif -%}
    {%- set builds = existing is none or full_refresh or plan.get('replaces_waiting') -%}
    {%- set select_sql = changelog_select(source_relation, plan) -%}

    {%- if builds -%}
        {%- call statement('main') -%}
            {{ create_table_as(False, target, select_sql) }}
        {%- endcall -%}
    {%- elif plan.get('waiting') or plan.pending | length == 0 -%}
        {%- call noop_statement('main', 'no new snapshot of ' ~ source_relation, 'SKIP') -%}{%- endcall -%}
    {%- else -%}
        {%- do published_append_main(target, select_sql) -%}
    {%- endif -%}
    {%- do changelog_save_state(plan) -%}
    {%- if not plan.get('waiting') -%}
        {#- What this run did, for whoever debugs or tests a build (nothing reads it back). -#}
        {%- set record = {'processed_seq': plan.processed_seq, 'through_seq': plan.through_seq,
            'rebuild': plan.rebuild, 'prior_from_raw': plan.prior_from_raw, 'next_offset': plan.next_offset} -%}
        {%- do run_query('alter table ' ~ target ~ " set tblproperties ('changelog.last_run' = '"
            ~ tojson(record) ~ "')") -%}
    {%- endif -%}

    {{ run_hooks(post_hooks) }}
    {%- do apply_grants(target, grant_config, should_revoke(existing, builds)) -%}
    {%- do persist_docs(target, model) -%}
    {{ return({'relations': [target]}) }}
{%- endmaterialization %}

{#- The raw snapshot table the model diffs: its one source. -#}
{% macro changelog_source_relation() -%}
    {%- if model.sources | length != 1 -%}
        {{ exceptions.raise_compiler_error("snapshot_to_changelog: " ~ this ~ " must read exactly one source, "
            ~ "its raw snapshot table; it reads " ~ model.sources | length) }}
    {%- endif -%}
    {{ return(source(model.sources[0][0], model.sources[0][1])) }}
{%- endmacro %}

{#
  dbt-spark re-creates every view on every build, and Spark analyses the whole view query each
  time: up to a second per view, about a third of a build with few new events. This override of
  the view materialization skips `create or replace view` when the existing view was made from
  the same definition: the compiled SQL and the documentation dbt persists with it, fingerprinted
  into the view's `lineage.view_fingerprint` property. A full refresh always re-creates.
#}
{% materialization view, adapter='spark' -%}
    {%- set fingerprint = lineage_view_definition_fingerprint() -%}
    {%- set existing = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}
    {%- if existing is not none and existing.is_view and not should_full_refresh()
        and lineage_relation_property(existing, 'lineage.view_fingerprint') == fingerprint -%}
        {{ run_hooks(pre_hooks) }}
        {% call statement('main') -%}
            select '{{ existing }}: definition unchanged, view kept' as lineage_view
        {%- endcall %}
        {{ run_hooks(post_hooks) }}
        {{ return({'relations': [existing]}) }}
    {%- endif -%}
    {%- set result = create_or_replace_view() -%}
    {% call statement('record_view_fingerprint') -%}
        alter view {{ result.relations[0] }} set tblproperties ('lineage.view_fingerprint' = '{{ fingerprint }}')
    {%- endcall %}
    {{ return(result) }}
{%- endmaterialization %}

{#- What decides a view's DDL: its compiled SQL, its description and the docs dbt persists with it. -#}
{% macro lineage_view_definition_fingerprint() -%}
    {%- set parts = [sql, model.description or '', config.get('persist_docs') | string] -%}
    {{ return(local_md5(parts | join('\n--\n'))) }}
{%- endmacro %}

{#-
  One table property of `relation`, or none when it is not set. dbt-spark fills its relation
  cache at the start of a run with `show table extended`, whose text lists each table's
  properties; reading them there saves a statement per model. The properties read here (a
  model's own input window and view fingerprint) only change in that model's own post-hook or
  DDL, after the read. A relation created during the run has no cached text: asked directly.
-#}
{% macro lineage_relation_property(relation, key) -%}
    {%- set cached = adapter.get_relation(
        database=relation.database, schema=relation.schema, identifier=relation.identifier) -%}
    {%- set information = cached.information if cached is not none else none -%}
    {%- if information -%}
        {%- set listed = modules.re.search('(?m)^Table Properties: \\[(.*)\\]$', information) -%}
        {%- set found = modules.re.search(
            '(?:^|, )' ~ modules.re.escape(key) ~ '=([^,]*)', listed.group(1)) if listed else none -%}
        {{ return(found.group(1) if found else none) }}
    {%- endif -%}
    {%- for row in run_query('show tblproperties ' ~ relation) -%}
        {%- if row[0] == key -%}
            {{ return(row[1]) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(none) }}
{%- endmacro %}

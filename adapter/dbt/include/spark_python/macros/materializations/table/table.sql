{#
  table: a model rebuilt whole on every build, which readers never find missing.

      table exists (unpartitioned, unbucketed Parquet) with the query's columns:
          write the new data beside the table's folder, then
          alter table this set location <new folder>       (one metastore operation)
          the old folder is retired, deleted after a grace period by the warehouse's cleanup
      otherwise (first build, changed columns, another layout, a view in the way):
          drop, then create table as select                (Delta and Iceberg: create or replace)

  dbt-spark's own version drops every Parquet table before it builds the new one, so a reader
  that plans a query in between finds no table. The switch lives in published_writes.py: a Python
  model's writer calls it (py_write_table), a SQL model's through adapter.switch_table_data, which
  runs the query and compares its columns with the table's.
#}
{% materialization table, adapter='spark_python', supported_languages=['sql', 'python'] %}
    {%- set language = model['language'] -%}
    {%- set existing = load_cached_relation(this) -%}
    {%- set target = this.incorporate(type='table') -%}
    {%- set grant_config = config.get('grants') -%}
    {%- set file_format = config.get('file_format') or 'parquet' -%}
    {%- set replaces_in_place = file_format in ('delta', 'iceberg') or language == 'python' -%}

    {{ run_hooks(pre_hooks) }}

    {%- set switched = language == 'sql' and existing is not none and not existing.is_view
        and adapter.switch_table_data(target, compiled_code) -%}
    {%- if existing is not none and not switched and (existing.is_view or not replaces_in_place) -%}
        {%- do adapter.drop_relation(existing) -%}
    {%- endif -%}
    {%- call statement('main', language=language) -%}
        {%- if switched -%}
            refresh table {{ target }}
        {%- else -%}
            {{ create_table_as(False, target, compiled_code, language) }}
        {%- endif -%}
    {%- endcall -%}

    {%- do apply_grants(target, grant_config, should_revoke(existing, full_refresh_mode=True)) -%}
    {%- do persist_docs(target, model) -%}
    {%- do persist_constraints(target, model) -%}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [target]}) }}
{% endmaterialization %}

{#
  table: a model rebuilt whole on every build, which readers never find missing.

      python model, table exists with the same columns:
          write the new data beside the table's folder, then
          alter table this set location <new folder>       (one metastore operation)
          the old folder is retired, deleted after a grace period by the warehouse's cleanup
      otherwise (first build, changed columns, a view in the way, SQL models):
          drop, then create table as select                (Delta and Iceberg: create or replace)

  dbt-spark's own version drops every Parquet table before it builds the new one, so a reader
  that plans a query in between finds no table. The switch lives in the Python writer
  (py_write_table, replace_table_data in published_writes.py), which sees the new data's schema;
  this materialization only stops dropping the table first.
#}
{% materialization table, adapter='spark_python', supported_languages=['sql', 'python'] %}
    {%- set language = model['language'] -%}
    {%- set existing = load_cached_relation(this) -%}
    {%- set target = this.incorporate(type='table') -%}
    {%- set grant_config = config.get('grants') -%}
    {%- set file_format = config.get('file_format') or 'parquet' -%}
    {%- set replaces_in_place = file_format in ('delta', 'iceberg') or language == 'python' -%}

    {{ run_hooks(pre_hooks) }}

    {%- if existing is not none and (existing.is_view or not replaces_in_place) -%}
        {%- do adapter.drop_relation(existing) -%}
    {%- endif -%}
    {%- call statement('main', language=language) -%}
        {{ create_table_as(False, target, compiled_code, language) }}
    {%- endcall -%}

    {%- do apply_grants(target, grant_config, should_revoke(existing, full_refresh_mode=True)) -%}
    {%- do persist_docs(target, model) -%}
    {%- do persist_constraints(target, model) -%}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [target]}) }}
{% endmaterialization %}

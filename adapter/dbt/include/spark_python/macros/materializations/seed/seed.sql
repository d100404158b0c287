{#
  seed: a CSV loaded only when it changed since the table was loaded from it.

      table exists, no --full-refresh, and its lineage.seed_checksum property equals this build's
      (the CSV file's checksum with the seed's column types, quoting, delimiter and file format):
          kept as it is                                     (no statement)
      otherwise:
          dbt's own seed protocol (dbt-spark: drop, create, insert the rows), then
          alter table this set tblproperties (lineage.seed_checksum = <checksum>)

  dbt reloads every seed on every build: three statements and a table that readers find missing for
  a moment, for a file that rarely changes. The property is set only after the rows are in, so a
  load that stopped halfway leaves no checksum and the next build loads the file again.
#}
{% materialization seed, adapter='spark_python' %}
    {%- set checksum = seed_checksum(model) -%}
    {%- set existing = load_cached_relation(this) -%}
    {%- set target = this.incorporate(type='table') -%}
    {%- if existing is not none and existing.is_table and not should_full_refresh()
        and adapter.table_property(existing, 'lineage.seed_checksum') == checksum -%}
        {#- `dbt seed --show` prints the rows from this result, kept or loaded. -#}
        {%- do store_result('agate_table', response='OK', agate_table=load_agate_table()) -%}
        {%- call noop_statement('main', 'KEPT', 'KEPT', 0) -%}
            -- {{ target }}: the CSV is unchanged since it was loaded, table kept
        {%- endcall -%}
        {{ return({'relations': [target]}) }}
    {%- endif -%}
    {%- set loaded = dbt.materialization_seed_default() -%}
    {%- call statement('record_seed_checksum') -%}
        alter table {{ target }} set tblproperties ('lineage.seed_checksum' = '{{ checksum }}')
    {%- endcall -%}
    {{ return(loaded) }}
{% endmaterialization %}

{#- What a seed table is loaded from: the file's contents and every config that changes the table. -#}
{% macro seed_checksum(seed) -%}
    {%- set config_parts = [
        seed['config'].get('column_types') or {},
        seed['config'].get('quote_columns'),
        seed['config'].get('delimiter'),
        seed['config'].get('file_format'),
    ] -%}
    {{ return(local_md5(seed['checksum']['checksum'] ~ '|' ~ tojson(config_parts, sort_keys=True))) }}
{%- endmacro %}

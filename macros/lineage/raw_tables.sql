{#
  on-run-start: creates the raw and audit tables that lineage ingest appends to, when they do
  not exist yet, so `dbt build` on a warehouse where nothing was ingested still succeeds. Their
  columns are the sources' in models/staging/_sources.yml, which ingest reads too.

  A raw table written by an older version has no `ingest_block` partitions. The ingest command
  rewrites it into the partitioned layout (python_jobs.ingest.lineage.partition_raw_table); dbt
  stops with a message saying so rather than building from it.
#}
{% macro ensure_lineage_raw_tables() -%}
    {%- if execute -%}
        {%- set listed = {} -%}
        {%- set raw = create_source_table('raw', 'lineage_events', var('file_format'), listed) -%}
        {%- do lineage_require_partitioned_raw(raw) -%}
        {%- do create_source_table('audit', 'lineage_events_rejected', var('file_format'), listed) -%}
    {%- endif -%}
{%- endmacro %}

{#- Stops the run when raw.lineage_events predates its ingest_block partitions (see above). -#}
{% macro lineage_require_partitioned_raw(relation) -%}
    {%- if 'ingest_block' not in adapter.column_names(relation) | map('lower') | list -%}
        {{ exceptions.raise_compiler_error(
            relation ~ ' was written by an older version, without ingest_block partitions. Run '
            ~ '`python -m python_jobs ingest lineage` once (with any input, even an empty folder): it '
            ~ 'rewrites the table into the partitioned layout. Then run dbt again.') }}
    {%- endif -%}
{%- endmacro %}

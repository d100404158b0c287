{#
  on-run-start: creates the raw and audit tables that lineage ingest appends to, when they do
  not exist yet, so `dbt build` on a warehouse where nothing was ingested still succeeds. The
  columns mirror python_jobs/ingest/lineage_contract.py (a test compares the two).

  A raw table written by an older version has no `ingest_block` partitions. The ingest command
  rewrites it into the partitioned layout (python_jobs.ingest.lineage.partition_raw_table); dbt
  stops with a message saying so rather than building from it.
#}
{% macro ensure_lineage_raw_tables() -%}
    {%- set facet_map = "map<string, string>" -%}
    {%- set reference = "struct<namespace: string, name: string, facets: " ~ facet_map
        ~ ", input_facets: " ~ facet_map ~ ", output_facets: " ~ facet_map ~ ">" -%}
    {%- if execute -%}
        {%- do run_query("create database if not exists " ~ warehouse_schema('raw')) -%}
        {%- do run_query("create database if not exists " ~ warehouse_schema('audit')) -%}
        {%- do run_query(
            "create table if not exists " ~ warehouse_schema('raw') ~ ".lineage_events (
                event_id string not null, ingest_seq bigint not null, event_kind string not null,
                event_type string, event_time timestamp, event_time_raw string,
                event_time_has_offset boolean, run_id string, parent_run_id string,
                parent_job_namespace string, parent_job_name string, job_namespace string,
                job_name string, producer string, schema_url string,
                run_facets " ~ facet_map ~ ", job_facets " ~ facet_map ~ ",
                inputs array<" ~ reference ~ ">, outputs array<" ~ reference ~ ">,
                dataset " ~ reference ~ ", event_json string not null, event_bytes bigint,
                source_file string not null, source_line bigint, ingest_batch_id string not null,
                ingested_at timestamp not null, ingest_block bigint not null
            ) using " ~ var('file_format') ~ " partitioned by (ingest_block)"
        ) -%}
        {%- do lineage_require_partitioned_raw(warehouse_schema('raw') ~ '.lineage_events') -%}
        {%- do run_query(
            "create table if not exists " ~ warehouse_schema('audit') ~ ".lineage_events_rejected (
                source_file string not null, source_line bigint, reason string not null,
                raw_text string, ingest_batch_id string not null, ingested_at timestamp not null,
                rejection_id bigint
            ) using " ~ var('file_format')
        ) -%}
    {%- endif -%}
{%- endmacro %}

{#- Stops the run when raw.lineage_events predates its ingest_block partitions (see above). -#}
{% macro lineage_require_partitioned_raw(table) -%}
    {%- set columns = run_query('describe table ' ~ table).columns[0].values() | list -%}
    {%- if 'ingest_block' not in columns -%}
        {{ exceptions.raise_compiler_error(
            table ~ ' was written by an older version, without ingest_block partitions. Run '
            ~ '`python -m python_jobs ingest lineage` once (with any input, even an empty folder): it '
            ~ 'rewrites the table into the partitioned layout. Then run dbt again.') }}
    {%- endif -%}
{%- endmacro %}

{#
  on-run-start: creates the raw and audit tables that lineage ingest appends to, when they do
  not exist yet, so `dbt build` on a warehouse where nothing was ingested still succeeds. The
  columns mirror python_jobs/ingest/lineage_contract.py (a test compares the two).
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
                ingested_at timestamp not null
            ) using " ~ var('file_format')
        ) -%}
        {%- do run_query(
            "create table if not exists " ~ warehouse_schema('audit') ~ ".lineage_events_rejected (
                source_file string not null, source_line bigint, reason string not null,
                raw_text string, ingest_batch_id string not null, ingested_at timestamp not null,
                rejection_id bigint
            ) using " ~ var('file_format')
        ) -%}
    {%- endif -%}
{%- endmacro %}

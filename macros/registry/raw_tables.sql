{#
  on-run-start: creates the raw and audit tables of the registry capability when they do not
  exist yet, so `dbt build` succeeds before anything was ingested by `ingest registry` or
  `ingest events`: the staging views, `registry_columns` and `registry_versions` then build
  empty. The columns mirror the StructTypes in python_jobs/ingest/registry.py and
  python_jobs/ingest/events.py, which create the same tables on ingest
  (tests/python/test_single_input.py compares the two). Always Parquet: ingest appends with the
  Parquet writer whatever `file_format` says.
#}
{% macro ensure_registry_raw_tables() -%}
    {%- if execute -%}
        {%- do run_query("create database if not exists " ~ warehouse_schema('raw')) -%}
        {%- do run_query("create database if not exists " ~ warehouse_schema('audit')) -%}
        {%- set version_columns = "vendor string, name string, format string, version string, "
            ~ "model int, revision int, addition int" -%}
        {%- set batch_columns = "ingest_batch_id string, ingested_at timestamp" -%}
        {%- do run_query(
            "create table if not exists " ~ warehouse_schema('raw') ~ ".registry_schemas (
                schema_uri string, " ~ version_columns ~ ", schema_json string, schema_hash string,
                source_file string, " ~ batch_columns ~ "
            ) using parquet"
        ) -%}
        {%- do run_query(
            "create table if not exists " ~ warehouse_schema('audit') ~ ".registry_rejected (
                reject_id string, source_file string, reason string, raw_text string, " ~ batch_columns ~ "
            ) using parquet"
        ) -%}
        {%- do run_query(
            "create table if not exists " ~ warehouse_schema('raw') ~ ".sd_events (
                event_id string, schema_uri string, " ~ version_columns ~ ", data_json string,
                event_json string, source_file string, source_line bigint, " ~ batch_columns ~ "
            ) using parquet"
        ) -%}
        {%- do run_query(
            "create table if not exists " ~ warehouse_schema('audit') ~ ".sd_events_rejected (
                reject_id string, source_file string, source_line bigint, schema_uri string,
                reason string, raw_text string, " ~ batch_columns ~ "
            ) using parquet"
        ) -%}
    {%- endif -%}
{%- endmacro %}

{#
  on-run-start: creates the raw and audit tables of the registry capability when they do not
  exist yet, so `dbt build` succeeds before anything was ingested by `ingest registry` or
  `ingest events`: the staging views, `registry_columns` and `registry_versions` then build
  empty. Their columns are the sources' in models/staging/_registry_sources.yml, which ingest
  reads too. Always Parquet: ingest appends with the Parquet writer whatever `file_format` says.
#}
{% macro ensure_registry_raw_tables() -%}
    {%- if execute -%}
        {%- set listed = {} -%}
        {%- do create_source_table('registry_raw', 'registry_schemas', 'parquet', listed) -%}
        {%- do create_source_table('registry_audit', 'registry_rejected', 'parquet', listed) -%}
        {%- do create_source_table('registry_raw', 'sd_events', 'parquet', listed) -%}
        {%- do create_source_table('registry_audit', 'sd_events_rejected', 'parquet', listed) -%}
    {%- endif -%}
{%- endmacro %}

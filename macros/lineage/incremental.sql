{#- The highest ingest_seq already in the model's table; -1 when it is empty. -#}
{% macro lineage_watermark(column='ingest_seq') -%}
    (select coalesce(max({{ column }}), -1) from {{ this }})
{%- endmacro %}

{#
  True when `relation` has rows whose `column` is past this model's watermark (the maximum of its
  `watermark_column`). Incremental models that recompute
  something over history call it so that a build with no new events skips that work entirely.
  Always true outside incremental runs and at parse time.
#}
{% macro lineage_has_new_rows(relation, column='ingest_seq', watermark_column='ingest_seq') -%}
    {%- if not execute or not is_incremental() -%}
        {{ return(true) }}
    {%- endif -%}
    {%- set query -%}
        select count(1) from {{ relation }}
        where {{ column }} > (select coalesce(max({{ watermark_column }}), -1) from {{ this }})
    {%- endset -%}
    {%- set result = run_query(query) -%}
    {{ return(result.columns[0].values()[0] > 0) }}
{%- endmacro %}

{#- The partition of a dataset in the per-dataset intermediate tables. -#}
{% macro lineage_dataset_bucket(dataset_uuid_expr) -%}
    pmod(xxhash64({{ dataset_uuid_expr }}), {{ var('lineage_dataset_buckets', 16) }})
{%- endmacro %}

{#
  A filter on a dataset_uuid column for the per-dataset intermediate tables (insert_overwrite,
  partitioned by bucket): on an incremental run, only the buckets of datasets with observations
  past this model's `built_through_seq` are recomputed (and so overwritten); with no new
  observations the filter is `false` and nothing is read or written.
#}
{% macro lineage_touched_buckets_filter(dataset_uuid_column) -%}
    {%- if is_incremental() -%}
        {%- if lineage_has_new_rows(ref('int_lineage_dataset_observations'), 'ingest_seq', 'built_through_seq') -%}
            {{ lineage_dataset_bucket(dataset_uuid_column) }} in (
                select {{ lineage_dataset_bucket('dataset_uuid') }}
                from {{ ref('int_lineage_dataset_observations') }}
                where ingest_seq > {{ lineage_watermark('built_through_seq') }}
            )
        {%- else -%}
            false
        {%- endif -%}
    {%- else -%}
        true
    {%- endif -%}
{%- endmacro %}

{#- How far the per-dataset intermediate tables have read the observations. -#}
{% macro lineage_observations_end() -%}
    (select coalesce(max(ingest_seq), -1) from {{ ref('int_lineage_dataset_observations') }})
{%- endmacro %}

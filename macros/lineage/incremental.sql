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

{#
  The input_window config of a windowed_append model that reads stg_lineage_events: positions are
  ingest_seq, and the raw table is partitioned into blocks of lineage_ingest_block_events()
  positions (ingest_block), so that a build lists only the blocks its window touches.
  `own_column`: the model's column that holds the upstream position of each of its rows.
#}
{% macro lineage_events_input(own_column=none) -%}
    {%- set spec = {'from': 'stg_lineage_events', 'column': 'ingest_seq',
        'partition': {'column': 'ingest_block', 'rows': lineage_ingest_block_events()}} -%}
    {%- if own_column -%}
        {%- do spec.update({'own_column': own_column}) -%}
    {%- endif -%}
    {{ return(spec) }}
{%- endmacro %}

{#- How many ingest_seq values a block of raw.lineage_events spans (the var, which ingest reads too). -#}
{% macro lineage_ingest_block_events() -%}
    {{ return(var('lineage_ingest_block_events') | int) }}
{%- endmacro %}

{#- The block of a known ingest_seq. -#}
{% macro lineage_ingest_block(ingest_seq) -%}
    {{ return((ingest_seq | int) // lineage_ingest_block_events()) }}
{%- endmacro %}

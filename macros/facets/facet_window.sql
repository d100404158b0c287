{#
  Incremental windows over `ingest_seq`. Bounds are looked up when the model is compiled, so the
  filter reaches Spark as a literal and Parquet statistics can skip the row groups already loaded.
#}
{#- One integer aggregate (e.g. `max(ingest_seq)`) of a relation, or none when it is empty. -#}
{% macro facet_scalar(relation, aggregate, condition='true') -%}
    {%- if not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set existing = adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier) -%}
    {%- if existing is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set result = run_query('select ' ~ aggregate ~ ' as scalar_value from ' ~ relation ~ ' where ' ~ condition) -%}
    {%- set value = result.columns[0].values()[0] -%}
    {{ return(none if value is none else value | int) }}
{%- endmacro %}

{#- `column` in (after, upto]; given `block_column` (raw.lineage_events' partition column), the same
    bounds on the blocks, so Spark lists only those partitions. -#}
{% macro facet_seq_predicate(column, after=none, upto=none, block_column=none) -%}
    {%- set bounds = [] -%}
    {%- if after is not none -%}
        {%- do bounds.append(column ~ ' > ' ~ (after | int)) -%}
        {%- if block_column is not none -%}
            {%- do bounds.append(block_column ~ ' >= ' ~ lineage_ingest_block((after | int) + 1)) -%}
        {%- endif -%}
    {%- endif -%}
    {%- if upto is not none -%}
        {%- do bounds.append(column ~ ' <= ' ~ (upto | int)) -%}
        {%- if block_column is not none -%}
            {%- do bounds.append(block_column ~ ' <= ' ~ lineage_ingest_block(upto)) -%}
        {%- endif -%}
    {%- endif -%}
    {{- bounds | join(' and ') if bounds else 'true' -}}
{%- endmacro %}

{#- The batch-window var: the backfill command sets it to load a long history in bounded chunks. -#}
{% macro facet_ingest_seq_upto() -%}
    {%- set upto = var('facet_ingest_seq_upto', none) -%}
    {{ return(none if upto is none or upto == '' else upto | int) }}
{%- endmacro %}

{#- The facet storage's commit mark (`facet_publications`) as a scalar subquery: views that join several facet
    tables keep only rows through it, so a build in progress is invisible to them until it completes. A
    scalar subquery rather than a join: Spark runs it apart, so a bucketed one-entity lookup stays one stage. -#}
{% macro facet_published_through() -%}
    (select published_through from {{ ref('facet_publications') }})
{%- endmacro %}

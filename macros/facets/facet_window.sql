{#
  The facet storage's input windows (windowed_append models, whose materialization reads, binds and
  records them). facet_refs reads the raw events; the body store and the winner revisions read
  facet_refs and go back to the raw events of their window for the bodies' text.
#}
{#- facet_refs' window: new raw events, by ingest block, bounded by a backfill's chunk. -#}
{% macro facet_events_input() -%}
    {%- set spec = lineage_events_input(own_column='ingest_seq') -%}
    {%- do spec.update({'upto': facet_ingest_seq_upto()}) -%}
    {{ return(spec) }}
{%- endmacro %}

{#- The window of a model appended from facet_refs; `own_column` holds the facet_refs position of its rows. -#}
{% macro facet_refs_input(own_column) -%}
    {{ return({'from': 'facet_refs', 'column': 'ingest_seq', 'own_column': own_column}) }}
{%- endmacro %}

{#- The raw events of a facet_refs-windowed model's window (facet_refs holds the same ingest_seq
    positions): the window's bounds on ingest_seq and on the raw table's blocks, so Spark lists
    only the blocks the window spans. -#}
{% macro facet_window_source_events(alias='source_events') -%}
    {%- set rows = lineage_ingest_block_events() -%}
    {{ alias }}.ingest_seq > {{ input_window_low() }} and {{ alias }}.ingest_seq <= {{ input_window_high() }}
    and {{ alias }}.ingest_block >= ({{ input_window_low() }} + 1) div {{ rows }}
    and {{ alias }}.ingest_block <= {{ input_window_high() }} div {{ rows }}
{%- endmacro %}

{#
  Of the body hashes `batch` names (a relation with a distinct `body_hash` column, derived from
  the window's rows; none: every hash), those this model's table already holds (its rows matching
  `condition`); none on a first build. A semi join with the batch on the stored side, so that a
  join of the batch with its result reads no more than the batch's matches: joined with the batch
  directly, the stored hashes (one per body in the whole history) are shuffled whole on every
  build. While the window is bounded, the batch is broadcast and the stored hashes only scanned.
#}
{% macro facet_stored_hashes(batch, condition='true') -%}
    {%- if appends_to_existing() -%}
        select {% if batch %}{{ lineage_broadcast_new(input_window_planned(), batch) }} {% endif %}stored.body_hash
        from {{ this }} as stored
        {%- if batch %}
        left semi join {{ batch }}
            on stored.body_hash = {{ batch }}.body_hash
        {%- endif %}
        where {{ condition }}
    {%- elif batch -%}
        select body_hash from {{ batch }}
        where false
    {%- else -%}
        select cast(null as string) as body_hash
        where false
    {%- endif -%}
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

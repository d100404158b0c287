{#
  The facet storage's input windows (windowed_append models, whose materialization reads, binds and
  records them). facet_refs reads the raw events; the body store and the winner revisions read
  facet_refs and go back to the raw events of their window for the bodies' text.
#}
{#- facet_refs' window: new raw events, by ingest block, bounded by a backfill's chunk. -#}
{% macro facet_events_input(prepare=none) -%}
    {%- set spec = lineage_events_input(own_column='ingest_seq') -%}
    {%- do spec.update({'upto': facet_ingest_seq_upto(), 'prepare': prepare}) -%}
    {{ return(spec) }}
{%- endmacro %}

{#- The window of a model appended from facet_refs; `own_column` holds the facet_refs position of its rows. -#}
{% macro facet_refs_input(own_column, prepare=none) -%}
    {{ return({'from': 'facet_refs', 'column': 'ingest_seq', 'own_column': own_column, 'prepare': prepare}) }}
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
  The query of a prepare step's scratch relation: of the body hashes that `batch` (a query of
  distinct `body_hash` values, derived from the window's rows) selects, those this model's table
  already holds (its rows matching `condition`). A semi join on the stored side: the model's
  statement then joins its batch with the batch's matches alone, where a join with every stored
  hash (one per body in the whole history) shuffled them all on every build. While the window is
  bounded the batch is broadcast, and the stored hashes are only scanned.
#}
{% macro facet_stored_hashes(window, batch, condition='true') -%}
    with batch_hashes as (
        {{ batch }}
    )

    select {{ lineage_broadcast_new(window, 'batch_hashes') }} stored.body_hash
    from {{ this }} as stored
    left semi join batch_hashes
        on stored.body_hash = batch_hashes.body_hash
    where {{ condition }}
{%- endmacro %}

{#- In a model's statement, the hashes its prepare step left in the scratch relation `name`
    (facet_stored_hashes); none on a first build, which has nothing stored. -#}
{% macro facet_prepared_stored_hashes(name) -%}
    {%- if appends_to_existing() -%}
        select body_hash from {{ input_window_scratch(name) }}
    {%- else -%}
        select cast(null as string) as body_hash where false
    {%- endif -%}
{%- endmacro %}

{#- input_window.prepare of facet_body_store: on a build that appends, the stored bodies among the
    window's new ones (scratch `stored_bodies`). -#}
{% macro facet_prepare_body_store(window) -%}
    {%- if not appends_to_existing() -%}
        {{ return({}) }}
    {%- endif -%}
    {%- set batch -%}
        select distinct body_hash from {{ ref('facet_refs') }} where stores_body and {{ in_input_window() }}
    {%- endset -%}
    {%- do windowed_append_scratch('stored_bodies', facet_stored_hashes(window, batch), stored=false) -%}
    {{ return({'scratch': ['stored_bodies']}) }}
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

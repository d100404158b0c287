{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        partition_by=['body_shard'],
    )
}}
{#-
  Each distinct canonical facet body once, keyed by its SHA-256. New bodies are the `facet_refs`
  rows marked stores_body that are not here yet; their text is read back from only the events
  that hold them. The window is taken from `facet_refs`, not from this table, so a run that adds
  no new body never leaves a growing tail to rescan, and a run that crashed after `facet_refs`
  catches up here on the next run.
-#}
{%- set bodies_after = facet_scalar(this, 'max(first_ingest_seq)') if is_incremental() else none -%}
{%- set candidate_condition = 'stores_body and ' ~ facet_seq_predicate('ingest_seq', bodies_after) -%}
{%- set seq_from = facet_scalar(ref('facet_refs'), 'min(ingest_seq)', candidate_condition) -%}
{%- set seq_upto = facet_scalar(ref('facet_refs'), 'max(ingest_seq)', candidate_condition) -%}

with
{%- if seq_upto is none %}
    {{ facet_entry_ctes(ref('stg_lineage_events'), 'false') }},
{%- else %}
    {{ facet_entry_ctes(ref('stg_lineage_events'), facet_seq_predicate('source_events.ingest_seq', seq_from - 1, seq_upto,
        'source_events.ingest_block')) }},
{%- endif %}

candidate_rows as (
    select
        facet_row_key,
        body_hash,
        ingest_seq
    from {{ ref('facet_refs') }}
    where {{ candidate_condition }}
),

stored_bodies as (
    {%- if is_incremental() %}
        select body_hash
        from {{ this }}
    {%- else %}
        select cast(null as string) as body_hash
        where false
    {%- endif %}
),

candidate_texts as (
    select
        candidate_rows.body_hash,
        candidate_rows.ingest_seq,
        facet_entries.body_text
    from facet_entries
    inner join candidate_rows
        on facet_entries.facet_row_key = candidate_rows.facet_row_key
    left join stored_bodies
        on candidate_rows.body_hash = stored_bodies.body_hash
    where stored_bodies.body_hash is null
),

new_bodies as (
    select
        body_hash,
        ingest_seq as first_ingest_seq,
        {{ facet_canonical_json('body_text') }} as body
    from candidate_texts
)

select
    body_hash,
    body,
    octet_length(body) as body_bytes,
    first_ingest_seq,
    current_timestamp() as derived_at,
    {{ facet_body_shard('body_hash') }} as body_shard
from new_bodies
order by body_hash

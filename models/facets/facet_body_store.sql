{{ config(materialized='windowed_append', input_window=facet_refs_input('first_ingest_seq', prepare='facet_prepare_body_store'), partition_by=['body_shard']) }}
{#-
  The body store behind the public `facet_bodies` view (a working table in the staging schema: its
  shard partitions take a plain insert, which a reader could see half committed; the view reads only
  bodies through the facet commit mark, docs/READS_DURING_WRITES.md).
  Each distinct canonical facet body once, keyed by its SHA-256. New bodies are the `facet_refs`
  rows marked stores_body that are not here yet; their text is read back from only the events
  that hold them. The window is over `facet_refs` (the materialization records how far it read),
  so a run that adds no new body never leaves a growing tail to rescan, and a run that crashed
  after `facet_refs` catches up here on the next run.
-#}
with
{{ facet_entry_ctes(ref('stg_lineage_events'), facet_window_source_events()) }},

candidate_rows as (
    select
        facet_row_key,
        body_hash,
        ingest_seq
    from {{ ref('facet_refs') }}
    where stores_body and {{ in_input_window() }}
),

-- The new bodies already stored (a semi join, facet_prepare_body_store).
stored_bodies as (
    {{ facet_prepared_stored_hashes('stored_bodies') }}
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

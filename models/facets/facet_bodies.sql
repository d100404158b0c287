{{ config(materialized='view') }}
{#-
  Readers see the body store as of the last complete facet build: the store's shard partitions are
  appended with a plain insert, and the commit mark moves only after that insert and the winner
  tables have committed.
-#}
select
    body_hash,
    body,
    body_bytes,
    first_ingest_seq,
    derived_at,
    body_shard
from {{ ref('facet_body_store') }}
where first_ingest_seq <= {{ facet_published_through() }}

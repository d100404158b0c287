{{ config(materialized='table') }}
{#-
  The facet storage's commit mark, one row: facet rows through `published_through` (an ingest_seq) are
  complete in `facet_refs`, `facet_body_store` and the winner tables. It is built after all of them and
  switched whole (a table-data switch), so the views that join several facet tables, which read only rows
  through the mark, show one complete build while the next one appends (docs/READS_DURING_WRITES.md).
-#}
-- depends_on: {{ ref('facet_body_store') }}
-- depends_on: {{ ref('facet_winners_dataset') }}
-- depends_on: {{ ref('facet_winners_dataset_version') }}
-- depends_on: {{ ref('facet_winners_job') }}
-- depends_on: {{ ref('facet_winners_run') }}
{#- Its own last mark, read when compiled: a literal bound, so only facet_refs' new files are read. -#}
{%- set previous = scalar_value('select max(published_through) from ' ~ this)
    if execute and load_relation(this) is not none else none -%}
{%- set previous = -1 if previous is none else previous | int %}

with new_refs as (
    select ingest_seq
    from {{ ref('facet_refs') }}
    where ingest_seq > {{ previous }}
)

select coalesce(max(ingest_seq), {{ previous }}) as published_through
from new_refs

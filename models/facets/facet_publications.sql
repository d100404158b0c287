{{ config(materialized='table') }}
{#-
  The facet storage's commit mark, one row: facet rows through `published_through` (an ingest_seq) are
  complete in `facet_refs`, `facet_bodies` and the winner tables. It is built after all of them and
  switched whole (a table-data switch), so the views that join several facet tables, which read only rows
  through the mark, show one complete build while the next one appends (docs/READS_DURING_WRITES.md).
-#}
-- depends_on: {{ ref('facet_bodies') }}
-- depends_on: {{ ref('facet_winners_dataset') }}
-- depends_on: {{ ref('facet_winners_dataset_version') }}
-- depends_on: {{ ref('facet_winners_job') }}
-- depends_on: {{ ref('facet_winners_run') }}
{%- set previous = facet_scalar(this, 'max(published_through)') -%}
{%- set previous = -1 if previous is none else previous %}

with new_refs as (
    select ingest_seq
    from {{ ref('facet_refs') }}
    where {{ facet_seq_predicate('ingest_seq', previous) }}
)

select coalesce(max(ingest_seq), {{ previous }}) as published_through
from new_refs

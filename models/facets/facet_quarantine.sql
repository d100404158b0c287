{{ config(materialized='view', schema='audit') }}
{#- Malformed facets with the reason, file and line; the event itself stays in raw.lineage_events. -#}
select
    facet_row_key,
    event_id,
    ingest_seq,
    source_file,
    source_line,
    scope,
    section,
    dataset_namespace,
    dataset_name,
    name as facet_name,
    reject_reason as reason,
    facet_bytes,
    derived_at
from {{ ref('facet_refs') }}
where disposition = 'rejected'

{{ config(materialized='view') }}
{#- Facets left out by the `facet_drop_list` var, counted per scope and name. -#}
with dropped_rows as (
    select
        scope,
        name,
        facet_bytes,
        ingest_seq
    from {{ ref('facet_refs') }}
    where disposition = 'dropped'
)

select
    scope,
    name,
    count(*) as dropped_facets,
    sum(facet_bytes) as dropped_bytes,
    min(ingest_seq) as first_ingest_seq,
    max(ingest_seq) as last_ingest_seq
from dropped_rows
group by scope, name

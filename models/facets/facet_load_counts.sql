{{ config(materialized='view') }}
{#- Reconciliation per scope: every facet read is accepted, dropped or quarantined. -#}
with facet_rows as (
    select
        scope,
        disposition
    from {{ ref('facet_refs') }}
)

select
    scope,
    count(*) as facets_read,
    count_if(disposition = 'accepted') as facets_accepted,
    count_if(disposition = 'dropped') as facets_dropped,
    count_if(disposition = 'rejected') as facets_quarantined
from facet_rows
group by scope

{{ config(materialized='view') }}
{#- How much the content-addressed body store saves: facet rows per stored body, and bytes. -#}
with referenced as (
    select
        count(*) as facet_rows,
        count(distinct body_hash) as distinct_bodies,
        coalesce(sum(body_bytes), 0) as referenced_bytes
    from {{ ref('facet_refs') }}
    where disposition = 'accepted' and ingest_seq <= {{ facet_published_through() }}
),

stored as (
    select
        count(*) as stored_bodies,
        coalesce(sum(body_bytes), 0) as stored_bytes
    from {{ ref('facet_bodies') }}
)

select
    referenced.facet_rows,
    referenced.distinct_bodies,
    stored.stored_bodies,
    referenced.referenced_bytes,
    stored.stored_bytes,
    cast(referenced.facet_rows / nullif(stored.stored_bodies, 0) as double) as dedup_ratio,
    cast(referenced.referenced_bytes / nullif(stored.stored_bytes, 0) as double) as byte_dedup_ratio
from referenced
cross join stored

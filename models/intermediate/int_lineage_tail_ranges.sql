{{ config(materialized='view') }}

{#- For each build that recomputed a dataset's tail: where the tail started, and where a later
    build's tail took over (null while it is the latest). A revision row is live when its
    timeline key is before `superseded_from`. -#}
select
    dataset_uuid,
    build_seq,
    tail_from,
    min(tail_from) over (
        partition by dataset_uuid order by build_seq
        rows between 1 following and unbounded following
    ) as superseded_from
from {{ ref('int_lineage_build_tails') }}

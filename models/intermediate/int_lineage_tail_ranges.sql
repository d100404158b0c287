{{ config(materialized='view') }}

{#- For each build that recomputed a dataset's tail: where the tail started, and where a later
    build's tail took over (null while it is the latest). A revision row is live when its
    timeline key is before `superseded_from`. -#}
-- A build gives all of a dataset's rows one tail_from (its unique_combination test holds it to that);
-- grouping by it keeps this a hash aggregation, where min() of a struct forces a sort.
with builds as (
    select
        dataset_uuid,
        build_seq,
        tail_from
    from {{ ref('int_lineage_version_revisions') }}
    group by dataset_uuid, build_seq, tail_from
)

select
    dataset_uuid,
    build_seq,
    tail_from,
    min(tail_from) over (
        partition by dataset_uuid order by build_seq
        rows between 1 following and unbounded following
    ) as superseded_from
from builds

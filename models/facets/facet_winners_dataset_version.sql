{{ facet_winner_config('dataset_uuid') }}
{#-
  Per load, the latest dataset version among the load's dataset facet rows, so that a dataset's
  current version is the latest of a few revisions (bucketed like `facet_winners_dataset`, so the
  join in `current_dataset_facets` needs no shuffle) instead of an aggregate over `facet_refs`.
-#}
with version_rows as (
    select
        dataset_uuid,
        dataset_version_uuid,
        ingest_seq,
        named_struct('event_time', lineage_event_time, 'ingest_seq', ingest_seq) as version_order
    from {{ ref('facet_refs') }}
    where
        scope = 'dataset'
        and dataset_version_uuid is not null
        and {{ in_input_window() }}
)

select /*+ repartition({{ facet_winner_buckets() }}, dataset_uuid) */
    dataset_uuid,
    max_by(dataset_version_uuid, version_order) as dataset_version_uuid,
    max(version_order) as version_order,
    max(ingest_seq) as last_ingest_seq
from version_rows
group by dataset_uuid

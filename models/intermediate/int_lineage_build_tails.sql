{{ config(materialized='windowed_append', input_window={'from': 'int_lineage_version_revisions', 'column': 'build_seq', 'own_column': 'build_seq'}, on_schema_change='append_new_columns') }}

{#-
  Where each build's recomputed tail of a dataset's timeline starts: one row per (dataset, build),
  appended from the build's own revision rows. It keeps liveness checks (int_lineage_tail_ranges)
  and the next build's tail search off the whole revision table, which grows with history; this
  table grows by one row per dataset a build touches.

  `head` is the dataset's last version on its timeline once the build was done: the build
  recomputed everything from its tail start, so it is the build's row with the highest key (its
  carried row when the tail holds no version). While no later build touched the dataset it is
  still the last live version, which is what the next build carries when its new events all come
  after the dataset's history (lineage_prepare_version_tails).
-#}

select
    dataset_uuid,
    build_seq,
    tail_from,
    max_by(struct({{ lineage_version_columns() | join(', ') }}), timeline_key) as head
from {{ ref('int_lineage_version_revisions') }}
where {{ in_input_window() }}
group by dataset_uuid, build_seq, tail_from

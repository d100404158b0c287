{{ config(materialized='incremental', incremental_strategy='append', on_schema_change='append_new_columns',
    post_hook="{{ lineage_record_input_through() }}") }}

{#-
  Where each build's recomputed tail of a dataset's timeline starts: one row per (dataset, build),
  appended from the build's own revision rows. It keeps liveness checks (int_lineage_tail_ranges)
  and the next build's tail search off the whole revision table, which grows with history; this
  table grows by one row per dataset a build touches.

  `head` is the dataset's last version on its timeline once the build was done: the build
  recomputed everything from its tail start, so it is the build's row with the highest key (its
  carried row when the tail holds no version). While no later build touched the dataset it is
  still the last live version, which is what the next build carries when its new events all come
  after the dataset's history (lineage_prepare_tails).
-#}
{%- set window = lineage_input_window(ref('int_lineage_version_revisions'), 'build_seq', own_column='build_seq') %}
{{ lineage_input_marker(window) }}

select
    dataset_uuid,
    build_seq,
    tail_from,
    max_by(struct({{ lineage_version_columns() | join(', ') }}), timeline_key) as head
from {{ ref('int_lineage_version_revisions') }}
where build_seq > {{ window.low }} and build_seq <= {{ window.high }}
group by dataset_uuid, build_seq, tail_from

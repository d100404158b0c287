{{ config(materialized='incremental', incremental_strategy='append',
    post_hook="{{ lineage_record_input_through() }}") }}

{#-
  Where each build's recomputed tail of a dataset's timeline starts: one row per (dataset, build),
  appended from the build's own revision rows. It keeps liveness checks (int_lineage_tail_ranges)
  and the next build's tail search off the whole revision table, which grows with history; this
  table grows by one row per dataset a build touches.
-#}
{%- set window = lineage_input_window(ref('int_lineage_version_revisions'), 'build_seq', own_column='build_seq') %}
{{ lineage_input_marker(window) }}

select
    dataset_uuid,
    build_seq,
    tail_from
from {{ ref('int_lineage_version_revisions') }}
where build_seq > {{ window.low }} and build_seq <= {{ window.high }}
group by dataset_uuid, build_seq, tail_from

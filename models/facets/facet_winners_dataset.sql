{{ facet_winner_config('dataset_uuid') }}
{#-
  Types DATASET, UNKNOWN and OUTPUT describe the dataset itself; INPUT facets (row counts and
  quality checks of one read) describe a run's use of it and stay in `dataset_facets`. This is
  the selection Marquez makes for a dataset's facets.
-#}
{{ facet_winner_revisions('dataset', 'dataset_uuid', ['dataset_namespace', 'dataset_name'], "type in ('DATASET', 'UNKNOWN', 'OUTPUT')", inline_bodies=true) }}

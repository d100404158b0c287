{{ config(materialized='view') }}

{#- Marquez's runs_input_mapping: the dataset version each run read (the one current when the
    input event happened). -#}
select distinct
    run_uuid,
    dataset_version_uuid,
    dataset_uuid
from {{ ref('int_lineage_dataset_sightings') }}
where io_type = 'input' and event_kind = 'RunEvent'

{{ config(materialized='view') }}

{#- The dataset version each run wrote (Marquez keeps this as dataset_versions.run_uuid). -#}
select
    run_uuid,
    uuid as dataset_version_uuid,
    dataset_uuid
from {{ ref('dataset_versions') }}
where run_uuid is not null

{{ config(materialized='view') }}

{#- Marquez's dataset_versions: one per run that wrote the dataset (START and COMPLETE collapse),
    plus one input version for a dataset sighted before any run wrote it. The schema pointer
    moves when inputs reveal fields (int_lineage_dataset_version_schemas), hence a view. -#}
with versions as (
    select
        dataset_version_uuid,
        dataset_uuid,
        namespace_name,
        dataset_name,
        run_uuid,
        version_created_at,
        version_first_ingest_seq,
        dataset_schema_version_uuid
    from {{ ref('int_lineage_dataset_version_schemas') }}
    where is_current
)

select
    dataset_version_uuid as uuid,
    version_created_at as created_at,
    dataset_uuid,
    dataset_version_uuid as version,
    run_uuid,
    namespace_name,
    dataset_name,
    dataset_schema_version_uuid,
    if(run_uuid is null, 'input', 'output') as version_kind,
    row_number() over (
        partition by dataset_uuid order by version_created_at desc, version_first_ingest_seq desc
    ) = 1 as is_current_version
from versions

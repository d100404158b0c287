with registry_schemas as (
    select
        schema_uri,
        vendor,
        name,
        format,
        version,
        model,
        revision,
        addition,
        schema_json,
        schema_hash,
        source_file,
        ingested_at
    from {{ source('registry_raw', 'registry_schemas') }}
)

select
    schema_uri,
    vendor,
    name,
    format,
    version,
    model,
    revision,
    addition,
    schema_json,
    schema_hash,
    source_file,
    ingested_at
from registry_schemas

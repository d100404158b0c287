{#- The registry's schemas as ingested: the raw columns, unchanged. -#}
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

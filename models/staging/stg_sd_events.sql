with sd_events as (
    select
        event_id,
        schema_uri,
        vendor,
        name,
        version,
        model,
        revision,
        addition,
        data_json,
        source_file,
        source_line,
        ingested_at
    from {{ source('registry_raw', 'sd_events') }}
)

select
    event_id,
    schema_uri,
    vendor,
    name,
    version,
    model,
    revision,
    addition,
    data_json,
    source_file,
    source_line,
    ingested_at
from sd_events

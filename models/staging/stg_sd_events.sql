{#- The self-describing events as ingested: the raw columns, unchanged. -#}
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

{{ config(materialized='windowed_append', input_window=facet_events_input()) }}
{#-
  One row per facet found in an event, whatever became of it (accepted, dropped by the drop-list,
  or rejected as malformed), so that read = accepted + dropped + rejected reconciles per event.
  Bodies are not stored here: accepted rows reference the canonical body by its hash, and the
  first row to see a hash (stores_body) is the one `facet_body_store` copies the text from.
-#}

with
{{ facet_entry_ctes(ref('stg_lineage_events'), in_input_window('source_events')) }},

classification as (
    select
        lower(facet_name) as facet_name_lower,
        max(facet_type) as facet_type
    from {{ ref('facet_classification') }}
    group by lower(facet_name)
),

checked_entries as (
    select
        facet_row_key,
        {{ facet_event_columns() }},
        {{ facet_place_columns() }},
        octet_length(body_text) as facet_bytes,
        {{ facet_is_dropped('facet_name') }} as is_dropped,
        case
            when not {{ facet_is_dropped('facet_name') }} then {{ facet_canonical_json('body_text') }}
        end as canonical_body
    from facet_entries
),

classified_entries as (
    select
        checked_entries.facet_row_key,
        {{ facet_event_columns('checked_entries') }},
        {{ facet_place_columns('checked_entries') }},
        checked_entries.facet_bytes,
        case
            when checked_entries.is_dropped then 'dropped'
            when checked_entries.facet_name = '' then 'rejected'
            when checked_entries.canonical_body is null then 'rejected'
            when not startswith(checked_entries.canonical_body, '{') then 'rejected'
            else 'accepted'
        end as disposition,
        case
            when checked_entries.is_dropped then null
            when checked_entries.facet_name = '' then 'facet name is empty'
            when checked_entries.canonical_body is null then 'facet body is not valid JSON (or repeats a key)'
            when not startswith(checked_entries.canonical_body, '{') then 'facet body is not a JSON object'
        end as reject_reason,
        case
            when checked_entries.section = 'inputFacets' then 'INPUT'
            when checked_entries.section = 'outputFacets' then 'OUTPUT'
            when checked_entries.section = 'facets' then coalesce(classification.facet_type, 'UNKNOWN')
        end as facet_type,
        {{ facet_body_hash('checked_entries.canonical_body') }} as canonical_hash,
        octet_length(checked_entries.canonical_body) as body_bytes
    from checked_entries
    left join classification
        on
            checked_entries.section = 'facets'
            and lower(checked_entries.facet_name) = classification.facet_name_lower
),

-- Every stored hash, shuffled whole to meet the batch: a semi join with the batch's hashes would
-- parse the batch's facets twice, as Spark inlines a CTE at each reference.
stored_hashes as (
    {{ facet_stored_hashes(none, 'stored.stores_body') }}
),

ranked_entries as (
    select
        facet_row_key,
        {{ facet_event_columns() }},
        {{ facet_place_columns() }},
        facet_bytes,
        disposition,
        reject_reason,
        facet_type,
        case when disposition = 'accepted' then canonical_hash end as body_hash,
        case when disposition = 'accepted' then body_bytes end as body_bytes,
        row_number() over (
            partition by disposition, canonical_hash order by ingest_seq, facet_row_key
        ) as hash_occurrence
    from classified_entries
)

select
    ranked_entries.facet_row_key,
    ranked_entries.scope,
    ranked_entries.section,
    ranked_entries.dataset_role,
    ranked_entries.entry_position,
    case
        when ranked_entries.scope = 'dataset'
            then {{ dataset_uuid('ranked_entries.dataset_namespace', 'ranked_entries.dataset_name') }}
    end as dataset_uuid,
    ranked_entries.dataset_namespace,
    ranked_entries.dataset_name,
    case
        when ranked_entries.dataset_role = 'output' and ranked_entries.run_id is not null
            then {{ dataset_version_uuid('ranked_entries.dataset_namespace', 'ranked_entries.dataset_name', 'ranked_entries.run_id') }}
    end as dataset_version_uuid,
    case
        when ranked_entries.job_name is not null
            then {{ job_uuid('ranked_entries.job_namespace', 'ranked_entries.job_name') }}
    end as job_uuid,
    ranked_entries.job_namespace,
    ranked_entries.job_name,
    ranked_entries.run_id,
    ranked_entries.event_time as lineage_event_time,
    ranked_entries.event_type as lineage_event_type,
    ranked_entries.event_kind,
    ranked_entries.facet_type as type,
    ranked_entries.facet_name as name,
    ranked_entries.disposition,
    ranked_entries.reject_reason,
    ranked_entries.body_hash,
    ranked_entries.body_bytes,
    ranked_entries.facet_bytes,
    coalesce(
        ranked_entries.disposition = 'accepted'
        and ranked_entries.hash_occurrence = 1
        and stored_hashes.body_hash is null,
        false
    ) as stores_body,
    ranked_entries.event_id,
    ranked_entries.ingest_seq,
    ranked_entries.source_file,
    ranked_entries.source_line,
    current_timestamp() as derived_at
from ranked_entries
left join stored_hashes
    on ranked_entries.body_hash = stored_hashes.body_hash
{# clustered by entity so that Parquet min/max statistics skip row groups for one-entity lookups #}
order by ranked_entries.scope, dataset_uuid, job_uuid, ranked_entries.run_id, ranked_entries.ingest_seq

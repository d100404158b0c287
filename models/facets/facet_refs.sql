{{ config(materialized='windowed_append', input_window=facet_events_input(prepare='facet_prepare_refs_batch')) }}
{#-
  One row per facet found in an event, whatever became of it (accepted, dropped by the drop-list,
  or rejected as malformed), so that read = accepted + dropped + rejected reconciles per event.
  Bodies are not stored here: accepted rows reference the canonical body by its hash, and the
  first row to see a hash (stores_body) is the one `facet_body_store` copies the text from.
-#}

with
{{ facet_window_classified_entry_ctes() }},

stored_hashes as (
    {{ facet_prepared_stored_hashes('stored_hashes') }}
),

ranked_entries as (
    select
        {{ facet_classified_columns() }},
        case when disposition = 'accepted' then canonical_hash end as body_hash,
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
    case when ranked_entries.disposition = 'accepted' then ranked_entries.body_bytes end as body_bytes,
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

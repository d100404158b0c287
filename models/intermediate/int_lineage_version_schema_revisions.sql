{{ config(materialized='incremental', incremental_strategy='append',
    post_hook="{{ lineage_record_input_through() }}") }}

{#
  Which schema versions each dataset version points at. A version starts at its own field set
  (or the empty one). When sightings (inputs, DatasetEvents) show fields the version lacks, each
  new union of fields becomes a new, merged schema version from that moment on; an existing
  schema version is never changed. One row per (dataset version, schema version it pointed
  at); `is_current` marks the latest. Written as revisions: only the versions that
  int_lineage_version_revisions recomputed in this build, from that build's sightings.
#}
{%- set window = lineage_input_window(ref('int_lineage_version_revisions'), 'build_seq', own_column='build_seq') -%}
{%- set build_seq = window.high -%}
{%- set built_seq = window.low %}
{{ lineage_input_marker(window) }}

with all_versions as (
    select
        dataset_version_uuid,
        dataset_uuid,
        namespace_name,
        dataset_name,
        run_uuid,
        created_at,
        first_ingest_seq,
        own_schema_uuid,
        timeline_key
    from {{ ref('int_lineage_version_revisions') }}
    where build_seq = {{ build_seq }} and build_seq > {{ built_seq }}
),

version_sightings as (
    select
        dataset_uuid,
        dataset_version_uuid,
        sighted_at as at_time,
        sighted_at_seq as at_seq,
        observed_schema_uuid
    from {{ ref('int_lineage_sighting_revisions') }}
    where
        build_seq = {{ build_seq }} and build_seq > {{ built_seq }}
        and observed_schema_uuid is not null
),

-- Sightings whose field set differs from the version's own: only these can add fields.
differing_sightings as (
    select
        version_sightings.dataset_version_uuid,
        version_sightings.at_time,
        version_sightings.at_seq,
        version_sightings.observed_schema_uuid
    from version_sightings
    inner join all_versions
        on version_sightings.dataset_version_uuid = all_versions.dataset_version_uuid
    where version_sightings.observed_schema_uuid != coalesce(all_versions.own_schema_uuid, '')
),

schema_tokens as (
    select
        observed_schemas.observed_schema_uuid,
        field.name as field_name,
        field.type as field_type
    from {{ ref('int_lineage_observed_schemas') }} as observed_schemas
        lateral view explode(observed_schemas.fields) exploded as field
),

own_tokens as (
    select distinct
        all_versions.dataset_version_uuid,
        schema_tokens.field_name,
        schema_tokens.field_type
    from all_versions
    inner join schema_tokens
        on all_versions.own_schema_uuid = schema_tokens.observed_schema_uuid
    left semi join differing_sightings
        on all_versions.dataset_version_uuid = differing_sightings.dataset_version_uuid
),

added_tokens as (
    select
        differing_sightings.dataset_version_uuid,
        schema_tokens.field_name,
        schema_tokens.field_type,
        min(struct(differing_sightings.at_time, differing_sightings.at_seq)) as added_at
    from differing_sightings
    inner join schema_tokens
        on differing_sightings.observed_schema_uuid = schema_tokens.observed_schema_uuid
    left anti join own_tokens
        on
            differing_sightings.dataset_version_uuid = own_tokens.dataset_version_uuid
            and schema_tokens.field_name = own_tokens.field_name
            and schema_tokens.field_type <=> own_tokens.field_type
    group by differing_sightings.dataset_version_uuid, schema_tokens.field_name, schema_tokens.field_type
),

merge_points as (
    select distinct
        dataset_version_uuid,
        added_at
    from added_tokens
),

merged_fields as (
    select
        merge_points.dataset_version_uuid,
        merge_points.added_at,
        added_tokens.field_name,
        added_tokens.field_type
    from merge_points
    inner join added_tokens
        on
            merge_points.dataset_version_uuid = added_tokens.dataset_version_uuid
            and merge_points.added_at >= added_tokens.added_at
    union all
    select
        merge_points.dataset_version_uuid,
        merge_points.added_at,
        own_tokens.field_name,
        own_tokens.field_type
    from merge_points
    inner join own_tokens
        on merge_points.dataset_version_uuid = own_tokens.dataset_version_uuid
),

merged_schemas as (
    select
        merged_fields.dataset_version_uuid,
        merged_fields.added_at,
        collect_list(struct(merged_fields.field_name as name, merged_fields.field_type as type)) as fields
    from merged_fields
    group by merged_fields.dataset_version_uuid, merged_fields.added_at
),

own_schema_rows as (
    select
        all_versions.dataset_version_uuid,
        all_versions.dataset_uuid,
        all_versions.namespace_name,
        all_versions.dataset_name,
        all_versions.run_uuid,
        all_versions.created_at as version_created_at,
        all_versions.first_ingest_seq as version_first_ingest_seq,
        all_versions.timeline_key as version_timeline_key,
        -- A version without any schema facet points at the dataset's empty field set.
        coalesce(
            all_versions.own_schema_uuid,
            {{ schema_version_uuid('all_versions.namespace_name', 'all_versions.dataset_name',
                'cast(array() as array<struct<name: string, type: string>>)') }}
        ) as dataset_schema_version_uuid,
        all_versions.own_schema_uuid is null as is_empty_schema,
        cast(null as array<struct<name: string, type: string>>) as merged_fields,
        all_versions.created_at as pointed_at,
        all_versions.first_ingest_seq as pointed_at_seq
    from all_versions
    -- An input version's first merged field set is its first schema; skip its empty own one then.
    left anti join merge_points
        on
            all_versions.dataset_version_uuid = merge_points.dataset_version_uuid
            and all_versions.run_uuid is null
),

merged_schema_rows as (
    select
        all_versions.dataset_version_uuid,
        all_versions.dataset_uuid,
        all_versions.namespace_name,
        all_versions.dataset_name,
        all_versions.run_uuid,
        all_versions.created_at as version_created_at,
        all_versions.first_ingest_seq as version_first_ingest_seq,
        all_versions.timeline_key as version_timeline_key,
        {{ schema_version_uuid('all_versions.namespace_name', 'all_versions.dataset_name', 'merged_schemas.fields') }}
            as dataset_schema_version_uuid,
        false as is_empty_schema,
        merged_schemas.fields as merged_fields,
        merged_schemas.added_at.at_time as pointed_at,
        merged_schemas.added_at.at_seq as pointed_at_seq
    from merged_schemas
    inner join all_versions
        on merged_schemas.dataset_version_uuid = all_versions.dataset_version_uuid
),

pointers as (
    select * from own_schema_rows
    union all
    select * from merged_schema_rows
)

select
    dataset_version_uuid,
    dataset_uuid,
    namespace_name,
    dataset_name,
    run_uuid,
    version_created_at,
    version_first_ingest_seq,
    version_timeline_key,
    dataset_schema_version_uuid,
    is_empty_schema,
    merged_fields,
    pointed_at,
    pointed_at_seq,
    row_number() over (
        partition by dataset_version_uuid order by pointed_at desc, pointed_at_seq desc
    ) = 1 as is_current,
    {{ build_seq }} as build_seq
from pointers

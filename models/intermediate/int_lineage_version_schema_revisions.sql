-- depends_on: {{ ref('int_lineage_tail_ranges') }}
{{ config(materialized='incremental', incremental_strategy='append',
    post_hook=["{{ lineage_record_input_through() }}",
        "{{ lineage_drop_scratch_tables(['base_schemas', 'differing_sightings']) }}"]) }}

{#
  Which schema versions each dataset version points at. A version starts at its own field set
  (or the empty one). When sightings (inputs, DatasetEvents) show fields the version lacks, each
  new union of fields becomes a new, merged schema version from that moment on; an existing
  schema version is never changed. One row per (dataset version, schema version it pointed at),
  placed on the dataset's timeline by `pointer_timeline_key`; the live view derives which one is
  current. Written as revisions: the versions int_lineage_version_revisions recomputed in this
  build get their whole chain again; the carried version (current at the tail start) keeps its
  pointers before the tail and continues from the field set it pointed at there.
#}
{%- set window = lineage_input_window(ref('int_lineage_version_revisions'), 'build_seq', own_column='build_seq') %}
{{ lineage_input_marker(window) }}

-- noqa: disable=LT02
{#- One statement per build of the versions: a build continues the pointers the earlier ones
    wrote (lineage_build_windows). -#}
{%- for build in lineage_build_windows(window, ref('int_lineage_version_revisions')) %}
{%- set build_seq = build.high -%}
{%- set built_seq = build.low -%}
{#- (sqlfluff places the CTE texts of the set blocks below as if they were inside the `with`.)
    The CTEs every later step reads; the two below are small (one build's versions and
    sightings) but each is referenced several times, and Spark inlines a CTE at every reference,
    so once the input window holds anything they are written to scratch tables first. -#}
{%- set source_ctes -%}
all_versions as (
    select
        dataset_version_uuid,
        dataset_uuid,
        namespace_name,
        dataset_name,
        run_uuid,
        created_at,
        first_ingest_seq,
        own_schema_uuid,
        timeline_key,
        tail_from,
        is_carried
    from {{ ref('int_lineage_version_revisions') }}
    where build_seq = {{ build_seq }} and build_seq > {{ built_seq }}
),

build_sightings as (
    select
        dataset_version_uuid,
        sighted_at as at_time,
        sighted_at_seq as at_seq,
        observed_schema_uuid
    from {{ ref('int_lineage_sighting_revisions') }}
    where build_seq = {{ build_seq }} and build_seq > {{ built_seq }}
),

schema_tokens as (
    select
        observed_schemas.observed_schema_uuid,
        field.name as field_name,
        field.type as field_type
    from {{ ref('int_lineage_observed_schemas') }} as observed_schemas
        lateral view explode(observed_schemas.fields) exploded as field
)
{%- endset -%}

{%- set base_schemas_ctes -%}
{%- if is_incremental() %}

carried_versions as (
    select
        dataset_version_uuid,
        tail_from
    from all_versions
    where is_carried
),

-- The carried version's pointers before the tail, live as of this build: the latest one holds
-- the field set the continuation starts from. At most one carried version per dataset, so it is
-- broadcast rather than shuffling the pointer history.
carried_pointer_revisions as (
    select /*+ broadcast(carried_versions) */
        revisions.dataset_version_uuid,
        revisions.dataset_uuid,
        revisions.dataset_schema_version_uuid,
        revisions.is_empty_schema,
        revisions.merged_fields,
        revisions.pointer_timeline_key,
        revisions.build_seq
    from {{ this }} as revisions
    inner join carried_versions
        on revisions.dataset_version_uuid = carried_versions.dataset_version_uuid
    where revisions.pointer_timeline_key < carried_versions.tail_from
),

carried_base_pointers as (
    select
        carried_pointer_revisions.dataset_version_uuid,
        max_by(
            struct(
                carried_pointer_revisions.dataset_schema_version_uuid,
                carried_pointer_revisions.is_empty_schema,
                carried_pointer_revisions.merged_fields
            ),
            carried_pointer_revisions.pointer_timeline_key
        ) as base
    from carried_pointer_revisions
    inner join {{ ref('int_lineage_tail_ranges') }} as tail_ranges
        on
            carried_pointer_revisions.dataset_uuid = tail_ranges.dataset_uuid
            and carried_pointer_revisions.build_seq = tail_ranges.build_seq
    where
        tail_ranges.superseded_from is null
        or carried_pointer_revisions.pointer_timeline_key < tail_ranges.superseded_from
    group by carried_pointer_revisions.dataset_version_uuid
),
{%- endif %}

-- The schema each version's merges start from: a recomputed version's own one, the carried
-- version's schema at the tail start.
base_schemas as (
    select
        dataset_version_uuid,
        own_schema_uuid as base_schema_uuid,
        cast(null as array<struct<name: string, type: string>>) as base_merged_fields
    from all_versions
    where not is_carried
    {%- if is_incremental() %}
    union all
    select
        dataset_version_uuid,
        if(base.is_empty_schema, null, base.dataset_schema_version_uuid) as base_schema_uuid,
        base.merged_fields as base_merged_fields
    from carried_base_pointers
    {%- endif %}
)
{%- endset -%}

{%- set differing_sightings_cte -%}
-- Sightings whose field set differs from the version's base: only these can add fields.
differing_sightings as (
    select
        build_sightings.dataset_version_uuid,
        build_sightings.at_time,
        build_sightings.at_seq,
        build_sightings.observed_schema_uuid
    from build_sightings
    inner join base_schemas
        on build_sightings.dataset_version_uuid = base_schemas.dataset_version_uuid
    where
        build_sightings.observed_schema_uuid is not null
        and build_sightings.observed_schema_uuid != coalesce(base_schemas.base_schema_uuid, '')
)
{%- endset -%}

{%- set scratch = lineage_scratch_ctes(build, source_ctes, [
    {'name': 'base_schemas', 'ctes': base_schemas_ctes,
        'columns': ['dataset_version_uuid', 'base_schema_uuid', 'base_merged_fields']},
    {'name': 'differing_sightings', 'ctes': differing_sightings_cte,
        'columns': ['dataset_version_uuid', 'at_time', 'at_seq', 'observed_schema_uuid']},
]) %}

{%- set build_select %}
with {{ source_ctes }},

{{ scratch.base_schemas }},

{{ scratch.differing_sightings }},

base_tokens as (
    select distinct
        base_schemas.dataset_version_uuid,
        schema_tokens.field_name,
        schema_tokens.field_type
    from base_schemas
    inner join schema_tokens
        on base_schemas.base_schema_uuid = schema_tokens.observed_schema_uuid
    left semi join differing_sightings
        on base_schemas.dataset_version_uuid = differing_sightings.dataset_version_uuid
    where base_schemas.base_merged_fields is null
    union
    select
        base_schemas.dataset_version_uuid,
        merged_field.name as field_name,
        merged_field.type as field_type
    from base_schemas
    left semi join differing_sightings
        on base_schemas.dataset_version_uuid = differing_sightings.dataset_version_uuid
        lateral view explode(base_schemas.base_merged_fields) exploded as merged_field
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
    left anti join base_tokens
        on
            differing_sightings.dataset_version_uuid = base_tokens.dataset_version_uuid
            and schema_tokens.field_name = base_tokens.field_name
            and schema_tokens.field_type <=> base_tokens.field_type
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
        base_tokens.field_name,
        base_tokens.field_type
    from merge_points
    inner join base_tokens
        on merge_points.dataset_version_uuid = base_tokens.dataset_version_uuid
),

merged_schemas as (
    select
        merged_fields.dataset_version_uuid,
        merged_fields.added_at,
        collect_list(struct(merged_fields.field_name as name, merged_fields.field_type as type)) as fields
    from merged_fields
    group by merged_fields.dataset_version_uuid, merged_fields.added_at
),

-- An input version whose first sighting already shows fields starts at that merged field set
-- rather than the empty one; one whose schema shows up later points at the empty set until then.
first_sightings as (
    select
        dataset_version_uuid,
        min(struct(at_time, at_seq)) as first_sighted_at
    from build_sightings
    group by dataset_version_uuid
),

fields_at_first_sighting as (
    select merge_points.dataset_version_uuid
    from merge_points
    inner join first_sightings
        on
            merge_points.dataset_version_uuid = first_sightings.dataset_version_uuid
            and merge_points.added_at = first_sightings.first_sighted_at
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
        all_versions.first_ingest_seq as pointed_at_seq,
        all_versions.timeline_key as pointer_timeline_key
    from all_versions
    left anti join fields_at_first_sighting
        on
            all_versions.dataset_version_uuid = fields_at_first_sighting.dataset_version_uuid
            and all_versions.run_uuid is null
    where not all_versions.is_carried
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
        merged_schemas.added_at.at_seq as pointed_at_seq,
        {{ lineage_timeline_key('merged_schemas.added_at.at_time', 'merged_schemas.added_at.at_seq', '0') }}
            as pointer_timeline_key
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
    pointer_timeline_key,
    {{ build_seq }} as build_seq
from pointers
{%- endset %}
{{ lineage_build_statement(build_select, loop.last) }}
{%- endfor %}

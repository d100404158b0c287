-- depends_on: {{ ref('int_lineage_tail_ranges') }}
{{ config(materialized='windowed_append',
    input_window={'from': 'int_lineage_version_revisions', 'column': 'build_seq', 'own_column': 'build_seq',
        'each_position': true, 'prepare': 'lineage_prepare_version_schemas'}) }}

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
{#- One statement per build of the versions (each_position): a build continues the pointers the
    earlier ones wrote. base_schemas and differing_sightings are read several times; the prepare
    step stores them (lineage_version_schema_steps). -#}
with {{ lineage_version_schema_source_ctes() }},

{{ lineage_scratch_cte('base_schemas', lineage_version_schema_base_columns(), lineage_version_schema_base_ctes()) }},

{{ lineage_scratch_cte('differing_sightings', lineage_version_schema_differing_columns(),
    lineage_version_schema_differing_cte()) }},

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
        {{ lineage_pointer_version_columns('all_versions') }},
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
        {{ lineage_pointer_version_columns('all_versions') }},
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
    {%- for column in lineage_schema_pointer_columns() %}
        {{ column }},
    {%- endfor %}
    {{ input_window_high() }} as build_seq
from pointers

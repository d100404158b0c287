{#
  The steps of int_lineage_version_schema_revisions that its statement reads several times, shared
  by the model (which reads them from scratch relations when it runs, and shows them inline when dbt
  only compiles) and its prepare step (lineage_prepare_version_schemas, which stores them).

      all_versions         the versions int_lineage_version_revisions wrote in the window's build
      build_sightings      the sightings int_lineage_sighting_revisions matched to them
      schema_tokens        every observed schema, one row per field
      base_schemas         per version, the field set its merges start from: a recomputed
                           version's own schema; for the carried version, the schema its live
                           pointers held just before the tail start
      differing_sightings  sightings whose schema differs from their version's base: only these
                           can add fields
#}

{% macro lineage_version_schema_source_ctes() -%}
all_versions as (
    select
        {%- for column in lineage_version_columns() %}
        {{ column }},
        {%- endfor %}
        tail_from,
        is_carried
    from {{ ref('int_lineage_version_revisions') }}
    where {{ in_input_window() }}
),

build_sightings as (
    {{ input_window_rows('int_lineage_sighting_revisions', [
        'dataset_version_uuid', 'sighted_at as at_time', 'sighted_at_seq as at_seq', 'observed_schema_uuid']) }}
),

schema_tokens as (
    select
        observed_schemas.observed_schema_uuid,
        field.name as field_name,
        field.type as field_type
    from {{ ref('int_lineage_observed_schemas') }} as observed_schemas
        lateral view explode(observed_schemas.fields) exploded as field
)
{%- endmacro %}

{% macro lineage_version_schema_base_columns() -%}
    {{ return(['dataset_version_uuid', 'base_schema_uuid', 'base_merged_fields']) }}
{%- endmacro %}

{% macro lineage_version_schema_differing_columns() -%}
    {{ return(['dataset_version_uuid', 'at_time', 'at_seq', 'observed_schema_uuid']) }}
{%- endmacro %}

{#- CTEs after the source ones, ending in `base_schemas`. -#}
{% macro lineage_version_schema_base_ctes() -%}
{%- if appends_to_existing() -%}
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

{% endif -%}
base_schemas as (
    select
        dataset_version_uuid,
        own_schema_uuid as base_schema_uuid,
        cast(null as array<struct<name: string, type: string>>) as base_merged_fields
    from all_versions
    where not is_carried
    {%- if appends_to_existing() %}
    union all
    select
        dataset_version_uuid,
        if(base.is_empty_schema, null, base.dataset_schema_version_uuid) as base_schema_uuid,
        base.merged_fields as base_merged_fields
    from carried_base_pointers
    {%- endif %}
)
{%- endmacro %}

{#- The CTE `differing_sightings`, after the source CTEs and `base_schemas`. -#}
{% macro lineage_version_schema_differing_cte() -%}
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
{%- endmacro %}

{#- The version columns a schema pointer row starts with (lineage_schema_pointer_columns), from a version
    revision row aliased `alias`. -#}
{% macro lineage_pointer_version_columns(alias) -%}
    {{ alias }}.dataset_version_uuid,
        {{ alias }}.dataset_uuid,
        {{ alias }}.namespace_name,
        {{ alias }}.dataset_name,
        {{ alias }}.run_uuid,
        {{ alias }}.created_at as version_created_at,
        {{ alias }}.first_ingest_seq as version_first_ingest_seq,
        {{ alias }}.timeline_key as version_timeline_key
{%- endmacro %}

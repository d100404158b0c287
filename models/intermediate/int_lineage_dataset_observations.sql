{{ config(materialized='windowed_append', input_window=lineage_events_input(own_column='ingest_seq'), on_schema_change='append_new_columns') }}

{#- One row per dataset named by an event. Appends the events past the watermark. A stable
    schema repeats the same facet text on every run, so each distinct text is parsed and keyed
    once per build and joined back by its SHA-256. The parsed fields are kept on the first
    reference of each distinct text only (null elsewhere, so the table stays narrow):
    int_lineage_observed_schemas takes them from there instead of reading the events' facets again. -#}
with dataset_references as (
    {{ lineage_dataset_references() }}
),

hashed_references as (
    select
        {%- for column in lineage_reference_event_columns() %}
            {{ column }},
        {%- endfor %}
        io_type,
        ref_index,
        namespace_name,
        dataset_name,
        sha2(schema_facet, 256) as schema_text_hash
    from dataset_references
),

schema_texts as (
    select
        namespace_name,
        dataset_name,
        sha2(schema_facet, 256) as schema_text_hash,
        min(schema_facet) as schema_facet,
        min(struct(ingest_seq, io_type, ref_index)) as first_reference
    from dataset_references
    where schema_facet is not null
    group by namespace_name, dataset_name, sha2(schema_facet, 256)
),

parsed_schemas as (
    select
        namespace_name,
        dataset_name,
        schema_text_hash,
        first_reference,
        coalesce(get_json_object(schema_facet, '$.fields') is not null, false) as has_schema,
        {{ schema_facet_fields('schema_facet') }} as schema_fields
    from schema_texts
),

keyed_schemas as (
    select
        namespace_name,
        dataset_name,
        schema_text_hash,
        first_reference,
        has_schema,
        case
            when has_schema then {{ schema_version_uuid('namespace_name', 'dataset_name', 'schema_fields') }}
        end as observed_schema_uuid,
        case when has_schema then size(schema_fields) end as field_count,
        case when has_schema then schema_fields end as schema_fields
    from parsed_schemas
)

select
    {{ name_uuid("concat_ws(':', 'observation', hashed_references.event_id, hashed_references.io_type, "
        ~ "cast(hashed_references.ref_index as string))") }} as observation_id,
    hashed_references.event_id,
    hashed_references.ingest_seq,
    hashed_references.event_time,
    hashed_references.event_kind,
    hashed_references.event_type,
    hashed_references.run_id as run_uuid,
    {{ job_uuid('hashed_references.job_namespace', 'hashed_references.job_name') }} as job_uuid,
    hashed_references.job_namespace,
    hashed_references.job_name,
    hashed_references.io_type,
    hashed_references.ref_index,
    hashed_references.namespace_name,
    hashed_references.dataset_name,
    {{ dataset_uuid('hashed_references.namespace_name', 'hashed_references.dataset_name') }} as dataset_uuid,
    coalesce(keyed_schemas.has_schema, false) as has_schema,
    keyed_schemas.observed_schema_uuid,
    keyed_schemas.field_count,
    case
        when
            struct(hashed_references.ingest_seq, hashed_references.io_type, hashed_references.ref_index)
            = keyed_schemas.first_reference
            then keyed_schemas.schema_fields
    end as schema_fields
from hashed_references
left join keyed_schemas
    on
        hashed_references.namespace_name = keyed_schemas.namespace_name
        and hashed_references.dataset_name = keyed_schemas.dataset_name
        and hashed_references.schema_text_hash = keyed_schemas.schema_text_hash
{#- Each file in event-time order, so that its row groups span short stretches of time: the revision
    models read a dataset's observations from a tail's earliest event time on, and Parquet's min/max
    statistics then skip the row groups before it. Unsorted (in the join's order), a first build's
    files held every year of history in every row group, and each batch build read them whole. A local sort: no shuffle, and appends stay as cheap as their window. #}
sort by hashed_references.event_time

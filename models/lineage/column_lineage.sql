{{ config(materialized='windowed_append', input_window=lineage_events_input(own_column='ingest_seq')) }}

{#- One row per (output field, input field) of each columnLineage facet, per run that recorded it.
    Both facet shapes: 1-0-x puts transformationType/Description on the output field, 1-1-x and
    later put a transformations list on each input field. The first recording of a key (ingest
    order) is kept, so a START and a COMPLETE of one run give one row. -#}
with new_events as (
    select
        event_id,
        ingest_seq,
        event_time,
        run_id,
        job_namespace,
        job_name,
        concat(coalesce(outputs, array()), if(dataset is null, array(), array(dataset))) as written
    from {{ ref('stg_lineage_events') }}
    where {{ in_input_window() }}
),

facets as (
    select
        new_events.event_id,
        new_events.ingest_seq,
        new_events.event_time,
        new_events.run_id,
        new_events.job_namespace,
        new_events.job_name,
        written_dataset.namespace as output_namespace,
        written_dataset.name as output_dataset,
        from_json(
            written_dataset.facets['columnLineage'],
            'fields map<string, struct<inputFields: array<struct<namespace: string, name: string, field: string,
            transformations: array<struct<type: string, subtype: string, description: string,
            masking: boolean>>>>, transformationType: string, transformationDescription: string>>'
        ).fields as lineage_fields
    from new_events
        lateral view explode(new_events.written) exploded as written_dataset
    where written_dataset.facets['columnLineage'] is not null
),

output_fields as (
    select
        facets.event_id,
        facets.ingest_seq,
        facets.event_time,
        facets.run_id,
        facets.job_namespace,
        facets.job_name,
        facets.output_namespace,
        facets.output_dataset,
        exploded.output_field,
        exploded.field_lineage
    from facets
        lateral view explode(facets.lineage_fields) exploded as output_field, field_lineage
),

input_fields as (
    select
        output_fields.event_id,
        output_fields.ingest_seq,
        output_fields.event_time,
        output_fields.run_id,
        output_fields.job_namespace,
        output_fields.job_name,
        output_fields.output_namespace,
        output_fields.output_dataset,
        output_fields.output_field,
        -- Spark resolves struct fields case-insensitively: these are transformationType, ...
        output_fields.field_lineage.transformationtype as legacy_type,
        output_fields.field_lineage.transformationdescription as legacy_description,
        exploded.input_entry
    from output_fields
        lateral view explode(output_fields.field_lineage.inputfields) exploded as input_entry
),

shaped as (
    select
        input_fields.event_id,
        input_fields.ingest_seq,
        input_fields.event_time,
        input_fields.run_id,
        input_fields.job_namespace,
        input_fields.job_name,
        input_fields.output_namespace,
        input_fields.output_dataset,
        input_fields.output_field,
        input_fields.input_entry.namespace as input_namespace,
        input_fields.input_entry.name as input_dataset,
        input_fields.input_entry.field as input_field,
        coalesce(
            nullif(input_fields.input_entry.transformations, array()),
            if(
                input_fields.legacy_type is null and input_fields.legacy_description is null,
                array(),
                array(named_struct(
                    'type', input_fields.legacy_type, 'subtype', cast(null as string),
                    'description', input_fields.legacy_description, 'masking', cast(null as boolean)
                ))
            )
        ) as transformations,
        input_fields.legacy_type,
        input_fields.legacy_description,
        concat_ws(
            ':', 'column_lineage', input_fields.output_namespace, input_fields.output_dataset,
            input_fields.output_field, coalesce(input_fields.input_entry.namespace, ''),
            input_fields.input_entry.name, input_fields.input_entry.field,
            coalesce(input_fields.run_id, input_fields.event_id)
        ) as lineage_key
    from input_fields
    where
        input_fields.output_namespace is not null
        and input_fields.output_dataset is not null
        and input_fields.output_field is not null
        and input_fields.input_entry.name is not null
        and input_fields.input_entry.field is not null
),

first_recorded as (
    select
        shaped.lineage_key,
        min_by(
            struct(
                shaped.event_id, shaped.event_time, shaped.run_id, shaped.job_namespace, shaped.job_name,
                shaped.output_namespace, shaped.output_dataset, shaped.output_field, shaped.input_namespace,
                shaped.input_dataset, shaped.input_field, shaped.transformations, shaped.legacy_type,
                shaped.legacy_description
            ),
            shaped.ingest_seq
        ) as first_row,
        min(shaped.ingest_seq) as ingest_seq
    from shaped
    group by shaped.lineage_key
),

keyed as (
    select
        {{ name_uuid('first_recorded.lineage_key') }} as uuid,
        first_recorded.first_row.output_namespace,
        first_recorded.first_row.output_dataset,
        first_recorded.first_row.output_field,
        first_recorded.first_row.input_namespace,
        first_recorded.first_row.input_dataset,
        first_recorded.first_row.input_field,
        coalesce(
            try_element_at(first_recorded.first_row.transformations, 1).type, first_recorded.first_row.legacy_type
        ) as transformation_type,
        try_element_at(first_recorded.first_row.transformations, 1).subtype as transformation_subtype,
        coalesce(
            try_element_at(first_recorded.first_row.transformations, 1).description,
            first_recorded.first_row.legacy_description
        ) as transformation_description,
        first_recorded.first_row.transformations,
        first_recorded.first_row.run_id as run_uuid,
        first_recorded.first_row.job_namespace,
        first_recorded.first_row.job_name,
        first_recorded.first_row.event_id,
        first_recorded.first_row.event_time as recorded_at,
        first_recorded.ingest_seq
    from first_recorded
)

select
    keyed.uuid,
    {{ dataset_uuid('keyed.output_namespace', 'keyed.output_dataset') }} as output_dataset_uuid,
    keyed.output_namespace,
    keyed.output_dataset,
    keyed.output_field,
    if(
        keyed.input_namespace is null, cast(null as string),
        {{ dataset_uuid('keyed.input_namespace', 'keyed.input_dataset') }}
    ) as input_dataset_uuid,
    keyed.input_namespace,
    keyed.input_dataset,
    keyed.input_field,
    keyed.transformation_type,
    keyed.transformation_subtype,
    keyed.transformation_description,
    keyed.transformations,
    keyed.run_uuid,
    if(
        keyed.run_uuid is null, cast(null as string),
        {{ dataset_version_uuid('keyed.output_namespace', 'keyed.output_dataset', 'keyed.run_uuid') }}
    ) as output_dataset_version_uuid,
    keyed.job_namespace,
    keyed.job_name,
    keyed.event_id,
    keyed.recorded_at,
    keyed.ingest_seq
from keyed
{{ except_existing('keyed.uuid = existing.uuid') }}

"""One Arrow schema event per (dataset, schema version), written only when a dataset's schema changes.

Like Open Data Fabric's SetDataSchema: a reader learns a dataset's exact schema (Arrow IPC bytes)
without opening a data file. Two sources of schema versions:
- OpenLineage datasets: versions in `dataset_schema_versions` without an event yet, with their fields from
  the field mapping (nested fields rebuilt from their dotted paths);
- the changelog streams this warehouse writes: the Spark schema of each stream the `changelog_streams`
  view lists (its refs make every changelog model an upstream of this model).

Schemas are built per dataset on the executors (`applyInArrow`); only versions without an event are
processed, so a build without a schema change writes nothing.
"""

import json

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from python_jobs.keys import dataset_uuid
from python_jobs.schema.events import EVENT_SPARK_DDL, events_for_group
from python_jobs.schema.flat_fields import nest_fields
from python_jobs.schema.warehouse_tables import WAREHOUSE_NAMESPACE, marquez_schema_version_uuid, spark_schema_fields

VERSION_COLUMNS = [
    "dataset_uuid",
    "namespace_name",
    "dataset_name",
    "schema_version_uuid",
    "first_at",
    "last_at",
    "fields_json",
]


@F.udf("string")
def nested_fields_json(flat_fields_json):
    return json.dumps(nest_fields(json.loads(flat_fields_json or "[]")))


def lineage_schema_versions(dbt) -> DataFrame:
    fields = (
        dbt.ref("dataset_schema_versions_field_mapping")
        .join(dbt.ref("dataset_fields"), F.col("dataset_field_uuid") == F.col("uuid"))
        .groupBy("dataset_schema_version_uuid")
        .agg(F.to_json(F.sort_array(F.collect_list(F.struct("name", "type", "description")))).alias("flat"))
    )
    versions = dbt.ref("dataset_schema_versions")
    return versions.join(fields, versions.uuid == fields.dataset_schema_version_uuid, "left").select(
        "dataset_uuid",
        "namespace_name",
        "dataset_name",
        F.col("uuid").alias("schema_version_uuid"),
        F.col("created_at").alias("first_at"),
        F.col("created_at").alias("last_at"),
        nested_fields_json("flat").alias("fields_json"),
    )


def changelog_schema_versions(session: SparkSession, streams: DataFrame) -> DataFrame:
    """The current schema of every changelog stream, one row per row of the changelog_streams view."""
    rows = []
    for stream in streams.orderBy("model_name").collect():
        name = f"changelog.{stream['table_name']}"
        fields = spark_schema_fields(session.table(stream["relation_name"]).schema)
        rows.append(
            (
                dataset_uuid(WAREHOUSE_NAMESPACE, name),
                WAREHOUSE_NAMESPACE,
                name,
                marquez_schema_version_uuid(WAREHOUSE_NAMESPACE, name, fields),
                stream["first_system_time"],
                stream["last_system_time"],
                json.dumps(fields),
            )
        )
    return session.createDataFrame(
        rows,
        "dataset_uuid string, namespace_name string, dataset_name string, schema_version_uuid string, "
        "first_at timestamp, last_at timestamp, fields_json string",
    )


def last_event_per_dataset(existing: DataFrame) -> DataFrame:
    newest_first = Window.partitionBy("dataset_uuid").orderBy(F.desc("sequence_number"))
    return (
        existing.withColumn("recency", F.row_number().over(newest_first))
        .where("recency = 1")
        .select(
            "dataset_uuid",
            F.col("sequence_number").alias("previous_sequence_number"),
            F.col("arrow_schema").alias("previous_arrow_schema"),
        )
    )


def model(dbt, session):
    dbt.config(materialized="incremental", incremental_strategy="append")
    versions = lineage_schema_versions(dbt).select(*VERSION_COLUMNS).unionByName(
        changelog_schema_versions(session, dbt.ref("changelog_streams")).select(*VERSION_COLUMNS)
    )

    if dbt.is_incremental:
        existing = session.table(str(dbt.this))
        pending = versions.join(
            existing.select("dataset_uuid", "schema_version_uuid"), ["dataset_uuid", "schema_version_uuid"], "left_anti"
        ).join(last_event_per_dataset(existing), "dataset_uuid", "left")
    else:
        pending = versions.withColumn("previous_sequence_number", F.lit(None).cast("bigint")).withColumn(
            "previous_arrow_schema", F.lit(None).cast("binary")
        )

    # A changelog stream's first schema dates from its first row; a later one appeared with the newest snapshot.
    first_seen_at = F.when(F.col("previous_sequence_number").isNull(), F.col("first_at")).otherwise(F.col("last_at"))
    events = (
        pending.select(
            "dataset_uuid",
            "namespace_name",
            "dataset_name",
            "schema_version_uuid",
            first_seen_at.alias("first_seen_at"),
            "fields_json",
            "previous_sequence_number",
            "previous_arrow_schema",
        )
        .groupBy("dataset_uuid")
        .applyInArrow(events_for_group, EVENT_SPARK_DDL)
    )
    return events.withColumn("derived_at", F.current_timestamp())

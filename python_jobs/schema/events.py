"""SetDataSchema-style events: one per (dataset, schema version), in the order the versions appeared.

Pure functions over plain values, plus ``events_for_group``: the Arrow-in/Arrow-out function the
``dataset_schema_events`` dbt model hands to Spark's ``applyInArrow`` (one call per dataset), so schemas
are built on the executors and nothing is collected to the driver.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa

from python_jobs.schema.arrow_schema import arrow_schema, deserialize, render_json, serialize, spark_ddl
from python_jobs.schema.changes import classify
from python_jobs.schema.types import TypeMapping


@dataclass(frozen=True)
class SchemaVersionInput:
    schema_version_uuid: str
    first_seen_at: datetime | None
    fields: list[dict[str, Any]]


@dataclass(frozen=True)
class PreviousEvent:
    sequence_number: int
    arrow_schema: bytes


EVENT_SCHEMA = pa.schema(
    [
        pa.field("dataset_uuid", pa.utf8()),
        pa.field("namespace_name", pa.utf8()),
        pa.field("dataset_name", pa.utf8()),
        pa.field("schema_version_uuid", pa.utf8()),
        pa.field("sequence_number", pa.int64()),
        pa.field("event_time", pa.timestamp("us", tz="UTC")),
        pa.field("arrow_schema", pa.binary()),
        pa.field("arrow_schema_json", pa.utf8()),
        pa.field("ddl", pa.utf8()),
        pa.field("field_count", pa.int32()),
        pa.field("fields_added", pa.list_(pa.field("element", pa.utf8()))),
        pa.field("fields_removed", pa.list_(pa.field("element", pa.utf8()))),
        pa.field("fields_type_changed", pa.list_(pa.field("element", pa.utf8()))),
        pa.field("fields_description_changed", pa.list_(pa.field("element", pa.utf8()))),
        pa.field("is_compatible", pa.bool_()),
        pa.field("type_fallbacks", pa.int32()),
    ]
)

# The same shape as Spark DDL, for applyInArrow.
EVENT_SPARK_DDL = (
    "dataset_uuid string, namespace_name string, dataset_name string, schema_version_uuid string, "
    "sequence_number bigint, event_time timestamp, arrow_schema binary, arrow_schema_json string, ddl string, "
    "field_count int, fields_added array<string>, fields_removed array<string>, "
    "fields_type_changed array<string>, fields_description_changed array<string>, is_compatible boolean, "
    "type_fallbacks int"
)


def schema_metadata(namespace: str, name: str, schema_version_uuid: str) -> dict[str, str]:
    return {
        "openlineage.dataset.namespace": namespace,
        "openlineage.dataset.name": name,
        "lineage_warehouse.schema_version_uuid": schema_version_uuid,
    }


def build_events(
    dataset_uuid: str,
    namespace: str,
    name: str,
    versions: Sequence[SchemaVersionInput],
    previous: PreviousEvent | None,
) -> list[dict[str, Any]]:
    """Events for the dataset's new schema versions, continuing the sequence after ``previous``.

    ``versions`` must already exclude versions that have an event; they are emitted in first-seen order.
    """
    ordered = sorted(versions, key=lambda v: (v.first_seen_at is None, v.first_seen_at, v.schema_version_uuid))
    last_schema = deserialize(previous.arrow_schema) if previous else None
    sequence = previous.sequence_number if previous else 0
    events: list[dict[str, Any]] = []
    for version in ordered:
        mapping = TypeMapping()
        schema = arrow_schema(version.fields, mapping, schema_metadata(namespace, name, version.schema_version_uuid))
        change = classify(last_schema, schema)
        sequence += 1
        events.append(
            {
                "dataset_uuid": dataset_uuid,
                "namespace_name": namespace,
                "dataset_name": name,
                "schema_version_uuid": version.schema_version_uuid,
                "sequence_number": sequence,
                "event_time": version.first_seen_at,
                "arrow_schema": serialize(schema),
                "arrow_schema_json": render_json(schema),
                "ddl": spark_ddl(schema),
                "field_count": len(schema),
                "fields_added": change.added if last_schema is not None else [f.name for f in schema],
                "fields_removed": change.removed,
                "fields_type_changed": change.type_changed,
                "fields_description_changed": change.description_changed,
                "is_compatible": change.is_compatible,
                "type_fallbacks": mapping.fallbacks,
            }
        )
        last_schema = schema
    return events


def events_for_group(group: pa.Table) -> pa.Table:
    """One dataset's pending schema versions (and its last event, if any) → its new events.

    Input columns: dataset_uuid, namespace_name, dataset_name, schema_version_uuid, first_seen_at, fields_json,
    previous_sequence_number, previous_arrow_schema (the last two null for a dataset without events).
    """
    rows = group.to_pylist()
    if not rows:
        return EVENT_SCHEMA.empty_table()
    first = rows[0]
    previous = (
        PreviousEvent(int(first["previous_sequence_number"]), first["previous_arrow_schema"])
        if first["previous_sequence_number"] is not None
        else None
    )
    versions = [
        SchemaVersionInput(row["schema_version_uuid"], row["first_seen_at"], json.loads(row["fields_json"] or "[]"))
        for row in rows
    ]
    events = build_events(first["dataset_uuid"], first["namespace_name"], first["dataset_name"], versions, previous)
    return pa.Table.from_pylist(events, schema=EVENT_SCHEMA)

"""Schema events: one per new schema version, sequence continues, unchanged schemas write nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pyarrow as pa

from python_jobs.schema.arrow_schema import deserialize
from python_jobs.schema.events import EVENT_SCHEMA, PreviousEvent, SchemaVersionInput, build_events, events_for_group

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = datetime(2026, 1, 2, tzinfo=UTC)
T2 = datetime(2026, 1, 3, tzinfo=UTC)
V1_FIELDS = [{"name": "id", "type": "bigint"}, {"name": "email", "type": "varchar(200)"}]
V2_FIELDS = [*V1_FIELDS, {"name": "signup_date", "type": "date"}]
V3_FIELDS = [{"name": "id", "type": "varchar(36)"}, {"name": "signup_date", "type": "date"}]


def test_versions_are_emitted_in_first_seen_order_with_changes():
    events = build_events(
        "d1",
        "warehouse",
        "public.users",
        [
            SchemaVersionInput("sv3", T2, V3_FIELDS),
            SchemaVersionInput("sv1", T0, V1_FIELDS),
            SchemaVersionInput("sv2", T1, V2_FIELDS),
        ],
        previous=None,
    )
    assert [(e["schema_version_uuid"], e["sequence_number"]) for e in events] == [("sv1", 1), ("sv2", 2), ("sv3", 3)]
    first, second, third = events
    assert first["fields_added"] == ["id", "email"] and first["is_compatible"]
    assert second["fields_added"] == ["signup_date"] and second["fields_removed"] == [] and second["is_compatible"]
    assert third["fields_removed"] == ["email"] and third["fields_type_changed"] == ["id"]
    assert not third["is_compatible"]
    schema = deserialize(second["arrow_schema"])
    assert schema.names == ["id", "email", "signup_date"]
    assert schema.field("signup_date").type == pa.date32()
    assert schema.metadata[b"openlineage.dataset.name"] == b"public.users"
    assert second["ddl"] == "`id` BIGINT, `email` STRING, `signup_date` DATE"


def test_sequence_continues_after_the_previous_event_and_compares_with_it():
    v1 = build_events("d1", "ns", "t", [SchemaVersionInput("sv1", T0, V1_FIELDS)], previous=None)[0]
    later = build_events(
        "d1", "ns", "t", [SchemaVersionInput("sv2", T1, V2_FIELDS)], PreviousEvent(1, v1["arrow_schema"])
    )
    assert len(later) == 1
    assert later[0]["sequence_number"] == 2
    assert later[0]["fields_added"] == ["signup_date"]


def test_no_pending_versions_means_no_events():
    assert build_events("d1", "ns", "t", [], previous=None) == []


def test_unknown_types_are_counted_per_event():
    events = build_events("d1", "ns", "t", [SchemaVersionInput("sv", T0, [{"name": "g", "type": "geography"}])], None)
    assert events[0]["type_fallbacks"] == 1
    assert deserialize(events[0]["arrow_schema"]).field("g").type == pa.utf8()


def test_spark_ddl_matches_the_arrow_event_schema(spark):
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    from python_jobs.schema.events import EVENT_SPARK_DDL

    as_arrow = to_arrow_schema(StructType.fromDDL(EVENT_SPARK_DDL), timezone="UTC")
    assert as_arrow.names == EVENT_SCHEMA.names
    assert [str(f.type) for f in as_arrow] == [str(f.type) for f in EVENT_SCHEMA]


def test_arrow_group_function_matches_the_event_schema():
    group = pa.Table.from_pylist(
        [
            {
                "dataset_uuid": "d1",
                "namespace_name": "ns",
                "dataset_name": "t",
                "schema_version_uuid": "sv2",
                "first_seen_at": T1,
                "fields_json": json.dumps(V2_FIELDS),
                "previous_sequence_number": None,
                "previous_arrow_schema": None,
            }
        ]
    )
    result = events_for_group(group)
    assert result.schema.equals(EVENT_SCHEMA)
    assert result.column("sequence_number").to_pylist() == [1]

"""`lineage.dataset_schema_events` on the main job's samples: real rows, real Arrow bytes, readable history."""

from __future__ import annotations

import pyarrow as pa
import pytest

from python_jobs.cli import main as cli_main
from python_jobs.schema.arrow_schema import deserialize, render_json, spark_ddl


@pytest.fixture(scope="module")
def events(sample_warehouse, spark):
    table = sample_warehouse.table("lineage", "dataset_schema_events")
    return [row.asDict() for row in spark.table(table).orderBy("dataset_uuid", "sequence_number").collect()]


def test_every_event_round_trips_through_arrow_ipc(events):
    assert events
    for event in events:
        schema = deserialize(bytes(event["arrow_schema"]))
        assert isinstance(schema, pa.Schema)
        assert render_json(schema) == event["arrow_schema_json"]
        assert spark_ddl(schema) == event["ddl"]
        assert schema.metadata[b"lineage_warehouse.schema_version_uuid"] == event["schema_version_uuid"].encode()


def test_sequences_are_gapless_and_changes_are_classified(events):
    by_dataset: dict[str, list[dict]] = {}
    for event in events:
        by_dataset.setdefault(event["dataset_uuid"], []).append(event)
    for history in by_dataset.values():
        assert [e["sequence_number"] for e in history] == list(range(1, len(history) + 1))
        for event in history:
            breaking = bool(event["fields_removed"] or event["fields_type_changed"])
            assert event["is_compatible"] is (not breaking)
    evolved = [h for h in by_dataset.values() if len(h) > 1]
    assert evolved, "the samples contain a dataset whose schema changes"
    for history in evolved:
        for later in history[1:]:
            assert later["fields_added"] or later["fields_removed"] or later["fields_type_changed"] or later[
                "fields_description_changed"
            ]


def test_changelog_streams_get_schema_events(events, sample_warehouse, spark):
    # Listed with SQL, not spark.catalog.listTables: with expressions interpreted (as the suite runs them, see
    # conftest.py), Spark fails to decode listTables' rows into its Table class (EXPRESSION_DECODING_FAILED).
    schema = sample_warehouse.schema("changelog")
    views = {row.viewName for row in spark.sql(f"show views in {schema}").collect()}
    changelog_tables = [
        row.tableName for row in spark.sql(f"show tables in {schema}").collect()
        if not row.isTemporary and row.tableName not in views
    ]
    streams = {e["dataset_name"]: e for e in events if e["namespace_name"] == "lineage_warehouse"}
    for table in changelog_tables:
        columns = spark.table(f"{sample_warehouse.schema('changelog')}.{table}").columns
        if columns[:4] != ["offset", "op", "system_time", "event_time"]:
            continue
        event = streams[f"changelog.{table}"]
        schema = deserialize(bytes(event["arrow_schema"]))
        assert schema.names == columns


def test_schema_show_prints_the_history(events, capsys):
    evolved = {}
    for event in events:
        evolved.setdefault((event["namespace_name"], event["dataset_name"]), []).append(event)
    (namespace, name), history = max(evolved.items(), key=lambda item: len(item[1]))
    assert cli_main(["schema", "show", namespace, name, "--ddl"]) == 0
    output = capsys.readouterr().out
    assert f"schema history of {namespace}:{name} ({len(history)} versions)" in output
    for event in history:
        assert event["schema_version_uuid"] in output
        assert event["ddl"] in output

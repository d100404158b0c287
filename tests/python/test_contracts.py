"""The contracts defined once (issue 28): each is read by two sides, which must agree.

- the raw and audit tables: the on-run-start hooks and ingest create them from the same dbt sources;
- the lineage ``event_id``: ingest and the rows written without it (``facets.raw_events``) share one rule;
- the lineage core's models: read from dbt's manifest.
"""

from __future__ import annotations

import json

import pytest
from pyspark.sql.types import ArrayType, LongType, MapType, StringType, StructField, StructType

from python_jobs.contracts import ContractError, spark_type
from python_jobs.dbt import run_dbt
from python_jobs.facets.raw_events import contract_row, raw_events_frame
from python_jobs.ingest.events import ensure_event_tables
from python_jobs.ingest.lineage import ensure_lineage_tables, ingest_lineage
from python_jobs.lineage.models import GRAPH_MODEL, core_models

RAW_AND_AUDIT_TABLES = [("raw", "lineage_events"), ("audit", "lineage_events_rejected"),
                        ("raw", "registry_schemas"), ("audit", "registry_rejected"),
                        ("raw", "sd_events"), ("audit", "sd_events_rejected")]


def test_spark_type_reads_nested_types():
    assert spark_type("array<struct<name: string, facets: map<string, string>>>") == ArrayType(
        StructType([StructField("name", StringType()), StructField("facets", MapType(StringType(), StringType()))])
    )
    assert spark_type(" BIGINT ") == LongType()


@pytest.mark.parametrize("text", ["varchar(3)", "array<string", "map<string>", "struct<a string>", "string string"])
def test_spark_type_refuses_what_it_cannot_read(text):
    with pytest.raises(ContractError):
        spark_type(text)


def table_shape(spark, table: str) -> tuple[list[tuple[str, str]], list[str]]:
    columns = spark.catalog.listColumns(table)
    return [(c.name, c.dataType) for c in columns], [c.name for c in columns if c.isPartition]


def test_hooks_and_ingest_create_the_same_tables(spark, settings, isolated_settings):
    from_ingest = isolated_settings
    ensure_lineage_tables(spark, from_ingest)
    ensure_event_tables(spark, from_ingest)
    from_hooks = settings.with_prefix(isolated_settings.schema_prefix + "hooks_")
    run_dbt(from_hooks, ["run-operation", "ensure_lineage_raw_tables"])
    run_dbt(from_hooks, ["run-operation", "ensure_registry_raw_tables"])
    for layer, name in RAW_AND_AUDIT_TABLES:
        ingest_shape = table_shape(spark, from_ingest.table(layer, name))
        assert table_shape(spark, from_hooks.table(layer, name)) == ingest_shape, f"{layer}.{name}"
    assert table_shape(spark, from_ingest.table("raw", "lineage_events"))[1] == ["ingest_block"]


def test_rows_written_without_ingest_get_ingest_event_ids(spark, isolated_settings, tmp_path):
    event = {"eventType": "START", "eventTime": "2026-03-01T00:00:00Z", "producer": "https://example.com/tests",
             "run": {"runId": "00000000-0000-4000-8000-0000000000aa", "facets": {"x": {"a": [1, 2.5, None]}}},
             "job": {"namespace": "contracts", "name": "job"}, "inputs": [], "outputs": []}
    # Whitespace and an unknown top-level key do not count towards the id.
    text = json.dumps(event, indent=1).replace("\n", " ")[:-1] + ', "extra": true}'
    path = tmp_path / "event.ndjson"
    path.write_text(text + "\n")
    ingest_lineage(spark, isolated_settings, [path])
    ingested = spark.table(isolated_settings.table("raw", "lineage_events")).select("event_id").first()[0]
    written = raw_events_frame(spark, [contract_row(event, 1, "x.ndjson", 1, event_text=text)]).first()["event_id"]
    assert written == ingested


def test_core_models_come_from_the_manifest(settings, dbt_manifest):
    core = set(core_models(settings))
    assert {"stg_lineage_events", "int_lineage_dataset_versions", "int_lineage_build_tails", "runs",
            "column_lineage"} <= core
    assert not core & {GRAPH_MODEL, "dataset_schema_events", "facet_refs", "stg_sd_events"}

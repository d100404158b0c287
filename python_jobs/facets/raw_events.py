"""OpenLineage events as ``raw.lineage_events`` rows, for tests and the facet benchmark.

The lineage ingest is the production path into the raw layer. This module writes rows in the
same contract (``python_jobs/ingest/lineage_contract.py``) straight from event dicts, so facet
models and the benchmark can run on exactly the events they need, in an isolated prefix. Their
``event_id`` is ingest's, worked out by Spark from ``event_json`` (``event_parsing.event_id_of_text``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from python_jobs.ingest.lineage import ensure_lineage_tables
from python_jobs.ingest.lineage_contract import INGEST_BLOCK_EVENTS, RAW_LINEAGE_EVENTS
from python_jobs.lineage.event_parsing import event_id_of_text
from python_jobs.settings import Settings

Event = Mapping[str, Any]


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def facet_map(facets: Mapping[str, Any] | None) -> dict[str, str] | None:
    """Facet name -> the facet's JSON text, as ingest keeps them."""
    if facets is None:
        return None
    return {name: compact_json(body) for name, body in facets.items()}


def event_kind(event: Event) -> str:
    if "run" in event:
        return "RunEvent"
    if "dataset" in event:
        return "DatasetEvent"
    return "JobEvent"


def dataset_reference(dataset: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "namespace": dataset.get("namespace"),
        "name": dataset.get("name"),
        "facets": facet_map(dataset.get("facets")),
        "input_facets": facet_map(dataset.get("inputFacets")),
        "output_facets": facet_map(dataset.get("outputFacets")),
    }


def parse_event_time(text: str | None) -> datetime | None:
    if text is None:
        return None
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).replace(tzinfo=None)


def contract_row(
    event: Event,
    ingest_seq: int,
    source_file: str,
    source_line: int,
    batch_id: str = "facets-fixture",
    event_text: str | None = None,
) -> dict[str, Any]:
    text = event_text if event_text is not None else compact_json(event)
    run = event.get("run") or {}
    job = event.get("job") or {}
    parent = (run.get("facets") or {}).get("parent") or {}
    dataset = event.get("dataset")
    return {
        "ingest_seq": ingest_seq,
        "event_kind": event_kind(event),
        "event_type": event.get("eventType"),
        "event_time": parse_event_time(event.get("eventTime")),
        "event_time_raw": event.get("eventTime"),
        "event_time_has_offset": True,
        "run_id": run.get("runId"),
        "parent_run_id": (parent.get("run") or {}).get("runId"),
        "parent_job_namespace": (parent.get("job") or {}).get("namespace"),
        "parent_job_name": (parent.get("job") or {}).get("name"),
        "job_namespace": job.get("namespace"),
        "job_name": job.get("name"),
        "producer": event.get("producer"),
        "schema_url": event.get("schemaURL"),
        "run_facets": facet_map(run.get("facets")) if run else None,
        "job_facets": facet_map(job.get("facets")) if job else None,
        "inputs": [dataset_reference(d) for d in event.get("inputs", [])] if "inputs" in event else None,
        "outputs": [dataset_reference(d) for d in event.get("outputs", [])] if "outputs" in event else None,
        "dataset": dataset_reference(dataset) if dataset is not None else None,
        "event_json": text,
        "event_bytes": len(text.encode("utf-8")),
        "source_file": source_file,
        "source_line": source_line,
        "ingest_batch_id": batch_id,
        "ingested_at": datetime(2026, 1, 1),
        "ingest_block": ingest_seq // INGEST_BLOCK_EVENTS,
    }


# ``contract_row`` leaves ``event_id`` out: Spark works it out from ``event_json`` (``with_event_ids``).
ROW_SCHEMA = StructType([field for field in RAW_LINEAGE_EVENTS.fields if field.name != "event_id"])


def with_event_ids(frame: DataFrame) -> DataFrame:
    """Contract rows with the ``event_id`` that ingest gives their ``event_json``, in contract column order."""
    return frame.withColumn("event_id", event_id_of_text(F.col("event_json"))).select(*RAW_LINEAGE_EVENTS.fieldNames())


def raw_events_frame(spark: SparkSession, rows: Iterable[Mapping[str, Any]]) -> DataFrame:
    columns = ROW_SCHEMA.fieldNames()
    return with_event_ids(spark.createDataFrame([tuple(row[c] for c in columns) for row in rows], ROW_SCHEMA))


def append_raw_events(spark: SparkSession, settings: Settings, rows: Iterable[Mapping[str, Any]]) -> None:
    """Appends rows to ``raw.lineage_events`` of ``settings``' prefix, creating the table if needed."""
    _insert(spark, settings, raw_events_frame(spark, rows))


def append_raw_frame(spark: SparkSession, settings: Settings, frame: DataFrame) -> None:
    """Appends contract rows (in any column order; ``event_id`` is worked out here) to the partitioned raw
    table, creating it if needed."""
    _insert(spark, settings, with_event_ids(frame))


def _insert(spark: SparkSession, settings: Settings, frame: DataFrame) -> None:
    ensure_lineage_tables(spark, settings)
    frame.write.insertInto(settings.table("raw", "lineage_events"))


def append_events(
    spark: SparkSession, settings: Settings, events: Iterable[Event], first_seq: int, source_file: str
) -> int:
    """Appends events with consecutive ingest_seq from ``first_seq``; returns the next free seq."""
    rows = [contract_row(e, first_seq + i, source_file, i + 1) for i, e in enumerate(events)]
    append_raw_events(spark, settings, rows)
    return first_seq + len(rows)

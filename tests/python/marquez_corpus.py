"""The shared-corpus events the Marquez API tests load, made ingestible in a temporary folder.

Marquez's `apples` events are copied as they are. `metadata.template.json` (Marquez's demo seed)
has time placeholders that Marquez's own `seed` command fills in; we fill them the same way from
a fixed start time. The Spark column-lineage events are integration-test matchers without
`eventTime`, `run`, `producer` and `schemaURL` (and one without a job name): we add fixed values
for exactly those keys and leave the datasets and facets untouched. The spec's example of the
columnLineage facet (1.json, which carries both facet shapes) is wrapped in one run event.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pyspark.sql import SparkSession

from python_jobs.dbt import run_dbt
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.settings import LAYERS, Settings
from python_jobs.spark import ensure_schemas

SEED_START = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
SPARK_RUN_ID = "7d1e7c6a-3a52-4f07-9a37-0b7b0c3c2a11"
SPEC_RUN_ID = "0c9e5a4e-8f7d-4b2f-b1c8-54f1d2a9e001"
PRODUCER = "https://github.com/example/lineage-warehouse/tests"
RUN_EVENT_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def fill_seed_template(text: str, start: datetime = SEED_START) -> str:
    text = text.replace("{{RUN_START_TIME}}", _iso(start))
    return re.sub(
        r"\{\{RUN_END_TIME_AFTER_(\d+)_MINUTES\}\}",
        lambda found: _iso(start + timedelta(minutes=int(found.group(1)))),
        text,
    )


def complete_spark_matcher(event: dict, event_time: datetime, job_name: str) -> dict:
    completed = dict(event)
    completed["eventTime"] = _iso(event_time)
    completed["run"] = {"runId": SPARK_RUN_ID}
    completed["job"] = {"name": job_name, **event.get("job", {})}
    completed["producer"] = PRODUCER
    completed["schemaURL"] = RUN_EVENT_URL
    return completed


def spec_example_event(corpus: Path) -> dict:
    facet = json.loads((corpus / "openlineage/spec/tests/ColumnLineageDatasetFacet/1.json").read_text())
    return {
        "eventType": "COMPLETE",
        "eventTime": _iso(SEED_START + timedelta(hours=3)),
        "run": {"runId": SPEC_RUN_ID},
        "job": {"namespace": "SnowflakeOpenLineage", "name": "discounts_report"},
        "inputs": [{"namespace": "SnowflakeOpenLineage", "name": "CUSTOMERS"},
                   {"namespace": "SnowflakeOpenLineage", "name": "DISCOUNTS"}],
        "outputs": [{"namespace": "SnowflakeOpenLineage", "name": "CUSTOMER_DISCOUNTS", "facets": facet}],
        "producer": PRODUCER,
        "schemaURL": RUN_EVENT_URL,
    }


def prepare_corpus(corpus: Path, out: Path) -> Path:
    """Write the ingestible events under ``out`` and return it."""
    out.mkdir(parents=True, exist_ok=True)
    apples = out / "apples"
    apples.mkdir(exist_ok=True)
    for path in sorted((corpus / "openlineage/marquez/apples").glob("*.json")):
        shutil.copy(path, apples / path.name)
    template = (corpus / "openlineage/marquez/metadata.template.json").read_text()
    (out / "metadata.json").write_text(fill_seed_template(template))
    spark_dir = corpus / "openlineage/openlineage/spark_container"
    spark_events = [
        complete_spark_matcher(json.loads((spark_dir / name).read_text()), SEED_START + timedelta(hours=2, minutes=m),
                               "pyspark_cll_test")
        for m, name in ((0, "pysparkCLLStart.json"), (1, "pysparkCLLEnd.json"))
    ]
    (out / "spark_column_lineage.json").write_text(json.dumps(spark_events))
    (out / "spec_column_lineage.json").write_text(json.dumps(spec_example_event(corpus)))
    return out


# The models the read API reads: what the Marquez API tests build.
API_BUILD = ["build", "--select", "stg_lineage_events+", "facet_classification",
             "--exclude", "dataset_schema_events", "dataset_lineage_graph", "--exclude-resource-type", "test"]


def corpus_warehouse(spark: SparkSession, settings: Settings, prefix: str, inputs: list[Path],
                     expected_events: int) -> Settings:
    """A warehouse of its own (schema prefix ``prefix``, emptied first) with ``inputs`` ingested, every
    event accepted, and the read API's models built."""
    scoped = settings.with_prefix(prefix)
    for layer in LAYERS:
        spark.sql(f"drop database if exists {scoped.schema(layer)} cascade")
    ensure_schemas(spark, scoped, LAYERS)
    report = ingest_lineage(spark, scoped, inputs)
    assert report.rejected == 0 and report.accepted == report.read == expected_events
    run_dbt(scoped, API_BUILD)
    return scoped

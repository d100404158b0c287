"""Self-lineage: the main job's own dbt build as OpenLineage events, landed, ingested and built.

The ``sample_warehouse`` fixture runs ``main`` with self-lineage on: the build's events (from
OpenLineage's dbt artifact processor) land in LINEAGE_HOME/landing/lineage, are ingested, and a second
build turns them into jobs and datasets of the warehouse itself."""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.lineage.self_lineage import (
    DEFAULT_JOB_NAMESPACE,
    artifacts_dir,
    emit_self_lineage,
    landing_dir,
)


def _rows(spark, sql: str) -> list[dict]:
    return [row.asDict() for row in spark.sql(sql).collect()]


def _landed(settings) -> tuple:
    files = sorted(landing_dir(settings).glob("self-lineage-*.ndjson"))
    assert len(files) == 1, files
    lines = files[0].read_text(encoding="utf-8").splitlines()
    return files[0], [json.loads(line) for line in lines]


def test_main_job_emits_one_job_per_model_with_schema_and_inputs(sample_warehouse):
    _, events = _landed(sample_warehouse)
    run_results = json.loads((artifacts_dir(sample_warehouse) / "run_results.json").read_text())
    models = {r["unique_id"].removeprefix("model.lineage_warehouse.") for r in run_results["results"]
              if r["unique_id"].startswith("model.") and r["status"] == "success"}
    by_job: dict[str, list[dict]] = defaultdict(list)
    for event in events:
        assert event["job"]["namespace"] == DEFAULT_JOB_NAMESPACE
        by_job[event["job"]["name"]].append(event)
    # dbt names the job <schema>.<model>.build.run; one START and one COMPLETE per model, one run id
    assert {name.removesuffix(".build.run").split(".")[-1] for name in by_job} == models
    for name, job_events in by_job.items():
        assert [e["eventType"] for e in job_events] == ["START", "COMPLETE"], name
        assert len({e["run"]["runId"] for e in job_events}) == 1

    jobs_model = by_job["lineage.jobs.build.run"][1]
    output = jobs_model["outputs"][0]
    assert output["name"] == "lineage.jobs" and output["namespace"].startswith("file://")
    fields = {f["name"]: f["type"] for f in output["facets"]["schema"]["fields"]}
    assert fields["uuid"] == "string" and fields["created_at"] == "timestamp"  # types from dbt's catalog
    assert [d["name"] for d in jobs_model["inputs"]] == ["staging.stg_lineage_events"]
    assert "sql" in jobs_model["job"]["facets"] and jobs_model["job"]["facets"]["jobType"]["integration"] == "DBT"


def test_own_lineage_is_ingested_and_built_without_duplicates(sample_warehouse, spark):
    landed, events = _landed(sample_warehouse)
    raw = sample_warehouse.table("raw", "lineage_events")
    rejected = sample_warehouse.table("audit", "lineage_events_rejected")
    stored = _rows(spark, f"select count(1) as n from {raw} where source_file like '%{landed.name}'")
    assert stored == [{"n": len(events)}]  # every event passed ingest validation
    assert _rows(spark, f"select count(1) as n from {rejected} where source_file like '%{landed.name}'") == [{"n": 0}]

    lineage = sample_warehouse.schema("lineage")
    jobs = _rows(spark, f"select name from {lineage}.jobs where namespace_name = '{DEFAULT_JOB_NAMESPACE}'")
    assert {"lineage.jobs.build.run", "lineage.datasets.build.run"} <= {j["name"] for j in jobs}
    namespace = events[0]["outputs"][0]["namespace"]
    fields = _rows(
        spark,
        f"select f.name from {lineage}.dataset_fields f join {lineage}.datasets d on d.uuid = f.dataset_uuid "
        f"where d.namespace_name = '{namespace}' and d.name = 'lineage.jobs'",
    )
    assert {"uuid", "namespace_name", "name", "created_at"} <= {f["name"] for f in fields}
    runs = _rows(
        spark,
        f"select r.current_run_state, count(1) as n from {lineage}.runs r join {lineage}.jobs j on j.uuid = r.job_uuid "
        f"where j.namespace_name = '{DEFAULT_JOB_NAMESPACE}' group by r.current_run_state",
    )
    assert runs == [{"current_run_state": "COMPLETE", "n": len(events) // 2}]

    # Emitting the same build again writes the same events; ingesting them adds nothing.
    before = landed.read_bytes()
    again = emit_self_lineage(sample_warehouse, artifacts_dir(sample_warehouse))
    assert again.landed_file == landed and landed.read_bytes() == before
    report = ingest_lineage(spark, sample_warehouse, [landed])
    assert (report.accepted, report.rejected, report.duplicates) == (0, 0, len(events))


def test_events_go_to_a_collector_over_http(sample_warehouse):
    received: list[tuple[str, dict]] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, json.loads(body)))
            self.send_response(201)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        emitted = emit_self_lineage(sample_warehouse, artifacts_dir(sample_warehouse), collector_url=url)
    finally:
        server.shutdown()
        server.server_close()
    _, landed_events = _landed(sample_warehouse)
    assert emitted.landed_file is None and emitted.events == len(landed_events)
    assert {path for path, _ in received} == {"/api/v1/lineage"}
    assert [event for _, event in received] == landed_events  # the same events as the landed file

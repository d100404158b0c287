"""Self-lineage: the main job's own dbt build as OpenLineage events, landed, ingested and built.

The ``sample_warehouse`` fixture runs ``main`` with self-lineage on: the build's events (from
OpenLineage's dbt artifact processor) land as a sealed file in the collector's landing folder, are ingested
(the file moves to ``ingested/``), and a second build turns them into jobs and datasets of the warehouse
itself."""

from __future__ import annotations

import json
import signal
from collections import defaultdict

from python_jobs.landing import LandingLayout, default_landing_root, ingest_sealed
from python_jobs.ports import free_port
from python_jobs.serve.process import start_collector, stop_collector
from python_jobs.warehouse.self_lineage import DEFAULT_JOB_NAMESPACE, artifacts_dir, emit_self_lineage


def _rows(spark, sql: str) -> list[dict]:
    return [row.asDict() for row in spark.sql(sql).collect()]


def _layout(settings) -> LandingLayout:
    return LandingLayout(default_landing_root(settings.lineage_home))


def _landed(settings) -> tuple:
    files = sorted(_layout(settings).ingested_dir.glob("self-lineage-*.ndjson"))
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
    # OpenLineage's processor names the job <schema>.<project>.<model>.build.run (the unique id without
    # its `model.`); one START and one COMPLETE per model, one run id
    assert {name.removesuffix(".build.run").split(".")[-1] for name in by_job} == models
    for name, job_events in by_job.items():
        assert [e["eventType"] for e in job_events] == ["START", "COMPLETE"], name
        assert len({e["run"]["runId"] for e in job_events}) == 1

    jobs_model = by_job["lineage.lineage_warehouse.jobs.build.run"][1]
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
    own_jobs = {"lineage.lineage_warehouse.jobs.build.run", "lineage.lineage_warehouse.datasets.build.run"}
    assert own_jobs <= {j["name"] for j in jobs}
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

    # Emitting the same build again lands the same bytes; ingesting them adds nothing.
    again = emit_self_lineage(sample_warehouse, artifacts_dir(sample_warehouse))
    assert again.landed_file.name == landed.name and again.landed_file.read_bytes() == landed.read_bytes()
    report = ingest_sealed(spark, sample_warehouse, _layout(sample_warehouse)).report
    assert (report.accepted, report.rejected, report.duplicates) == (0, 0, len(events))


def test_events_go_to_the_collector_over_http(sample_warehouse, tmp_path):
    port = free_port()
    landing = LandingLayout(tmp_path / "landing")
    collector = start_collector(landing.root, port, log=tmp_path / "collector.log")
    try:
        emitted = emit_self_lineage(
            sample_warehouse, artifacts_dir(sample_warehouse), collector_url=f"http://127.0.0.1:{port}"
        )
    finally:
        assert stop_collector(collector) in (0, -signal.SIGTERM)  # uvicorn re-raises it after a clean stop
    _, landed_events = _landed(sample_warehouse)
    assert emitted.landed_file is None and emitted.events == len(landed_events)
    received = [json.loads(line) for path in landing.sealed_files() for line in path.read_text().splitlines()]
    assert received == landed_events  # every event acknowledged and landed, in order, unchanged

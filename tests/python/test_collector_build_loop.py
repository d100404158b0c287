"""``serve --build-every``: the collector app and its build loop in this process and Spark session (the
loop is what the command wires up), on an isolated warehouse prefix, with the models ``lineage.runs`` reads."""

from __future__ import annotations

import threading
import time

import uvicorn
from lineage_events import run_event  # tests/python is on sys.path
from openlineage.client.transport.http import HttpConfig, HttpTransport

from python_jobs.landing import LandingLayout
from python_jobs.ports import free_port
from python_jobs.serve.app import CollectorConfig, create_app
from python_jobs.serve.build_loop import BuildLoop, RoundReport, run_round

RUN_A = "0000000a-0000-4000-8000-000000000000"
RUN_B = "0000000b-0000-4000-8000-000000000000"


def test_build_loop_keeps_runs_current_and_retries_a_failed_round(spark, isolated_settings, tmp_path):
    layout = LandingLayout(tmp_path / "landing")
    # The models ``lineage.runs`` reads, not the whole project: the loop, not dbt, is under test.
    command = ["run", "--select", "+runs"]
    failed_once: list[bool] = []

    def round_function(retry_build: bool) -> RoundReport:
        if layout.sealed_files() and not failed_once:
            failed_once.append(True)
            raise RuntimeError("simulated failure (the warehouse was busy)")
        return run_round(spark, isolated_settings, layout, retry_build=retry_build, dbt_command=command)

    reports: list[RoundReport] = []
    loop = BuildLoop(round_function, every_seconds=1.0, after_round=[reports.append])
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(CollectorConfig(layout), build_loop=loop), host="127.0.0.1",
                                           port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    runs = isolated_settings.table("lineage", "runs")
    try:
        while not server.started:
            time.sleep(0.05)
        client = HttpTransport(HttpConfig.from_dict({"type": "http", "url": f"http://127.0.0.1:{port}"}))
        for run_id in (RUN_A, RUN_B):
            event = run_event(run={"runId": run_id}, eventType="COMPLETE")
            assert client.emit(event).status_code == 201
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline and not any(r.ok and r.built for r in reports):
            time.sleep(0.5)
    finally:
        server.should_exit = True
        thread.join(300)
    failed = [number for number, report in enumerate(reports) if not report.ok]
    built = [number for number, report in enumerate(reports) if report.ok and report.built]
    assert failed and built and failed[0] < built[0], [r.summary() for r in reports]
    assert "simulated failure" in (reports[failed[0]].error or "")
    ingested = reports[built[0]].ingest
    assert ingested is not None and (ingested.accepted, ingested.rejected) == (2, 0)
    visible = {row[0] for row in spark.sql(f"select uuid from {runs}").collect()}
    assert {RUN_A, RUN_B} <= visible
    assert layout.sealed_files() == [] and len(list(layout.ingested_dir.iterdir())) >= 1

"""The main job in one Spark session: ingest a set of inputs (lineage events, snapshots oldest first, a
registry, then its events), ``dbt build``, ``dbt docs generate --static``, optionally the build's own
OpenLineage events (self-lineage), the lineage page, and a summary of what the warehouse now holds.

The inputs are described by ``Inputs`` (``warehouse.inputs``); the CLI's ``main`` command generates the
realistic sample first (``python_jobs.tools.generate``, whose ``SampleManifest.inputs()`` describes it).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from python_jobs.dbt import run_dbt, target_dir
from python_jobs.ingest.events import ingest_events
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.ingest.registry import ingest_registry
from python_jobs.ingest.snapshot import ingest_snapshot
from python_jobs.landing import LandingLayout, default_landing_root, ingest_sealed
from python_jobs.lineage_page.render import write_lineage_page
from python_jobs.marquez_api.api import MarquezReadApi, lineage_page_inputs
from python_jobs.progress import Reporter
from python_jobs.settings import LAYERS, SAMPLES_DIR, Settings
from python_jobs.spark import ensure_schemas
from python_jobs.summary import MainSummary, collect_summary
from python_jobs.warehouse.inputs import Inputs, describe_load
from python_jobs.warehouse.self_lineage import artifacts_dir, emit_self_lineage, keep_artifacts

# Set on every dbt command of the main job: the models and tests that only make sense on the sample
# (the crm_accounts changelog, the com.example registry tables) build when it is true.
SAMPLE_DBT_VARS: dict[str, Any] = {"sample_inputs": True}
# The hand-written lineage samples the older model tests assert on; the test fixture ingests them
# beside the generated sample (the main job itself does not).
HAND_WRITTEN_LINEAGE = (SAMPLES_DIR / "lineage", SAMPLES_DIR / "facets")
# The lineage page, written into dbt's target folder beside static_index.html.
LINEAGE_PAGE_NAME = "lineage.html"


@dataclass(frozen=True)
class MainRun:
    summary: MainSummary
    seconds: float


def lineage_page(settings: Settings) -> Path:
    return target_dir(settings) / LINEAGE_PAGE_NAME


def ingest_inputs(spark: SparkSession, settings: Settings, inputs: Inputs, reporter: Reporter) -> list[str]:
    """Ingests every part in the order a deployment would: lineage, snapshots oldest first, the registry,
    then the events it validates. Returns one line per part for the summary."""
    lines = []
    with reporter.step("ingest lineage events", "lines", total=inputs.lineage_lines) as step:
        report = ingest_lineage(spark, settings, list(inputs.lineage))
        note = f"{report.accepted:,} accepted, {report.rejected:,} rejected, {report.duplicates:,} duplicates"
        step.finish(report.read, note)
        lines.append(f"lineage: {report.summary()}")
    datasets = ", ".join(sorted({s.dataset for s in inputs.snapshots})) or "no"
    with reporter.step(f"ingest {datasets} snapshots", "rows", total=sum(s.rows for s in inputs.snapshots)) as step:
        for snapshot in inputs.snapshots:
            load = ingest_snapshot(
                spark, settings, snapshot.dataset, snapshot.path, snapshot.snapshot_time.replace(tzinfo=None),
                snapshot.system_time.replace(tzinfo=None), snapshot.primary_key,
            )
            step.advance(snapshot.rows)
            lines.append(describe_load(load))
        step.finish(note=f"{len(inputs.snapshots)} snapshots")
    with reporter.step("ingest registry", "schema files") as step:
        registry = ingest_registry(spark, settings, inputs.registry_dir)
        step.finish(registry.files, f"{registry.accepted} added, {registry.rejected} rejected")
        lines += registry.lines()
    with reporter.step("ingest self-describing events", "events", total=inputs.events) as step:
        events = ingest_events(spark, settings, inputs.events_file)
        step.finish(events.read, f"{events.accepted:,} accepted, {events.rejected:,} rejected")
        lines += events.lines()
    return lines


class NodeCounter:
    """A dbt callback that advances a progress step per finished node."""

    def __init__(self, step: Any):
        self.step = step

    def __call__(self, event: Any) -> None:
        name = event.info.name
        total = getattr(event.data, "total", 0)
        if total and self.step.total != total:
            self.step.set_total(int(total))
        if name == "NodeFinished":
            self.step.advance()


def dbt_step(settings: Settings, reporter: Reporter, title: str, command: list[str],
             extra_vars: dict[str, Any]) -> dict[str, int]:
    with reporter.step(title, "nodes") as step:
        outcome = run_dbt(settings, ["--quiet", *command], extra_vars=extra_vars, callbacks=[NodeCounter(step)])
        statuses = Counter(str(getattr(r, "status", "")).split(".")[-1].lower()
                           for r in getattr(outcome.result, "results", None) or [])
        step.finish(note=", ".join(f"{n} {status}" for status, n in sorted(statuses.items())))
    return dict(statuses)


# dbt build's arguments that leave out the data and unit tests.
WITHOUT_DATA_TESTS = ("--exclude-resource-type", "test", "unit_test")


def build_command(data_tests: bool) -> list[str]:
    return ["build"] if data_tests else ["build", *WITHOUT_DATA_TESTS]


def run_pipeline(
    spark: SparkSession,
    settings: Settings,
    inputs: Inputs | None = None,
    docs: bool = True,
    reporter: Reporter | None = None,
    self_lineage: bool = False,
    collector_url: str | None = None,
    data_tests: bool = True,
) -> MainRun:
    """The main job in ``spark``: ingests ``inputs`` (none: builds what is ingested already), then builds.
    File paths are recorded with the rows, so two warehouses compare equal only from inputs in one place.
    ``data_tests=False`` leaves dbt's data tests out of the build (they only read: the tables are the same)."""
    started = time.monotonic()
    reporter = reporter or Reporter()
    ensure_schemas(spark, settings, LAYERS)
    ingest_lines = ingest_inputs(spark, settings, inputs, reporter) if inputs is not None else []
    # Set without inputs too: a sample ingested by an earlier run keeps being built.
    dbt_vars = SAMPLE_DBT_VARS
    # With self-lineage a second build follows, over every table: the data tests run there, once, on the tables
    # as the job leaves them (they only read, so the first build's tables are the same without them).
    results = dbt_step(settings, reporter, "dbt build", build_command(data_tests and not self_lineage), dbt_vars)
    if self_lineage:
        # `docs generate` rewrites run_results.json: keep the build's, and add the catalog (column types) below.
        keep_artifacts(target_dir(settings), artifacts_dir(settings))
    docs_page = None
    if docs:
        dbt_step(settings, reporter, "dbt docs generate --static", ["docs", "generate", "--static"], dbt_vars)
        docs_page = target_dir(settings) / "static_index.html"
        if self_lineage:
            keep_artifacts(target_dir(settings), artifacts_dir(settings), ("catalog.json",))
    if self_lineage:
        lines, second_build = load_self_lineage(spark, settings, reporter, collector_url, dbt_vars, data_tests)
        ingest_lines += lines
        if second_build is not None:
            results = second_build
        elif data_tests:  # the events went to a collector: no second build here, so the tests run on their own
            results = dict(Counter(results) + Counter(dbt_step(settings, reporter, "dbt test", ["test"], dbt_vars)))
    page = write_whole_lineage_page(spark, settings, reporter)
    with reporter.step("read the summary", "tables") as step:
        summary = collect_summary(spark, settings, docs_page, page, tuple(ingest_lines), results)
        step.finish(len(summary.table_rows))
    return MainRun(summary, time.monotonic() - started)


def load_self_lineage(
    spark: SparkSession, settings: Settings, reporter: Reporter, collector_url: str | None,
    dbt_vars: dict[str, Any], data_tests: bool = True,
) -> tuple[list[str], dict[str, int] | None]:
    """Emits the kept build's events. Events that landed here (no collector) are ingested like any
    producer's sealed landing file, and built, with the data tests unless ``data_tests`` is false. Returns the
    summary lines and the second build's statuses (None when the events went to a collector: no second build)."""
    with reporter.step("self-lineage: emit this build's OpenLineage events", "events") as step:
        emitted = emit_self_lineage(settings, artifacts_dir(settings), collector_url)
        step.finish(emitted.events, f"dbt run {emitted.invocation_id} to {emitted.destination}")
    if emitted.landed_file is None:
        return [f"self-lineage: {emitted.events} events sent to {emitted.destination}"], None
    landed = ingest_sealed(spark, settings, LandingLayout(default_landing_root(settings.lineage_home)))
    results = dbt_step(settings, reporter, "dbt build (self-lineage)", build_command(data_tests), dbt_vars)
    line = f"self-lineage: {landed.report.summary()}" if landed.report else "self-lineage: nothing landed"
    return [line], results


def write_whole_lineage_page(spark: SparkSession, settings: Settings, reporter: Reporter) -> Path:
    """The lineage page of every job and dataset the warehouse holds, beside dbt's docs."""
    with reporter.step("write the lineage page", "nodes") as step:
        graph, details = lineage_page_inputs(MarquezReadApi(spark, settings), None, 20)
        path = write_lineage_page(lineage_page(settings), graph, details, "Lineage")
        step.finish(len(graph["graph"]), str(path))
    return path

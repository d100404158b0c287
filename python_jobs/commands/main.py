"""``main``: the whole job on the configured target, in one Spark session.

Generate the realistic sample (``python_jobs.generate``) into ``LINEAGE_HOME/sample``, ingest it (lineage
events, the CRM exports in order, the registry, then its events), ``dbt build``, ``dbt docs generate
--static``, write the lineage page, and end with a summary of what the warehouse now holds. With
``--self-lineage`` the build's own OpenLineage events are emitted too, and loaded like any producer's.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from python_jobs.dbt import run_dbt
from python_jobs.generate.sample import DEFAULT_SIZE, SampleManifest, SampleSpec, generate_sample
from python_jobs.lineage.self_lineage import (
    artifacts_dir,
    emit_self_lineage,
    keep_artifacts,
    self_lineage_requested,
)
from python_jobs.ops.cli_lock import add_wait_option, dbt_writer_command, mark_writer, split_wait_option
from python_jobs.ops.lock import writer_lock
from python_jobs.progress import Reporter
from python_jobs.settings import LAYERS, SAMPLES_DIR, Settings, load_settings
from python_jobs.spark import ensure_schemas, get_spark
from python_jobs.summary import MainSummary, collect_summary, render_summary

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
    manifest: SampleManifest | None
    summary: MainSummary
    seconds: float


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    main_parser = groups[""].add_parser(
        "main", help="generate the sample, ingest it, dbt build, dbt docs generate, print a summary"
    )
    main_parser.add_argument(
        "--size", type=int, default=DEFAULT_SIZE, help=f"sample size, about its lineage events (default {DEFAULT_SIZE})"
    )
    main_parser.add_argument("--seed", type=int, default=7, help="sample seed (default 7)")
    main_parser.add_argument(
        "--skip-samples", action="store_true", help="do not generate or ingest the sample: build what is ingested"
    )
    main_parser.add_argument("--skip-docs", action="store_true", help="do not generate the dbt docs")
    main_parser.add_argument(
        "--self-lineage",
        action="store_true",
        help="emit OpenLineage events for this dbt build (one job per model) and load them; "
        "also on with LINEAGE_SELF_LINEAGE=1",
    )
    main_parser.add_argument(
        "--collector-url",
        default=None,
        help="send the self-lineage events to this OpenLineage collector (default: $OPENLINEAGE_URL; "
        "without one they land in the landing folder and are ingested and built here)",
    )
    main_parser.set_defaults(handler=run_main)
    mark_writer(main_parser, "main")

    dbt_parser = groups[""].add_parser(
        "dbt", help="run a dbt command in this process, e.g. `python -m python_jobs dbt build`"
    )
    add_wait_option(dbt_parser)
    dbt_parser.add_argument("dbt_args", nargs=argparse.REMAINDER)
    dbt_parser.set_defaults(handler=run_dbt_passthrough)


def sample_dir(settings: Settings) -> Path:
    return settings.lineage_home / "sample"


def target_dir(settings: Settings) -> Path:
    return Path(os.environ.get("DBT_TARGET_PATH", settings.project_dir / "target"))


def lineage_page(settings: Settings) -> Path:
    return target_dir(settings) / LINEAGE_PAGE_NAME


def ingest_sample(
    spark: SparkSession, settings: Settings, manifest: SampleManifest, reporter: Reporter,
    extra_lineage: Sequence[Path] = (),
) -> list[str]:
    """Ingests every part of the sample in the order a deployment would: lineage, snapshots oldest first,
    the registry, then the events it validates. Returns one line per part for the summary."""
    from python_jobs.commands.changelog import describe_load
    from python_jobs.ingest.events import ingest_events
    from python_jobs.ingest.lineage import ingest_lineage
    from python_jobs.ingest.registry import ingest_registry
    from python_jobs.ingest.snapshot import ingest_snapshot

    lines = []
    with reporter.step("ingest lineage events", "lines", total=manifest.lineage.lines) as step:
        report = ingest_lineage(spark, settings, [manifest.root / "lineage", *extra_lineage])
        note = f"{report.accepted:,} accepted, {report.rejected:,} rejected, {report.duplicates:,} duplicates"
        step.finish(report.read, note)
        lines.append(f"lineage: {report.summary()}")
    with reporter.step("ingest crm_accounts snapshots", "rows", total=sum(s.rows for s in manifest.snapshots)) as step:
        for snapshot in manifest.snapshots:
            load = ingest_snapshot(
                spark, settings, snapshot.dataset, snapshot.path, snapshot.snapshot_time.replace(tzinfo=None),
                snapshot.system_time.replace(tzinfo=None), snapshot.primary_key,
            )
            step.advance(snapshot.rows)
            lines.append(describe_load(load))
        step.finish(note=f"{len(manifest.snapshots)} snapshots")
    with reporter.step("ingest registry", "schema files") as step:
        registry = ingest_registry(spark, settings, manifest.registry_dir)
        step.finish(registry.files, f"{registry.accepted} added, {registry.rejected} rejected")
        lines += registry.lines()
    with reporter.step("ingest self-describing events", "events", total=manifest.sd_events) as step:
        events = ingest_events(spark, settings, manifest.events_file)
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


def run_pipeline(
    spark: SparkSession,
    settings: Settings,
    samples: bool = True,
    docs: bool = True,
    spec: SampleSpec | None = None,
    extra_lineage: Sequence[Path] = (),
    reporter: Reporter | None = None,
    sample_root: Path | None = None,
    self_lineage: bool = False,
    collector_url: str | None = None,
) -> MainRun:
    """The main job in ``spark``. ``sample_root`` (default ``LINEAGE_HOME/sample``) is where the sample is
    written; file paths are recorded with the rows, so two warehouses compare equal only from one place."""
    started = time.monotonic()
    reporter = reporter or Reporter()
    spec = spec or SampleSpec()
    ensure_schemas(spark, settings, LAYERS)
    manifest = None
    ingest_lines: list[str] = []
    if samples:
        with reporter.step(f"generate the sample (size {spec.size:,}, seed {spec.seed})", "files") as step:
            manifest = generate_sample(spec, sample_root or sample_dir(settings))
            files = len(manifest.lineage_files) + len(manifest.snapshots) + len(manifest.registry_schemas) + 1
            step.finish(files, f"in {manifest.root}")
        ingest_lines = ingest_sample(spark, settings, manifest, reporter, extra_lineage)
    # Set with --skip-samples too: a sample ingested by an earlier run keeps being built.
    dbt_vars = SAMPLE_DBT_VARS
    results = dbt_step(settings, reporter, "dbt build", ["build"], dbt_vars)
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
        ingest_lines += load_self_lineage(spark, settings, reporter, collector_url, dbt_vars)
    page = write_whole_lineage_page(spark, settings, reporter)
    with reporter.step("read the summary", "tables") as step:
        summary = collect_summary(spark, settings, docs_page, page, tuple(ingest_lines), results)
        step.finish(len(summary.table_rows))
    return MainRun(manifest, summary, time.monotonic() - started)


def load_self_lineage(
    spark: SparkSession, settings: Settings, reporter: Reporter, collector_url: str | None,
    dbt_vars: dict[str, Any],
) -> list[str]:
    """Emits the kept build's events. Events that landed here (no collector) are ingested like any
    producer's sealed landing file, and built."""
    from python_jobs.serve.build_loop import ingest_sealed
    from python_jobs.serve.landing import LandingLayout, default_landing_root

    with reporter.step("self-lineage: emit this build's OpenLineage events", "events") as step:
        emitted = emit_self_lineage(settings, artifacts_dir(settings), collector_url)
        step.finish(emitted.events, f"dbt run {emitted.invocation_id} to {emitted.destination}")
    if emitted.landed_file is None:
        return [f"self-lineage: {emitted.events} events sent to {emitted.destination}"]
    landed = ingest_sealed(spark, settings, LandingLayout(default_landing_root(settings.lineage_home)))
    dbt_step(settings, reporter, "dbt build (self-lineage)", ["build"], dbt_vars)
    return [f"self-lineage: {landed.report.summary()}" if landed.report else "self-lineage: nothing landed"]


def write_whole_lineage_page(spark: SparkSession, settings: Settings, reporter: Reporter) -> Path:
    """The lineage page of every job and dataset the warehouse holds, beside dbt's docs."""
    from python_jobs.lineage_page.render import write_lineage_page
    from python_jobs.marquez_api.api import MarquezReadApi, lineage_page_inputs

    with reporter.step("write the lineage page", "nodes") as step:
        graph, details = lineage_page_inputs(MarquezReadApi(spark, settings), None, 20)
        path = write_lineage_page(lineage_page(settings), graph, details, "Lineage")
        step.finish(len(graph["graph"]), str(path))
    return path


def run_main(args: argparse.Namespace) -> int:
    started = time.monotonic()
    reporter = Reporter()
    settings = load_settings()
    with reporter.step("start Spark", "") as step:
        spark = get_spark(settings)
        step.finish(note=f"master {spark.sparkContext.master}")
    run = run_pipeline(
        spark, settings, samples=not args.skip_samples, docs=not args.skip_docs,
        spec=SampleSpec(size=args.size, seed=args.seed), reporter=reporter,
        self_lineage=self_lineage_requested(args.self_lineage),
        collector_url=args.collector_url or os.environ.get("OPENLINEAGE_URL") or None,
    )
    reporter.line("")
    for line in run.summary.ingest_lines:
        reporter.line(line)
    render_summary(run.summary, reporter.console)
    reporter.line(f"warehouse:    {settings.lineage_home}")
    reporter.line(f"done in {time.monotonic() - started:,.0f}s (Spark start included)")
    return 0


def run_dbt_passthrough(args: argparse.Namespace) -> int:
    settings = load_settings()
    dbt_args, wait = split_wait_option([a for a in args.dbt_args if a != "--"], args.wait)
    command = dbt_writer_command(dbt_args)
    with writer_lock(settings, command, wait) if command else contextlib.nullcontext():
        get_spark(settings)
        outcome = run_dbt(settings, dbt_args, check=False)
        if outcome.success and self_lineage_requested(False) and dbt_args[:1] in (["build"], ["run"]):
            emitted = emit_self_lineage(settings, target_dir(settings), os.environ.get("OPENLINEAGE_URL") or None)
            print(f"self-lineage: {emitted.events} events of dbt run {emitted.invocation_id} to {emitted.destination}")
    return 0 if outcome.success else 1

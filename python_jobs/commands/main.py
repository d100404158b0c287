"""``main``: the whole job on the configured target, in one Spark session.

Ingest the bundled samples (every command module that defines ``load_samples``), then
``dbt build`` and ``dbt docs generate --static``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

from python_jobs import commands
from python_jobs.dbt import run_dbt
from python_jobs.lineage.self_lineage import (
    artifacts_dir,
    emit_self_lineage,
    keep_artifacts,
    self_lineage_requested,
)
from python_jobs.settings import LAYERS, Settings, load_settings
from python_jobs.spark import ensure_schemas, get_spark

SampleLoader = Callable[[SparkSession, Settings], None]


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    main_parser = groups[""].add_parser("main", help="ingest the samples, dbt build, dbt docs generate")
    main_parser.add_argument("--skip-samples", action="store_true", help="do not ingest the bundled samples")
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
        "without one they land in LINEAGE_HOME/landing/lineage and are ingested and built here)",
    )
    main_parser.set_defaults(handler=run_main)

    dbt_parser = groups[""].add_parser(
        "dbt", help="run a dbt command in this process, e.g. `python -m python_jobs dbt build`"
    )
    dbt_parser.add_argument("dbt_args", nargs=argparse.REMAINDER)
    dbt_parser.set_defaults(handler=run_dbt_passthrough)


def sample_loaders() -> list[tuple[str, SampleLoader]]:
    loaders: list[tuple[str, SampleLoader]] = []
    for module_info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{module_info.name}")
        loader = getattr(module, "load_samples", None)
        if loader is not None:
            loaders.append((module_info.name, loader))
    return loaders


def dbt_target_dir(settings: Settings) -> Path:
    return Path(os.environ.get("DBT_TARGET_PATH", settings.project_dir / "target"))


def run_pipeline(
    spark: SparkSession,
    settings: Settings,
    samples: bool = True,
    docs: bool = True,
    self_lineage: bool = False,
    collector_url: str | None = None,
) -> None:
    ensure_schemas(spark, settings, LAYERS)
    if samples:
        for name, loader in sample_loaders():
            print(f"== ingest samples: {name}", flush=True)
            loader(spark, settings)
    print("== dbt build", flush=True)
    run_dbt(settings, ["build"])
    if self_lineage:
        # `docs generate` rewrites run_results.json: keep the build's, and add the catalog (column types) below.
        keep_artifacts(dbt_target_dir(settings), artifacts_dir(settings))
    if docs:
        print("== dbt docs generate", flush=True)
        run_dbt(settings, ["docs", "generate", "--static"])
        if self_lineage:
            keep_artifacts(dbt_target_dir(settings), artifacts_dir(settings), ("catalog.json",))
    if self_lineage:
        load_self_lineage(spark, settings, collector_url)


def load_self_lineage(spark: SparkSession, settings: Settings, collector_url: str | None) -> None:
    """Emits the kept build's events; events that landed here are ingested and built into the warehouse."""
    from python_jobs.ingest.lineage import ingest_lineage

    emitted = emit_self_lineage(settings, artifacts_dir(settings), collector_url)
    print(f"== self-lineage: {emitted.events} events of dbt run {emitted.invocation_id} to {emitted.destination}")
    if emitted.landed_file is None:
        return
    report = ingest_lineage(spark, settings, [emitted.landed_file])
    print(f"self-lineage: {report.summary()}", flush=True)
    print("== dbt build (self-lineage)", flush=True)
    run_dbt(settings, ["build"])


def run_main(args: argparse.Namespace) -> int:
    started = time.monotonic()
    settings = load_settings()
    spark = get_spark(settings)
    run_pipeline(
        spark,
        settings,
        samples=not args.skip_samples,
        docs=not args.skip_docs,
        self_lineage=self_lineage_requested(args.self_lineage),
        collector_url=args.collector_url or os.environ.get("OPENLINEAGE_URL") or None,
    )
    print(f"done in {time.monotonic() - started:.0f}s; warehouse in {settings.lineage_home}")
    if not args.skip_docs:
        print(f"docs: open {dbt_target_dir(settings) / 'static_index.html'} in a browser")
    return 0


def run_dbt_passthrough(args: argparse.Namespace) -> int:
    settings = load_settings()
    get_spark(settings)
    dbt_args = [a for a in args.dbt_args if a != "--"]
    outcome = run_dbt(settings, dbt_args, check=False)
    if self_lineage_requested(False) and dbt_args[:1] in (["build"], ["run"]):
        emitted = emit_self_lineage(
            settings, dbt_target_dir(settings), os.environ.get("OPENLINEAGE_URL") or None
        )
        print(f"self-lineage: {emitted.events} events of dbt run {emitted.invocation_id} to {emitted.destination}")
    return 0 if outcome.success else 1

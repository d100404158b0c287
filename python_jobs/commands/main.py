"""``main``: the whole job on the configured target, in one Spark session.

Ingest the bundled samples (every command module that defines ``load_samples``), then
``dbt build`` and ``dbt docs generate --static``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import pkgutil
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

from python_jobs import commands
from python_jobs.dbt import run_dbt
from python_jobs.ops.cli_lock import add_wait_option, dbt_writer_command, mark_writer, split_wait_option
from python_jobs.ops.lock import writer_lock
from python_jobs.settings import LAYERS, Settings, load_settings
from python_jobs.spark import ensure_schemas, get_spark

SampleLoader = Callable[[SparkSession, Settings], None]


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    main_parser = groups[""].add_parser("main", help="ingest the samples, dbt build, dbt docs generate")
    main_parser.add_argument("--skip-samples", action="store_true", help="do not ingest the bundled samples")
    main_parser.add_argument("--skip-docs", action="store_true", help="do not generate the dbt docs")
    main_parser.set_defaults(handler=run_main)
    mark_writer(main_parser, "main")

    dbt_parser = groups[""].add_parser(
        "dbt", help="run a dbt command in this process, e.g. `python -m python_jobs dbt build`"
    )
    add_wait_option(dbt_parser)
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


def run_pipeline(spark: SparkSession, settings: Settings, samples: bool = True, docs: bool = True) -> None:
    ensure_schemas(spark, settings, LAYERS)
    if samples:
        for name, loader in sample_loaders():
            print(f"== ingest samples: {name}", flush=True)
            loader(spark, settings)
    print("== dbt build", flush=True)
    run_dbt(settings, ["build"])
    if docs:
        print("== dbt docs generate", flush=True)
        run_dbt(settings, ["docs", "generate", "--static"])


def run_main(args: argparse.Namespace) -> int:
    started = time.monotonic()
    settings = load_settings()
    spark = get_spark(settings)
    run_pipeline(spark, settings, samples=not args.skip_samples, docs=not args.skip_docs)
    print(f"done in {time.monotonic() - started:.0f}s; warehouse in {settings.lineage_home}")
    if not args.skip_docs:
        target_dir = Path(os.environ.get("DBT_TARGET_PATH", settings.project_dir / "target"))
        print(f"docs: open {target_dir / 'static_index.html'} in a browser")
    return 0


def run_dbt_passthrough(args: argparse.Namespace) -> int:
    settings = load_settings()
    dbt_args, wait = split_wait_option([a for a in args.dbt_args if a != "--"], args.wait)
    command = dbt_writer_command(dbt_args)
    with writer_lock(settings, command, wait) if command else contextlib.nullcontext():
        get_spark(settings)
        outcome = run_dbt(settings, dbt_args, check=False)
    return 0 if outcome.success else 1

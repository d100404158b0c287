"""``main``: the whole job on the configured target, in one Spark session; ``dbt``: any dbt command in-process.

``main`` generates the realistic sample (``python_jobs.tools.generate``) into ``LINEAGE_HOME/sample`` and
runs the main job on it (``python_jobs.warehouse.main_job``): ingest, ``dbt build``, ``dbt docs generate
--static``, the lineage page and a summary of what the warehouse now holds. With ``--self-lineage`` the
build's own OpenLineage events are emitted too, and loaded like any producer's.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time

from python_jobs.dbt import run_dbt, target_dir
from python_jobs.ops.cli_lock import add_wait_option, dbt_writer_command, mark_writer, split_wait_option
from python_jobs.ops.lock import writer_lock
from python_jobs.progress import Reporter
from python_jobs.settings import load_settings
from python_jobs.spark import get_spark
from python_jobs.summary import render_summary
from python_jobs.tools.generate.sample import DEFAULT_SIZE, SampleSpec, generate_sample, sample_dir


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


def run_main(args: argparse.Namespace) -> int:
    # Heavy (the read API loads pyarrow.compute, self-lineage OpenLineage): imported when the command runs,
    # not on every CLI start.
    from python_jobs.warehouse.main_job import run_pipeline
    from python_jobs.warehouse.self_lineage import self_lineage_requested

    started = time.monotonic()
    reporter = Reporter()
    settings = load_settings()
    with reporter.step("start Spark", "") as step:
        spark = get_spark(settings)
        step.finish(note=f"master {spark.sparkContext.master}")
    inputs = None
    if not args.skip_samples:
        spec = SampleSpec(size=args.size, seed=args.seed)
        with reporter.step(f"generate the sample (size {spec.size:,}, seed {spec.seed})", "files") as step:
            manifest = generate_sample(spec, sample_dir(settings))
            step.finish(manifest.file_count, f"in {manifest.root}")
        inputs = manifest.inputs()
    run = run_pipeline(
        spark, settings, inputs, docs=not args.skip_docs, reporter=reporter,
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
    # Heavy (the read API loads pyarrow.compute, self-lineage OpenLineage): imported when the command runs,
    # not on every CLI start.
    from python_jobs.warehouse.self_lineage import emit_self_lineage, self_lineage_requested

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

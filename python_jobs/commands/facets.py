"""Facet tables: ``facets backfill`` (chunked, resumable), ``bench facets`` and ``generate facets``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from python_jobs.facets.backfill import run_backfill
from python_jobs.ops.cli_lock import mark_writer
from python_jobs.settings import load_settings
from python_jobs.spark import get_spark
from python_jobs.tools.bench.facets import BenchRuns, run_bench
from python_jobs.tools.generate.facets import SyntheticConfig, synthetic_events


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    facets = groups[""].add_parser("facets", help="facet tables: load a long history in chunks")
    actions = facets.add_subparsers(dest="facets_command", required=True, metavar="ACTION")
    backfill = actions.add_parser(
        "backfill", help="(re)build the facet tables in bounded chunks of ingest order; run again to resume"
    )
    backfill.add_argument("--chunk-events", type=int, default=200_000, help="events per chunk (default 200000)")
    backfill.add_argument("--max-chunks", type=int, help="stop after this many chunks (resume later)")
    backfill.add_argument("--skip-tests", action="store_true", help="build the views without the dbt tests")
    backfill.set_defaults(handler=run_backfill_command)
    mark_writer(backfill, "facets backfill")

    bench = groups["bench"].add_parser("facets", help="facet tables vs a naive raw JSON scan")
    add_synthetic_arguments(bench)
    runs = BenchRuns()
    bench.add_argument(
        "--repeat", type=int, default=runs.repeat, help="timed runs of the facet-table lookup after a warm-up (median)"
    )
    bench.add_argument(
        "--naive-repeat", type=int, default=runs.naive_repeat, help="timed runs of the naive scan (median)"
    )
    bench.add_argument(
        "--increment", type=int, default=runs.increment, help="new events for the incremental-load figure"
    )
    bench.add_argument("--prefix", default="bench_facets_", help="schema prefix of the benchmark warehouse")
    bench.add_argument("--reuse", action="store_true", help="keep raw.lineage_events from a previous run")
    bench.set_defaults(handler=run_bench_command)

    generate = groups["generate"].add_parser("facets", help="synthetic OpenLineage NDJSON with multi-MB facets")
    add_synthetic_arguments(generate)
    generate.add_argument("--out", type=Path, required=True, help="NDJSON file to write")
    generate.set_defaults(handler=run_generate_command)


def add_synthetic_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = SyntheticConfig()
    parser.add_argument("--events", type=int, default=defaults.events)
    parser.add_argument("--datasets", type=int, default=defaults.datasets)
    parser.add_argument("--jobs", type=int, default=defaults.jobs)
    parser.add_argument("--large-every", type=int, default=defaults.large_every, help="every Nth event has a big plan")
    parser.add_argument("--large-mb", type=float, default=defaults.large_bytes / 1024 / 1024)
    parser.add_argument("--distinct-large", type=int, default=defaults.distinct_large)


def synthetic_config(args: argparse.Namespace) -> SyntheticConfig:
    return SyntheticConfig(
        events=args.events,
        datasets=args.datasets,
        jobs=args.jobs,
        large_every=args.large_every,
        large_bytes=int(args.large_mb * 1024 * 1024),
        distinct_large=args.distinct_large,
    )


def run_backfill_command(args: argparse.Namespace) -> int:
    settings = load_settings()
    spark = get_spark(settings)

    def progress(index: int, total: int, upto: int) -> None:
        print(f"== chunk {index}/{total} loaded (ingest_seq <= {upto})", flush=True)

    report = run_backfill(
        spark,
        settings,
        args.chunk_events,
        args.max_chunks,
        on_chunk=progress,
        finish="run" if args.skip_tests else "build",
    )
    state = "complete" if report.completed else "stopped early; run again to resume"
    print(f"facet backfill {state}: {report.chunks_run} of {len(report.chunk_bounds)} chunks this run")
    return 0


def run_bench_command(args: argparse.Namespace) -> int:
    settings = load_settings().with_prefix(args.prefix)
    spark = get_spark(settings)
    runs = BenchRuns(repeat=args.repeat, naive_repeat=args.naive_repeat, increment=args.increment, reuse=args.reuse)
    result = run_bench(spark, settings, synthetic_config(args), runs)
    print(result.figures.table())
    return 0


def run_generate_command(args: argparse.Namespace) -> int:
    config = synthetic_config(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as out:
        for event in synthetic_events(config):
            out.write(json.dumps(event, separators=(",", ":")))
            out.write("\n")
    print(f"wrote {config.events} events to {args.out}")
    return 0

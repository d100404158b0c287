"""``bench refresh``: the read API's refresh after batch builds, on a warehouse ``bench scale --keep`` left."""

from __future__ import annotations

import argparse
from pathlib import Path

from python_jobs.settings import load_settings
from python_jobs.spark import get_spark


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    bench = groups["bench"].add_parser(
        "refresh",
        help="the read API's load and its refresh after each batch build, on a kept `bench scale` warehouse",
        description="Loads the read API on the warehouse `bench scale --sizes SIZE --keep` left (schemas "
        "bench_scale_<SIZE>_*), then per batch ingests and builds new events and times refresh() with its "
        "parts; --profile prints where the refreshes spent their time. The batches stay in the warehouse.",
    )
    bench.add_argument("--size", type=int, required=True, help="the kept warehouse's history size in events")
    bench.add_argument("--batch", type=int, default=0, help="events per batch (default 1%% of --size)")
    bench.add_argument("--batches", type=int, default=1, help="batches, each built and refreshed (default 1)")
    bench.add_argument("--profile", action="store_true", help="run the refreshes under cProfile and print it")
    bench.add_argument("--lean", action=argparse.BooleanOptionalAction, default=True,
                       help="lean events (default), as `bench scale` generates them")
    bench.add_argument("--work-dir", type=Path, default=None,
                       help="generated batch files (default: LINEAGE_HOME/bench-refresh)")
    bench.set_defaults(handler=run_bench_refresh)


def run_bench_refresh(args: argparse.Namespace) -> int:
    # The benchmark module imports the read API (pyarrow.compute): imported when it runs.
    from python_jobs.tools.bench.refresh import RefreshConfig, run_refresh

    settings = load_settings()
    config = RefreshConfig(size=args.size, batch=args.batch, batches=args.batches, profile=args.profile,
                           lean=args.lean)
    run_refresh(get_spark(settings), settings, config, args.work_dir or settings.lineage_home / "bench-refresh")
    return 0

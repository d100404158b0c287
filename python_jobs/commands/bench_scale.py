"""``bench scale``: the lineage leg and the read API at growing history sizes, a section of ``BENCHMARKS.md``."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from python_jobs.errors import UserFacingError
from python_jobs.settings import PROJECT_DIR, load_settings
from python_jobs.spark import get_spark

DEFAULT_SIZES = "1000000,3000000,10000000"


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    bench = groups["bench"].add_parser(
        "scale",
        help="ingest, builds, read API latency, memory and refresh, bytes on disk at 1M, 3M and 10M events",
        description="Runs the lineage leg at each history size, one after another in one Spark session (each on "
        "its own schema prefix bench_scale_<size>_, dropped once measured), and writes its figures, the targets "
        "at the largest size against the smallest and one plot per figure (docs/bench/scale_*.png) into the "
        "'History scale' section of BENCHMARKS.md, leaving the rest of the file as it is. The 10M size takes "
        "hours and 15 GB of lean input plus its warehouse on disk: run it on an idle machine.",
    )
    bench.add_argument("--sizes", default=DEFAULT_SIZES,
                       help=f"comma-separated history sizes in events (default {DEFAULT_SIZES})")
    bench.add_argument("--requests", type=int, default=200, help="timed requests per read API call (default 200)")
    bench.add_argument("--lean", action=argparse.BooleanOptionalAction, default=True,
                       help="lean events, about 1.5 KB (default); --no-lean: the full 3 KB events and more")
    bench.add_argument("--keep", action="store_true",
                       help="keep each size's warehouse (schemas bench_scale_<size>_*) and input files")
    bench.add_argument("--work-dir", type=Path, default=None,
                       help="generated input files (default: LINEAGE_HOME/bench-scale)")
    bench.add_argument("--out", type=Path, default=PROJECT_DIR / "BENCHMARKS.md",
                       help="the report whose scale section is replaced (default BENCHMARKS.md)")
    bench.set_defaults(handler=run_bench_scale)


def parse_sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(sorted({int(part.replace("_", "")) for part in text.split(",") if part.strip()}))
    except ValueError as error:
        raise UserFacingError(f"--sizes takes comma-separated numbers of events, not {text!r}") from error
    if not sizes or sizes[0] < 1_000:
        raise UserFacingError("--sizes: at least one size, each at least 1000 events")
    return sizes


def reproducing_command(args: argparse.Namespace) -> str:
    parts = ["python -m python_jobs bench scale", f"--sizes {','.join(str(s) for s in parse_sizes(args.sizes))}"]
    if args.requests != 200:
        parts.append(f"--requests {args.requests}")
    if not args.lean:
        parts.append("--no-lean")
    if args.out.resolve() != (PROJECT_DIR / "BENCHMARKS.md").resolve():
        parts.append(f"--out {shlex.quote(str(args.out))}")
    return " ".join(parts)


def run_bench_scale(args: argparse.Namespace) -> int:
    # The benchmark needs the dev extras (matplotlib, httpx): imported when it runs, so the CLI starts without them.
    from python_jobs.tools.bench.scale import ScaleConfig, run_scale

    config = ScaleConfig(sizes=parse_sizes(args.sizes), requests=args.requests, lean=args.lean, keep=args.keep)
    settings = load_settings()
    spark = get_spark(settings)
    work_dir = args.work_dir or settings.lineage_home / "bench-scale"
    run_scale(spark, settings, config, args.out, work_dir, reproducing_command(args))
    print(f"wrote the scale section of {args.out}")
    return 0

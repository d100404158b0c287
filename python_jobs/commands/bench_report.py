"""``bench all``: every benchmark in one Spark session, written as one Markdown report."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from python_jobs.errors import UserFacingError
from python_jobs.settings import PROJECT_DIR, load_settings
from python_jobs.spark import get_spark
from python_jobs.tools.bench.plan import ALL_AREAS, DEFAULT_AREAS, DEFAULT_SIZE, NAMED_SIZES, parse_bench_size


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    bench = groups["bench"].add_parser(
        "all",
        help="every area's benchmark with its baseline, one Markdown report (BENCHMARKS.md) and plots",
        description="Runs the lineage, read API, SQL endpoint, facets, changelog, registry and collector benchmarks "
        "in one Spark session (api measures the Marquez read API and sql the SQL endpoint on the lineage area's "
        "largest warehouse; with sql the session runs serve's SQL endpoint for the whole run), each "
        "against its baseline or peer measured in the same run, and "
        "writes one Markdown report with the machine, versions and the command, plus PNG plots in "
        "docs/bench/ beside it.",
    )
    sizes = ", ".join(f"{name} = {value:,}" for name, value in NAMED_SIZES.items())
    bench.add_argument(
        "--size", default=str(DEFAULT_SIZE),
        help=f"events in the large lineage history; the other areas scale with it (default {DEFAULT_SIZE:,}; "
        f"{sizes})",
    )
    bench.add_argument(
        "--areas", default=",".join(DEFAULT_AREAS),
        help=f"comma-separated areas to run (default: {','.join(DEFAULT_AREAS)}); a partial report is a smoke run. "
        "scale (off by default: hours) runs `bench scale` at --size, 3x and 10x into its own section",
    )
    bench.add_argument("--out", type=Path, default=PROJECT_DIR / "BENCHMARKS.md", help="report file")
    bench.add_argument("--work-dir", type=Path, default=None,
                       help="where generated inputs go while the run lasts (default: LINEAGE_HOME/bench-all)")
    bench.set_defaults(handler=run_bench_all)


def selected_areas(text: str) -> tuple[str, ...]:
    chosen = {name.strip() for name in text.split(",") if name.strip()}
    unknown = chosen - set(ALL_AREAS)
    if unknown:
        raise UserFacingError(f"unknown area(s) {', '.join(sorted(unknown))}; choose from {', '.join(ALL_AREAS)}")
    for area in ("api", "sql"):
        if area in chosen and "lineage" not in chosen:
            raise UserFacingError(
                f"the {area} area measures the lineage area's largest warehouse: add lineage to --areas"
            )
    return tuple(name for name in ALL_AREAS if name in chosen)


def reproducing_command(args: argparse.Namespace) -> str:
    parts = ["python -m python_jobs bench all", f"--size {shlex.quote(args.size)}"]
    out = args.out.resolve()
    if selected_areas(args.areas) != DEFAULT_AREAS:
        parts.append(f"--areas {shlex.quote(args.areas)}")
    if out != (PROJECT_DIR / "BENCHMARKS.md").resolve():
        parts.append(f"--out {shlex.quote(str(args.out))}")
    return " ".join(parts)


def run_bench_all(args: argparse.Namespace) -> int:
    # The report needs the dev extras (duckdb, matplotlib, httpx, PyHive): imported when it runs, so the CLI starts
    # without them.
    from python_jobs.tools.bench.run_all import run_all
    from python_jobs.tools.bench.sql import session_with_endpoint

    only = selected_areas(args.areas)
    try:
        size = parse_bench_size(args.size)
    except ValueError as error:
        raise UserFacingError(str(error)) from error
    settings = load_settings()
    endpoint = None
    if "sql" in only:
        # The SQL endpoint's session (its guard, the FAIR scheduler) and the endpoint, before anything else runs.
        spark, endpoint = session_with_endpoint(settings)
    else:
        spark = get_spark(settings)
    work_dir = args.work_dir or settings.lineage_home / "bench-all"
    try:
        text, _timings = run_all(spark, settings, size, args.out, work_dir, reproducing_command(args), only,
                                 endpoint=endpoint)
    finally:
        if endpoint is not None:
            endpoint.stop()
    print(text)
    print(f"wrote {args.out}")
    return 0

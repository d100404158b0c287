"""``faults``: kill writer commands with SIGKILL at seeded points and check that a re-run converges."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from python_jobs.settings import PROJECT_DIR
from python_jobs.tools.faults.suite import SCENARIOS, SIZES, Point, format_report, run_suite


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    parser = groups[""].add_parser(
        "faults",
        help="crash-convergence suite: SIGKILL writers at seeded points, re-run, compare with a clean run",
    )
    parser.add_argument("--points", type=int, default=8, help="kill points to try (default 8)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the kill points and the input batches")
    parser.add_argument("--size", choices=sorted(SIZES), default="small",
                        help="events per input batch: " + ", ".join(f"{k} {v}" for k, v in SIZES.items()))
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help=f"comma-separated subset of {', '.join(SCENARIOS)}")
    parser.add_argument("--replay", action="append", default=[], metavar="SCENARIO:STEP:DELAY_MS",
                        help="run exactly this point (repeatable) instead of seeded ones")
    parser.add_argument("--work-dir", type=Path, default=PROJECT_DIR / ".faults",
                        help="prepared states, references and logs (reused when the code is unchanged)")
    parser.set_defaults(handler=run_faults)


def run_faults(args: argparse.Namespace) -> int:
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown = sorted(set(scenarios) - set(SCENARIOS))
    if unknown:
        raise SystemExit(f"unknown scenarios: {', '.join(unknown)} (have {', '.join(SCENARIOS)})")
    started = time.monotonic()
    replay = [Point.parse(text) for text in args.replay]
    results = run_suite(args.work_dir, args.points, args.seed, args.size, scenarios, replay)
    print()
    print(format_report(results, scenarios))
    print(f"{len(results)} points in {time.monotonic() - started:.0f}s (size {args.size}, seed {args.seed})")
    return 0 if all(r.converged for r in results) else 1

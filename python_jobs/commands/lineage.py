"""OpenLineage commands: ``ingest lineage``, ``generate lineage``, ``bench lineage``."""

from __future__ import annotations

import argparse
from pathlib import Path

from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.landing import LandingLayout, hand_over, ingest_sealed, is_landing_root
from python_jobs.metastore import Holder
from python_jobs.settings import SAMPLES_DIR, load_settings
from python_jobs.spark import get_spark
from python_jobs.tools.bench.lineage import run_lineage_bench
from python_jobs.tools.generate.lineage import SyntheticSpec, write_events

# The hand-written samples; the ingest tests read them.
LINEAGE_SAMPLES = SAMPLES_DIR / "lineage"


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    ingest = groups["ingest"].add_parser(
        "lineage",
        help="load OpenLineage events (.json, .ndjson, .jsonl, optionally .gz; files or folders); a collector "
        "landing folder (`serve`) contributes its sealed files only, each once",
    )
    ingest.add_argument("paths", nargs="+", type=Path)
    ingest.set_defaults(handler=run_ingest, hand_off=hand_off_to_collector)

    generate = groups["generate"].add_parser("lineage", help="write synthetic OpenLineage events as NDJSON")
    generate.add_argument("--events", type=int, default=100_000, help="number of events (default 100000)")
    generate.add_argument("--jobs", type=int, default=200, help="number of jobs (default 200)")
    generate.add_argument("--seed", type=int, default=7)
    generate.add_argument("--out", type=Path, required=True, help="output .ndjson file")
    generate.set_defaults(handler=run_generate)

    bench = groups["bench"].add_parser("lineage", help="dedup, throughput and incremental figures")
    bench.add_argument(
        "--sizes", default="100000", help="comma-separated event counts for the throughput part (default 100000)"
    )
    bench.add_argument(
        "--work-dir", type=Path, default=None, help="where generated files go (default: LINEAGE_HOME/bench)"
    )
    bench.add_argument("--skip-example", action="store_true", help="skip the 4,320-run proposal example")
    bench.add_argument(
        "--ingest-only", action="store_true", help="only from_json and ingest per size: no proposal example, no dbt"
    )
    bench.set_defaults(handler=run_bench)


def run_ingest(args: argparse.Namespace) -> int:
    settings = load_settings()
    spark = get_spark(settings)
    landings = [path for path in args.paths if is_landing_root(path)]
    others = [path for path in args.paths if not is_landing_root(path)]
    reconciles = True
    for root in landings:
        landed = ingest_sealed(spark, settings, LandingLayout(root.resolve()))
        if landed.report is None:
            print(f"landing {root}: no sealed files")
            continue
        print(f"landing {root}: {len(landed.files)} sealed files → ingested/: {landed.report.summary()}")
        reconciles = reconciles and landed.report.reconciles()
    if others:
        report = ingest_lineage(spark, settings, others)
        for skipped in report.skipped_files:
            print(f"skipped (not .json/.ndjson/.jsonl): {skipped}")
        print(report.summary())
        reconciles = reconciles and report.reconciles()
    return 0 if reconciles else 1


def hand_off_to_collector(args: argparse.Namespace, holder: Holder) -> int | None:
    """The embedded metastore is open in ``holder``: when it is a ``serve --build-every``, its landing folder
    takes the files (its next round ingests them); else ``None``, and the command fails naming the holder."""
    if holder.landing is None or any(is_landing_root(path) for path in args.paths):
        return None
    layout = LandingLayout(Path(holder.landing))
    handed, skipped = hand_over(layout, args.paths)
    for path in skipped:
        print(f"skipped (not .json/.ndjson/.jsonl): {path}")
    print(
        f"the warehouse is open in {holder.describe()}, which ingests {layout.sealed_dir} on every round: "
        f"handed {len(handed)} file(s) to it; its next round ingests them (its output and /health say how it went)"
    )
    return 0


def run_generate(args: argparse.Namespace) -> int:
    spec = SyntheticSpec(events=args.events, jobs=args.jobs, seed=args.seed)
    written = write_events(spec, args.out)
    print(f"wrote {written} events to {args.out}")
    return 0


def run_bench(args: argparse.Namespace) -> int:
    settings = load_settings()
    spark = get_spark(settings)
    sizes = [int(size) for size in args.sizes.split(",") if size.strip()]
    work_dir = args.work_dir or settings.lineage_home / "bench"
    run_lineage_bench(spark, settings, sizes, work_dir, example=not args.skip_example, ingest_only=args.ingest_only)
    return 0

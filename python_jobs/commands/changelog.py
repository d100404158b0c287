"""Snapshot-to-changelog commands: ``ingest snapshot`` and ``bench changelog``; loads the CRM sample."""

from __future__ import annotations

import argparse
from pathlib import Path

from pyspark.sql import SparkSession

from python_jobs.ingest.snapshot import FORMATS, ingest_snapshot, parse_primary_key, parse_timestamp
from python_jobs.settings import SAMPLES_DIR, Settings, load_settings
from python_jobs.spark import ensure_schemas, get_spark
from python_jobs.tools.bench.changelog import BenchConfig, print_report, run_changelog_bench
from python_jobs.warehouse.inputs import describe_load

SAMPLE_DATASET = "crm_accounts"
SAMPLE_PRIMARY_KEY = ("account_id",)
# Nightly exports taken at 02:00 UTC and loaded a few minutes later; fixed so the main job is reproducible.
SAMPLE_SNAPSHOTS = (
    ("crm_accounts_2024-03-01.ndjson", "2024-03-01T02:00:00Z", "2024-03-01T02:07:00Z"),
    ("crm_accounts_2024-03-02.csv", "2024-03-02T02:00:00Z", "2024-03-02T02:06:30Z"),
    ("crm_accounts_2024-03-03.csv", "2024-03-03T02:00:00Z", "2024-03-03T02:08:10Z"),
    ("crm_accounts_2024-03-04.csv", "2024-03-04T02:00:00Z", "2024-03-04T02:05:45Z"),
)


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    ingest = groups["ingest"].add_parser(
        "snapshot",
        help="append one full snapshot (CSV, Parquet, NDJSON) to raw.<dataset>_snapshots",
        description="Append one full snapshot of a dataset to raw.<dataset>_snapshots. "
        "The changelog model of the dataset turns consecutive snapshots into +A/-R/-C/+C rows.",
    )
    ingest.add_argument("file", type=Path, help="the snapshot file")
    ingest.add_argument("--dataset", required=True, help="dataset name: lower case, digits, underscores")
    ingest.add_argument("--snapshot-time", required=True, help="when the snapshot was taken (ISO-8601; UTC if no zone)")
    ingest.add_argument("--system-time", help="ingest time to record instead of the clock, for reproducible runs")
    ingest.add_argument(
        "--primary-key",
        help="comma-separated key columns; checked for NULLs and duplicates (remembered by the table after the "
        "first load)",
    )
    ingest.add_argument("--format", choices=FORMATS, help="input format (default: from the file suffix)")
    ingest.set_defaults(handler=run_ingest)

    bench = groups["bench"].add_parser(
        "changelog", help="snapshot-to-changelog rounds: incremental state vs rebuilding state from the changelog"
    )
    bench.add_argument("--rows", type=int, default=1_000_000, help="rows per snapshot (default 1,000,000)")
    bench.add_argument("--rounds", type=int, default=6, help="snapshots after the first (default 6)")
    bench.add_argument("--changed", type=float, default=0.01, help="share of rows changed per round")
    bench.add_argument("--added", type=float, default=0.005, help="share of rows added per round")
    bench.add_argument("--removed", type=float, default=0.005, help="share of rows removed per round")
    bench.add_argument("--work-dir", type=Path, help="where to write the generated snapshots (default: a temp dir)")
    bench.add_argument("--keep", action="store_true", help="keep the bench_changelog_* databases afterwards")
    bench.set_defaults(handler=run_bench)


def run_ingest(args: argparse.Namespace) -> int:
    settings = load_settings()
    snapshot_time = parse_timestamp(args.snapshot_time, "--snapshot-time")
    system_time = parse_timestamp(args.system_time, "--system-time") if args.system_time else None
    spark = get_spark(settings)
    ensure_schemas(spark, settings, ("raw", "audit"))
    load = ingest_snapshot(
        spark,
        settings,
        args.dataset,
        args.file,
        snapshot_time,
        system_time,
        parse_primary_key(args.primary_key),
        args.format,
    )
    print(describe_load(load))
    return 0


def load_samples(spark: SparkSession, settings: Settings) -> None:
    ensure_schemas(spark, settings, ("raw", "audit"))
    for file_name, snapshot_time, system_time in SAMPLE_SNAPSHOTS:
        load = ingest_snapshot(
            spark,
            settings,
            SAMPLE_DATASET,
            SAMPLES_DIR / "changelog" / file_name,
            parse_timestamp(snapshot_time, "snapshot time"),
            parse_timestamp(system_time, "system time"),
            SAMPLE_PRIMARY_KEY,
        )
        print(describe_load(load), flush=True)


def run_bench(args: argparse.Namespace) -> int:
    settings = load_settings()
    spark = get_spark(settings)
    config = BenchConfig(args.rows, args.rounds, args.changed, args.added, args.removed)
    print_report(run_changelog_bench(spark, settings, config, args.work_dir, keep=args.keep))
    return 0

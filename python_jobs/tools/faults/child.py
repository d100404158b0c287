"""One process of the fault suite: runs a CLI command (or the sample load), counting its steps, and
SIGKILLs its own process group (itself and its Spark JVM) at a chosen step; or runs it to the end and
fingerprints the warehouse in the same JVM.

A step is a JVM call that runs SQL, writes a DataFrame or changes files (``STEP_CALLS``). dbt runs its
models one at a time and the jobs are deterministic, so a step number names the same point of a run
every time: a failing point can be replayed with ``faults --replay SCENARIO:STEP:DELAY_MS``.

``python -m python_jobs.tools.faults.child [options] -- <python_jobs argv>`` (``--prep-samples`` instead of
an argv generates and ingests the sample, as ``main`` does before its build).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from py4j import java_gateway
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from python_jobs.cli import main as cli_main
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.ops.lock import writer_lock
from python_jobs.progress import Reporter
from python_jobs.settings import LAYERS, Settings, load_settings
from python_jobs.spark import ensure_schemas, get_spark
from python_jobs.tools.generate.sample import SampleSpec, generate_sample, sample_dir
from python_jobs.warehouse.fingerprint import row_hashes, warehouse_fingerprint
from python_jobs.warehouse.main_job import ingest_inputs

# The generated sample's size in the chain: big enough for every part (failed runs, schema changes, CRM
# churn, the registry), small enough that a build point costs a minute or two.
SAMPLE_SIZE = 300

# JVM methods that run SQL, write or move data: the points where a crash can leave a partial state.
STEP_CALLS = frozenset({
    "sql", "save", "saveAsTable", "insertInto", "parquet", "json", "rename", "delete", "mkdirs", "create",
    "createTable", "dropTable", "setLocation",
})


class StepCounter:
    def __init__(self, kill_at: int | None, delay_ms: int) -> None:
        self.kill_at = kill_at
        self.delay_ms = delay_ms
        self.steps = 0
        self.trace: list[str] = []

    def step(self, name: str, args: tuple[Any, ...]) -> None:
        self.steps += 1
        first = args[0] if args and isinstance(args[0], str) else ""
        self.trace.append(f"{self.steps} {name} {' '.join(first.split())[:100]}")
        if self.kill_at is not None and self.steps == self.kill_at:
            if self.delay_ms <= 0:
                kill_own_group()
            # Later: the call has started, so the kill lands inside it (a half-written file) or after it.
            timer = threading.Timer(self.delay_ms / 1000, kill_own_group)
            timer.daemon = True
            timer.start()


def kill_own_group() -> None:
    sys.stdout.flush()
    os.killpg(os.getpgid(0), signal.SIGKILL)


def install(counter: StepCounter) -> None:
    original: Callable[..., Any] = java_gateway.JavaMember.__call__

    def counted(self: Any, *args: Any) -> Any:
        if self.name in STEP_CALLS:
            counter.step(self.name, args)
        return original(self, *args)

    java_gateway.JavaMember.__call__ = counted  # type: ignore[method-assign]


def prep_samples() -> int:
    """The generated sample at a small size (what ``main`` ingests before its build), under the lock."""
    settings = load_settings()
    with writer_lock(settings, "fault suite: ingest samples"):
        spark = get_spark(settings)
        ensure_schemas(spark, settings, LAYERS)
        manifest = generate_sample(SampleSpec(size=SAMPLE_SIZE), sample_dir(settings))
        ingest_inputs(spark, settings, manifest.inputs(), Reporter())
    return 0


def ingest_landing(landing: Path, digest_out: Path) -> int:
    """The collector scenario's ingest: the landing folder's sealed files, then ``raw.lineage_events`` by
    event (its rows, distinct events and an order-independent digest of id and body) and the report."""
    settings = load_settings()
    with writer_lock(settings, "fault suite: ingest the landing folder"):
        spark = get_spark(settings)
        ensure_schemas(spark, settings, LAYERS)
        report = ingest_lineage(spark, settings, [landing])
        raw = spark.table(settings.table("raw", "lineage_events"))
        row = raw.agg(
            F.count("*").alias("rows"),
            F.countDistinct("event_id").alias("distinct_events"),
            F.sum(F.xxhash64("event_id", "event_json").cast("decimal(38,0)")).cast("string").alias("digest"),
        ).first()
    digest_out.write_text(json.dumps({
        "rows": row["rows"], "distinct_events": row["distinct_events"], "digest": row["digest"],
        "reconciles": report.reconciles(), "report": [report.read, report.accepted, report.rejected],
    }))
    return 0


def write_outputs(args: argparse.Namespace) -> None:
    settings = load_settings()
    spark = get_spark(settings)
    fingerprint = warehouse_fingerprint(spark, settings)
    args.fingerprint_out.write_text(json.dumps(fingerprint, indent=1, sort_keys=True))
    if args.rows_out:
        row_hashes(spark, settings).write.mode("overwrite").parquet(str(args.rows_out))
    if args.reference_fingerprint and args.diff_out:
        reference = json.loads(args.reference_fingerprint.read_text())
        differing = differing_tables(reference, fingerprint)
        diffs = first_differences(spark, settings, args.reference_rows, differing) if differing else {}
        args.diff_out.write_text(json.dumps(diffs, indent=1, sort_keys=True))


def differing_tables(reference: dict[str, Any], got: dict[str, Any]) -> list[str]:
    names = sorted(set(reference) | set(got))
    return [name for name in names if reference.get(name) != got.get(name)]


def first_differences(
    spark: SparkSession, settings: Settings, reference_rows: Path | None, tables: Sequence[str]
) -> dict:
    """Per differing table: row counts of both sides and the smallest key found on one side only."""
    got = row_hashes(spark, settings, tables)
    ref = spark.read.parquet(str(reference_rows)).where(F.col("table").isin(list(tables)))
    missing = ref.exceptAll(got).withColumn("side", F.lit("missing after the crash"))
    extra = got.exceptAll(ref).withColumn("side", F.lit("extra after the crash"))
    firsts = (
        missing.unionByName(extra).groupBy("table")
        .agg(F.min(F.struct("key", "side")).alias("first"))
        .collect()
    )
    counts = {r["table"]: r["rows"] for r in ref.groupBy("table").agg(F.count("*").alias("rows")).collect()}
    got_counts = {r["table"]: r["rows"] for r in got.groupBy("table").agg(F.count("*").alias("rows")).collect()}
    result: dict[str, dict[str, Any]] = {
        t: {"rows_reference": counts.get(t, 0), "rows_after": got_counts.get(t, 0), "first_key": None, "side": None}
        for t in tables
    }
    for row in firsts:
        result[row["table"]].update(first_key=row["first"]["key"], side=row["first"]["side"])
    return result


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(prog="python -m python_jobs.tools.faults.child")
    parser.add_argument("--kill-at", type=int)
    parser.add_argument("--delay-ms", type=int, default=0)
    parser.add_argument("--steps-out", type=Path)
    parser.add_argument("--trace-out", type=Path, help="write each step's call (the reference's step map)")
    parser.add_argument("--fingerprint-out", type=Path)
    parser.add_argument("--rows-out", type=Path)
    parser.add_argument("--reference-fingerprint", type=Path)
    parser.add_argument("--reference-rows", type=Path)
    parser.add_argument("--diff-out", type=Path)
    parser.add_argument("--prep-samples", action="store_true")
    parser.add_argument("--ingest-landing", type=Path, help="ingest this collector landing folder (collector scenario)")
    parser.add_argument("--event-digest-out", type=Path)
    own, _, command = _split(argv)
    return parser.parse_args(own), command


def _split(argv: Sequence[str]) -> tuple[list[str], str, list[str]]:
    items = list(argv)
    if "--" in items:
        at = items.index("--")
        return items[:at], "--", items[at + 1:]
    return items, "", []


def main(argv: Sequence[str] | None = None) -> int:
    args, command = parse_args(sys.argv[1:] if argv is None else argv)
    counter = StepCounter(args.kill_at, args.delay_ms)
    install(counter)
    if args.prep_samples:
        code = prep_samples()
    elif args.ingest_landing:
        code = ingest_landing(args.ingest_landing, args.event_digest_out)
    else:
        code = cli_main(command)
    if args.steps_out:
        args.steps_out.write_text(str(counter.steps))
    if args.trace_out:
        args.trace_out.write_text("\n".join(counter.trace) + "\n")
    if code == 0 and args.fingerprint_out:
        write_outputs(args)
    return code


if __name__ == "__main__":
    sys.exit(main())

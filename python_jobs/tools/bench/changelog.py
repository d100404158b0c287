"""``bench changelog``: cost of a changelog round, with the state table and without it.

A synthetic catalog of ``rows`` items is snapshotted once, then ``rounds`` more times; between two
snapshots a fixed share of rows changes, is added and is removed. Both models below read the same
raw snapshots:

* ``items_incremental`` is the shipped behaviour: the keys and hashes of the state before the new
  snapshot are the previous snapshot's raw partition, hashed in the same scan as the new one; the
  state table plus its changelog tail give the full old rows of the changed keys only, and the
  post-hook rewrites the state table only when the tail passes ``changelog_compact_ratio`` (0.2) of
  it, so a round reads two snapshots and a few rows of state;
* ``items_rebuild`` sets ``changelog_rebuild_state``: each round projects the state from the whole
  changelog (what the reference implementation does), so its cost grows with history.

Both run the same diff (keys and row hashes through the windows, full rows fetched for the changed
keys only); they differ only in where the state before the round comes from. The seconds are dbt's
execution time of the model, post-hook included.

The snapshots come from ``python_jobs.generate.items``: every run writes the same ones.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path

from pyspark.sql import SparkSession

from python_jobs.changelog.project import ChangelogModel, write_scratch_project
from python_jobs.commands.warehouse import table_fingerprint
from python_jobs.dbt import run_dbt
from python_jobs.generate.items import ItemChurn, items_snapshot_frame
from python_jobs.ingest.snapshot import ingest_snapshot
from python_jobs.settings import LAYERS, Settings
from python_jobs.spark import ensure_schemas

DATASET = "bench_items"
MODES = ("incremental", "rebuild")
BENCH_PREFIX = "bench_changelog_"
FIRST_SNAPSHOT = datetime(2024, 1, 1, 2, 0)


@dataclass(frozen=True)
class BenchConfig:
    rows: int = 1_000_000
    rounds: int = 6
    changed: float = 0.01
    added: float = 0.005
    removed: float = 0.005


@dataclass(frozen=True)
class RoundResult:
    round_no: int
    snapshot_rows: int
    changelog_rows: int
    ingest_seconds: float
    model_seconds: dict[str, float]


@dataclass(frozen=True)
class BenchReport:
    config: BenchConfig
    rounds: list[RoundResult]
    identical: bool


def _reset_warehouse(spark: SparkSession, settings: Settings) -> None:
    for layer in LAYERS:
        spark.sql(f"drop database if exists {settings.schema(layer)} cascade")
    ensure_schemas(spark, settings, LAYERS)


def _run_model(settings: Settings, target: Path, model: str, rebuild: bool) -> float:
    extra = {"changelog_rebuild_state": True} if rebuild else {}
    outcome = run_dbt(settings, ["run", "--select", model, "--target-path", str(target)], extra_vars=extra)
    return sum(float(result.execution_time) for result in outcome.result.results)


def run_changelog_bench(
    spark: SparkSession, settings: Settings, config: BenchConfig, work_dir: Path | None = None, keep: bool = False
) -> BenchReport:
    scratch = Path(work_dir or tempfile.mkdtemp(prefix="lw-bench-changelog-"))
    models = [ChangelogModel(f"items_{mode}", DATASET, ["item_id"]) for mode in MODES]
    project = write_scratch_project(scratch / "project", models)
    bench = replace(settings.with_prefix(settings.schema_prefix + BENCH_PREFIX), project_dir=project)
    _reset_warehouse(spark, bench)
    changelog_table = bench.table("changelog", "items_incremental")
    results: list[RoundResult] = []
    previous_rows = 0
    churn = ItemChurn(config.rows, config.changed, config.added, config.removed)
    print(HEADER, flush=True)
    try:
        for round_no in range(config.rounds + 1):
            path = scratch / f"round_{round_no}.parquet"
            items_snapshot_frame(spark, churn, round_no).write.mode("overwrite").parquet(str(path))
            taken = FIRST_SNAPSHOT + timedelta(days=round_no)
            started = time.monotonic()
            load = ingest_snapshot(spark, bench, DATASET, path, taken, taken + timedelta(minutes=5), ["item_id"])
            ingest_seconds = time.monotonic() - started
            seconds = {
                mode: _run_model(bench, scratch / "target", f"items_{mode}", rebuild=mode == "rebuild")
                for mode in MODES
            }
            total_rows = spark.table(changelog_table).count()
            results.append(RoundResult(round_no, load.rows, total_rows - previous_rows, ingest_seconds, seconds))
            previous_rows = total_rows
            print(_format_row(results[-1]), flush=True)
        fingerprints = [table_fingerprint(spark, bench.table("changelog", f"items_{mode}")) for mode in MODES]
        identical = fingerprints[0] == fingerprints[1]
    finally:
        if not keep:
            for layer in LAYERS:
                spark.sql(f"drop database if exists {bench.schema(layer)} cascade")
            if work_dir is None:
                shutil.rmtree(scratch, ignore_errors=True)
    return BenchReport(config, results, identical)


HEADER = (
    f"{'round':>5} {'snapshot rows':>13} {'changelog rows':>14} {'ingest s':>9} "
    f"{'incremental s':>13} {'rebuild s':>10} {'rebuild/incr':>12}"
)


def _format_row(result: RoundResult) -> str:
    incremental, rebuild = result.model_seconds["incremental"], result.model_seconds["rebuild"]
    ratio = rebuild / incremental if incremental else float("nan")
    return (
        f"{result.round_no:>5} {result.snapshot_rows:>13,} {result.changelog_rows:>14,} {result.ingest_seconds:>9.1f} "
        f"{incremental:>13.1f} {rebuild:>10.1f} {ratio:>12.2f}"
    )


def summarise(report: BenchReport) -> list[str]:
    lines = []
    change_rounds = [r for r in report.rounds if r.round_no >= 1]
    if len(change_rounds) >= 2:
        second, last = change_rounds[1], change_rounds[-1]
        growth = last.model_seconds["incremental"] / second.model_seconds["incremental"]
        verdict = "met" if growth <= 1.2 else "NOT met"
        lines.append(
            f"round {last.round_no} / round {second.round_no} (incremental): {growth:.2f} (target <= 1.20: {verdict})"
        )
    if change_rounds:
        incremental = sum(r.model_seconds["incremental"] for r in change_rounds)
        rebuild = sum(r.model_seconds["rebuild"] for r in change_rounds)
        lines.append(
            f"rounds 1-{change_rounds[-1].round_no}: incremental {incremental:.1f} s, rebuild {rebuild:.1f} s, "
            f"rebuild/incremental {rebuild / incremental:.2f}"
        )
    lines.append(f"both changelogs identical: {'yes' if report.identical else 'NO'}")
    return lines


def print_report(report: BenchReport) -> None:
    config = report.config
    print()
    print(
        f"changelog benchmark: {config.rows:,} rows, {config.rounds} rounds, per round {config.changed:.1%} changed, "
        f"{config.added:.1%} added, {config.removed:.1%} removed; seconds are dbt model execution times"
    )
    print(HEADER)
    for result in report.rounds:
        print(_format_row(result))
    for line in summarise(report):
        print(line)

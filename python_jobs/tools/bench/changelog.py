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

The snapshots come from ``python_jobs.tools.generate.items``: every run writes the same ones.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path

from pyspark.sql import SparkSession

from python_jobs.changelog.project import ChangelogModel, write_scratch_project
from python_jobs.dbt import run_dbt
from python_jobs.ingest.snapshot import ingest_snapshot
from python_jobs.settings import Settings
from python_jobs.tools.bench.harness import Figures, drop_warehouse, reset_warehouse, timed
from python_jobs.tools.generate.items import ItemChurn, items_snapshot_frame
from python_jobs.warehouse.fingerprint import table_fingerprint

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
    reset_warehouse(spark, bench)
    changelog_table = bench.table("changelog", "items_incremental")
    results: list[RoundResult] = []
    previous_rows = 0
    churn = ItemChurn(config.rows, config.changed, config.added, config.removed)
    progress = rounds_table(echo=True)
    try:
        for round_no in range(config.rounds + 1):
            path = scratch / f"round_{round_no}.parquet"
            items_snapshot_frame(spark, churn, round_no).write.mode("overwrite").parquet(str(path))
            taken = FIRST_SNAPSHOT + timedelta(days=round_no)
            ingest_seconds, load = timed(partial(
                ingest_snapshot, spark, bench, DATASET, path, taken, taken + timedelta(minutes=5), ["item_id"]
            ))
            seconds = {
                mode: _run_model(bench, scratch / "target", f"items_{mode}", rebuild=mode == "rebuild")
                for mode in MODES
            }
            total_rows = spark.table(changelog_table).count()
            results.append(RoundResult(round_no, load.rows, total_rows - previous_rows, ingest_seconds, seconds))
            previous_rows = total_rows
            add_round(progress, results[-1])
        fingerprints = [table_fingerprint(spark, bench.table("changelog", f"items_{mode}")) for mode in MODES]
        identical = fingerprints[0] == fingerprints[1]
    finally:
        if not keep:
            drop_warehouse(spark, bench)
            if work_dir is None:
                shutil.rmtree(scratch, ignore_errors=True)
    return BenchReport(config, results, identical)


ROUND_COLUMNS = ("round", "snapshot rows", "changelog rows", "ingest s", "incremental s", "rebuild s",
                 "rebuild/incr")


def rounds_table(echo: bool = False) -> Figures:
    return Figures(ROUND_COLUMNS, echo=echo)


def add_round(table: Figures, result: RoundResult) -> None:
    incremental, rebuild = result.model_seconds["incremental"], result.model_seconds["rebuild"]
    ratio = rebuild / incremental if incremental else float("nan")
    table.add(result.round_no, f"{result.snapshot_rows:,}", f"{result.changelog_rows:,}",
              f"{result.ingest_seconds:.1f}", f"{incremental:.1f}", f"{rebuild:.1f}", f"{ratio:.2f}")


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
    table = rounds_table()
    for result in report.rounds:
        add_round(table, result)
    print(table.table())
    for line in summarise(report):
        print(line)

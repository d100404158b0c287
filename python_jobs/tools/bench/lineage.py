"""``bench lineage``: the proposal's dedup example, ingest and build throughput, incremental cost.

Every part runs in its own schema prefix of the current warehouse, inside the already started
SparkSession, so the figures exclude Spark start-up. Peak memory is the JVM's resident-set high
water mark (VmHWM), which only grows, read after each step.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from python_jobs.dbt import run_dbt
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.lineage.event_parsing import PARSE_OPTIONS, PARSE_SCHEMA
from python_jobs.lineage.models import core_selection
from python_jobs.settings import Settings
from python_jobs.tools.bench.harness import (
    Figures,
    jvm_cpu_seconds,
    jvm_pid,
    load_average,
    peak_rss_bytes,
    reset_warehouse,
    timed,
)
from python_jobs.tools.bench.report import Cost
from python_jobs.tools.generate.lineage import SyntheticSpec, proposal_example, write_events
from python_jobs.warehouse.fingerprint import warehouse_fingerprint


def jvm_peak_rss_mb(spark: SparkSession) -> float:
    return peak_rss_bytes(jvm_pid(spark)) / (1024 * 1024)


def count(spark: SparkSession, table: str) -> int:
    return spark.table(table).count()


@dataclass(frozen=True)
class ExampleResult:
    """The proposal's workload: schema-version mapping rows against Marquez's per-version rows."""

    runs: int
    dataset_versions: int
    schema_versions: int
    mapping_rows: int
    per_version_rows: int
    build_seconds: float


@dataclass(frozen=True)
class SizeResult:
    """One history size: ingest against the parse-and-write floor, the first build, the same-shaped
    +1% batch and a build with no new events. ``cpu_seconds`` are the JVM's user + system time."""

    events: int
    input_bytes: int
    floor: Cost
    ingest: Cost
    accepted: int
    rejected: int
    build_seconds: float | None = None
    increment_events: int = 0
    increment_ingest_seconds: float | None = None
    increment_build_seconds: float | None = None
    noop_build_seconds: float | None = None
    noop_unchanged: bool | None = None

    @property
    def pipeline_events_per_second(self) -> float | None:
        if self.build_seconds is None:
            return None
        return self.events / (self.ingest.wall_seconds + self.build_seconds)


def bench_proposal_example(
    spark: SparkSession, settings: Settings, work_dir: Path, figures: Figures, prefix: str = "bench_example_"
) -> ExampleResult:
    selection = core_selection(settings)  # before any work: it fails at once when dbt's manifest is missing
    scoped = reset_warehouse(spark, settings.with_prefix(prefix))
    path = work_dir / "proposal_example.ndjson"
    runs = proposal_example(path)
    ingest_lineage(spark, scoped, [path])
    build_seconds, _ = timed(lambda: run_dbt(scoped, ["run", *selection]))
    lineage = scoped.schema("lineage")
    versions = count(spark, f"{lineage}.dataset_versions")
    schema_versions = count(spark, f"{lineage}.dataset_schema_versions")
    mapping_rows = count(spark, f"{lineage}.dataset_schema_versions_field_mapping")
    legacy_rows = count(spark, f"{lineage}.dataset_versions_field_mapping")
    part = "proposal example"
    figures.add(part, "runs (START + COMPLETE each)", runs)
    figures.add(part, "dataset versions", versions)
    figures.add(part, "schema versions (must be 1)", schema_versions)
    figures.add(part, "schema field-mapping rows (must be 20)", mapping_rows)
    figures.add(part, "Marquez per-version mapping rows", legacy_rows)
    figures.add(part, "ratio per-version / deduplicated rows", f"{legacy_rows / max(mapping_rows, 1):,.0f}x")
    figures.add(part, "dbt run seconds", f"{build_seconds:.1f}")
    return ExampleResult(runs, versions, schema_versions, mapping_rows, legacy_rows, build_seconds)


def parse_and_write_floor(spark: SparkSession, path: Path, out_dir: Path) -> Cost:
    """Plain ``from_json`` of the file with the ingest's parse schema, written as Parquet: what any
    ingest of this file pays at least (no checks, ids, placement or dedup)."""
    frame = spark.read.text(str(path)).select(F.from_json("value", PARSE_SCHEMA, PARSE_OPTIONS).alias("event"))
    cpu_before = jvm_cpu_seconds(spark)
    seconds, _ = timed(lambda: frame.select("event.*").write.mode("overwrite").parquet(str(out_dir)))
    cost = Cost(seconds, jvm_cpu_seconds(spark) - cpu_before)
    shutil.rmtree(out_dir, ignore_errors=True)
    return cost


def bench_size(
    spark: SparkSession,
    settings: Settings,
    work_dir: Path,
    size: int,
    figures: Figures,
    ingest_only: bool = False,
    increment_events: int | None = None,
    prefix: str | None = None,
) -> SizeResult:
    """``increment_events`` sizes the batch built on top of the history (default 1% of ``size``)."""
    part = f"{size:,} events"
    path = work_dir / f"synthetic_{size}.ndjson"
    if not path.exists():
        write_events(SyntheticSpec(events=size), path)
    size_bytes = path.stat().st_size
    figures.add(part, "input MB (avg bytes/event)", f"{size_bytes / 1e6:,.0f} ({size_bytes // size:,})")
    selection = core_selection(settings)  # before any work: it fails at once when dbt's manifest is missing
    scoped = reset_warehouse(spark, settings.with_prefix(prefix or f"bench_{size}_"))

    figures.add(part, "load average before (1/5/15 min)", load_average())
    floor = parse_and_write_floor(spark, path, work_dir / f"floor_{size}.parquet")
    figures.add(part, "from_json + Parquet write s (events/s)",
                f"{floor.wall_seconds:.1f} ({size / floor.wall_seconds:,.0f})")

    cpu_before = jvm_cpu_seconds(spark)
    ingest_seconds, report = timed(lambda: ingest_lineage(spark, scoped, [path]))
    ingest = Cost(ingest_seconds, jvm_cpu_seconds(spark) - cpu_before)
    figures.add(part, "ingest s (events/s)", f"{ingest_seconds:.1f} ({size / ingest_seconds:,.0f})")
    figures.add(part, "ingest throughput / floor (target>=0.5)", f"{floor.wall_seconds / ingest_seconds:.2f}")
    figures.add(part, "JVM CPU s: floor / ingest (ratio)",
                f"{floor.cpu_seconds:.1f} / {ingest.cpu_seconds:.1f} "
                f"({floor.cpu_seconds / max(ingest.cpu_seconds, 0.01):.2f})")
    figures.add(part, "read/accepted/rejected/duplicates",
                f"{report.read}/{report.accepted}/{report.rejected}/{report.duplicates}")
    figures.add(part, "JVM peak RSS MB after ingest", f"{jvm_peak_rss_mb(spark):,.0f}")
    figures.add(part, "load average after ingest (1/5/15 min)", load_average())
    result = SizeResult(size, size_bytes, floor, ingest, report.accepted, report.rejected)
    if ingest_only:
        return result

    build_seconds, _ = timed(lambda: run_dbt(scoped, ["run", *selection]))
    figures.add(part, "first dbt run s (events/s)", f"{build_seconds:.1f} ({size / build_seconds:,.0f})")
    figures.add(part, "pipeline events/s (ingest + build)", f"{size / (ingest_seconds + build_seconds):,.0f}")
    figures.add(part, "JVM peak RSS MB after build", f"{jvm_peak_rss_mb(spark):,.0f}")

    extra = increment_events or max(size // 100, 2)
    more = work_dir / f"synthetic_{size}_plus_{extra}.ndjson"
    write_events(SyntheticSpec(events=extra, first_run=(size + 1) // 2), more)
    more_ingest_seconds, _ = timed(lambda: ingest_lineage(spark, scoped, [more]))
    figures.add(part, f"+{extra:,} events: ingest s", f"{more_ingest_seconds:.1f}")
    incremental_seconds, _ = timed(lambda: run_dbt(scoped, ["run", *selection]))
    figures.add(part, f"+{extra:,} events: dbt run s (target <=15% of first)",
                f"{incremental_seconds:.1f} ({incremental_seconds / build_seconds:.0%})")

    before = warehouse_fingerprint(spark, scoped)
    noop_seconds, _ = timed(lambda: run_dbt(scoped, ["run", *selection]))
    unchanged = warehouse_fingerprint(spark, scoped) == before
    figures.add(part, "no new events: dbt run s (tables unchanged)", f"{noop_seconds:.1f} ({unchanged})")
    lineage = scoped.schema("lineage")
    figures.add(part, "dataset versions / schema versions",
                f"{count(spark, f'{lineage}.dataset_versions'):,} / "
                f"{count(spark, f'{lineage}.dataset_schema_versions'):,}")
    return replace(
        result,
        build_seconds=build_seconds,
        increment_events=extra,
        increment_ingest_seconds=more_ingest_seconds,
        increment_build_seconds=incremental_seconds,
        noop_build_seconds=noop_seconds,
        noop_unchanged=unchanged,
    )


def run_lineage_bench(
    spark: SparkSession,
    settings: Settings,
    sizes: list[int],
    work_dir: Path,
    example: bool = True,
    ingest_only: bool = False,
) -> Figures:
    """``ingest_only`` measures from_json and ingest only: no proposal example, no dbt."""
    work_dir.mkdir(parents=True, exist_ok=True)
    figures = Figures()
    if example and not ingest_only:
        bench_proposal_example(spark, settings, work_dir, figures)
    for size in sizes:
        bench_size(spark, settings, work_dir, size, figures, ingest_only)
    print(figures.table())
    return figures

"""Each area's benchmark, run through its own module, turned into a report table.

Every area runs in the one SparkSession on a schema prefix of its own (``bench_all_*``) and drops
it afterwards; generated files go under the work directory.
"""

from __future__ import annotations

import shutil
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb
from pyspark.sql import SparkSession

from python_jobs.dbt import run_dbt
from python_jobs.lineage.models import core_selection
from python_jobs.serve.sql_endpoint import SqlEndpoint
from python_jobs.settings import Settings
from python_jobs.tools.bench import changelog, collector, facets, lineage, read_api, registry, sql
from python_jobs.tools.bench.harness import BENCH_BUILD, Figures, drop_warehouse, mib, timed
from python_jobs.tools.bench.plan import Plan
from python_jobs.tools.bench.report import Area, Row, Target, rate, ratio, seconds
from python_jobs.tools.generate.facets import SyntheticConfig

PIPELINE_TARGET_EVENTS = 1_000_000
INGEST_CPU_TARGET = Target(2.0)
INCREMENTAL_TARGET = Target(1.25)
NOOP_TARGET = Target(5.0, on_measured=True, unit=" s")
PIPELINE_TARGET = Target(5_000, at_most=False, on_measured=True, unit=" events/s")


# ---- lineage: ingest, build, incremental cost against history -------------------------------------


@dataclass(frozen=True)
class PeerCost:
    wall_seconds: float
    cpu_seconds: float


def duckdb_parse_and_write(path: Path, out: Path) -> PeerCost:
    """DuckDB's ``read_json`` of the same file written as Parquet, in this process (its CPU time
    is this process's, which does nothing else meanwhile)."""
    connection = duckdb.connect()
    try:
        connection.execute("set threads to 2")
        connection.execute("set memory_limit = '2GB'")
        cpu_before = time.process_time()
        started = time.monotonic()
        connection.execute(
            "copy (select * from read_json(?, format = 'newline_delimited')) to '"
            + str(out).replace("'", "''")
            + "' (format parquet)",
            [str(path)],
        )
        return PeerCost(time.monotonic() - started, time.process_time() - cpu_before)
    finally:
        connection.close()
        out.unlink(missing_ok=True)


def lineage_areas(
    spark: SparkSession, settings: Settings, plan: Plan, work_dir: Path, timings: list[tuple[str, float]],
    api: bool = False, endpoint: SqlEndpoint | None = None,
) -> tuple[list[Area], Any, Any]:
    """The three lineage tables (and the read API's, with ``api``; the SQL endpoint's, with ``endpoint`` running
    in ``spark``), and the small and large history results (for the plot)."""
    figures = Figures()
    prefix = settings.schema_prefix + "bench_all_lineage_"
    scoped = settings.with_prefix(prefix)
    lineage_dir = work_dir / "lineage"
    lineage_dir.mkdir(parents=True, exist_ok=True)
    try:
        took, example = timed(lambda: lineage.bench_proposal_example(spark, settings, lineage_dir, figures, prefix))
        drop_warehouse(spark, scoped)
        timings.append(("lineage: proposal workload (8,640 events), ingest + build", took))
        took, small = timed(lambda: lineage.bench_size(
            spark, settings, lineage_dir, plan.small_history, figures, increment_events=plan.increment, prefix=prefix
        ))
        drop_warehouse(spark, scoped)
        timings.append((f"lineage: {plan.small_history:,}-event history, floor + ingest + 3 builds", took))
        took, large = timed(lambda: lineage.bench_size(
            spark, settings, lineage_dir, plan.size, figures, increment_events=plan.increment, prefix=prefix
        ))
        timings.append((f"lineage: {plan.size:,}-event history, floor + ingest + 3 builds", took))
        api_table = read_api_area(spark, scoped, plan, timings) if api else None
        round_command = ["run", *core_selection(settings)]  # the incremental build of the lineage area
        endpoint_table = (sql_area(spark, endpoint, scoped, plan, lineage_dir, timings, round_command)
                          if endpoint is not None else None)
        drop_warehouse(spark, scoped)
        duck_out = lineage_dir / "duckdb.parquet"
        took, duck = timed(lambda: _duckdb_or_error(lineage_dir / f"synthetic_{plan.size}.ndjson", duck_out))
        timings.append(("lineage: DuckDB read_json of the same file", took))
    finally:
        drop_warehouse(spark, scoped)
        shutil.rmtree(lineage_dir, ignore_errors=True)
    tables = [ingest_area(large, duck), build_area(large, example), incremental_area(small, large)]
    extra = [table for table in (api_table, endpoint_table) if table is not None]
    return [*tables, *extra], small, large


API_LATENCY_TARGET = Target(300, on_measured=True, unit=" ms")
API_REQUESTS = 200


def read_api_area(spark: SparkSession, scoped: Settings, plan: Plan, timings: list[tuple[str, float]]) -> Area:
    """The Marquez read API on the large history: the models it reads are built on top of the lineage
    core, its snapshot loaded, then each request kind timed over HTTP one at a time."""
    try:
        took, _ = timed(lambda: run_dbt(scoped, BENCH_BUILD))
        timings.append(("read API: the facet and column-lineage models on the large history", took))
        took, measured = timed(lambda: read_api.measure_api(spark, scoped, API_REQUESTS))
        timings.append(("read API: snapshot load + timed requests", took))
    except Exception as error:
        return Area("Marquez read API", "target", error=f"{type(error).__name__}: {error}")
    return read_api_table(measured, plan.size)


def read_api_table(measured: Any, events: int) -> Area:
    area = Area("Marquez read API", "p50 (same requests)")
    for name in read_api.LATENCY_CASES:
        p50, p95, slowest = measured.summary(name)
        area.add(Row(f"{name}: p95 (max {slowest:,.0f} ms)", f"{p95:,.1f} ms", f"{p50:,.1f} ms", ratio(p95, p50),
                     API_LATENCY_TARGET, p95))
    area.add(Row("snapshot load (after each build)", seconds(measured.snapshot_seconds)))
    area.notes.append(
        f"{events:,}-event history ({measured.counts}); {API_REQUESTS} requests of each kind over HTTP on "
        f"loopback after 30 warm-up requests, one at a time, in the process holding the snapshot; load average "
        f"{measured.load_before} before, {measured.load_after} after."
    )
    return area


SQL_TITLE = "SQL endpoint"
SQL_BASELINE = "in-process (same queries)"
SQL_CONFIG = sql.SqlBenchConfig(queries=100, warmup=10, clients=2)  # the round's batch: the plan's increment


def sql_area(
    spark: SparkSession, endpoint: SqlEndpoint, scoped: Settings, plan: Plan, work_dir: Path,
    timings: list[tuple[str, float]], round_command: list[str],
) -> Area:
    """The SQL endpoint on the large history: each query kind through the endpoint and in-process, idle, with
    clients at once, and while a round ingests and builds the plan's increment."""
    config = replace(SQL_CONFIG, round_events=plan.increment)
    try:
        took, measured = timed(lambda: sql.measure_sql(spark, endpoint, scoped, plan.size, config, work_dir,
                                                       round_command))
        timings.append(("SQL endpoint: queries idle, at once and during a build round", took))
    except Exception as error:
        return Area(SQL_TITLE, SQL_BASELINE, error=f"{type(error).__name__}: {error}")
    return sql_table(measured)


def sql_table(measured: Any) -> Area:
    area = Area(SQL_TITLE, SQL_BASELINE)
    for condition in sql.CONDITIONS:
        for kind in sql.KINDS:
            through = measured.latency(condition, sql.ENDPOINT, kind)
            beside = measured.latency(condition, sql.IN_PROCESS, kind)
            area.add(Row(f"{kind} ({condition}): p50 / p95 (queries/s)", through.text(), beside.text(),
                         ratio(through.p50(), beside.p50())))
    if measured.throughput:
        through, beside = measured.throughput[sql.ENDPOINT], measured.throughput[sql.IN_PROCESS]
        area.add(Row(f"{through.clients} clients at once, the three kinds in turn, idle: queries/s",
                     f"{through.per_second() or 0:,.1f}", f"{beside.per_second() or 0:,.1f}",
                     ratio(through.per_second(), beside.per_second())))
    result = measured.round
    area.add(Row(f"build round (+{result.events:,} events): ingest + build, queries that ran during it",
                 f"{seconds(result.seconds)}, {measured.during_round()} queries"))
    config = measured.config
    area.notes.append(
        f"{measured.events:,}-event history ({measured.counts}). {config.queries} queries of each kind one at a "
        f"time after {config.warmup} warm-up ones, through the SQL endpoint with PyHive on one connection "
        "(HiveServer2 protocol on loopback) and in-process with `spark.sql(...).collect()` in the same session, "
        "both in the scheduler pool `sql`; the ratio is the endpoint's p50 over the in-process p50. The point "
        "lookup reads a random run of 200 sampled, the join one of 50 sampled datasets."
    )
    area.notes.append(
        f"The build round ingests +{result.events:,} events continuing the history's runs and runs the core "
        "models' incremental build (as in the incremental-cost table) in a thread of the same session, in the "
        "pool `default` as serve's build loop; meanwhile the two paths take turns, each kind and path at most "
        f"{config.queries} times, as many as the round lasts. An error is a failed query or a wrong row count. "
        f"After the round and `refresh_readers`, `lineage.runs` through the endpoint counts "
        f"{measured.runs_after:,} runs (+{measured.runs_after - measured.runs_before:,}). Load average "
        f"{measured.load_before} before, {measured.load_after} after."
    )
    if result.error:
        area.notes.append(f"The build round failed: {result.error}")
    area.notes += [f"First error: {line}" for line in sql.first_errors(measured)]
    return area


def _duckdb_or_error(path: Path, out: Path) -> PeerCost | str:
    try:
        return duckdb_parse_and_write(path, out)
    except Exception as error:
        return f"{type(error).__name__}: {error}"


def ingest_area(large: Any, duck: PeerCost | str) -> Area:
    events = large.events
    area = Area("Lineage ingest", "baseline / peer (same file)")
    area.add(Row("ingest vs Spark from_json + Parquet write (floor), JVM CPU", seconds(large.ingest.cpu_seconds),
                 seconds(large.floor.cpu_seconds), ratio(large.ingest.cpu_seconds, large.floor.cpu_seconds),
                 INGEST_CPU_TARGET))
    area.add(Row("ingest vs Spark from_json + Parquet write (floor), wall",
                 f"{seconds(large.ingest.wall_seconds)} ({rate(events, large.ingest.wall_seconds)})",
                 f"{seconds(large.floor.wall_seconds)} ({rate(events, large.floor.wall_seconds)})",
                 ratio(large.ingest.wall_seconds, large.floor.wall_seconds)))
    if isinstance(duck, PeerCost):
        area.add(Row("ingest vs DuckDB read_json + Parquet write, CPU", seconds(large.ingest.cpu_seconds),
                     seconds(duck.cpu_seconds), ratio(large.ingest.cpu_seconds, duck.cpu_seconds)))
        area.add(Row("ingest vs DuckDB read_json + Parquet write, wall", seconds(large.ingest.wall_seconds),
                     f"{seconds(duck.wall_seconds)} ({rate(events, duck.wall_seconds)})",
                     ratio(large.ingest.wall_seconds, duck.wall_seconds)))
    else:
        area.notes.append(f"DuckDB read_json failed: {duck}")
    area.notes.append(
        f"{events:,} synthetic pipeline events, {large.input_bytes / 1e6:,.0f} MB of NDJSON; "
        f"accepted {large.accepted:,}, rejected {large.rejected:,}."
    )
    return area


def build_area(large: Any, example: Any) -> Area:
    area = Area("Lineage build", "baseline")
    events = large.events
    area.add(Row(f"first build of {events:,} events (dbt run, core models)",
                 f"{seconds(large.build_seconds)} ({rate(events, large.build_seconds)})"))
    pipeline = large.pipeline_events_per_second
    target = PIPELINE_TARGET if events >= PIPELINE_TARGET_EVENTS else None
    area.add(Row("pipeline: ingest + first build", f"{pipeline:,.0f} events/s" if pipeline else "-",
                 target=target, value=pipeline))
    area.add(Row("proposal workload: schema-version field-mapping rows vs Marquez's per-version rows",
                 f"{example.mapping_rows:,}", f"{example.per_version_rows:,}",
                 ratio(example.mapping_rows, example.per_version_rows)))
    area.add(Row("proposal workload: schema versions vs dataset versions",
                 f"{example.schema_versions:,}", f"{example.dataset_versions:,}",
                 ratio(example.schema_versions, example.dataset_versions)))
    area.add(Row("proposal workload: build (8,640 events)", seconds(example.build_seconds)))
    area.notes.append(
        f"Proposal workload: one job every 10 minutes for 30 days ({example.runs:,} runs, START + COMPLETE) on "
        "a stable 20-column dataset. Marquez's per-version mapping holds one row per column per dataset version."
    )
    if target is None:
        area.notes.append(f"The ≥ 5,000 events/s target applies at {PIPELINE_TARGET_EVENTS:,} events.")
    return area


def incremental_area(small: Any, large: Any) -> Area:
    area = Area("Incremental cost against history", f"on the {small.events:,}-event history")
    batch = large.increment_events
    area.add(Row(f"+{batch:,}-event batch: build on the {large.events:,}-event history",
                 seconds(large.increment_build_seconds), seconds(small.increment_build_seconds),
                 ratio(large.increment_build_seconds, small.increment_build_seconds), INCREMENTAL_TARGET))
    area.add(Row(f"+{batch:,}-event batch: ingest", seconds(large.increment_ingest_seconds),
                 seconds(small.increment_ingest_seconds),
                 ratio(large.increment_ingest_seconds, small.increment_ingest_seconds)))
    area.add(Row("no new events: build", seconds(large.noop_build_seconds), seconds(small.noop_build_seconds),
                 ratio(large.noop_build_seconds, small.noop_build_seconds), NOOP_TARGET, large.noop_build_seconds))
    area.add(Row("first build (for scale)", seconds(large.build_seconds), seconds(small.build_seconds),
                 ratio(large.build_seconds, small.build_seconds)))
    area.notes.append(
        f"The batch is {batch:,} events (1% of the larger history) of the same shape on both histories, "
        "continuing each one's runs; tables unchanged by the no-new-events build: "
        f"{large.noop_unchanged} / {small.noop_unchanged}."
    )
    return area


# ---- facets ------------------------------------------------------------------------------------------


def facets_area(spark: SparkSession, settings: Settings, plan: Plan) -> Area:
    scoped = settings.with_prefix(settings.schema_prefix + "bench_all_facets_")
    drop_warehouse(spark, scoped)
    config = SyntheticConfig(events=plan.facet_events, large_bytes=plan.facet_large_bytes)
    try:
        result = facets.run_bench(spark, scoped, config, facets.BenchRuns(increment=0))
    finally:
        drop_warehouse(spark, scoped)
    return facets_table(result, plan.facet_large_bytes)


def facets_table(result: Any, large_bytes: int) -> Area:
    area = Area("Facets", "naive raw JSON scan")
    area.add(Row("current facets of one dataset: query time", f"{result.lookup.seconds:.3f} s",
                 f"{result.naive.seconds:.3f} s", ratio(result.lookup.seconds, result.naive.seconds)))
    area.add(Row("current facets of one dataset: bytes read by the JVM", mib(result.lookup.read_bytes),
                 mib(result.naive.read_bytes), ratio(result.lookup.read_bytes, result.naive.read_bytes)))
    area.add(Row("body dedup by rows: stored bodies vs facet rows", f"{result.stored_bodies:,}",
                 f"{result.facet_rows:,}", ratio(result.stored_bodies, result.facet_rows)))
    area.add(Row("body dedup by bytes: referenced body bytes per stored byte", f"{result.byte_dedup_ratio:,.1f}x"))
    area.add(Row(f"facet load of {result.events:,} events", seconds(result.load_seconds)))
    area.notes.append(
        f"{result.events:,} synthetic events, one in 2,000 with a {mib(large_bytes)} plan facet. "
        "The lookup is the median of 5 warm runs, the naive scan of 3; both return the same facets."
    )
    return area


# ---- changelog ---------------------------------------------------------------------------------------


def changelog_area(spark: SparkSession, settings: Settings, plan: Plan, work_dir: Path) -> tuple[Area, Any]:
    scratch = work_dir / "changelog"
    try:
        report = changelog.run_changelog_bench(spark, settings.with_prefix(settings.schema_prefix + "bench_all_"),
                                               changelog.BenchConfig(rows=plan.changelog_rows), scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return changelog_table(report), report


def changelog_table(report: Any) -> Area:
    area = Area("Changelog", "full state rebuild from the changelog")
    for result in report.rounds:
        incremental, rebuild = result.model_seconds["incremental"], result.model_seconds["rebuild"]
        area.add(Row(f"round {result.round_no}: {result.changelog_rows:,} changelog rows", seconds(incremental),
                     seconds(rebuild), ratio(incremental, rebuild)))
    by_round = {result.round_no: result.model_seconds["incremental"] for result in report.rounds}
    last = max(by_round)
    if 2 in by_round and last > 2:
        area.add(Row(f"round {last} vs round 2 (with the state)", seconds(by_round[last]), seconds(by_round[2]),
                     ratio(by_round[last], by_round[2])))
    area.notes.append(
        f"{report.config.rows:,} rows per snapshot; per round 1% changed, 0.5% added, 0.5% removed. Seconds are "
        f"dbt's execution time of the model. Both changelogs identical: {'yes' if report.identical else 'NO'}."
    )
    return area


# ---- registry ----------------------------------------------------------------------------------------


def registry_area(spark: SparkSession, settings: Settings, plan: Plan) -> Area:
    return registry_table(registry.run_bench(spark, settings, plan.registry_events), plan.registry_events)


def registry_table(measured: list[Any], events: int) -> Area:
    figures = {figure.step: figure for figure in measured}

    def step_rate(step: str) -> str:
        figure = figures[step]
        return f"{seconds(figure.seconds)} ({rate(figure.rows, figure.seconds)})"

    area = Area("Registry", "baseline")
    validate, again = figures["ingest + validate events"], figures["re-ingest the same file (0 new)"]
    area.add(Row("ingest + validate events vs re-ingest of the same file (nothing new)",
                 step_rate("ingest + validate events"), seconds(again.seconds), ratio(validate.seconds, again.seconds)))
    load = figures["dbt build: create + load typed table"]
    noop = figures["dbt build: no new events"]
    area.add(Row("dbt build: create + load the typed table vs a build with no new events",
                 step_rate("dbt build: create + load typed table"), seconds(noop.seconds),
                 ratio(load.seconds, noop.seconds)))
    plus, migration = figures["dbt build: +10% events"], figures[registry.MIGRATION_BUILD_STEP]
    area.add(Row("migration build (new version adds a column) + its events vs a +10% build",
                 step_rate(registry.MIGRATION_BUILD_STEP), step_rate("dbt build: +10% events"),
                 ratio(migration.seconds, plus.seconds)))
    area.notes.append(
        f"{events:,} synthetic checkout events over 3 versions (a tenth invalid), then +10%, then "
        f"a fourth version that adds a column with {migration.rows:,} new events of it. Runs in the "
        "bench_registry_ prefix."
    )
    return area


# ---- collector ---------------------------------------------------------------------------------------


COLLECTOR_CLIENTS = (1, 8, 32)
COLLECTOR_RATE_TARGET = Target(5000, at_most=False, on_measured=True, unit=" events/s")
COLLECTOR_P99_TARGET = Target(50, on_measured=True, unit=" ms")
COLLECTOR_RATIO_TARGET = Target(0.5, at_most=False)


def collector_area(settings: Settings, work_dir: Path) -> Area:
    """The HTTP collector: durable (fsync) acknowledgements against the same server without fsync."""
    measured = collector.run_collector_bench(settings, list(COLLECTOR_CLIENTS), 5.0, work_dir / "collector",
                                   freshness=True, freshness_every=5.0, freshness_events=3)
    return collector_table(measured)


def collector_table(measured: Any) -> Area:
    area = Area("Collector (POST /api/v1/lineage on loopback)", "same server without fsync")
    for clients in COLLECTOR_CLIENTS:
        durable, bound = measured.results[(True, clients)], measured.results[(False, clients)]
        last = clients == COLLECTOR_CLIENTS[-1]
        area.add(Row(f"acknowledged events/s, {clients} client{'s' if clients > 1 else ''}",
                     f"{durable['events_per_s']:,.0f}", f"{bound['events_per_s']:,.0f}", measured.ratio(clients),
                     COLLECTOR_RATIO_TARGET if last else None))
        area.add(Row(f"latency p50 / p99, {clients} client{'s' if clients > 1 else ''}",
                     f"{durable['p50_ms']:.1f} / {durable['p99_ms']:.1f} ms",
                     f"{bound['p50_ms']:.1f} / {bound['p99_ms']:.1f} ms"))
        if last:
            area.add(Row(f"acknowledged events/s at {clients} clients (goal)", f"{durable['events_per_s']:,.0f}",
                         target=COLLECTOR_RATE_TARGET, value=durable["events_per_s"]))
            area.add(Row(f"p99 at {clients} clients (goal)", f"{durable['p99_ms']:.1f} ms",
                         target=COLLECTOR_P99_TARGET, value=durable["p99_ms"]))
    if measured.live_freshness:
        live = measured.live_freshness
        area.add(Row(f"read API freshness: 201 to GET /api/v1/jobs/runs/{{id}} ({len(live)} events, build loop beside)",
                     f"p50 {collector.percentile(live, 0.5) * 1000:.0f} ms, "
                     f"p95 {collector.percentile(live, 0.95) * 1000:.0f} ms"))
    if len(measured.freshness) > 1:
        later = measured.freshness[1:]
        area.add(Row("freshness: 201 to visible in lineage.runs (serve --build-every 5s), after the first build",
                     f"median {statistics.median(later):.1f} s, max {max(later):.1f} s"))
    if measured.freshness:
        area.add(Row("freshness of the first event (its round is the first, full build)",
                     f"{measured.freshness[0]:.1f} s"))
    area.notes.append(
        f"~{measured.mean_event_bytes / 1000:.1f} KB events, 5 s of load per row; the load generator runs on the "
        "same 2 cores as the server. 201 is sent only after the group commit's fdatasync covering the line."
    )
    return area

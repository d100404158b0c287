"""``bench facets``: "all current facets of one dataset" from the facet tables against the naive
query over ``raw.lineage_events`` that parses every event's JSON, on a synthetic history."""

from __future__ import annotations

import json
import resource
import shutil
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from python_jobs.dbt import run_dbt
from python_jobs.facets.backfill import STORAGE_MODELS
from python_jobs.facets.raw_events import append_raw_frame, contract_row
from python_jobs.ingest.lineage_contract import RAW_LINEAGE_EVENTS
from python_jobs.keys import dataset_uuid
from python_jobs.settings import LAYERS, Settings
from python_jobs.spark import ensure_schemas
from python_jobs.tools.bench.harness import (
    Figures,
    jvm_heap_peak,
    jvm_pid,
    mib,
    peak_rss_bytes,
    process_bytes_read,
    reset_jvm_peaks,
)
from python_jobs.tools.generate.facets import NAMESPACE, SyntheticConfig, dataset_name, synthetic_events

INPUT_CLASS_FACETS = ("dataqualitymetrics", "dataqualityassertions", "inputstatistics")
# (layer, table): the facet rows and the body store behind the facet_bodies view.
FACET_TABLES = (("lineage", "facet_refs"), ("staging", "facet_body_store"))
# Current facets, maintained per load; the one-dataset lookup reads these, not the history.
WINNER_TABLES = ("facet_winners_dataset", "facet_winners_dataset_version", "facet_winners_job", "facet_winners_run")


@dataclass(frozen=True)
class Measured:
    seconds: float
    scanned_bytes: int  # size of the Parquet files the scans opened (after partition pruning)
    read_bytes: int  # bytes the JVM read (after column, row-group and page skipping)
    result: Any


def json_default(value: Any) -> str:
    return value.isoformat()


def write_contract_ndjson(path: Path, config: SyntheticConfig, start: int, stop: int) -> int:
    """Raw rows as JSON lines, so Spark's JSON reader (not Python) builds the Parquet table."""
    written = 0
    with path.open("w", encoding="utf-8") as out:
        for offset, event in enumerate(synthetic_events(config, start, stop)):
            row = contract_row(event, start + offset + 1, "bench-facets.ndjson", start + offset + 1, "bench")
            out.write(json.dumps(row, default=json_default, separators=(",", ":")))
            out.write("\n")
            written += 1
    return written


def append_synthetic_raw(
    spark: SparkSession, settings: Settings, work_dir: Path, config: SyntheticConfig, start: int, stop: int
) -> int:
    work_dir.mkdir(parents=True, exist_ok=True)
    path = work_dir / f"raw-{start}-{stop}.ndjson"
    written = write_contract_ndjson(path, config, start, stop)
    frame = spark.read.schema(RAW_LINEAGE_EVENTS).option("mode", "FAILFAST").json(str(path))
    append_raw_frame(spark, settings, frame)
    path.unlink()
    return written


def scanned_file_bytes(plan: Any) -> int:
    """Bytes of the Parquet files a finished query scanned, after static and dynamic partition
    pruning (the scans' "size of files read" metric), summed over the final adaptive plan."""
    kind = plan.getClass().getSimpleName()
    if kind == "AdaptiveSparkPlanExec":
        return scanned_file_bytes(plan.executedPlan())
    if kind.endswith("QueryStageExec"):  # shuffle, broadcast and (Spark 4) result stages
        return scanned_file_bytes(plan.plan())
    if kind == "ReusedExchangeExec":
        return 0  # its scan is counted where the exchange was first built
    total = 0
    if kind == "FileSourceScanExec":
        size = plan.metrics().get("filesSize")
        if size.isDefined():
            total += int(size.get().value())
    for group in (plan.children(), plan.subqueries()):
        total += sum(scanned_file_bytes(group.apply(i)) for i in range(group.size()))
    return total


def measure(spark: SparkSession, sql: str) -> Measured:
    pid = jvm_pid(spark)
    read_before = process_bytes_read(pid)
    started = time.perf_counter()  # parsing, analysis (metastore look-ups) and planning count too
    frame = spark.sql(sql)
    rows = frame.collect()
    elapsed = time.perf_counter() - started
    read = process_bytes_read(pid) - read_before
    return Measured(elapsed, scanned_file_bytes(frame._jdf.queryExecution().executedPlan()), read, rows)


def facet_table_query(settings: Settings, key: str) -> str:
    view = settings.table("lineage", "current_dataset_facets")
    return f"select facets from {view} where dataset_uuid = '{key}'"


def naive_query(settings: Settings, namespace: str, name: str) -> str:
    raw = settings.table("raw", "lineage_events")
    dataset_ref = "struct<namespace:string,name:string,facets:map<string,string>"
    schema = (
        f"eventTime string, inputs array<{dataset_ref}>>, "
        f"outputs array<{dataset_ref},outputFacets:map<string,string>>>, dataset {dataset_ref}>"
    )
    match = f"namespace = '{namespace}' and {{ref}}.name = '{name}'"
    excluded = ", ".join(f"'{n}'" for n in INPUT_CLASS_FACETS)
    return f"""
with parsed as (
    select ingest_seq, from_json(event_json, '{schema}') as event from {raw}
),
references as (
    select ingest_seq, to_timestamp(event.eventTime) as event_time, 1 as role_order, position,
        dataset_ref.facets as shared_facets, cast(null as map<string, string>) as role_facets
    from parsed lateral view posexplode(event.inputs) inputs as position, dataset_ref
    where dataset_ref.{match.format(ref="dataset_ref")}
    union all
    select ingest_seq, to_timestamp(event.eventTime), 2, position, dataset_ref.facets, dataset_ref.outputFacets
    from parsed lateral view posexplode(event.outputs) outputs as position, dataset_ref
    where dataset_ref.{match.format(ref="dataset_ref")}
    union all
    select ingest_seq, to_timestamp(event.eventTime), 0, 0, event.dataset.facets, cast(null as map<string, string>)
    from parsed where event.dataset.{match.format(ref="event.dataset")}
),
entries as (
    select ingest_seq, event_time, role_order, position, 0 as section_order, facet_name, body
    from references lateral view explode(shared_facets) shared as facet_name, body
    where lower(facet_name) not in ({excluded})
    union all
    select ingest_seq, event_time, role_order, position, 1, facet_name, body
    from references lateral view explode(role_facets) specific as facet_name, body
),
latest as (
    select facet_name,
        max_by(body, named_struct('t', event_time, 's', ingest_seq, 'r', role_order, 'p', position,
            'o', section_order)) as body
    from entries group by facet_name
)
select facet_name, body from latest
"""


def table_bytes(spark: SparkSession, table: str) -> int:
    location = next(
        row.data_type for row in spark.sql(f"describe table extended {table}").collect() if row.col_name == "Location"
    )
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(location)
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return int(fs.getContentSummary(path).getLength())


def median_run(spark: SparkSession, sql: str, repeat: int, warm_up: bool) -> Measured:
    """Median of `repeat` timed runs; a warm-up run first (untimed) loads the Parquet footers and
    file listings into the JVM's caches, as a lookup service that has answered before would have."""
    if warm_up:
        measure(spark, sql)
    runs = [measure(spark, sql) for _ in range(max(1, repeat))]
    seconds = statistics.median(r.seconds for r in runs)
    return Measured(seconds, runs[-1].scanned_bytes, runs[-1].read_bytes, runs[-1].result)


@dataclass(frozen=True)
class BenchRuns:
    repeat: int = 5  # timed runs of the facet-table lookup (after one warm-up)
    naive_repeat: int = 3  # timed runs of the naive scan
    increment: int = 1_000  # new events for the incremental-load figure
    reuse: bool = False  # keep raw.lineage_events from a previous run


TARGET_SPEED_UP = 20.0


@dataclass(frozen=True)
class FacetBench:
    """The printed table (``figures``) and the numbers behind its main rows."""

    figures: Figures
    events: int
    load_seconds: float
    lookup: Measured
    naive: Measured
    facet_rows: int
    stored_bodies: int
    dedup_ratio: float
    byte_dedup_ratio: float


def run_bench(spark: SparkSession, settings: Settings, config: SyntheticConfig, runs: BenchRuns) -> FacetBench:
    repeat, increment, reuse = runs.repeat, runs.increment, runs.reuse
    ensure_schemas(spark, settings, LAYERS)
    raw = settings.table("raw", "lineage_events")
    work_dir = settings.lineage_home / "bench-facets"
    figures = Figures(("figure", "value"))
    figures.add("events", f"{config.events:,}")
    reused = reuse and spark.catalog.tableExists(raw)
    if not reused:
        stored = [settings.table(layer, t) for layer, t in FACET_TABLES]
        stored += [settings.table("lineage", t) for t in WINNER_TABLES]
        for table in (raw, *stored):
            spark.sql(f"drop table if exists {table}")
        started = time.perf_counter()
        append_synthetic_raw(spark, settings, work_dir, config, 0, config.events)
        figures.add("generate + write raw (s)", f"{time.perf_counter() - started:.1f}")
        shutil.rmtree(work_dir, ignore_errors=True)
    large = sum(1 for i in range(config.events) if config.large_every and i % config.large_every == 0)
    figures.add("events with a large facet", f"{large:,} x {mib(config.large_bytes)}")
    raw_bytes = table_bytes(spark, raw)
    figures.add("raw.lineage_events on disk", mib(raw_bytes))

    run_dbt(
        settings, ["build", "--select", "stg_lineage_events", "facet_classification", "--exclude-resource-type", "test"]
    )
    reset_jvm_peaks(spark)
    started = time.perf_counter()
    run_dbt(settings, ["run", "--select", "path:models/facets"])
    load_seconds = time.perf_counter() - started
    load_label = "facet load, reused warehouse: new events only (s)" if reused else "facet load, full history (s)"
    figures.add(load_label, f"{load_seconds:.1f}")
    figures.add("JVM heap peak during load", mib(jvm_heap_peak(spark)))
    facet_bytes = 0
    for layer, table in FACET_TABLES:
        size = table_bytes(spark, settings.table(layer, table))
        facet_bytes += size
        figures.add(f"{layer}.{table} on disk", mib(size))
    figures.add("facet tables on disk (refs + bodies)", f"{mib(facet_bytes)} ({facet_bytes / raw_bytes:.2f} of raw)")
    winner_bytes = sum(table_bytes(spark, settings.table("lineage", t)) for t in WINNER_TABLES)
    figures.add("current facets on disk (facet_winners_*)", mib(winner_bytes))

    if increment > 0:
        extra = SyntheticConfig(**{**config.__dict__, "events": config.events + increment})
        append_synthetic_raw(spark, settings, work_dir, extra, config.events, config.events + increment)
        started = time.perf_counter()
        run_dbt(settings, ["run", "--select", *STORAGE_MODELS])
        figures.add(f"incremental load of {increment:,} new events (s)", f"{time.perf_counter() - started:.1f}")
        shutil.rmtree(work_dir, ignore_errors=True)

    dedup = spark.table(settings.table("lineage", "facet_body_dedup")).first()
    figures.add("facet rows / stored bodies", f"{dedup.facet_rows:,} / {dedup.stored_bodies:,}")
    figures.add("dedup ratio (rows per body)", f"{dedup.dedup_ratio:.1f}x")
    figures.add("dedup ratio (bytes)", f"{dedup.byte_dedup_ratio:.1f}x")

    namespace, name = NAMESPACE, dataset_name(1)
    key = dataset_uuid(namespace, name)
    reset_jvm_peaks(spark)
    fast_sql, naive_sql = facet_table_query(settings, key), naive_query(settings, namespace, name)
    fast = median_run(spark, fast_sql, repeat, warm_up=True)
    naive = median_run(spark, naive_sql, runs.naive_repeat, warm_up=False)
    fast_facets = json.loads(fast.result[0]["facets"])
    naive_facets = {row["facet_name"]: json.loads(row["body"]) for row in naive.result}
    if fast_facets != naive_facets:
        raise AssertionError(f"the two queries disagree: {sorted(fast_facets)} vs {sorted(naive_facets)}")
    figures.add(f"dataset {name}: current facets", f"{len(fast_facets)} ({', '.join(sorted(fast_facets))})")
    figures.add(f"query: facet tables (s, median of {max(1, repeat)}, warm)", f"{fast.seconds:.3f}")
    figures.add(f"query: naive raw JSON scan (s, median of {max(1, runs.naive_repeat)})", f"{naive.seconds:.3f}")
    speed_up = naive.seconds / fast.seconds
    verdict = "met" if speed_up >= TARGET_SPEED_UP else "MISSED"
    figures.add("speed-up (naive / facet tables)", f"{speed_up:.1f}x (target >= {TARGET_SPEED_UP:.0f}x: {verdict})")
    figures.add("files opened: facet tables (size)", mib(fast.scanned_bytes))
    figures.add("files opened: naive scan (size)", mib(naive.scanned_bytes))
    figures.add("bytes read by the JVM: facet tables", mib(fast.read_bytes))
    figures.add("bytes read by the JVM: naive scan", mib(naive.read_bytes))
    if fast.read_bytes:
        figures.add("bytes read ratio (naive / facet tables)", f"{naive.read_bytes / fast.read_bytes:.1f}x")
    figures.add("JVM heap peak during queries", mib(jvm_heap_peak(spark)))
    figures.add("JVM peak RSS (whole run)", mib(peak_rss_bytes(jvm_pid(spark))))
    figures.add("Python peak RSS (whole run)", mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024))
    return FacetBench(
        figures, config.events, load_seconds, fast, naive,
        dedup.facet_rows, dedup.stored_bodies, float(dedup.dedup_ratio), float(dedup.byte_dedup_ratio),
    )


"""``bench retention``: what ``warehouse retain`` costs on a large history, beside a full rebuild of it.

On a schema prefix of its own, the bench ingests N synthetic pipeline events and builds every model below
``stg_lineage_events`` with the command the retention ends with (``dbt build --full-refresh --select
stg_lineage_events+``, data tests included): that first build is the full rebuild of the whole history. It then
takes the cut-off at the event time below which ``share`` of the events lie, and times the dry run, the retention
itself (raw blocks, quarantine, key table) and its rebuild, with the bytes each table and the whole warehouse
hold before and after. The figures go to the terminal and, between their markers, into ``BENCHMARKS.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from python_jobs.dbt import run_dbt
from python_jobs.ingest.lineage import RAW_TABLE, HadoopFiles, ingest_lineage
from python_jobs.ops.compaction import table_folder
from python_jobs.settings import Settings
from python_jobs.tools.bench.harness import Figures, drop_warehouse, load_average, reset_warehouse, timed
from python_jobs.tools.generate.lineage import SyntheticSpec, write_events
from python_jobs.warehouse.fingerprint import warehouse_tables
from python_jobs.warehouse.retention import REBUILD_SELECT, RetentionReport, retain

SECTION_START = "<!-- bench retention: start (written by `python -m python_jobs bench retention`) -->"
SECTION_END = "<!-- bench retention: end -->"
REBUILD = ["build", "--full-refresh", "--select", REBUILD_SELECT]
# What the lineage models read beside the lineage input: built first, untimed (a warehouse has them already).
PREREQUISITES = ["build", "--select", "changelog_streams", "facet_classification"]
PREFIX = "bench_retention_"


@dataclass(frozen=True)
class RetentionBench:
    events: int
    share: float
    input_bytes: int
    ingest_seconds: float
    full_build_seconds: float
    cut_off: datetime
    dry_run_seconds: float
    retain_seconds: float
    rebuild_seconds: float
    report: RetentionReport
    warehouse_bytes_before: int
    warehouse_bytes_after: int
    load_before: str
    load_after: str

    @property
    def retention_seconds(self) -> float:
        """What the command takes: the removal and the rebuild after it."""
        return self.retain_seconds + self.rebuild_seconds

    @property
    def removed_events(self) -> int:
        return self.report.tables[0].removed


def table_data_bytes(spark: SparkSession, table: str) -> int:
    """Bytes in the files a table reads now (a folder it was switched away from is not counted)."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    total = 0
    for name in spark.table(table).inputFiles():
        path = jvm.org.apache.hadoop.fs.Path(name)
        total += int(path.getFileSystem(conf).getFileStatus(path).getLen())
    return total


def warehouse_bytes(spark: SparkSession, settings: Settings) -> int:
    """Bytes in the files every table of the warehouse reads (views left out: they hold none)."""
    hadoop = HadoopFiles(spark)
    tables = [table for table in warehouse_tables(spark, settings).values() if table_folder(spark, hadoop, table)]
    return sum(table_data_bytes(spark, table) for table in tables)


def cut_off_at_share(spark: SparkSession, settings: Settings, share: float) -> datetime:
    """The event time below which about ``share`` of the stored events lie."""
    micros = spark.table(settings.table(*RAW_TABLE)).select(
        F.percentile_approx(F.unix_micros("event_time"), share, 100_000)).first()[0]
    return datetime.fromtimestamp(int(micros) / 1_000_000, tz=UTC)


def bench_retention(
    spark: SparkSession, settings: Settings, events: int, share: float, work_dir: Path, keep: bool = False
) -> RetentionBench:
    scoped = reset_warehouse(spark, settings.with_prefix(f"{settings.schema_prefix}{PREFIX}"))
    work_dir.mkdir(parents=True, exist_ok=True)
    path = work_dir / f"synthetic_{events}.ndjson"
    if not path.exists():
        write_events(SyntheticSpec(events=events), path)
    load_before = load_average()
    try:
        ingest_seconds, ingested = timed(lambda: ingest_lineage(spark, scoped, [path]))
        print(ingested.summary(), flush=True)
        run_dbt(scoped, PREREQUISITES)
        full_build_seconds, _ = timed(lambda: run_dbt(scoped, REBUILD))
        print(f"full build of the whole history: {full_build_seconds:.1f} s", flush=True)
        bytes_before = warehouse_bytes(spark, scoped)
        before = cut_off_at_share(spark, scoped, share)
        dry_run_seconds, _ = timed(lambda: retain(spark, scoped, before, dry_run=True))
        retain_seconds, report = timed(lambda: retain(spark, scoped, before))
        rebuild_seconds, _ = timed(lambda: run_dbt(scoped, REBUILD))
        bytes_after = warehouse_bytes(spark, scoped)
    finally:
        if not keep:
            drop_warehouse(spark, scoped)  # its folders too, the retired ones beside the tables included
    return RetentionBench(
        events=events, share=share, input_bytes=path.stat().st_size, ingest_seconds=ingest_seconds,
        full_build_seconds=full_build_seconds, cut_off=before, dry_run_seconds=dry_run_seconds,
        retain_seconds=retain_seconds, rebuild_seconds=rebuild_seconds, report=report,
        warehouse_bytes_before=bytes_before, warehouse_bytes_after=bytes_after, load_before=load_before,
        load_after=load_average(),
    )


def _mb(value: int) -> str:
    return f"{value / 1_000_000:,.1f} MB"


def figures(result: RetentionBench) -> Figures:
    table = Figures(("figure", "value"), echo=False)
    table.add("history", f"{result.events:,} events ({_mb(result.input_bytes)} of NDJSON), ingest "
                         f"{result.ingest_seconds:,.1f} s")
    table.add("cut-off", f"{result.cut_off.isoformat()} ({result.share:.0%} of the events before it)")
    table.add("full rebuild of the whole history (`dbt build --full-refresh`, the lineage models)",
              f"{result.full_build_seconds:,.1f} s")
    table.add("retain --dry-run", f"{result.dry_run_seconds:,.1f} s")
    table.add("retain: removal (raw blocks, quarantine, key table)", f"{result.retain_seconds:,.1f} s")
    table.add("retain: rebuild of the remaining history", f"{result.rebuild_seconds:,.1f} s")
    table.add("retain in all, against the full rebuild",
              f"{result.retention_seconds:,.1f} s "
              f"({result.retention_seconds / result.full_build_seconds:.2f}x)")
    for change in result.report.tables:
        table.add(f"{change.table}: rows before / removed / kept / bytes freed",
                  f"{change.rows_before:,} / {change.removed:,} / {change.rows_before - change.removed:,} / "
                  f"{_mb(change.bytes_freed)}")
    freed = result.warehouse_bytes_before - result.warehouse_bytes_after
    table.add("warehouse on disk before / after (every table)",
              f"{_mb(result.warehouse_bytes_before)} / {_mb(result.warehouse_bytes_after)} "
              f"({_mb(freed)} freed, {freed / max(result.warehouse_bytes_before, 1):.1%})")
    return table


def section(result: RetentionBench, command: str, date: str) -> str:
    kept_old = result.report.tables[0].rows_before - result.removed_events
    return "\n".join([
        SECTION_START,
        "## Retention",
        "",
        figures(result).table(),
        "",
        f"- Measured by `{command}` on {date}, in its own Spark session on its own schema prefix; load average "
        f"{result.load_before} before, {result.load_after} after.",
        f"- The synthetic pipeline shape (200 jobs, START + COMPLETE per run, a run every 5 minutes). "
        f"{result.removed_events:,} events were removed; {kept_old:,} stay, among them the old events the current "
        "state needs (each job's latest run, each dataset's latest writing run, the current facets).",
        "- The removal writes only the ingest blocks that hold a removed row; the rebuild afterwards is a first "
        "build of the remaining history, so a retention run costs about a full rebuild, whatever share it removes "
        "(README, Retention and erasure). Bytes freed by the removal are the raw and audit tables' files; the "
        "warehouse line counts every table after the rebuild.",
        SECTION_END,
    ])


def replace_section(text: str, new_section: str) -> str:
    """``text`` with its retention section replaced by ``new_section`` (appended when it has none)."""
    start, end = text.find(SECTION_START), text.find(SECTION_END)
    if start < 0 or end < start:
        return text.rstrip("\n") + "\n\n" + new_section + "\n"
    return text[:start] + new_section + text[end + len(SECTION_END):]


def existing_section(text: str) -> str | None:
    """The retention section of ``text``, markers included, if it has one."""
    start, end = text.find(SECTION_START), text.find(SECTION_END)
    return text[start:end + len(SECTION_END)] if 0 <= start < end else None

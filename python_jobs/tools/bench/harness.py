"""The one benchmark harness every ``bench <area>`` uses: timing, the machine's load, JVM probes, scratch
warehouses (and the synthetic one ``bench api`` and ``bench sql`` read) and the figures table. ``bench all``
adds the Markdown report (``report``, ``environment``, ``plots``) on top of the same pieces.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from pyspark.sql import SparkSession

from python_jobs.dbt import run_dbt
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.settings import LAYERS, Settings
from python_jobs.spark import ensure_schemas
from python_jobs.tools.generate.lineage import SyntheticSpec, write_events

T = TypeVar("T")


# ---- timing and load ------------------------------------------------------------------------------------


def timed(action: Callable[[], T]) -> tuple[float, T]:
    """Wall seconds of ``action()`` and its result."""
    started = time.monotonic()
    result = action()
    return time.monotonic() - started, result


def load_average() -> str:
    """The 1, 5 and 15 minute load averages: other work on the machine moves every figure."""
    return " / ".join(f"{value:.2f}" for value in os.getloadavg())


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def mib(value: float) -> str:
    return f"{value / (1024 * 1024):,.1f} MiB"


# ---- JVM probes (local mode: the executors are threads of the driver JVM) ----------------------------------


def jvm_pid(spark: SparkSession) -> int:
    return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())


def jvm_cpu_seconds(spark: SparkSession) -> float:
    """User + system CPU time of the JVM so far: on a shared machine the wall clock depends on the
    load, the CPU time much less."""
    fields = Path(f"/proc/{jvm_pid(spark)}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None  # exited meanwhile


def process_tree_cpu_seconds(root: int) -> float:
    """User + system CPU of ``root`` and every process below it, with the children they have reaped: the
    JVM's and its Python workers' together (a ``mapInArrow`` parse runs in the workers)."""
    parents: dict[int, int] = {}
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat_fields(int(entry.name))) is not None:
            parents[int(entry.name)], stats[int(entry.name)] = int(fields[1]), fields
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    ticks = sum(sum(int(v) for v in stats[pid][11:15]) for pid in tree if pid in stats)
    return ticks / os.sysconf("SC_CLK_TCK")


def peak_rss_bytes(pid: int) -> int:
    """The process's resident-set high water mark (VmHWM), which only grows until ``reset_peak_rss`` (the scale
    area, which resets it, runs last in ``bench all``: the other areas' whole-run peaks come first)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def reset_peak_rss(pid: int) -> bool:
    """Sets the process's high water mark (VmHWM) back to its resident set now, so that ``peak_rss_bytes`` then
    says the peak of what follows (Linux 4.0 and later; False where the kernel refuses)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def minor_faults(pid: int) -> int:
    """Minor page faults the process has taken so far (``/proc/<pid>/stat``, field 10): first touches of memory
    the process did not hold (a page each, 4 KiB or a 2 MiB huge page). On a VM whose balloon hands freed pages
    back to the host they are slow: a GiB took 8.7 s to touch here against 0.1 s for pages the process already
    held (docs/PERFORMANCE_HISTORY.md)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[7])


def rss_bytes(pid: int) -> int:
    """The process's resident set now (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def process_bytes_read(pid: int) -> int:
    """Bytes the process has read through read system calls (`rchar`), page cache hits included.
    In local mode the executors are threads of the driver JVM, so the difference around one query
    is what it read, whichever I/O path Parquet takes (Hadoop's own counters miss vectored reads)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    return 0


def reset_jvm_peaks(spark: SparkSession) -> None:
    for pool in spark.sparkContext._jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans():
        pool.resetPeakUsage()


def jvm_heap_peak(spark: SparkSession) -> int:
    total = 0
    for pool in spark.sparkContext._jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans():
        if str(pool.getType().name()) == "HEAP":
            total += int(pool.getPeakUsage().getUsed())
    return total


# ---- scratch warehouses -----------------------------------------------------------------------------------


def drop_warehouse(spark: SparkSession, scoped: Settings) -> None:
    """Drops every layer's database of ``scoped`` (a benchmark's own schema prefix)."""
    for layer in LAYERS:
        spark.sql(f"drop database if exists {scoped.schema(layer)} cascade")


def reset_warehouse(spark: SparkSession, scoped: Settings) -> Settings:
    """An empty copy of every layer under ``scoped``'s prefix."""
    drop_warehouse(spark, scoped)
    ensure_schemas(spark, scoped, LAYERS)
    return scoped


# What a synthetic bench warehouse is built with (``bench api``, ``bench sql``): the lineage core and what the read
# API reads, without the schema events, the graph model and the tests.
BENCH_BUILD = ["build", "--select", "stg_lineage_events+", "facet_classification",
               "--exclude", "dataset_schema_events", "dataset_lineage_graph", "--exclude-resource-type", "test"]
# The table property that marks a bench warehouse built (its name from when only `bench api` had one: kept, so
# the warehouses already built are reused).
BENCH_WAREHOUSE_READY = "bench_api.events"


def bench_warehouse(
    spark: SparkSession, settings: Settings, events: int, work_dir: Path, rebuild: bool, prefix: str = "bench_api_"
) -> Settings:
    """The synthetic warehouse of ``events`` events on the schema prefix ``{prefix}{events}_``, built with
    ``BENCH_BUILD`` once, then reused (a table property marks it done)."""
    prefix = f"{prefix}{events}_"
    scoped = settings.with_prefix(prefix)
    runs = scoped.table("lineage", "run_states")
    if not rebuild and spark.catalog.tableExists(runs):
        props = {r.key: r.value for r in spark.sql(f"show tblproperties {runs}").collect()}
        if props.get(BENCH_WAREHOUSE_READY) == str(events):
            print(f"reusing the bench warehouse {prefix}* ({events:,} events)", flush=True)
            return scoped
    scoped = reset_warehouse(spark, scoped)
    work_dir.mkdir(parents=True, exist_ok=True)
    path = work_dir / f"synthetic_{events}.ndjson"
    if not path.exists():
        write_events(SyntheticSpec(events=events), path)
    print(ingest_lineage(spark, scoped, [path]).summary(), flush=True)
    started = time.monotonic()
    run_dbt(scoped, BENCH_BUILD)
    print(f"dbt build {time.monotonic() - started:.0f}s", flush=True)
    spark.sql(f"alter table {runs} set tblproperties ('{BENCH_WAREHOUSE_READY}' = '{events}')")
    return scoped


# ---- the figures table ------------------------------------------------------------------------------------


class Figures:
    """A benchmark's table of figures: one row per ``add``, echoed as it comes (a long run shows progress),
    rendered whole by ``table()``."""

    def __init__(self, columns: Sequence[str] = ("part", "figure", "value"), echo: bool = True):
        self.columns = tuple(columns)
        self.echo = echo
        self.rows: list[tuple[str, ...]] = []

    def add(self, *cells: object) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for the columns {self.columns}")
        row = tuple(str(cell) for cell in cells)
        self.rows.append(row)
        if self.echo:
            print("  " + " | ".join(row), flush=True)

    def table(self) -> str:
        widths = [max(len(row[i]) for row in [self.columns, *self.rows]) for i in range(len(self.columns))]

        def render(cells: tuple[str, ...]) -> str:
            return "| " + " | ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)) + " |"

        rule = "|" + "|".join("-" * (width + 2) for width in widths) + "|"
        return "\n".join([render(self.columns), rule, *(render(row) for row in self.rows)])

"""``bench scale``: the lineage leg at growing history sizes (1M, 3M and 10M events by default), one after another
in one SparkSession, each on its own schema prefix, its warehouse and input files dropped once measured.

Per size: generate; the parse-and-write floor; ingest; the first build; the read API loaded in this process
(its resident-set growth and load time) and timed over HTTP; a batch of 1% of the largest size, its first events
held pending in the API's live overlay while the live view is timed, then ingested and built, the API's
``refresh()`` after it; a no-new-events build (and whether it left every table as it was); the
warehouse's bytes on disk. The figures, targets and plots go into ``BENCHMARKS.md`` between markers
(``scale_report``).
"""

from __future__ import annotations

import functools
import gc
import itertools
import os
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote, urlparse

from pyspark.sql import SparkSession

from python_jobs.dbt import run_dbt
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.marquez_api.api import MarquezReadApi
from python_jobs.marquez_api.snapshot import describe_laps
from python_jobs.settings import LAYERS, Settings
from python_jobs.tools.bench import environment, plots
from python_jobs.tools.bench.harness import (
    BENCH_BUILD,
    Figures,
    drop_warehouse,
    jvm_cpu_seconds,
    jvm_pid,
    load_average,
    peak_rss_bytes,
    percentile,
    reset_peak_rss,
    reset_warehouse,
    rss_bytes,
    timed,
)
from python_jobs.tools.bench.lineage import parse_and_write_floor
from python_jobs.tools.bench.parsers import python_parse_floor, text_parse_floor
from python_jobs.tools.bench.read_api import LATENCY_CASES, snapshot_counts, time_cases
from python_jobs.tools.bench.scale_report import (
    LIVE_PENDING,
    Cost,
    Latency,
    ScaleResult,
    SectionInfo,
    render_section,
    render_table,
    replace_section,
)
from python_jobs.tools.generate.lineage import SyntheticSpec, write_events
from python_jobs.warehouse.fingerprint import warehouse_fingerprint

SCALE_SIZES = (1_000_000, 3_000_000, 10_000_000)
PLOT_DIR = Path("docs") / "bench"


@dataclass(frozen=True)
class ScaleConfig:
    sizes: tuple[int, ...] = SCALE_SIZES
    requests: int = 200
    lean: bool = True
    keep: bool = False  # keep each size's warehouse and input files

    @property
    def increment(self) -> int:
        """The batch built on every history: 1% of the largest, the same events' shape and count on each."""
        return max(max(self.sizes) // 100, 20)

    def spec(self, events: int, first_run: int = 0) -> SyntheticSpec:
        if self.lean:
            return SyntheticSpec.lean(events, first_run=first_run)
        return SyntheticSpec(events=events, first_run=first_run)


def directory_bytes(path: Path) -> int:
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += (Path(folder) / name).stat().st_size
            except FileNotFoundError:  # a temporary file gone meanwhile
                continue
    return total


def warehouse_bytes(spark: SparkSession, scoped: Settings) -> int:
    """Bytes of every file under the locations of ``scoped``'s schemas (the warehouse of one size)."""
    total = 0
    for layer in LAYERS:
        name = scoped.schema(layer)
        if spark.catalog.databaseExists(name):
            location = urlparse(spark.catalog.getDatabase(name).locationUri)
            total += directory_bytes(Path(unquote(location.path)))
    return total


def time_live_view(api: MarquezReadApi, events: Path, count: int) -> float:
    """Seconds to build the read API's live view with the first ``count`` events of ``events`` accepted (by the
    collector, in serve) and not yet built: what the first read after them waits for."""
    with events.open("rb") as lines:
        for line in itertools.islice(lines, count):
            api.live.accept(line.rstrip(b"\n"))
    seconds, _ = timed(api.live.view)
    return seconds


def measure_size(spark: SparkSession, settings: Settings, config: ScaleConfig, work_dir: Path, size: int,
                 figures: Figures) -> ScaleResult:
    part = f"{size:,} events"
    scoped = reset_warehouse(spark, settings.with_prefix(f"{settings.schema_prefix}bench_scale_{size}_"))
    path = work_dir / f"scale_{size}.ndjson"
    more = work_dir / f"scale_{size}_plus_{config.increment}.ndjson"
    load_before = load_average()
    try:
        took, _ = timed(lambda: write_events(config.spec(size), path))
        input_bytes = path.stat().st_size
        figures.add(part, "generated (bytes per event)", f"{took:.1f} s ({input_bytes / size:,.0f})")

        floor = parse_and_write_floor(spark, path, work_dir / f"floor_{size}.parquet")
        figures.add(part, "floor: from_json + Parquet s (JVM CPU s)", f"{floor.wall_seconds:.1f} "
                    f"({floor.cpu_seconds:.1f})")
        text_floor = text_parse_floor(spark, path, work_dir / f"text_floor_{size}.parquet")
        python_floor = python_parse_floor(spark, path, work_dir / f"python_floor_{size}.parquet")
        figures.add(part, "parse floor CPU s, JVM + workers: from_json / orjson",
                    f"{text_floor.tree_cpu_seconds:.1f} / {python_floor.tree_cpu_seconds:.1f}")
        cpu_before = jvm_cpu_seconds(spark)
        ingest_seconds, report = timed(lambda: ingest_lineage(spark, scoped, [path]))
        ingest = Cost(ingest_seconds, jvm_cpu_seconds(spark) - cpu_before)
        figures.add(part, "ingest s (JVM CPU s)", f"{ingest.wall_seconds:.1f} ({ingest.cpu_seconds:.1f})")

        first_build, _ = timed(lambda: run_dbt(scoped, BENCH_BUILD))
        figures.add(part, "first build s", f"{first_build:.1f}")

        gc.collect()
        rss_before = rss_bytes(os.getpid())
        api_load, api = timed(lambda: MarquezReadApi(spark, scoped))
        rss_after = rss_bytes(os.getpid())
        figures.add(part, "read API load s (RSS growth MiB)", f"{api_load:.1f} "
                    f"({(rss_after - rss_before) / 2**20:,.0f})")
        timings, _, _ = time_cases(api, config.requests)
        latency = {case: Latency(percentile(values, 0.5), percentile(values, 0.95), max(values))
                   for case, values in timings.items()}
        figures.add(part, "read API p95 ms", ", ".join(f"{case} {value.p95_ms:.1f}"
                                                       for case, value in latency.items()))

        write_events(config.spec(config.increment, first_run=(size + 1) // 2), more)
        live_view = time_live_view(api, more, LIVE_PENDING)
        figures.add(part, f"live view of {LIVE_PENDING:,} pending events s", f"{live_view:.2f}")
        api.live.begin_round()  # the pending events are the batch's: its build absorbs them, as in serve
        increment_ingest, _ = timed(lambda: ingest_lineage(spark, scoped, [more]))
        increment_build, _ = timed(lambda: run_dbt(scoped, BENCH_BUILD))
        peak_measured = reset_peak_rss(os.getpid())
        refresh, _ = timed(functools.partial(api.refresh, absorbed=True))
        rss_after_refresh = rss_bytes(os.getpid())
        refresh_peak = peak_rss_bytes(os.getpid()) if peak_measured else None
        refresh_parts = describe_laps(api.refresh_seconds)
        figures.add(part, f"+{config.increment:,}: ingest / build / refresh s",
                    f"{increment_ingest:.1f} / {increment_build:.1f} / {refresh:.1f}")
        figures.add(part, "refresh parts s", refresh_parts)
        counts = snapshot_counts(api)
        del api

        before = warehouse_fingerprint(spark, scoped)
        noop, _ = timed(lambda: run_dbt(scoped, BENCH_BUILD))
        unchanged = warehouse_fingerprint(spark, scoped) == before
        figures.add(part, "no-new-events build s (tables unchanged)", f"{noop:.1f} ({unchanged})")
        on_disk = warehouse_bytes(spark, scoped)
        figures.add(part, "warehouse bytes per event", f"{on_disk / (size + config.increment):,.0f}")
        return ScaleResult(
            events=size, input_bytes=input_bytes, floor=Cost(floor.wall_seconds, floor.cpu_seconds), ingest=ingest,
            accepted=report.accepted, rejected=report.rejected, first_build_seconds=first_build,
            api_load_seconds=api_load, api_rss_bytes=rss_after, api_rss_growth_bytes=rss_after - rss_before,
            counts=counts, latency=latency, increment_events=config.increment,
            increment_ingest_seconds=increment_ingest, increment_build_seconds=increment_build,
            refresh_seconds=refresh, noop_build_seconds=noop, noop_unchanged=unchanged, warehouse_bytes=on_disk,
            jvm_peak_rss_bytes=peak_rss_bytes(jvm_pid(spark)), load_before=load_before, load_after=load_average(),
            text_floor=text_floor, python_floor=python_floor, refresh_parts=refresh_parts, live_view_seconds=live_view,
            api_rss_after_refresh_bytes=rss_after_refresh, api_refresh_peak_rss_bytes=refresh_peak,
        )
    finally:
        if not config.keep:  # the next size needs the disk
            drop_warehouse(spark, scoped)
            path.unlink(missing_ok=True)
            more.unlink(missing_ok=True)
        gc.collect()


# Each figure against history size: (file stem, title, y label, series of (label, value of a result)).
PLOTS = (
    ("scale_ingest_rate", "Ingest rate against history size", "events/s",
     (("ingest", lambda r: r.ingest_rate), ("floor: from_json + Parquet", lambda r: r.floor_rate))),
    ("scale_ingest_cpu", "Ingest JVM CPU against history size", "JVM CPU s per million events",
     (("ingest", lambda r: r.ingest.cpu_seconds * 1e6 / r.events),
      ("floor: from_json + Parquet", lambda r: r.floor.cpu_seconds * 1e6 / r.events))),
    ("scale_first_build", "First build against history size", "seconds",
     (("first build", lambda r: r.first_build_seconds),)),
    ("scale_batch_build", "Batch build (1% of the largest) against history size", "seconds",
     (("batch ingest", lambda r: r.increment_ingest_seconds), ("batch build", lambda r: r.increment_build_seconds))),
    ("scale_noop_build", "No-new-events build against history size", "seconds",
     (("no-new-events build", lambda r: r.noop_build_seconds),)),
    ("scale_api_p95", "Read API p95 against history size", "ms",
     tuple((case, lambda r, case=case: r.latency[case].p95_ms) for case in LATENCY_CASES)),
    ("scale_api_memory", "Read API process memory against history size", "GiB",
     (("RSS after load", lambda r: r.api_rss_bytes / 2**30), ("growth by the load", lambda r:
                                                                r.api_rss_growth_bytes / 2**30))),
    ("scale_api_refresh", "Read API load and refresh against history size", "seconds",
     (("first load", lambda r: r.api_load_seconds), ("refresh after the batch build", lambda r: r.refresh_seconds),
      (f"live view of {LIVE_PENDING:,} pending events", lambda r: r.live_view_seconds or 0.0))),
    ("scale_bytes_per_event", "Bytes per event against history size", "bytes per event",
     (("input NDJSON", lambda r: r.input_bytes_per_event), ("warehouse on disk", lambda r:
                                                            r.warehouse_bytes_per_event))),
)


def draw_plots(results: list[ScaleResult], plot_dir: Path) -> list[tuple[str, Path]]:
    sizes = [result.events for result in results]
    drawn = []
    for stem, title, ylabel, series in PLOTS:
        lines = [(label, [value(result) for result in results]) for label, value in series]
        drawn.append((title, plots.size_plot(sizes, lines, title, ylabel, plot_dir / f"{stem}.png")))
    return drawn


def is_smoke(sizes: tuple[int, ...], load_before: float) -> bool:
    """Not figures to publish: below the issue's sizes or started on a machine busy with other work."""
    return min(sizes) < SCALE_SIZES[0] or load_before > (os.cpu_count() or 1)


def spark_settings(spark: SparkSession) -> str:
    """What a reader needs to repeat a size's memory and parallelism (LINEAGE_DRIVER_MEMORY and
    LINEAGE_SHUFFLE_PARTITIONS set the last two)."""
    conf = spark.sparkContext.getConf()
    return (f"{conf.get('spark.master', 'local[*]')}, driver memory {conf.get('spark.driver.memory', '1g')}, "
            f"{spark.conf.get('spark.sql.shuffle.partitions')} shuffle partitions")


def run_scale(spark: SparkSession, settings: Settings, config: ScaleConfig, out: Path, work_dir: Path,
              command: str) -> tuple[list[ScaleResult], str]:
    """Measures every size of ``config``, writes the section into ``out`` (between its markers; the rest of the
    file untouched) and the plots under ``out``'s folder / docs/bench; returns the results and the section."""
    work_dir.mkdir(parents=True, exist_ok=True)
    started = datetime.now(UTC)
    figures = Figures()
    results = []
    load_before = os.getloadavg()[0]
    try:
        for size in sorted(config.sizes):
            results.append(measure_size(spark, settings, config, work_dir, size, figures))
    finally:
        if not config.keep:
            shutil.rmtree(work_dir, ignore_errors=True)
    print(render_table(results, LATENCY_CASES), flush=True)
    drawn = draw_plots(results, out.parent / PLOT_DIR)
    info = SectionInfo(date=started.strftime("%Y-%m-%d %H:%M UTC"), command=command,
                       machine=environment.machine()[:3], smoke=is_smoke(config.sizes, load_before), lean=config.lean,
                       requests=config.requests, spark=spark_settings(spark))
    section = render_section(info, results, LATENCY_CASES,
                             [(caption, str(path.relative_to(out.parent))) for caption, path in drawn])
    old = out.read_text() if out.exists() else ""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(replace_section(old, section))
    return results, section

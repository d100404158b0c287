"""``bench refresh``: the read API's refresh after batch builds, on a warehouse ``bench scale --keep`` left.

``bench scale`` measures one refresh per history size inside a run of hours. This repeats that step alone on
the size's kept warehouse (schemas ``bench_scale_<size>_``): the API loaded in a fresh process, then per batch
a new ``--batch`` of events (runs numbered past every earlier batch's, so each batch is new history), its first
events held pending in the live overlay while the live view is timed, then ingested and built, and ``refresh()``
timed with its parts. With ``--profile`` the refreshes run under cProfile and the
functions with the most cumulative time are printed, which is how a refresh's remaining history costs are found.
"""

from __future__ import annotations

import cProfile
import functools
import gc
import io
import os
import pstats
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from python_jobs.dbt import run_dbt
from python_jobs.errors import UserFacingError
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.marquez_api.api import MarquezReadApi
from python_jobs.marquez_api.snapshot import describe_laps
from python_jobs.settings import Settings
from python_jobs.tools.bench.harness import (
    BENCH_BUILD,
    minor_faults,
    peak_rss_bytes,
    reset_peak_rss,
    rss_bytes,
    timed,
)
from python_jobs.tools.bench.scale import time_live_view
from python_jobs.tools.bench.scale_report import LIVE_PENDING
from python_jobs.tools.generate.lineage import SyntheticSpec, write_events


@dataclass(frozen=True)
class RefreshConfig:
    size: int  # the kept warehouse's history size (its schema prefix)
    batch: int = 0  # events per batch; 0: 1% of the size
    batches: int = 1
    profile: bool = False
    lean: bool = True

    @property
    def batch_events(self) -> int:
        return self.batch or max(self.size // 100, 20)


@dataclass(frozen=True)
class RefreshFigures:
    load_seconds: float
    rss_growth_bytes: int
    # per batch: events, live view s (its first events pending), build s, refresh s, the slowest parts
    refreshes: list[tuple[int, float, float, float, str]]


def scale_settings(spark: SparkSession, settings: Settings, size: int) -> Settings:
    """The settings of ``bench scale``'s kept warehouse of ``size`` events; a clear error when it is not there."""
    scoped = settings.with_prefix(f"{settings.schema_prefix}bench_scale_{size}_")
    table = scoped.table("lineage", "runs")
    if not spark.catalog.tableExists(table):
        raise UserFacingError(f"there is no kept scale warehouse of {size:,} events ({table} does not exist): run "
                              f"`python -m python_jobs bench scale --sizes {size} --keep` first")
    return scoped


def next_first_run(spark: SparkSession, scoped: Settings) -> int:
    """A run number past every run the kept warehouse holds, so that a batch's runs are new ones. The generator
    numbers runs from ``first_run``; ``bench scale`` started its batch at half the size, and the runs of a
    history are about half its events, so the count of runs is past both."""
    return int(spark.table(scoped.table("lineage", "runs")).count()) + 1


def _spec(config: RefreshConfig, first_run: int) -> SyntheticSpec:
    if config.lean:
        return SyntheticSpec.lean(config.batch_events, first_run=first_run)
    return SyntheticSpec(events=config.batch_events, first_run=first_run)


def run_refresh(spark: SparkSession, settings: Settings, config: RefreshConfig, work_dir: Path) -> RefreshFigures:
    scoped = scale_settings(spark, settings, config.size)
    work_dir.mkdir(parents=True, exist_ok=True)
    gc.collect()
    before = rss_bytes(os.getpid())
    load, api = timed(lambda: MarquezReadApi(spark, scoped))
    growth = rss_bytes(os.getpid()) - before
    print(f"read API load {load:.1f} s, RSS growth {growth / 2**20:,.0f} MiB: {describe_laps(api.refresh_seconds, 6)}",
          flush=True)
    profiler = cProfile.Profile() if config.profile else None
    refreshes = []
    for number in range(config.batches):
        path = work_dir / f"refresh_{config.size}_{number}.ndjson"
        try:
            write_events(_spec(config, next_first_run(spark, scoped)), path)
            live = time_live_view(api, path, LIVE_PENDING)
            api.live.begin_round()  # the build absorbs the pending events, as in serve
            ingest_lineage(spark, scoped, [path])
            build, _ = timed(lambda: run_dbt(scoped, BENCH_BUILD))
        finally:
            path.unlink(missing_ok=True)
        if profiler is not None:
            profiler.enable()
        peak_measured = reset_peak_rss(os.getpid())
        faults = minor_faults(os.getpid())
        refresh, _ = timed(functools.partial(api.refresh, absorbed=True))
        faults = minor_faults(os.getpid()) - faults
        if profiler is not None:
            profiler.disable()
        after = rss_bytes(os.getpid())
        peak = f", peak {peak_rss_bytes(os.getpid()) / 2**20:,.0f} MiB during it" if peak_measured else ""
        parts = describe_laps(api.refresh_seconds, 6)
        refreshes.append((config.batch_events, live, build, refresh, parts))
        print(f"batch {number + 1}: +{config.batch_events:,} events, live view of the first {LIVE_PENDING:,} pending "
              f"{live:.2f} s, build {build:.1f} s, refresh {parts}; RSS after it {after / 2**20:,.0f} MiB{peak}, "
              f"{faults:,} minor page faults",
              flush=True)
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(40)
        print(out.getvalue(), flush=True)
    return RefreshFigures(load, growth, refreshes)

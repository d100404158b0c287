"""``bench api``: latency of the Marquez read API over real HTTP in a warm process.

Builds (or reuses) a warehouse of N synthetic events (``harness.bench_warehouse``) on its own schema
prefix, loads ``MarquezReadApi``, serves it with uvicorn on loopback, warms up,
then times ``get_dataset``, ``list_job_runs``, ``lineage`` at depth 5 and ``search`` one request at a time.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx
from pyspark.sql import SparkSession

from python_jobs.marquez_api.api import MarquezReadApi
from python_jobs.marquez_api.routes import read_routes
from python_jobs.marquez_api.server import serve_in_thread
from python_jobs.settings import Settings
from python_jobs.tools.bench.harness import Figures, bench_warehouse, load_average, percentile


def time_requests(client: httpx.Client, paths: list[str]) -> list[float]:
    timings = []
    for path in paths:
        started = time.perf_counter()
        response = client.get(path)
        timings.append((time.perf_counter() - started) * 1000)
        response.raise_for_status()
    return timings


@dataclass(frozen=True)
class ApiLatency:
    """Milliseconds per request kind (one request at a time, after a warm-up), and the snapshot load."""

    snapshot_seconds: float
    counts: str
    timings: dict[str, list[float]]
    load_before: str
    load_after: str

    def summary(self, name: str) -> tuple[float, float, float]:
        values = self.timings[name]
        return statistics.median(values), percentile(values, 0.95), max(values)


LATENCY_CASES = ("get_dataset", "list_job_runs (limit 100)", "lineage depth 5", "search")


def request_makers(api: MarquezReadApi, seed: int = 11) -> dict[str, Callable[[], str]]:
    """Per case in ``LATENCY_CASES``, a maker of request paths on a random dataset or job of the snapshot."""
    snap = api.snapshot
    rng = random.Random(seed)
    datasets = sorted(snap.datasets)
    jobs = sorted(snap.jobs)
    v1 = "/api/v1"

    def dataset() -> str:
        namespace, name = rng.choice(datasets)
        return f"{v1}/namespaces/{quote(namespace, safe='')}/datasets/{quote(name, safe='')}"

    def job_runs() -> str:
        namespace, name = rng.choice(jobs)
        return f"{v1}/namespaces/{quote(namespace, safe='')}/jobs/{quote(name, safe='')}/runs"

    def lineage() -> str:
        namespace, name = rng.choice(datasets)
        return f"{v1}/lineage?nodeId={quote(f'dataset:{namespace}:{name}', safe='')}&depth=5"

    def search() -> str:
        # The web UI's search box: the end half of a dataset's name, matched inside every dataset and job name.
        _, name = rng.choice(datasets)
        return f"{v1}/search?q={quote(name[-max(3, len(name) // 2):], safe='')}"

    return dict(zip(LATENCY_CASES, (dataset, job_runs, lineage, search), strict=True))


def time_cases(api: MarquezReadApi, requests: int, warmup: int = 30) -> tuple[dict[str, list[float]], str, str]:
    """Serves ``api`` with uvicorn on loopback and times ``requests`` requests of each case, one at a time,
    after ``warmup`` of each; returns the milliseconds per case and the load average before and after."""
    cases = request_makers(api)
    timings: dict[str, list[float]] = {}
    with serve_in_thread(read_routes(api)) as base_url, httpx.Client(base_url=base_url, timeout=60) as client:
        for make in cases.values():
            time_requests(client, [make() for _ in range(warmup)])
        before = load_average()
        for name, make in cases.items():
            timings[name] = time_requests(client, [make() for _ in range(requests)])
        after = load_average()
    return timings, before, after


def snapshot_counts(api: MarquezReadApi) -> str:
    snap = api.snapshot
    return f"{len(snap.jobs):,} jobs / {len(snap.datasets):,} datasets / {len(snap.run_index):,} runs"


def measure_api(spark: SparkSession, scoped: Settings, requests: int) -> ApiLatency:
    """Loads the read API's snapshot of ``scoped`` and times each request kind over HTTP on loopback."""
    started = time.monotonic()
    api = MarquezReadApi(spark, scoped)
    snapshot_seconds = time.monotonic() - started
    timings, before, after = time_cases(api, requests)
    return ApiLatency(snapshot_seconds, snapshot_counts(api), timings, before, after)


def run_api_bench(
    spark: SparkSession, settings: Settings, events: int, requests: int, work_dir: Path, rebuild: bool = False
) -> ApiLatency:
    scoped = bench_warehouse(spark, settings, events, work_dir, rebuild)
    measured = measure_api(spark, scoped, requests)
    figures = Figures()
    part = f"{events:,} events"
    figures.add(part, "snapshot load s (after each build)", f"{measured.snapshot_seconds:.1f}")
    figures.add(part, "jobs / datasets / runs", measured.counts)
    figures.add(part, "load average before timing (1/5/15 min)", measured.load_before)
    for name in LATENCY_CASES:
        p50, p95, slowest = measured.summary(name)
        figures.add(part, f"{name}: p50 / p95 / max ms", f"{p50:.1f} / {p95:.1f} / {slowest:.1f}")
    figures.add(part, "load average after (1/5/15 min)", measured.load_after)
    print(figures.table())
    return measured

"""``bench collector``: acknowledged events/s and latency of the collector, and ``--build-every`` freshness.

Throughput: the collector runs in a child process, the load generator (``tools.bench.loadgen``: asyncio,
keep-alive connections) in another, with 1/8/32 clients posting ~3 KB synthetic RunEvents, once with
fsync (durable 201s) and once without (the upper bound the durable path is compared with). Both
processes share the machine's cores, so the figures are a lower bound of what a dedicated host gets;
the load average is printed next to them because other work on the machine moves them.

Freshness: the collector app, the read API and the build loop run in this process (one Spark session),
as ``serve --build-every --read-api`` runs them. Read API freshness: events are posted one at a time
with openlineage-python's HttpTransport and the time from each 201 to its run answering in
``GET /api/v1/jobs/runs/{id}`` (the live overlay) is timed, p50/p95, while the build loop runs beside.
Warehouse freshness: single events are posted and the time from their 201 to their run being visible
in ``lineage.runs`` (queried after each round) is reported. The first round builds every model, so it
is reported apart.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import uvicorn

from python_jobs.landing import LandingLayout
from python_jobs.lineage.models import core_selection
from python_jobs.marquez_api import MarquezReadApi, read_routes
from python_jobs.ports import free_port
from python_jobs.serve.app import LINEAGE_PATH, CollectorConfig, create_app
from python_jobs.serve.build_loop import BuildLoop, RoundReport, run_round
from python_jobs.serve.http_limits import HttpLimits
from python_jobs.serve.process import start_collector, stop_collector
from python_jobs.settings import PROJECT_DIR, Settings
from python_jobs.spark import get_spark
from python_jobs.tools.bench import loadgen
from python_jobs.tools.bench.harness import Figures, load_average
from python_jobs.tools.generate.lineage import SyntheticSpec, events


def write_bench_events(path: Path, count: int = 4000) -> float:
    """Synthetic RunEvents (distinct runs), one per line; returns their mean size in bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(event, separators=(",", ":")) for event in events(SyntheticSpec(events=count, seed=19))]
    path.write_text("\n".join(lines) + "\n")
    return sum(len(line) for line in lines) / len(lines)


def run_load(port: int, clients: int, seconds: float, events_file: Path) -> dict:
    command = [sys.executable, "-m", loadgen.__name__, "--port", str(port), "--clients", str(clients),
               "--seconds", str(seconds), "--events-file", str(events_file)]
    done = subprocess.run(command, cwd=PROJECT_DIR, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def landed_lines(landing: Path) -> int:
    return sum(
        path.read_bytes().count(b"\n")
        for folder in ("open", "sealed")
        for path in (landing / folder).glob("*")
        if path.is_file()
    )


@dataclass(frozen=True)
class CollectorBench:
    """What ``bench collector`` measured: per (fsync, clients) the load result (``events_per_s``,
    ``p50_ms``, ``p99_ms``, ``acked``, ``load_average``), the mean event size and the freshness samples."""

    results: dict[tuple[bool, int], dict]
    mean_event_bytes: float
    freshness: list[float]
    # Seconds from 201 to the run answering in the read API, per event.
    live_freshness: list[float] = field(default_factory=list)

    def ratio(self, clients: int) -> float:
        bound = self.results[(False, clients)]["events_per_s"]
        return self.results[(True, clients)]["events_per_s"] / bound if bound else 0.0


def run_collector_bench(
    settings: Settings,
    clients: list[int],
    seconds: float,
    work_dir: Path,
    freshness: bool = True,
    freshness_every: float = 5.0,
    freshness_events: int = 3,
    live_events: int = 50,
) -> CollectorBench:
    work_dir.mkdir(parents=True, exist_ok=True)
    events_file = work_dir / "events.ndjson"
    mean_size = write_bench_events(events_file)
    print(f"events: {mean_size:.0f} bytes on average; {seconds:g}s of load per row; "
          f"{os.cpu_count()} cores; load average before: {load_average()}", flush=True)
    results: dict[tuple[bool, int], dict] = {}
    for fsync in (True, False):
        landing = work_dir / ("landing-fsync" if fsync else "landing-nofsync")
        shutil.rmtree(landing, ignore_errors=True)
        port = free_port()
        server = start_collector(landing, port, [] if fsync else ["--no-fsync"], log=work_dir / "collector.log")
        try:
            for count in clients:
                result = run_load(port, count, seconds, events_file)
                result["load_average"] = load_average()
                results[(fsync, count)] = result
                print(f"  fsync {'on ' if fsync else 'off'} {count:>3} clients: {result['events_per_s']:>8.0f} ev/s "
                      f"p50 {result['p50_ms']:.2f} ms p99 {result['p99_ms']:.2f} ms (load {result['load_average']})",
                      flush=True)
        finally:
            stop_collector(server)
        acked = sum(results[(fsync, count)]["acked"] for count in clients)
        landed = landed_lines(landing)
        print(f"  fsync {'on ' if fsync else 'off'}: acknowledged {acked}, landed {landed}"
              f"{'' if landed == acked else '  MISMATCH'}", flush=True)

    table = Figures(("clients", "fsync ev/s", "p50 ms", "p99 ms", "no-fsync ev/s", "p50 ms", "p99 ms", "ratio",
                     "load avg"), echo=False)
    for count in clients:
        durable, bound = results[(True, count)], results[(False, count)]
        ratio = durable["events_per_s"] / bound["events_per_s"] if bound["events_per_s"] else 0.0
        table.add(count, f"{durable['events_per_s']:.0f}", f"{durable['p50_ms']:.2f}", f"{durable['p99_ms']:.2f}",
                  f"{bound['events_per_s']:.0f}", f"{bound['p50_ms']:.2f}", f"{bound['p99_ms']:.2f}", f"{ratio:.2f}",
                  f"{durable['load_average']} & {bound['load_average']}")
    print()
    print(table.table())
    samples: list[float] = []
    live: list[float] = []
    if freshness:
        print()
        samples, live = measure_freshness(settings, work_dir, freshness_every, freshness_events, live_events)
    return CollectorBench(results, mean_size, samples, live)


def percentile(samples: list[float], fraction: float) -> float:
    """The nearest-rank percentile."""
    ordered = sorted(samples)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1))]


def measure_live_freshness(base_url: str, count: int, seed: int) -> list[float]:
    """Seconds from each event's 201 (openlineage-python's HttpTransport) to its run answering in
    GET /api/v1/jobs/runs/{id}, polled every millisecond; events posted one at a time."""
    # Heavy (openlineage.client): imported when this part runs, not with the bench modules.
    from openlineage.client.transport.http import HttpConfig, HttpTransport

    transport = HttpTransport(HttpConfig.from_dict({"type": "http", "url": base_url}))
    samples: list[float] = []
    with httpx.Client(base_url=base_url) as reader:
        for event in events(SyntheticSpec(events=count, seed=seed)):
            run_id = event["run"]["runId"].lower()
            response = transport.emit(event)
            acknowledged = time.monotonic()
            if response.status_code != 201:
                raise RuntimeError(f"the collector answered {response.status_code}")
            deadline = acknowledged + 60
            while reader.get(f"/api/v1/jobs/runs/{run_id}").status_code != 200:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"run {run_id} not readable 60 s after its 201")
                time.sleep(0.001)
            samples.append(time.monotonic() - acknowledged)
    return samples


def measure_freshness(
    settings: Settings, work_dir: Path, every: float, count: int, live_count: int = 0
) -> tuple[list[float], list[float]]:
    """Seconds from 201 to visible in ``lineage.runs``, per event (the first one pays the first build),
    and (``live_count`` events, first) seconds from 201 to readable in the read API."""
    spark = get_spark(settings)
    scoped = settings.with_prefix(f"{settings.schema_prefix}bench_fresh_{int(time.time())}_")
    landing = LandingLayout(work_dir / "landing-freshness")
    shutil.rmtree(landing.root, ignore_errors=True)
    landing.ensure()
    pending: dict[str, float] = {}
    visible: dict[str, float] = {}
    lock = threading.Lock()

    def check_visible(report: RoundReport) -> None:
        with lock:
            waiting = list(pending)
        if not waiting or not report.ok:
            return
        found = {row[0] for row in spark.sql(
            f"select uuid from {scoped.table('lineage', 'runs')} where uuid in ({', '.join(repr(r) for r in waiting)})"
        ).collect()}
        now = time.monotonic()
        with lock:
            for run_id in found:
                visible.setdefault(run_id, now)

    # The lineage core's models: an empty warehouse prefix has no snapshot or registry sources.
    command = ["build", *core_selection(settings)]
    # Wired as serve wires it (commands/serve.py): the round mark before the seal, the refresh after.
    api = MarquezReadApi(spark, scoped)
    loop = BuildLoop(lambda retry: run_round(spark, scoped, landing, retry_build=retry, dbt_command=command), every,
                     after_round=[check_visible, lambda report: api.refresh(absorbed=report.ok)],
                     before_round=[api.live.begin_round])
    port = free_port()
    app = create_app(CollectorConfig(landing), build_loop=loop, extra_routes=read_routes(api),
                     on_accepted=api.live.accept)
    server = uvicorn.Server(uvicorn.Config(
        app, host="127.0.0.1", port=port,
        log_level="warning", access_log=False, lifespan="on", **HttpLimits().uvicorn_options(),
    ))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    samples = list(events(SyntheticSpec(events=2 * count, seed=int(time.time()))))[::2][:count]
    freshness: list[float] = []
    live: list[float] = []
    try:
        if live_count:
            live = measure_live_freshness(f"http://127.0.0.1:{port}", live_count, seed=int(time.time()) + 1)
            print(f"read API freshness (201 to GET /api/v1/jobs/runs/{{id}}, {len(live)} events, build every "
                  f"{every:g}s beside): p50 {percentile(live, 0.5) * 1000:.1f} ms, p95 "
                  f"{percentile(live, 0.95) * 1000:.1f} ms, max {max(live) * 1000:.1f} ms; load {load_average()}",
                  flush=True)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            for event in samples:
                run_id = event["run"]["runId"].lower()
                response = client.post(LINEAGE_PATH, json=event)
                response.raise_for_status()
                with lock:
                    pending[run_id] = time.monotonic()
                deadline = time.monotonic() + 1800
                while run_id not in visible and time.monotonic() < deadline:
                    time.sleep(0.2)
                if run_id in visible:
                    freshness.append(visible[run_id] - pending[run_id])
                    print(f"  freshness (build every {every:g}s): {freshness[-1]:.1f}s from 201 to lineage.runs"
                          f"{'  (first round: full build)' if len(freshness) == 1 else ''}; load {load_average()}",
                          flush=True)
    finally:
        server.should_exit = True
        thread.join(120)
    if len(freshness) > 1:
        later = freshness[1:]
        print(f"freshness after the first build: median {statistics.median(later):.1f}s, max {max(later):.1f}s "
              f"(build every {every:g}s)", flush=True)
    return freshness, live

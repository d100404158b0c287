"""``bench sql``: queries through serve's SQL endpoint beside the same queries in-process, with the build loop idle
and while a build round runs.

The bench process is a small serve: its Spark session starts with the endpoint's settings (``session_with_endpoint``:
the read-only guard, the FAIR scheduler and its pools) and the endpoint (Spark's Thrift server) listens on a free
loopback port in that session. It builds or reuses the synthetic warehouse of N events (``harness.bench_warehouse``,
its own schema prefix ``bench_sql_N_``), then times three kinds of query (``KINDS``) one at a time, after a warm-up:

- through the endpoint, with PyHive (a DB-API client over the HiveServer2 protocol) on one connection: its
  statements run in the pool ``sql``;
- in-process, ``spark.sql(...).collect()`` in the bench's own session, in the same pool ``sql`` (so the two differ by
  the protocol and the client sessions, not by the scheduler).

Then the same mix with several clients at once (queries per second), and finally while a build round runs in a
thread of the same session, in the pool ``default`` as serve's build loop runs it: ingest a new batch of synthetic
events continuing the warehouse's runs, then the incremental dbt build. The two paths take turns during the round;
queries that fail or answer the wrong number of rows are counted, not raised. After the round the endpoint's
client sessions drop their cached tables (``refresh_readers``, as serve does after each round), and a count through
the endpoint shows the round's runs. Each run adds its round's batch to the warehouse it reuses (the warehouse line
says what it holds); ``--rebuild`` starts it over.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import cycle
from pathlib import Path
from random import Random

from pyhive import hive
from pyspark.sql import SparkSession

from python_jobs.dbt import run_dbt
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.ports import free_port
from python_jobs.serve.sql_endpoint import DEFAULT_SQL_HOST, SQL_POOL, SqlEndpoint, prepare_spark_conf
from python_jobs.settings import Settings
from python_jobs.spark import get_spark, target_spark_conf
from python_jobs.tools.bench.harness import BENCH_BUILD, Figures, bench_warehouse, load_average, percentile
from python_jobs.tools.generate.lineage import SyntheticSpec, write_events

POINT = "point lookup: lineage.runs by uuid"
AGGREGATE = "aggregate: dataset_versions per dataset, top 10"
JOIN = "join: one dataset's schema versions with their fields"
KINDS = (POINT, AGGREGATE, JOIN)
ENDPOINT = "SQL endpoint"
IN_PROCESS = "in-process"
PATHS = (ENDPOINT, IN_PROCESS)
IDLE = "idle"
DURING_ROUND = "during a build round"
CONDITIONS = (IDLE, DURING_ROUND)
POOL_PROPERTY = "spark.scheduler.pool"  # the thread-local property naming the pool of the jobs a thread submits
SAMPLE_RUNS = 200
SAMPLE_DATASETS = 50
ERROR_CHARS = 300


@dataclass(frozen=True)
class SqlBenchConfig:
    queries: int = 100  # timed queries of each kind, path and condition (at most, during the round)
    warmup: int = 10  # untimed queries of each kind and path first
    clients: int = 2  # concurrent clients of the queries-per-second figure (below 2: not measured)
    round_events: int = 10_000  # synthetic events the build round ingests and builds
    seed: int = 11


# ---- what the queries read ------------------------------------------------------------------------------


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True)
class Workload:
    """The statements of each kind over ``scoped``'s tables, for sampled runs and datasets."""

    lineage: str  # the lineage schema
    run_uuids: tuple[str, ...]
    datasets: tuple[tuple[str, str], ...]  # (namespace, name) of datasets with a schema version that has fields

    def statement(self, kind: str, rng: Random) -> str:
        lineage = self.lineage
        if kind == POINT:
            return (f"select uuid, job_name, current_run_state, started_at, ended_at, event_count "
                    f"from {lineage}.runs where uuid = {_quoted(rng.choice(self.run_uuids))}")
        if kind == AGGREGATE:
            return (f"select namespace_name, dataset_name, count(*) as versions, max(created_at) as latest "
                    f"from {lineage}.dataset_versions group by namespace_name, dataset_name "
                    f"order by versions desc, namespace_name, dataset_name limit 10")
        if kind == JOIN:
            namespace, name = rng.choice(self.datasets)
            return (f"select v.uuid, v.created_at, f.name, f.type from {lineage}.dataset_schema_versions v "
                    f"join {lineage}.dataset_schema_versions_field_mapping m on m.dataset_schema_version_uuid = v.uuid "
                    f"join {lineage}.dataset_fields f on f.uuid = m.dataset_field_uuid "
                    f"where v.namespace_name = {_quoted(namespace)} and v.dataset_name = {_quoted(name)} "
                    f"order by v.created_at, f.name")
        raise ValueError(f"unknown query kind {kind!r}")


def expected_rows(kind: str, rows: int) -> bool:
    """Whether an answer of ``rows`` rows is right for ``kind`` (the sampled runs and datasets exist)."""
    if kind == POINT:
        return rows == 1
    if kind == AGGREGATE:
        return 1 <= rows <= 10
    return rows >= 1


def sample_workload(spark: SparkSession, scoped: Settings, seed: int) -> Workload:
    lineage = scoped.schema("lineage")
    runs = spark.sql(f"select run_uuid from (select distinct run_uuid from {lineage}.run_states) "
                     f"order by rand({seed}) limit {SAMPLE_RUNS}").collect()
    datasets = spark.sql(
        f"select namespace_name, dataset_name from {lineage}.dataset_schema_versions where field_count > 0 "
        f"group by namespace_name, dataset_name order by rand({seed}) limit {SAMPLE_DATASETS}"
    ).collect()
    if not runs or not datasets:
        raise RuntimeError(f"the bench warehouse {scoped.schema_prefix}* has no runs or no schema versions")
    return Workload(lineage, tuple(row[0] for row in runs), tuple((row[0], row[1]) for row in datasets))


# ---- the two ways to run a query ------------------------------------------------------------------------


class EndpointClient:
    """One PyHive connection to the endpoint; a call runs a statement and fetches its rows."""

    def __init__(self, endpoint: SqlEndpoint):
        host = "127.0.0.1" if endpoint.host in ("", "0.0.0.0") else endpoint.host
        self.connection = hive.connect(host=host, port=endpoint.port, username="bench")
        self.cursor = self.connection.cursor()

    def rows(self, statement: str) -> list[tuple]:
        self.cursor.execute(statement)
        return list(self.cursor.fetchall())

    def __call__(self, statement: str) -> int:
        return len(self.rows(statement))

    def close(self) -> None:
        self.cursor.close()
        self.connection.close()


class InProcess:
    """The bench's own session; the statement's jobs run in the endpoint's pool, as a client's would."""

    def __init__(self, spark: SparkSession):
        self.spark = spark

    def rows(self, statement: str) -> list[tuple]:
        context = self.spark.sparkContext
        context.setLocalProperty(POOL_PROPERTY, SQL_POOL)
        try:
            return [tuple(row) for row in self.spark.sql(statement).collect()]
        finally:
            context.setLocalProperty(POOL_PROPERTY, None)  # type: ignore[arg-type]  # None unsets it

    def __call__(self, statement: str) -> int:
        return len(self.rows(statement))

    def close(self) -> None:
        pass


Client = EndpointClient | InProcess


def error_text(error: BaseException) -> str:
    """A failed statement in one line: PyHive's server status message when there is one (without the server's
    stack trace), else the exception's first line."""
    status = getattr(error.args[0], "status", None) if error.args else None
    message = str(getattr(status, "errorMessage", None) or error).strip()
    first = message.splitlines()[0] if message else type(error).__name__
    return first[:ERROR_CHARS]


# ---- timings ----------------------------------------------------------------------------------------------


@dataclass
class Latency:
    """Queries of one kind, path and condition: milliseconds of each answered one, and the failed or wrong ones."""

    timings_ms: list[float] = field(default_factory=list)
    errors: int = 0
    first_error: str | None = None

    @property
    def attempts(self) -> int:
        return len(self.timings_ms) + self.errors

    def fail(self, message: str) -> None:
        self.errors += 1
        if self.first_error is None:
            self.first_error = message

    def p50(self) -> float | None:
        return statistics.median(self.timings_ms) if self.timings_ms else None

    def p95(self) -> float | None:
        return percentile(self.timings_ms, 0.95) if self.timings_ms else None

    def slowest(self) -> float | None:
        return max(self.timings_ms) if self.timings_ms else None

    def per_second(self) -> float | None:
        """Queries per second one at a time: answered queries over the time they took."""
        total = sum(self.timings_ms)
        return len(self.timings_ms) / (total / 1000) if total > 0 else None

    def text(self) -> str:
        """``p50 / p95 ms (queries/s)``, and the errors when there are any; ``-`` when none was answered."""
        errors = f", {self.errors} error{'s' if self.errors != 1 else ''}" if self.errors else ""
        if not self.timings_ms:
            return f"-{f' ({errors[2:]})' if errors else ''}"
        return f"{self.p50():,.1f} / {self.p95():,.1f} ms ({self.per_second():,.1f}/s{errors})"


def timed_query(client: Client, kind: str, statement: str, into: Latency) -> None:
    started = time.perf_counter()
    try:
        rows = client(statement)
    except Exception as error:
        into.fail(error_text(error))
        return
    into.timings_ms.append((time.perf_counter() - started) * 1000)
    if not expected_rows(kind, rows):
        into.fail(f"{kind}: {rows} rows")


@dataclass(frozen=True)
class Throughput:
    """``queries`` of the three kinds in turn, spread over ``clients`` clients running at once."""

    clients: int
    queries: int
    seconds: float
    errors: int

    def per_second(self) -> float | None:
        return (self.queries - self.errors) / self.seconds if self.seconds > 0 else None


@dataclass(frozen=True)
class RoundResult:
    events: int
    accepted: int
    ingest_seconds: float
    build_seconds: float
    seconds: float
    error: str | None = None


@dataclass(frozen=True)
class SqlBench:
    events: int
    counts: str
    jdbc_url: str
    config: SqlBenchConfig
    latencies: dict[tuple[str, str, str], Latency]  # (condition, path, kind)
    throughput: dict[str, Throughput]  # per path; empty below 2 clients
    round: RoundResult
    runs_before: int
    runs_after: int  # counted through the endpoint after refresh_readers
    load_before: str
    load_after: str

    def latency(self, condition: str, path: str, kind: str) -> Latency:
        return self.latencies[(condition, path, kind)]

    def during_round(self) -> int:
        """Queries started while the round ran (both paths)."""
        return sum(self.latency(DURING_ROUND, path, kind).attempts for path in PATHS for kind in KINDS)


# ---- the measurements -------------------------------------------------------------------------------------


def measure_idle(clients: dict[str, Client], workload: Workload, config: SqlBenchConfig, rng: Random,
                 into: dict[tuple[str, str, str], Latency]) -> None:
    for path, client in clients.items():
        for kind in KINDS:
            for _ in range(config.warmup):
                rows = client(workload.statement(kind, rng))
                if not expected_rows(kind, rows):
                    raise RuntimeError(f"{path}, {kind}: {rows} rows while idle")
            latency = into[(IDLE, path, kind)]
            for _ in range(config.queries):
                timed_query(client, kind, workload.statement(kind, rng), latency)


def measure_concurrent(make_client: Callable[[], Client], workload: Workload, clients: int, queries: int,
                       rng: Random) -> Throughput:
    """``queries`` statements, the kinds in turn, dealt to ``clients`` clients that start together (each one
    warmed up with one query of each kind first)."""
    statements = [(KINDS[i % len(KINDS)], workload.statement(KINDS[i % len(KINDS)], rng)) for i in range(queries)]
    shares = [statements[i::clients] for i in range(clients)]
    ready = threading.Barrier(clients + 1)
    errors = [0] * clients
    failures: list[BaseException] = []

    def run(number: int) -> None:
        client = None
        try:
            client = make_client()
            for kind in KINDS:
                client(workload.statement(kind, Random(number)))
        except BaseException as error:
            failures.append(error)
        finally:
            ready.wait()
        try:
            if client is None:
                return
            for kind, statement in shares[number]:
                latency = Latency()
                timed_query(client, kind, statement, latency)
                errors[number] += latency.errors
        finally:
            if client is not None:
                client.close()

    threads = [threading.Thread(target=run, args=(n,), name=f"bench-sql-client-{n}") for n in range(clients)]
    for thread in threads:
        thread.start()
    ready.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    if failures:
        raise failures[0]
    return Throughput(clients, queries, seconds, sum(errors))


def build_round(spark: SparkSession, scoped: Settings, batch: Path, events: int,
                dbt_command: Sequence[str]) -> RoundResult:
    """What one round of serve's build loop does, on a batch file: ingest, then the incremental build. Runs in the
    pool ``default``; a failure is returned, not raised (the queries beside it go on)."""
    spark.sparkContext.setLocalProperty(POOL_PROPERTY, None)  # type: ignore[arg-type]  # the pool `default`
    started = time.monotonic()
    ingest_seconds = build_seconds = 0.0
    accepted = 0
    try:
        report = ingest_lineage(spark, scoped, [batch])
        accepted = report.accepted
        ingest_seconds = time.monotonic() - started
        run_dbt(scoped, list(dbt_command))
        build_seconds = time.monotonic() - started - ingest_seconds
    except Exception as error:
        return RoundResult(events, accepted, ingest_seconds, build_seconds, time.monotonic() - started,
                           f"{type(error).__name__}: {error_text(error)}")
    return RoundResult(events, accepted, ingest_seconds, build_seconds, time.monotonic() - started)


def measure_during_round(
    clients: dict[str, Client], workload: Workload, config: SqlBenchConfig, rng: Random,
    into: dict[tuple[str, str, str], Latency], run_round: Callable[[], RoundResult],
) -> RoundResult:
    """Starts ``run_round`` in a thread and, while it runs, queries one at a time, each kind and path in turn,
    until it ends (or every kind and path has ``config.queries``)."""
    outcome: list[RoundResult] = []
    thread = threading.Thread(target=lambda: outcome.append(run_round()), name="bench-sql-round", daemon=True)
    turns: Iterator[tuple[str, str]] = cycle([(path, kind) for kind in KINDS for path in PATHS])
    thread.start()
    while thread.is_alive():
        if all(into[(DURING_ROUND, path, kind)].attempts >= config.queries for path in PATHS for kind in KINDS):
            break
        path, kind = next(turns)
        latency = into[(DURING_ROUND, path, kind)]
        if latency.attempts < config.queries:
            timed_query(clients[path], kind, workload.statement(kind, rng), latency)
    thread.join()
    if not outcome:
        raise RuntimeError("the build round's thread ended without a result")
    return outcome[0]


def count_runs(client: Client, lineage: str) -> int:
    return int(client.rows(f"select count(*) from {lineage}.runs")[0][0])


def next_batch(spark: SparkSession, scoped: Settings, events: int, work_dir: Path) -> Path:
    """Synthetic events continuing the warehouse's runs (later run numbers and times), new on every call."""
    lineage = scoped.schema("lineage")
    first_run = int(spark.sql(f"select count(distinct run_uuid) from {lineage}.run_states").collect()[0][0])
    path = work_dir / f"sql_round_{scoped.schema_prefix}{first_run}_{events}.ndjson"
    write_events(SyntheticSpec(events=events, first_run=first_run), path)
    return path


def measure_sql(spark: SparkSession, endpoint: SqlEndpoint, scoped: Settings, events: int, config: SqlBenchConfig,
                work_dir: Path, round_command: Sequence[str] = BENCH_BUILD) -> SqlBench:
    """Every figure of ``bench sql`` on the built warehouse ``scoped``; the round builds with ``round_command``."""
    rng = Random(config.seed)
    workload = sample_workload(spark, scoped, config.seed)
    lineage = workload.lineage
    in_process = InProcess(spark)
    versions = spark.sql(f"select count(*) from {lineage}.dataset_versions").collect()[0][0]
    schemas = spark.sql(f"select count(*) from {lineage}.dataset_schema_versions").collect()[0][0]
    runs_before = count_runs(in_process, lineage)
    counts = f"{runs_before:,} runs / {versions:,} dataset versions / {schemas:,} schema versions"
    latencies = {(condition, path, kind): Latency() for condition in CONDITIONS for path in PATHS for kind in KINDS}
    work_dir.mkdir(parents=True, exist_ok=True)
    batch = next_batch(spark, scoped, config.round_events, work_dir)
    endpoint_client = EndpointClient(endpoint)
    try:
        clients: dict[str, Client] = {ENDPOINT: endpoint_client, IN_PROCESS: in_process}
        load_before = load_average()
        print(f"timing queries, idle: {counts}", flush=True)
        measure_idle(clients, workload, config, rng, latencies)
        throughput = {}
        if config.clients >= 2:
            print(f"timing {config.clients} clients at once", flush=True)
            throughput[ENDPOINT] = measure_concurrent(lambda: EndpointClient(endpoint), workload, config.clients,
                                                      config.queries, rng)
            throughput[IN_PROCESS] = measure_concurrent(lambda: InProcess(spark), workload, config.clients,
                                                        config.queries, rng)
        print(f"timing queries during a build round of {config.round_events:,} events", flush=True)
        round_result = measure_during_round(
            clients, workload, config, rng, latencies,
            lambda: build_round(spark, scoped, batch, config.round_events, round_command),
        )
        endpoint.refresh_readers()
        runs_after = count_runs(endpoint_client, lineage)
        load_after = load_average()
    finally:
        endpoint_client.close()
        batch.unlink(missing_ok=True)
    return SqlBench(events, counts, endpoint.jdbc_url(lineage), config, latencies, throughput, round_result,
                    runs_before, runs_after, load_before, load_after)


# ---- the command ------------------------------------------------------------------------------------------


def session_with_endpoint(settings: Settings) -> tuple[SparkSession, SqlEndpoint]:
    """The process's Spark session, started with the SQL endpoint's settings, and the endpoint on a free loopback
    port, started before anything else runs in the session (as serve does: it registers the session as the
    guard's writer, which ingests and builds)."""
    port = free_port()
    conf = prepare_spark_conf(settings, target_spark_conf(settings), DEFAULT_SQL_HOST, port)
    spark = get_spark(settings, extra_conf=conf)
    return spark, SqlEndpoint.start(spark, DEFAULT_SQL_HOST, port)


def sql_figures(measured: SqlBench) -> tuple[Figures, Figures]:
    """The context (warehouse, round, load) and the latency table ``bench sql`` prints."""
    context = Figures(echo=False)
    part = f"{measured.events:,} events"
    config = measured.config
    context.add(part, "warehouse", measured.counts)
    context.add(part, "SQL endpoint", measured.jdbc_url)
    context.add(part, "timed queries per kind and path (after a warm-up of)",
                f"{config.queries} ({config.warmup}); during the round: as many as it lasts, at most {config.queries}")
    context.add(part, "load average before timing (1/5/15 min)", measured.load_before)
    result = measured.round
    round_text = (f"+{result.events:,} events (accepted {result.accepted:,}): ingest {result.ingest_seconds:.1f} s "
                  f"+ build {result.build_seconds:.1f} s = {result.seconds:.1f} s; "
                  f"{measured.during_round()} queries ran during it")
    context.add(part, "build round", round_text + (f"; FAILED: {result.error}" if result.error else ""))
    context.add(part, "runs through the endpoint after the round (refresh_readers)",
                f"{measured.runs_after:,} (+{measured.runs_after - measured.runs_before:,})")
    context.add(part, "load average after (1/5/15 min)", measured.load_after)

    table = Figures(("condition", "query", "path", "answered", "p50 / p95 / max ms", "queries/s", "errors"),
                    echo=False)
    for condition in CONDITIONS:
        for kind in KINDS:
            for path in PATHS:
                latency = measured.latency(condition, path, kind)
                times = (f"{latency.p50():,.1f} / {latency.p95():,.1f} / {latency.slowest():,.1f}"
                         if latency.timings_ms else "-")
                rate = latency.per_second()
                table.add(condition, kind, path, len(latency.timings_ms), times,
                          f"{rate:,.1f}" if rate else "-", latency.errors)
    for path, throughput in measured.throughput.items():
        rate = throughput.per_second()
        table.add(IDLE, f"the three kinds in turn, {throughput.clients} clients at once", path, throughput.queries,
                  f"{throughput.seconds:,.1f} s in all", f"{rate:,.1f}" if rate else "-", throughput.errors)
    return context, table


def first_errors(measured: SqlBench) -> list[str]:
    return [f"{condition}, {path}, {kind}: {latency.first_error}"
            for (condition, path, kind), latency in measured.latencies.items() if latency.first_error]


def run_sql_bench(spark: SparkSession, endpoint: SqlEndpoint, settings: Settings, events: int,
                  config: SqlBenchConfig, work_dir: Path, rebuild: bool = False) -> SqlBench:
    scoped = bench_warehouse(spark, settings, events, work_dir, rebuild, prefix="bench_sql_")
    measured = measure_sql(spark, endpoint, scoped, events, config, work_dir)
    context, table = sql_figures(measured)
    print(context.table())
    print()
    print(table.table())
    for line in first_errors(measured):
        print(f"first error: {line}")
    return measured

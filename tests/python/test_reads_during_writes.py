"""Reads never fail during writes (issue 26): readers query every public table in a loop while a first build,
an incremental build and a compaction run, and every answer is the table's state before or after that write.

The readers are what the SQL endpoint gives its clients: the Thrift server opens a ``spark.newSession()`` per
client connection, sharing the SparkContext and the metastore with the session that writes. Here ``READERS``
threads of the test worker's own Spark (no second JVM) do the same: each sweep over the public tables opens a
fresh session (so a reader is not served a listing its session cached two writes ago: staleness is not what
is tested, consistency is), lists every table and view of the public layers (``PUBLIC_LAYERS``: lineage,
changelog, registry; names holding ``__`` are internal scratch relations and left out) and answers each with an
order-independent fingerprint of every column, volatile ones included (row count and sum of row hashes).

The states: before and after each write, with no writer running, every public table's answer; a table that
does not exist has the state "absent". A reader's answer is compared with the states allowed for the phase it
ran in (the before and after state of that phase's write; the union of both phases' for an answer that
overlaps two): a reader that finds a table absent matches only a phase before which the table was absent (the
first build), and a reader sweeps the tables that existed before the write as well as the ones it lists, so
a table that disappears for a moment under the writer is seen. Any exception of a reader's query, or of its
listing, is an error.

The writes, on an isolated schema prefix of the worker's warehouse:
1. first build: the generated sample (``SampleSpec(size=SAMPLE_SIZE)``) but its last day of lineage events,
   its first two CRM exports, the registry and half of its self-describing events; then the dbt build.
2. incremental build: the held-back day of lineage events, the third export and the other half of the
   events, then the dbt build again.
3. compaction: ``compact_warehouse`` with ``min_files=2``, so every table the builds appended to is rewritten.
Every public table and view has rows after the first build (but the registry's recovery table of the sample's
breaking ``page_view`` version, which stays empty), and the incremental build changes most of them. Readers
run during the ingest too: no public view reads the raw layer, so the ingest leaves the before state. The
builds are ``dbt build`` without the data tests (``--exclude-resource-type test unit_test``): the tests
only read, and the suite's time is tight; every model and seed is written as in a full build.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from python_jobs.dbt import run_dbt
from python_jobs.ingest.events import ingest_events
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.ingest.registry import ingest_registry
from python_jobs.ingest.snapshot import ingest_snapshot
from python_jobs.ops.compaction import compact_warehouse
from python_jobs.settings import Settings
from python_jobs.summary import PUBLIC_LAYERS
from python_jobs.tools.generate.sample import SampleSpec, generate_sample
from python_jobs.warehouse.fingerprint import table_fingerprint
from python_jobs.warehouse.inputs import SnapshotFile
from python_jobs.warehouse.main_job import SAMPLE_DBT_VARS, WITHOUT_DATA_TESTS

SAMPLE_SIZE = 300  # the smallest sample that gives every public model rows (6 days of lineage events)
EXPORTS = 3  # of the sample's six CRM exports: two in the first build, one in the incremental one
READERS = 1  # each a client of the SQL endpoint; more slow the writer on a 2-core machine
BUILD = ["build", *WITHOUT_DATA_TESTS]
ABSENT = "absent"
SHOWN_ERRORS = 5

Answer = tuple[int, str, tuple[str, ...]] | str  # (rows, digest, columns) or ABSENT
State = dict[str, Answer]  # "layer.table" -> answer; a table missing from the dict is absent


@dataclass
class Read:
    reader: int
    table: str  # layer.table
    started: float
    ended: float
    answer: Answer | None  # None: the query failed
    error: str | None = None


@dataclass
class Sweep:
    reader: int
    started: float
    ended: float
    tables: int
    complete: bool


@dataclass
class Phase:
    name: str
    reading_from: float = 0.0
    write_started: float = 0.0
    write_ended: float = 0.0
    reading_until: float = 0.0
    before: State = field(default_factory=dict)
    after: State = field(default_factory=dict)
    note: str = ""

    def allowed(self, table: str) -> set[Answer]:
        return {self.before.get(table, ABSENT), self.after.get(table, ABSENT)}


def public_tables(session: SparkSession, settings: Settings) -> dict[str, str]:
    """``layer.table`` to the qualified name of every table and view of the public layers, scratch ones aside."""
    tables = {}
    for layer in PUBLIC_LAYERS:
        schema = settings.schema(layer)
        for row in session.sql(f"show tables in {schema}").collect():
            if not row.isTemporary and "__" not in row.tableName:
                tables[f"{layer}.{row.tableName}"] = f"{schema}.{row.tableName}"
    return tables


def answer(session: SparkSession, qualified: str) -> Answer:
    """The table's fingerprint over every column; ABSENT when the table itself does not exist (a view whose
    table is missing is an error, not an absent view)."""
    try:
        found = table_fingerprint(session, qualified, volatile=True)
    except AnalysisException as error:
        relation = (error.getMessageParameters() or {}).get("relationName", "")
        named = relation.replace("`", "").split(".")[-2:]
        if error.getCondition() == "TABLE_OR_VIEW_NOT_FOUND" and named == qualified.split("."):
            return ABSENT
        raise
    return (found["rows"], str(found["digest"]), tuple(found["columns"]))


def state(spark: SparkSession, settings: Settings) -> State:
    session = spark.newSession()
    return {name: answer(session, qualified) for name, qualified in sorted(public_tables(session, settings).items())}


class Readers:
    """``READERS`` threads sweeping the public tables until stopped; each sweep in a fresh session."""

    def __init__(self, spark: SparkSession, settings: Settings):
        self.spark, self.settings = spark, settings
        self.reads: list[Read] = []
        self.sweeps: list[Sweep] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.expected: dict[str, str] = {}  # the tables that existed before the running write
        self.threads: list[threading.Thread] = []

    def start(self, expected: State) -> None:
        self.expected = {name: self.settings.table(*name.split(".")) for name in expected}
        self.stop.clear()
        self.threads = [threading.Thread(target=self.loop, args=(number,), daemon=True) for number in range(READERS)]
        for thread in self.threads:
            thread.start()

    def finish(self, since: float) -> None:
        """Lets every reader complete a whole sweep of at least one table begun at or after ``since``, then
        stops them."""
        while not all(any(s.reader == r and s.complete and s.tables and s.started >= since for s in self.sweeps)
                      for r in range(READERS)) and all(t.is_alive() for t in self.threads):
            time.sleep(0.2)
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def record(self, item: Read | Sweep) -> None:
        with self.lock:
            (self.reads if isinstance(item, Read) else self.sweeps).append(item)

    def loop(self, reader: int) -> None:
        while not self.stop.is_set():
            started = time.monotonic()
            session = self.spark.newSession()
            try:
                listed = public_tables(session, self.settings)
            except Exception as error:  # every failure of a reader counts
                self.record(Read(reader, "(listing)", started, time.monotonic(), None, error_text(error)))
                continue
            tables = sorted({**self.expected, **listed}.items())
            if not tables:  # the first build has not created a public table yet
                self.record(Sweep(reader, started, time.monotonic(), 0, True))
                time.sleep(0.5)
                continue
            done = 0
            for name, qualified in tables:
                if self.stop.is_set():
                    break
                query_started = time.monotonic()
                try:
                    found = answer(session, qualified)
                except Exception as error:
                    self.record(Read(reader, name, query_started, time.monotonic(), None, error_text(error)))
                else:
                    self.record(Read(reader, name, query_started, time.monotonic(), found))
                done += 1
            self.record(Sweep(reader, started, time.monotonic(), done, done == len(tables)))


def error_text(error: Exception) -> str:
    lines = [line for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {' | '.join(lines[:2])[:400]}"


def split_events(events_file: Path, folder: Path) -> tuple[Path, Path]:
    lines = events_file.read_text(encoding="utf-8").splitlines(keepends=True)
    folder.mkdir(parents=True)
    halves = (folder / "sd_events_1.ndjson", folder / "sd_events_2.ndjson")
    halves[0].write_text("".join(lines[: len(lines) // 2]), encoding="utf-8")
    halves[1].write_text("".join(lines[len(lines) // 2:]), encoding="utf-8")
    return halves


def ingest_snapshots(spark: SparkSession, settings: Settings, snapshots: tuple[SnapshotFile, ...]) -> None:
    for snapshot in snapshots:
        ingest_snapshot(spark, settings, snapshot.dataset, snapshot.path, snapshot.snapshot_time.replace(tzinfo=None),
                        snapshot.system_time.replace(tzinfo=None), snapshot.primary_key)


def run_phase(phases: list[Phase], readers: Readers, spark: SparkSession, settings: Settings, name: str,
              write: Callable[[], str]) -> Phase:
    phase = Phase(name, before=phases[-1].after if phases else state(spark, settings))
    phase.reading_from = time.monotonic()
    readers.start(phase.before)
    phase.write_started = time.monotonic()
    try:
        phase.note = write()
    finally:
        phase.write_ended = time.monotonic()
        readers.finish(phase.reading_from)
        phase.reading_until = time.monotonic()
    phase.after = state(spark, settings)
    phases.append(phase)
    print(f"[{name}] write {phase.write_ended - phase.write_started:.1f} s, readers on "
          f"{phase.reading_until - phase.reading_from:.1f} s, "
          f"after-state {time.monotonic() - phase.reading_until:.1f} s"
          f"{'; ' + phase.note if phase.note else ''}", flush=True)
    return phase


def allowed_states(phases: list[Phase], read: Read) -> set[Answer]:
    allowed: set[Answer] = set()
    for phase in phases:
        if read.started <= phase.reading_until and read.ended >= phase.reading_from:
            allowed |= phase.allowed(read.table)
    return allowed


def describe(value: Answer | None) -> str:
    return value if isinstance(value, str) or value is None else f"{value[0]} rows, digest {value[1]}"


def report(phases: list[Phase], readers: Readers) -> tuple[int, int, list[str]]:
    """Prints each phase's reads, errors and mismatches; returns the totals and the problems found."""
    total_errors = total_mismatches = 0
    problems = []
    for phase in phases:
        reads = [r for r in readers.reads if r.started >= phase.reading_from and r.ended <= phase.reading_until]
        during = [r for r in reads if r.started <= phase.write_ended and r.ended >= phase.write_started]
        sweeps = [s for s in readers.sweeps if s.started >= phase.reading_from and s.ended <= phase.reading_until]
        overlapping = [s for s in sweeps if s.complete and s.tables and s.started <= phase.write_ended]
        errors = [r for r in reads if r.error is not None]
        mismatches = [r for r in reads if r.error is None and r.answer not in allowed_states(phases, r)]
        total_errors += len(errors)
        total_mismatches += len(mismatches)
        print(f"[{phase.name}] {len(reads)} queries ({len(during)} while the write ran, "
              f"{len(overlapping)} complete sweeps begun during it), {len(errors)} errors, "
              f"{len(mismatches)} mismatches", flush=True)
        by_error = Counter((r.table, r.error) for r in errors)
        for (table, text), times in by_error.most_common(SHOWN_ERRORS):
            print(f"    error x{times} {table}: {text}")
        if len(by_error) > SHOWN_ERRORS:
            print(f"    ... {len(by_error) - SHOWN_ERRORS} more distinct errors on "
                  f"{sorted({table for table, _ in by_error})}")
        by_table: dict[str, list[Read]] = defaultdict(list)
        for read in mismatches:
            by_table[read.table].append(read)
        for table, wrong in sorted(by_table.items()):
            print(f"    mismatch x{len(wrong)} {table}: read {describe(wrong[0].answer)}; before "
                  f"{describe(phase.before.get(table, ABSENT))}, after {describe(phase.after.get(table, ABSENT))}")
        problems += [f"{phase.name}: error on {t}" for t, _ in by_error] + [f"{phase.name}: mismatch on {t}"
                                                                          for t in by_table]
        if not overlapping:
            problems.append(f"{phase.name}: no complete sweep began while the write ran")
    return total_errors, total_mismatches, sorted(set(problems))


def test_reads_never_fail_during_writes(spark, isolated_settings, tmp_path):
    settings = isolated_settings
    started = time.monotonic()
    sample = generate_sample(SampleSpec(size=SAMPLE_SIZE), tmp_path / "sample")
    first_events, second_events = split_events(sample.events_file, tmp_path / "events")
    days = sorted(sample.lineage_files)
    readers = Readers(spark, settings)
    phases: list[Phase] = []

    def build(since: float) -> str:
        ingested = time.monotonic()
        run_dbt(settings, BUILD, extra_vars=SAMPLE_DBT_VARS)
        return f"ingest {ingested - since:.1f} s, dbt build {time.monotonic() - ingested:.1f} s"

    def first_build() -> str:
        since = time.monotonic()
        ingest_lineage(spark, settings, days[:-1])
        ingest_snapshots(spark, settings, sample.snapshots[:EXPORTS - 1])
        ingest_registry(spark, settings, sample.registry_dir)
        ingest_events(spark, settings, first_events)
        return build(since)

    def incremental_build() -> str:
        since = time.monotonic()
        ingest_lineage(spark, settings, days[-1:])
        ingest_snapshots(spark, settings, sample.snapshots[EXPORTS - 1:EXPORTS])
        ingest_events(spark, settings, second_events)
        return build(since)

    public_schemas = tuple(settings.schema(layer) + "." for layer in PUBLIC_LAYERS)
    compacted: list[str] = []

    def compaction() -> str:
        compacted.extend(c.table for c in compact_warehouse(spark, settings, min_files=2))
        public = sorted(t.split(".", 1)[1] for t in compacted if t.startswith(public_schemas))
        return f"{len(compacted)} tables compacted, {len(public)} of them public: {', '.join(public)}"

    for name, write in (("first build", first_build), ("incremental build", incremental_build),
                        ("compaction", compaction)):
        run_phase(phases, readers, spark, settings, name, write)

    first, incremental, compacting = phases
    empty = sorted(name for name, value in first.after.items() if value == ABSENT or value[0] == 0)
    print(f"{len(first.after)} public tables and views; without rows after the first build: {empty or 'none'}")
    changed = sorted(name for name in incremental.after if incremental.after[name] != first.after.get(name))
    print(f"changed by the incremental build: {len(changed)} of {len(incremental.after)}")
    altered = sorted(name for name in compacting.after | compacting.before
                     if compacting.after.get(name) != compacting.before.get(name))
    for name in altered:
        print(f"the compaction changed {name}: {describe(compacting.before.get(name, ABSENT))} before, "
              f"{describe(compacting.after.get(name, ABSENT))} after")
    errors, mismatches, problems = report(phases, readers)
    print(f"reads during writes: {len(readers.reads)} queries, {errors} errors, {mismatches} mismatches; "
          f"{time.monotonic() - started:.1f} s in all", flush=True)

    assert compacted, "the compaction rewrote no table"
    assert len(changed) > 0, "the incremental build changed some public table"
    assert not [p for p in problems if "no complete sweep" in p], problems
    assert (errors, mismatches) == (0, 0), "\n".join(problems)
    assert not altered, f"a compaction changes no table's content; it changed {altered}"

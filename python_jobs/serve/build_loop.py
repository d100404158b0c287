"""Keeping the warehouse current: ingest the sealed landing files (``python_jobs.landing.ingest_sealed``),
then the incremental ``dbt build``.

``run_round`` is one round (the unit to wrap in a warehouse lock); ``BuildLoop`` runs rounds on a
schedule in one thread (never two at once), prints what each did, and calls its ``after_round``
hooks with the report. A failed round is reported; its files stay sealed and the next tick retries
them (and the build).
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from python_jobs.dbt import run_dbt
from python_jobs.ingest.lineage import IngestReport
from python_jobs.landing import LandingLayout, ingest_sealed
from python_jobs.ops.lock import WriterLockBusy, writer_lock
from python_jobs.settings import Settings
from python_jobs.warehouse.retention import RetentionSchedule


@dataclass(frozen=True)
class RoundReport:
    files: int
    ingest: IngestReport | None
    built: bool
    seconds: float
    error: str | None = None
    finished_at: float = field(default_factory=time.time)
    retention: str | None = None  # what a scheduled retention did in this round

    @property
    def ok(self) -> bool:
        return self.error is None

    def summary(self) -> str:
        if self.error is not None:
            return f"round failed after {self.seconds:.1f}s (its files stay sealed; retried next tick): {self.error}"
        ingested = f"{self.files} files: {self.ingest.summary()}" if self.ingest else "no sealed files"
        build = "dbt build done" if self.built else "no build (nothing new)"
        retention = f"; {self.retention}" if self.retention else ""
        return f"round: {ingested}; {build}{retention}; {self.seconds:.1f}s"


def run_round(
    spark: SparkSession,
    settings: Settings,
    layout: LandingLayout,
    *,
    retry_build: bool = False,
    dbt_command: Sequence[str] = ("build",),
    retention: RetentionSchedule | None = None,
) -> RoundReport:
    """One round: ingest the sealed landing files, then the incremental ``dbt_command`` when events
    were accepted (or when ``retry_build``: the previous round failed), then ``retention`` when it is
    due. Raises on failure; the caller reports it."""
    started = time.monotonic()
    landed = ingest_sealed(spark, settings, layout)
    build = retry_build or (landed.report is not None and landed.report.accepted > 0)
    if build:
        run_dbt(settings, list(dbt_command))
    retained = retention.run(spark, settings, started) if retention and retention.due(started) else None
    return RoundReport(len(landed.files), landed.report, build, time.monotonic() - started, retention=retained)


RoundFunction = Callable[[bool], RoundReport]  # called with retry_build


def locked_round(
    spark: SparkSession,
    settings: Settings,
    layout: LandingLayout,
    *,
    retry_build: bool = False,
    dbt_command: Sequence[str] = ("build",),
    lock_wait: float | None = None,
    retention: RetentionSchedule | None = None,
) -> RoundReport:
    """``run_round`` under the warehouse writer lock. A round that cannot get the lock (another ingest,
    build or compaction holds it) does nothing and says who holds it; its files wait for the next tick."""
    started = time.monotonic()
    try:
        with writer_lock(settings, "serve --build-every (round)", lock_wait or None):
            return run_round(spark, settings, layout, retry_build=retry_build, dbt_command=dbt_command,
                             retention=retention)
    except WriterLockBusy as exc:
        return RoundReport(0, None, False, time.monotonic() - started, error=str(exc))


class BuildLoop:
    """Runs ``round_function`` every ``every_seconds`` in a thread of its own; see the module docstring.

    ``before_round`` hooks run first (the collector seals its open file there), ``after_round``
    hooks get every round's report, failed ones included."""

    def __init__(
        self,
        round_function: RoundFunction,
        every_seconds: float,
        *,
        after_round: list[Callable[[RoundReport], None]] | None = None,
        before_round: list[Callable[[], None]] | None = None,
        log: Callable[[str], None] = lambda line: print(line, flush=True),
    ):
        self.round_function = round_function
        self.every_seconds = every_seconds
        self.after_round = list(after_round or [])
        self.before_round = list(before_round or [])
        self.log = log
        self.rounds = 0
        self._retry_build = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="build-loop", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Lets the current round finish, then stops."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def run_once(self) -> RoundReport:
        started = time.monotonic()
        self.rounds += 1
        try:
            for hook in self.before_round:
                hook()
            report = self.round_function(self._retry_build)
        except Exception as error:  # a failed round is reported, never fatal: the next tick retries
            detail = "".join(traceback.format_exception_only(type(error), error)).strip()
            report = RoundReport(0, None, False, time.monotonic() - started, error=detail)
        self._retry_build = not report.ok
        self.log(f"[build round {self.rounds}] {report.summary()}")
        for hook in self.after_round:
            try:
                hook(report)
            except Exception as error:  # a hook's failure must not stop the loop
                self.log(f"[build round {self.rounds}] after_round hook failed: {error!r}")
        return report

    def _run(self) -> None:
        while not self._stop.wait(self.every_seconds):
            self.run_once()

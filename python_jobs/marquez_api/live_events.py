"""Accepted events not yet in the warehouse, reduced to what the read API shows of them.

``PendingEvent`` is the part of one accepted OpenLineage event that the read API needs (parsed
the way ingest and ``stg_lineage_events`` parse it: run ids lower case, event types upper case,
times in UTC to the microsecond). ``fold_events`` reduces a list of them to one record per run,
job, dataset and namespace, with the rules of the dbt models (models/lineage/runs.sql,
jobs.sql, datasets.sql, namespaces.sql, dataset_versions.sql): what ``live_view`` merges with a
snapshot. Pure: no Spark, no I/O.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

TERMINAL_TYPES = frozenset({"COMPLETE", "FAIL", "ABORT"})
# ``eventTime`` as Spark's to_timestamp reads it: fractions past microseconds are dropped, no offset is UTC.
_TIME = re.compile(r"^(?P<head>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?)(?:\.(?P<fraction>\d+))?(?P<zone>.*)$")

DatasetKey = tuple[str, str]  # (namespace, name)
IoKey = tuple[str, str, str]  # (io_type, namespace, name)


@dataclass(frozen=True)
class PendingEvent:
    seq: int  # the order the collector accepted it in (ingest keeps that order in ingest_seq)
    kind: str  # RunEvent, JobEvent or DatasetEvent
    event_type: str | None
    event_time: datetime
    run_id: str | None
    job: DatasetKey | None
    inputs: tuple[DatasetKey, ...] = ()
    outputs: tuple[DatasetKey, ...] = ()
    dataset: DatasetKey | None = None
    # What job versions need (version_loading reads the same from the facet tables): the job's
    # ``sourceCodeLocation`` url and the run's ``nominalTime`` times, as sent; None when absent.
    location: str | None = None
    nominal: tuple[str | None, str | None] | None = None


def event_time(text: str) -> datetime:
    match = _TIME.match(text.strip())
    if match is None:
        raise ValueError(f"not an ISO-8601 time: {text!r}")
    fraction = (match.group("fraction") or "")[:6]
    zone = match.group("zone").strip()
    normalized = match.group("head") + (f".{fraction.ljust(6, '0')}" if fraction else "")
    normalized += "+00:00" if zone in ("", "Z", "z") else zone
    moment = datetime.fromisoformat(normalized.replace(" ", "T", 1))
    return moment.astimezone(UTC)


def _kind(event: dict) -> str | None:
    """``event_parsing.event_kind``: the schemaURL's fragment, else what the event carries."""
    url = str(event.get("schemaURL") or "")
    for kind in ("RunEvent", "DatasetEvent", "JobEvent"):
        if url.endswith("/" + kind):
            return kind
    if isinstance(event.get("run"), dict):
        return "RunEvent"
    if isinstance(event.get("dataset"), dict):
        return "DatasetEvent"
    if isinstance(event.get("job"), dict):
        return "JobEvent"
    return None


def _refs(value: object) -> tuple[DatasetKey, ...]:
    if not isinstance(value, list):
        return ()
    return tuple((str(r["namespace"]), str(r["name"])) for r in value
                 if isinstance(r, dict) and r.get("namespace") is not None and r.get("name") is not None)


def _facet(holder: dict, name: str) -> dict:
    facets = holder.get("facets")
    facet = facets.get(name) if isinstance(facets, dict) else None
    return facet if isinstance(facet, dict) else {}


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def parse_pending(line: bytes | str, seq: int) -> PendingEvent | None:
    """The event of one accepted body; None when it has nothing the read API shows (the collector
    validated it, so a body that does not parse here is skipped, not raised)."""
    try:
        event = json.loads(line)
        kind = _kind(event)
        if kind is None:
            return None
        job = event.get("job") if isinstance(event.get("job"), dict) else {}
        job_key = (str(job["namespace"]), str(job["name"])) if job.get("namespace") and job.get("name") else None
        run = event.get("run") if kind == "RunEvent" and isinstance(event.get("run"), dict) else {}
        dataset = _refs([event.get("dataset")]) if kind == "DatasetEvent" else ()
        event_type = event.get("eventType")
        return PendingEvent(
            seq=seq, kind=kind, event_type=str(event_type).upper() if event_type else None,
            event_time=event_time(str(event["eventTime"])),
            run_id=str(run["runId"]).lower() if run.get("runId") else None,
            job=job_key, inputs=_refs(event.get("inputs")), outputs=_refs(event.get("outputs")),
            dataset=dataset[0] if dataset else None,
            location=_text(_facet(job, "sourceCodeLocation").get("url")),
            nominal=((_text(nominal.get("nominalStartTime")), _text(nominal.get("nominalEndTime")))
                     if (nominal := _facet(run, "nominalTime")) else None),
        )
    except (ValueError, KeyError, TypeError):
        return None


@dataclass
class RunFold:
    """One run's pending events, as runs.sql aggregates run_states."""

    uuid: str
    job: DatasetKey
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None = None
    ended_at: datetime | None = None
    # runs.sql's max_by key of the state: (terminal, time, order); OTHER never sets it.
    state_key: tuple[bool, datetime, int] | None = None
    state: str | None = None
    # (io_type, namespace, name) → when the run first named it (time, seq).
    io: dict[IoKey, tuple[datetime, int]] = field(default_factory=dict)
    # The latest event's (time, seq) that carried each, and its value: the later event wins.
    location: tuple[tuple[datetime, int], str] | None = None
    nominal: tuple[tuple[datetime, int], tuple[str | None, str | None]] | None = None


@dataclass
class DatasetFold:
    created_at: datetime
    first_seq: int
    # The earliest sighting that is not a run's output: a dataset first read gets an input version.
    first_read: tuple[datetime, int] | None = None
    # run id → (created_at, first seq) of the version that run's outputs make.
    versions: dict[str, tuple[datetime, int]] = field(default_factory=dict)


@dataclass
class Folded:
    runs: dict[str, RunFold] = field(default_factory=dict)
    jobs: dict[DatasetKey, datetime] = field(default_factory=dict)  # first seen
    datasets: dict[DatasetKey, DatasetFold] = field(default_factory=dict)
    namespaces: dict[str, datetime] = field(default_factory=dict)  # first seen

    def add(self, event: PendingEvent) -> None:
        moment, seq = event.event_time, event.seq
        if event.job is not None:
            self._seen_namespace(event.job[0], moment)
            if event.job not in self.jobs or moment < self.jobs[event.job]:
                self.jobs[event.job] = moment
        is_run = event.kind == "RunEvent"
        for key in event.inputs + ((event.dataset,) if event.dataset else ()):
            self._sighted(key, moment, seq, output_of=None)
        for key in event.outputs:
            self._sighted(key, moment, seq, output_of=event.run_id if is_run else None)
        if is_run and event.run_id is not None and event.job is not None:
            self._run_event(event)

    def _seen_namespace(self, name: str, moment: datetime) -> None:
        if name not in self.namespaces or moment < self.namespaces[name]:
            self.namespaces[name] = moment

    def _sighted(self, key: DatasetKey, moment: datetime, seq: int, output_of: str | None) -> None:
        self._seen_namespace(key[0], moment)
        fold = self.datasets.get(key)
        if fold is None:
            fold = self.datasets[key] = DatasetFold(moment, seq)
        elif moment < fold.created_at:
            fold.created_at = moment
        if output_of is None:
            if fold.first_read is None or (moment, seq) < fold.first_read:
                fold.first_read = (moment, seq)
            return
        version = fold.versions.get(output_of)
        if version is None or (moment, seq) < version:
            fold.versions[output_of] = (moment, seq)

    def _run_event(self, event: PendingEvent) -> None:
        assert event.run_id is not None and event.job is not None
        moment = event.event_time
        run = self.runs.get(event.run_id)
        if run is None:
            run = self.runs[event.run_id] = RunFold(event.run_id, event.job, moment, moment)
        run.created_at, run.updated_at = min(run.created_at, moment), max(run.updated_at, moment)
        state = event.event_type or "OTHER"
        if state == "START" and (run.started_at is None or moment < run.started_at):
            run.started_at = moment
        terminal = state in TERMINAL_TYPES
        if terminal and (run.ended_at is None or moment > run.ended_at):
            run.ended_at = moment
        if state != "OTHER":
            key = (terminal, moment, event.seq)
            if run.state_key is None or key > run.state_key:
                run.state_key, run.state = key, state
        order = (moment, event.seq)
        if event.location is not None and (run.location is None or order > run.location[0]):
            run.location = (order, event.location)
        if event.nominal is not None and (run.nominal is None or order > run.nominal[0]):
            run.nominal = (order, event.nominal)
        for io_type, refs in (("input", event.inputs), ("output", event.outputs)):
            for namespace, name in refs:
                io_key = (io_type, namespace, name)
                if io_key not in run.io or (moment, event.seq) < run.io[io_key]:
                    run.io[io_key] = (moment, event.seq)


def fold_events(events: list[PendingEvent]) -> Folded:
    folded = Folded()
    for event in events:
        folded.add(event)
    return folded

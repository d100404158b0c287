"""Job versions and each job's version history: which definition of a job each run ran. Pure: no Spark.

A job version is one distinct definition of a job: its namespace and name, the datasets it read and
wrote and its source code location. Marquez keeps a row per such definition; here the version id is a
deterministic hash of those parts (``name_uuid`` over a canonical text), computed from each run's own
inputs and outputs. A job's current version is the version of its latest run.

``JobHistory`` holds one job's runs ordered by when they started (or were created, when they never
started) with, per prefix, the newest run of that prefix: "the version current at time T" is one
binary search, not a scan of the runs.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from python_jobs.keys import name_uuid
from python_jobs.marquez_api.graph import LineageGraph, dataset_node_id, job_node_id

DatasetRef = tuple[str, str]  # (namespace, name)


def aware(moment: datetime | None) -> datetime | None:
    """Warehouse timestamps come back naive in UTC; queries carry an offset."""
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def job_version_id(namespace: str, job: str, inputs: Iterable[DatasetRef], outputs: Iterable[DatasetRef],
                   location: str | None) -> str:
    """The version of a job definition. The canonical text is JSON with sorted dataset ids, so the
    order in which an event listed its datasets does not change the version."""
    canonical = json.dumps(
        {"namespace": namespace, "job": job, "inputs": sorted(f"{ns}:{name}" for ns, name in set(inputs)),
         "outputs": sorted(f"{ns}:{name}" for ns, name in set(outputs)), "location": location},
        sort_keys=True, ensure_ascii=False, separators=(",", ":"),
    )
    return name_uuid(f"job_version:{canonical}")


@dataclass(frozen=True)
class RunDefinition:
    """One run and the job definition it ran. ``rank`` is the run's place among its job's runs,
    newest first in Marquez's order (``started_at desc nulls last``, then creation): 0 is the latest."""

    run_uuid: str
    rank: int
    started_at: datetime | None
    created_at: datetime | None
    inputs: tuple[DatasetRef, ...]
    outputs: tuple[DatasetRef, ...]
    location: str | None
    version: str

    @property
    def moment(self) -> datetime | None:
        """When the run counts as having happened: its start, else its creation."""
        return self.started_at or self.created_at


@dataclass
class JobVersion:
    """One version of a job and the runs that ran it (newest first)."""

    version: str
    inputs: tuple[DatasetRef, ...]
    outputs: tuple[DatasetRef, ...]
    location: str | None
    created_at: datetime | None
    runs: list[RunDefinition] = field(default_factory=list)

    @property
    def latest_run(self) -> RunDefinition:
        return self.runs[0]


@dataclass
class JobHistory:
    namespace: str
    name: str
    # Runs in time order (oldest first); runs without any time come first and count as always there.
    by_moment: list[RunDefinition]
    moments: list[datetime]
    # newest_upto[i]: the newest run (lowest rank) of by_moment[: i + 1].
    newest_upto: list[RunDefinition]
    versions: dict[str, JobVersion]
    # Newest first: by creation (a version's first run), as Marquez lists job versions.
    version_order: list[str]
    current: RunDefinition | None

    def run_as_of(self, moment: datetime) -> RunDefinition | None:
        """The job's latest run among those that had started (or been created) by ``moment``."""
        count = bisect_right(self.moments, moment)
        return self.newest_upto[count - 1] if count else None

    def version_as_of(self, moment: datetime | None) -> JobVersion | None:
        run = self.current if moment is None else self.run_as_of(moment)
        return self.versions[run.version] if run is not None else None


_NEVER = datetime.min.replace(tzinfo=UTC)


def build_history(namespace: str, name: str, runs: list[RunDefinition]) -> JobHistory:
    """``runs``: one job's runs, any order; their ranks give Marquez's newest-first order."""
    newest_first = sorted(runs, key=lambda run: run.rank)
    by_moment = sorted(runs, key=lambda run: (aware(run.moment) or _NEVER, -run.rank))
    newest_upto: list[RunDefinition] = []
    for run in by_moment:
        newest_upto.append(run if not newest_upto or run.rank < newest_upto[-1].rank else newest_upto[-1])
    versions: dict[str, JobVersion] = {}
    for run in newest_first:
        entry = versions.get(run.version)
        if entry is None:
            entry = versions[run.version] = JobVersion(run.version, run.inputs, run.outputs, run.location, None)
        entry.runs.append(run)
        created = aware(run.created_at or run.started_at)
        if created is not None and (entry.created_at is None or created < entry.created_at):
            entry.created_at = created
    order = sorted(versions.values(), key=lambda v: (v.created_at or _NEVER, -v.latest_run.rank), reverse=True)
    return JobHistory(
        namespace=namespace, name=name, by_moment=by_moment,
        moments=[aware(run.moment) or _NEVER for run in by_moment], newest_upto=newest_upto,
        versions=versions, version_order=[v.version for v in order],
        current=newest_first[0] if newest_first else None,
    )


def run_definitions(
    namespace: str, name: str, runs: list[dict], io: dict[str, list[tuple[str, DatasetRef]]],
    locations: dict[str, str | None],
) -> list[RunDefinition]:
    """One job's runs (rows with uuid, started_at, created_at, newest first) with their versions.
    ``io``: per run, its (``input`` | ``output``, dataset) pairs; ``locations``: per run, the
    ``sourceCodeLocation`` url its events carried."""
    result = []
    # Most runs of a job repeat one definition: hash each distinct one once.
    versions: dict[tuple[tuple[DatasetRef, ...], tuple[DatasetRef, ...], str | None], str] = {}
    for rank, row in enumerate(runs):
        pairs = io.get(row["uuid"], [])
        inputs = tuple(sorted({ref for kind, ref in pairs if kind == "input"}))
        outputs = tuple(sorted({ref for kind, ref in pairs if kind == "output"}))
        location = locations.get(row["uuid"])
        key = (inputs, outputs, location)
        if key not in versions:
            versions[key] = job_version_id(namespace, name, inputs, outputs, location)
        result.append(RunDefinition(
            run_uuid=row["uuid"], rank=rank, started_at=aware(row["started_at"]), created_at=aware(row["created_at"]),
            inputs=inputs, outputs=outputs, location=location, version=versions[key],
        ))
    return result


def dataset_jobs(histories: dict[str, JobHistory]) -> dict[DatasetRef, set[str]]:
    """Per dataset, the jobs (keys of ``histories``) any version of which read or wrote it."""
    index: dict[DatasetRef, set[str]] = {}
    for key, history in histories.items():
        for entry in history.versions.values():
            for ref in (*entry.inputs, *entry.outputs):
                index.setdefault(ref, set()).add(key)
    return index


def start_job(dataset: DatasetRef, histories: dict[str, JobHistory], candidates: Iterable[str],
              moment: datetime | None = None, aliases: Iterable[DatasetRef] = ()) -> str | None:
    """Where Marquez's lineage from a dataset starts: the job with the newest version that wrote it,
    else the job with the newest version that read it. Any version counts, not only current ones
    (Marquez picks from every job version's inputs and outputs, outputs first, then the newest
    version); with ``moment``, only versions created by then. ``candidates``: the jobs that touched
    the dataset (``dataset_jobs``); ``aliases``: the dataset's symlinks, which count as the dataset."""
    names = {dataset, *aliases}
    best: tuple[int, datetime, str] | None = None
    for key in sorted(candidates):
        for entry in histories[key].versions.values():
            created = entry.created_at or _NEVER
            if moment is not None and created > moment:
                continue
            kind = 1 if names.intersection(entry.outputs) else 0 if names.intersection(entry.inputs) else -1
            if kind >= 0 and (best is None or (kind, created) > best[:2]):
                best = (kind, created, key)
    return best[2] if best else None


def add_version_edges(graph: LineageGraph, histories: Iterable[JobHistory], moment: datetime | None = None) -> None:
    """The job → dataset edges of each job's version current at ``moment`` (None: now)."""
    for history in histories:
        entry = history.version_as_of(moment)
        if entry is None:
            continue
        job = job_node_id(history.namespace, history.name)
        for ref in entry.inputs:
            graph.add_edge(job, dataset_node_id(*ref), "input")
        for ref in entry.outputs:
            graph.add_edge(job, dataset_node_id(*ref), "output")

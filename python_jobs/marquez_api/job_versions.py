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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np

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
    """One version of a job: its definition, when its first run was created, and its newest run."""

    version: str
    inputs: tuple[DatasetRef, ...]
    outputs: tuple[DatasetRef, ...]
    location: str | None
    created_at: datetime | None
    latest_run: RunDefinition
    run_count: int = 1


_NEVER = datetime.min.replace(tzinfo=UTC)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
NO_TIME = np.iinfo(np.int64).min  # a run time that is missing, in microseconds since the epoch


def to_micros(moment: datetime | None) -> int:
    moment = aware(moment)
    return NO_TIME if moment is None else (moment - _EPOCH) // timedelta(microseconds=1)


def from_micros(value: int) -> datetime | None:
    return None if value == NO_TIME else _EPOCH + timedelta(microseconds=int(value))


@dataclass
class RunDefinitions:
    """One job's runs as columns, in rank order (newest first: Marquez's ``started_at desc nulls
    last``, then creation): a run costs a few numbers here, not an object. ``version_of_run`` indexes
    ``definitions``: each distinct (inputs, outputs, location) once."""

    run_uuids: Sequence[str]
    started: np.ndarray  # microseconds since the epoch, NO_TIME where missing
    created: np.ndarray
    version_of_run: np.ndarray
    definitions: list[tuple[str, tuple[DatasetRef, ...], tuple[DatasetRef, ...], str | None]]

    def __len__(self) -> int:
        return len(self.version_of_run)

    def run(self, rank: int) -> RunDefinition:
        version, inputs, outputs, location = self.definitions[int(self.version_of_run[rank])]
        uuid = self.run_uuids[rank]
        return RunDefinition(
            run_uuid=uuid if isinstance(uuid, str) else uuid.as_py(), rank=int(rank),
            started_at=from_micros(int(self.started[rank])), created_at=from_micros(int(self.created[rank])),
            inputs=inputs, outputs=outputs, location=location, version=version,
        )


@dataclass
class JobHistory:
    namespace: str
    name: str
    runs: RunDefinitions
    versions: dict[str, JobVersion]
    # Newest first: by creation (a version's first run), as Marquez lists job versions.
    version_order: list[str]
    # The ranks in time order (oldest first; runs without any time come first and count as always
    # there), their times, and per prefix the newest run (lowest rank): "the version current at time
    # T" is one binary search, not a scan of the runs.
    moment_order: np.ndarray
    moments: np.ndarray
    newest_upto: np.ndarray

    @property
    def current(self) -> RunDefinition | None:
        return self.runs.run(0) if len(self.runs) else None

    def run_as_of(self, moment: datetime) -> RunDefinition | None:
        """The job's latest run among those that had started (or been created) by ``moment``."""
        count = int(np.searchsorted(self.moments, to_micros(moment), side="right"))
        return self.runs.run(int(self.newest_upto[count - 1])) if count else None

    def version_as_of(self, moment: datetime | None) -> JobVersion | None:
        run = self.current if moment is None else self.run_as_of(moment)
        return self.versions[run.version] if run is not None else None

    def runs_by(self, moment: datetime, limit: int) -> list[RunDefinition]:
        """The newest ``limit`` runs (by rank) that had started (or been created) by ``moment``."""
        count = int(np.searchsorted(self.moments, to_micros(moment), side="right"))
        return [self.runs.run(int(rank)) for rank in np.sort(self.moment_order[:count])[:limit]]

    def runs_of_version(self, version: str) -> list[RunDefinition]:
        """The runs that ran ``version``, newest first."""
        wanted = next(i for i, d in enumerate(self.runs.definitions) if d[0] == version)
        return [self.runs.run(int(rank)) for rank in np.flatnonzero(self.runs.version_of_run == wanted)]


def history_of_columns(namespace: str, name: str, runs: RunDefinitions) -> JobHistory:
    """The history of one job's runs (rank order)."""
    started, created = runs.started, runs.created
    moment = np.where(started != NO_TIME, started, created)
    ranks = np.arange(len(runs), dtype=np.int64)
    # Missing times sort first as the earliest possible moment, as ``_NEVER`` did.
    never = to_micros(_NEVER)
    moment = np.where(moment == NO_TIME, never, moment)
    order = np.lexsort((-ranks, moment))
    first_time = np.where(created != NO_TIME, created, started)
    versions: dict[str, JobVersion] = {}
    for index, (version, inputs, outputs, location) in enumerate(runs.definitions):
        members = np.flatnonzero(runs.version_of_run == index)
        if len(members) == 0:
            continue
        times = first_time[members]
        times = times[times != NO_TIME]
        versions[version] = JobVersion(
            version, inputs, outputs, location, from_micros(int(times.min())) if len(times) else None,
            runs.run(int(members[0])), len(members),
        )
    newest_first = sorted(versions.values(), key=lambda v: (v.created_at or _NEVER, -v.latest_run.rank),
                          reverse=True)
    return JobHistory(
        namespace=namespace, name=name, runs=runs, versions=versions,
        version_order=[v.version for v in newest_first], moment_order=order, moments=moment[order],
        newest_upto=np.minimum.accumulate(order) if len(order) else order,
    )


def build_history(namespace: str, name: str, runs: list[RunDefinition]) -> JobHistory:
    """``runs``: one job's runs, any order; their ranks give Marquez's newest-first order."""
    newest_first = sorted(runs, key=lambda run: run.rank)
    index: dict[tuple, int] = {}
    definitions: list[tuple[str, tuple[DatasetRef, ...], tuple[DatasetRef, ...], str | None]] = []
    for run in newest_first:
        key = (run.version, run.inputs, run.outputs, run.location)
        if key not in index:
            index[key] = len(definitions)
            definitions.append(key)
    columns = RunDefinitions(
        run_uuids=[run.run_uuid for run in newest_first],
        started=np.array([to_micros(run.started_at) for run in newest_first], dtype=np.int64),
        created=np.array([to_micros(run.created_at) for run in newest_first], dtype=np.int64),
        version_of_run=np.array([index[(r.version, r.inputs, r.outputs, r.location)] for r in newest_first],
                                dtype=np.int32),
        definitions=definitions,
    )
    return history_of_columns(namespace, name, columns)


_LAST = np.iinfo(np.int64).max


def run_order_keys(started: np.ndarray, created: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Marquez's run order (``started_at desc nulls last``, then ``created_at desc nulls last``) as two integer
    keys that ascend along it; the run's uuid breaks what ties remain."""
    keys_ = []
    for times in (started, created):
        key = np.full(len(times), _LAST, dtype=np.int64)
        present = times != NO_TIME
        key[present] = -times[present]
        keys_.append(key)
    return keys_[0], keys_[1]


class SplicedUuids(Sequence[str]):
    """A spliced job's run uuids by rank, read through ``source`` (see ``spliced_history``) from the base
    history's uuids or the added runs: nothing of the base is copied."""

    def __init__(self, base: Sequence[str], added: Sequence[str], source: np.ndarray) -> None:
        self._base, self._added, self._source = base, added, source

    def __getitem__(self, rank):  # type: ignore[override]
        origin = int(self._source[rank])
        return self._base[origin] if origin >= 0 else self._added[-origin - 1]

    def __len__(self) -> int:
        return len(self._source)


def _uuid_text(value: object) -> str:
    return value if isinstance(value, str) else value.as_py()  # type: ignore[attr-defined]


def _insertion_points(base: RunDefinitions, kept: np.ndarray, added: list[RunDefinition],
                      added_first: np.ndarray, added_second: np.ndarray) -> np.ndarray:
    """Where each added run (in run order, with its two ``run_order_keys``) goes among the kept base runs: binary
    searches on the two time keys, then the uuids of the few kept runs with the very same times."""
    first, second = run_order_keys(base.started[kept], base.created[kept])
    points = np.empty(len(added), dtype=np.int64)
    for i, run in enumerate(added):
        low = int(np.searchsorted(first, added_first[i], side="left"))
        ties = second[low:int(np.searchsorted(first, added_first[i], side="right"))]
        low, high = (low + int(np.searchsorted(ties, added_second[i], side="left")),
                     low + int(np.searchsorted(ties, added_second[i], side="right")))
        while low < high and _uuid_text(base.run_uuids[int(kept[low])]) < run.run_uuid:
            low += 1
        points[i] = low
    return points


def spliced_history(base: JobHistory, replaced_ranks: Iterable[int],
                    added: list[RunDefinition]) -> tuple[JobHistory, np.ndarray, np.ndarray]:
    """``base`` without the runs at ``replaced_ranks`` and with ``added`` (runs with their definitions; their
    ``rank`` is ignored) in Marquez's run order: the history ``build_history`` gives for the same runs, at the
    cost of array copies of the job's runs rather than an object per run. Also returned: each added run's new
    rank (in ``added``'s order) and each base rank's new rank (-1 where replaced)."""
    runs = base.runs
    kept = np.delete(np.arange(len(runs), dtype=np.int64), np.fromiter(replaced_ranks, dtype=np.int64))
    started = np.array([to_micros(run.started_at) for run in added], dtype=np.int64)
    created = np.array([to_micros(run.created_at) for run in added], dtype=np.int64)
    first, second = run_order_keys(started, created)
    order = sorted(range(len(added)), key=lambda i: (int(first[i]), int(second[i]), added[i].run_uuid))
    in_order = [added[i] for i in order]
    points = _insertion_points(runs, kept, in_order, first[order], second[order])
    source = np.insert(kept, points, -1 - np.arange(len(in_order), dtype=np.int64))
    index = {definition: at for at, definition in enumerate(runs.definitions)}
    definitions = list(runs.definitions)
    added_versions = np.empty(len(in_order), dtype=np.int32)
    for i, run in enumerate(in_order):
        key = (run.version, run.inputs, run.outputs, run.location)
        if key not in index:
            index[key] = len(definitions)
            definitions.append(key)
        added_versions[i] = index[key]
    from_base = source >= 0
    base_rows, added_rows = source[from_base], -1 - source[~from_base]

    def spliced(base_column: np.ndarray, added_column: np.ndarray) -> np.ndarray:
        column = np.empty(len(source), dtype=base_column.dtype)
        column[from_base] = base_column[base_rows]
        column[~from_base] = added_column[added_rows]
        return column

    columns = RunDefinitions(
        run_uuids=SplicedUuids(runs.run_uuids, [run.run_uuid for run in in_order], source),
        started=spliced(runs.started, started[order]), created=spliced(runs.created, created[order]),
        version_of_run=spliced(runs.version_of_run, added_versions), definitions=definitions,
    )
    added_ranks = np.empty(len(added), dtype=np.int64)
    added_ranks[np.array(order, dtype=np.int64)] = np.flatnonzero(~from_base)
    base_ranks = np.full(len(runs), -1, dtype=np.int64)
    base_ranks[base_rows] = np.flatnonzero(from_base)
    return history_of_columns(base.namespace, base.name, columns), added_ranks, base_ranks


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

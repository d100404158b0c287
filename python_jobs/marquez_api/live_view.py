"""A snapshot with the pending events laid over it: what the read API answers from between builds.

``merged_snapshot`` returns a ``Snapshot`` whose maps are layered (the pending runs, jobs,
datasets and namespaces first, then the snapshot's), so building it costs the size of the pending
events, not of the warehouse. Values are derived as the dbt models derive them, from the
snapshot's row of the entity plus its pending events:

- a run: created/updated/started/ended as runs.sql (min/max of its events' times), its state the
  one runs.sql's ``max_by`` picks (terminal first, then latest time, then later ingest);
- a run's inputs and outputs: an output is the version ``dataset_version_uuid(ns, name, run)``, an
  input the version of the dataset current at the read (the latest output version before it by
  time, not the run's own), else the dataset's input version ``dataset_version_uuid(ns, name, '')``;
- a job's graph edges: the inputs and outputs of its latest run (Marquez's run order);
- a dataset: its current version the newest of its versions, ``lastModifiedAt`` the end of the
  latest COMPLETE run that wrote it.

- a job's versions: each pending job's history rebuilt from all its runs (job_versions.py), with
  the ``sourceCodeLocation`` and ``nominalTime`` facets the pending events carried.

Known only after the build (kept as the snapshot has them, or empty for a new entity): facets,
schemas and fields, column lineage, the stored events (``/events/lineage``) and their stats.
Pure: no Spark.
"""

from __future__ import annotations

import dataclasses
from collections import ChainMap
from collections.abc import Iterator, Mapping, MutableMapping
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime
from typing import Any

import numpy as np

from python_jobs import keys
from python_jobs.marquez_api.graph import LineageGraph, dataset_node_id, job_node_id
from python_jobs.marquez_api.job_versions import (
    DatasetRef,
    JobHistory,
    RunDefinition,
    build_history,
    run_definitions,
    spliced_history,
    to_micros,
)
from python_jobs.marquez_api.live_events import DatasetKey, Folded, RunFold
from python_jobs.marquez_api.snapshot import Slices, Snapshot, iso
from python_jobs.marquez_api.version_loading import VersionState, nominal_iso

TERMINAL_STATES = frozenset({"COMPLETE", "FAIL", "ABORT"})
_EARLIEST = datetime.min.replace(tzinfo=UTC)


def utc(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _newest_first(moment: datetime | None) -> tuple[bool, float]:
    """A sort key putting later times first and missing ones last."""
    moment = utc(moment)
    return (moment is None, -(moment.timestamp() if moment else 0.0))


def run_order_key(row: dict[str, Any]) -> tuple:
    """snapshot.RUN_ORDER in Python: started_at desc nulls last, created_at desc, uuid."""
    return (*_newest_first(row["started_at"]), *_newest_first(row["created_at"]), row["uuid"])


def version_order_key(row: dict[str, Any]) -> tuple:
    return (*_newest_first(row["created_at"]), row["version"])


class LayeredSlices:
    """``Slices`` with some keys' rows added or replaced: rows of a key come sorted by ``order``.
    ``extra`` holds, per key, the rows to add; a base row whose id (``id_column``) is in
    ``replaced`` is hidden (its newer row is in ``extra``). Positions of added rows are negative."""

    def __init__(self, base: Slices | None, extra: dict[str, list[dict[str, Any]]], id_column: str,
                 order: Any, replaced: dict[str, set[str]] | None = None, whole_keys: bool = False) -> None:
        self.base = base
        self.whole_keys = whole_keys  # an ``extra`` key's rows replace all of the base's
        self.extra = {key: sorted(rows, key=order) for key, rows in extra.items()}
        self.id_column = id_column
        self.order = order
        self.replaced = replaced or {}
        self.added: list[dict[str, Any]] = [row for rows in self.extra.values() for row in rows]
        self.positions = {row[id_column]: -(i + 1) for i, row in enumerate(self.added)}

    def rows(self, key: str, offset: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        base_rows = self.base.rows if self.base is not None else (lambda *_: [])
        if key not in self.extra:
            return base_rows(key, offset, limit)
        if self.whole_keys:
            return self.extra[key][offset:] if limit is None else self.extra[key][offset:offset + limit]
        hidden = self.replaced.get(key, set())
        # Enough base rows to fill the page once the hidden ones are taken out.
        window = None if limit is None else offset + limit + len(hidden)
        kept = [r for r in base_rows(key, 0, window) if r[self.id_column] not in hidden]
        merged = sorted(kept + self.extra[key], key=self.order)
        return merged[offset:] if limit is None else merged[offset:offset + limit]

    def count(self, key: str) -> int:
        base = self.base.count(key) if self.base is not None else 0
        if self.whole_keys and key in self.extra:
            return len(self.extra[key])
        return base - len(self.replaced.get(key, ())) + len(self.extra.get(key, ()))

    def row(self, position: int) -> dict[str, Any]:
        if position < 0:
            return self.added[-position - 1]
        assert self.base is not None
        return self.base.row(position)

    def rows_of(self, keys_: list[str]) -> dict[str, list[dict[str, Any]]]:
        grouped = self.base.rows_of([k for k in keys_ if k not in self.extra]) if self.base is not None else {}
        grouped.update({k: self.extra[k] for k in keys_ if k in self.extra})
        return grouped


class UnionSet(AbstractSet[str]):
    """The snapshot's graph nodes plus the pending ones, without copying the snapshot's."""

    def __init__(self, base: AbstractSet[str], added: set[str]) -> None:
        self.base = base
        self.added = added - set(n for n in added if n in base)

    def __contains__(self, node: object) -> bool:
        return node in self.added or node in self.base

    def __iter__(self) -> Iterator[str]:
        yield from self.base
        yield from self.added

    def __len__(self) -> int:
        return len(self.base) + len(self.added)


class LayeredCache(MutableMapping[str, str]):
    """The snapshot's per-node JSON cache, minus the nodes the pending events changed."""

    def __init__(self, base: MutableMapping[str, str], stale: set[str]) -> None:
        self.base, self.stale, self.own = base, stale, {}

    def __getitem__(self, node: str) -> str:
        if node in self.own:
            return self.own[node]
        if node in self.stale:
            raise KeyError(node)
        return self.base[node]

    def __setitem__(self, node: str, text: str) -> None:
        self.own[node] = text

    def __delitem__(self, node: str) -> None:
        del self.own[node]

    def __iter__(self) -> Iterator[str]:
        return iter(self.own)

    def __len__(self) -> int:
        return len(self.own)


@dataclasses.dataclass
class _Merge:
    """The work of ``merged_snapshot``: the pending entities merged with their snapshot rows."""

    base: Snapshot
    folded: Folded
    runs: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)  # run id → merged runs row
    io: dict[str, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)  # run id → io rows
    versions: dict[str, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)  # dataset uuid → rows

    def base_run(self, run_id: str) -> dict[str, Any] | None:
        found = self.base.run_index.get(run_id)
        return self.base.runs.row(found[1]) if found is not None and self.base.runs is not None else None

    def merge_runs(self) -> None:
        for run_id, fold in self.folded.runs.items():
            self.runs[run_id] = merged_run(self.base_run(run_id), fold)

    def output_versions(self) -> None:
        """The versions the pending outputs make, skipping those the snapshot has already."""
        for (namespace, name), fold in self.folded.datasets.items():
            dataset_uuid = keys.dataset_uuid(namespace, name)
            rows = []
            for run_id, (created_at, _) in fold.versions.items():
                version = keys.dataset_version_uuid(namespace, name, run_id)
                if version in self.base.version_index:
                    continue
                run = self.runs.get(run_id) or self.base_run(run_id) or {}
                rows.append({"dataset_uuid": dataset_uuid, "version": version, "created_at": created_at,
                             "dataset_schema_version_uuid": None, "run_uuid": run_id, "is_current_version": False,
                             "run_state": run.get("current_run_state"), "run_ended_at": run.get("ended_at"),
                             "first_seq": fold.versions[run_id][1]})
            base_entry = self.base.datasets.get((namespace, name))
            if base_entry is None and fold.first_read is not None and (
                    not fold.versions or fold.first_read < min(fold.versions.values())):
                rows.append({"dataset_uuid": dataset_uuid, "version": keys.dataset_version_uuid(namespace, name, ""),
                             "created_at": fold.first_read[0], "dataset_schema_version_uuid": None, "run_uuid": None,
                             "is_current_version": False, "run_state": None, "run_ended_at": None,
                             "first_seq": fold.first_read[1]})
            if rows:
                self.versions[dataset_uuid] = rows

    def version_read(self, namespace: str, name: str, run_id: str, read_at: datetime) -> str:
        """The version of a dataset current when ``run_id`` read it at ``read_at``."""
        dataset_uuid = keys.dataset_uuid(namespace, name)
        candidates = [(utc(r["created_at"]), r["version"]) for r in self.versions.get(dataset_uuid, [])
                      if r["run_uuid"] not in (None, run_id)]
        if self.base.versions is not None:
            found = newest_written_by_then(self.base.versions, dataset_uuid, run_id, read_at)
            if found is not None:
                candidates.append((utc(found[0]), found[1]))
        before = [c for c in candidates if c[0] is not None and c[0] <= read_at]
        return max(before)[1] if before else keys.dataset_version_uuid(namespace, name, "")

    def merge_io(self) -> None:
        for run_id, fold in self.folded.runs.items():
            run = self.runs[run_id]
            base_rows = self.base.run_io.rows(run_id) if self.base.run_io is not None else []
            named = {(r["io_type"], r["namespace_name"], r["name"]): r for r in base_rows}
            for (io_type, namespace, name), (moment, _) in fold.io.items():
                if (io_type, namespace, name) in named:
                    continue
                version = (keys.dataset_version_uuid(namespace, name, run_id) if io_type == "output"
                           else self.version_read(namespace, name, run_id, moment))
                named[(io_type, namespace, name)] = {
                    "run_uuid": run_id, "io_type": io_type, "namespace_name": namespace, "name": name,
                    "dataset_version_uuid": version, "job_uuid": run["job_uuid"],
                }
            self.io[run_id] = [named[k] for k in sorted(named)]


def newest_written_by_then(versions: Slices, dataset_uuid: str, run_id: str,
                           read_at: datetime) -> tuple[datetime, str] | None:
    """The creation time and id of the snapshot's newest version of a dataset created by ``read_at`` that another
    run wrote: a binary search for the first version at or before ``read_at`` (the dataset's rows are newest
    first), then a step past the few that the reading run or no run wrote. Scalars, not rows: a pending input
    costs microseconds however many versions its dataset has."""
    start, stop = versions.ranges.get(dataset_uuid, (0, 0))
    if stop <= start:
        return None
    created = versions.table.column("created_at").slice(start, stop - start)
    stop -= created.null_count  # versions without a time sort last and were created at no time before a read
    # Microseconds, newest first.
    newest_first = np.asarray(created.to_numpy(), dtype="datetime64[us]").view(np.int64)[:stop - start]
    at = stop - int(np.searchsorted(newest_first[::-1], to_micros(read_at), side="right"))
    writers = versions.table.column("run_uuid")
    for position in range(at, stop):
        if writers[position].as_py() not in (None, run_id):
            return created[position - start].as_py(), versions.table.column("version")[position].as_py()
    return None


def _io_order(row: dict[str, Any]) -> tuple[str, str, str]:
    return (row["io_type"], row["namespace_name"], row["name"])


def merged_run(base: dict[str, Any] | None, fold: RunFold) -> dict[str, Any]:
    """A runs row: the snapshot's row (if any) with the pending events folded in as runs.sql does."""
    job_uuid = keys.job_uuid(*fold.job)
    if base is None:
        return {"uuid": fold.uuid, "job_uuid": job_uuid, "created_at": fold.created_at,
                "updated_at": fold.updated_at, "current_run_state": fold.state, "started_at": fold.started_at,
                "ended_at": fold.ended_at, "live_only": True}
    state, key = base["current_run_state"], None
    if state is not None:
        terminal = state in TERMINAL_STATES
        # The snapshot's winner: its time is the latest terminal time (ended_at) or the latest update.
        key = (terminal, utc(base["ended_at"] if terminal else base["updated_at"]) or _EARLIEST, -1)
    if fold.state_key is not None and (key is None or fold.state_key > key):
        state = fold.state
    return {
        **base,
        "created_at": min(utc(base["created_at"]) or fold.created_at, fold.created_at),
        "updated_at": max(utc(base["updated_at"]) or fold.updated_at, fold.updated_at),
        "current_run_state": state,
        "started_at": _earliest(utc(base["started_at"]), fold.started_at),
        "ended_at": _latest(utc(base["ended_at"]), fold.ended_at),
    }


def _earliest(a: datetime | None, b: datetime | None) -> datetime | None:
    return min((m for m in (a, b) if m is not None), default=None)


def _latest(a: datetime | None, b: datetime | None) -> datetime | None:
    return max((m for m in (a, b) if m is not None), default=None)


def _merged_datasets(merge: _Merge) -> dict[DatasetKey, dict[str, Any]]:
    base, folded = merge.base, merge.folded
    modified: dict[str, datetime] = {}  # dataset uuid → end of the latest COMPLETE run writing it
    for run_id, run in merge.runs.items():
        if run["current_run_state"] == "COMPLETE" and run["ended_at"] is not None:
            for row in merge.io[run_id]:
                if row["io_type"] == "output":
                    uuid = keys.dataset_uuid(row["namespace_name"], row["name"])
                    modified[uuid] = max(modified.get(uuid, run["ended_at"]), run["ended_at"])
    touched = set(folded.datasets) | {(r["namespace_name"], r["name"]) for rows in merge.io.values() for r in rows
                                      if r["io_type"] == "output"}
    entries: dict[DatasetKey, dict[str, Any]] = {}
    for namespace, name in touched:
        uuid = keys.dataset_uuid(namespace, name)
        entry = dict(base.datasets.get((namespace, name)) or {
            "uuid": uuid, "namespace": namespace, "name": name, "createdAt": None, "updatedAt": None,
            "currentVersion": None, "schemaVersion": None, "lastModifiedAt": None,
        })
        fold = folded.datasets.get((namespace, name))
        if fold is not None and (entry["createdAt"] is None or fold.created_at < _parse(entry["createdAt"])):
            entry["createdAt"] = iso(fold.created_at)
        current = _current_version(base, entry, merge.versions.get(uuid, []))
        if current is not None and current["version"] != entry["currentVersion"]:
            entry["currentVersion"], entry["updatedAt"] = current["version"], iso(current["created_at"])
        entry["updatedAt"] = entry["updatedAt"] or entry["createdAt"]
        if uuid in modified:
            last = _parse(entry["lastModifiedAt"]) if entry["lastModifiedAt"] else None
            entry["lastModifiedAt"] = iso(_latest(last, modified[uuid]))
        entries[(namespace, name)] = entry
    return entries


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _current_version(base: Snapshot, entry: dict[str, Any], added: list[dict[str, Any]]) -> dict[str, Any] | None:
    """dataset_versions.sql's current version: the latest by (created_at, first ingest)."""
    if not added:
        return None
    newest = max(added, key=lambda r: (utc(r["created_at"]), r["first_seq"]))
    found = base.version_index.get(entry["currentVersion"] or "")
    if found is not None and base.versions is not None:
        current = base.versions.row(found[1])
        if utc(current["created_at"]) > utc(newest["created_at"]):  # a tie goes to the later ingest
            return None
    return newest


def _merged_graph(merge: _Merge, jobs: dict[DatasetKey, dict[str, Any]],
                  runs: LayeredSlices) -> tuple[LineageGraph, set[str]]:
    """The snapshot's graph with each pending job's edges from its latest run; the nodes changed."""
    base = merge.base.graph
    inputs: dict[str, set[str]] = {}
    outputs: dict[str, set[str]] = {}
    readers: dict[str, set[str]] = {}
    writers: dict[str, set[str]] = {}
    symlinks = merge.base.symlinks

    def dataset_node(namespace: str, name: str) -> str:
        """A symlink's edges are its main dataset's (symlinks.py)."""
        return dataset_node_id(*symlinks.get((namespace, name), (namespace, name)))

    added = {job_node_id(*key) for key in jobs} | {dataset_node(*key) for key in merge.folded.datasets}
    job_uuids = {keys.job_uuid(*key): key for key in jobs}
    for job_uuid, key in job_uuids.items():
        latest = runs.rows(job_uuid, 0, 1)
        if not latest or latest[0]["uuid"] not in merge.io:
            continue  # its latest run is the snapshot's: its edges are the snapshot's
        node = job_node_id(*key)
        rows = merge.io[latest[0]["uuid"]]
        new_in = {dataset_node(r["namespace_name"], r["name"]) for r in rows if r["io_type"] == "input"}
        new_out = {dataset_node(r["namespace_name"], r["name"]) for r in rows if r["io_type"] == "output"}
        for own, reverse, base_own, base_reverse, new in (
            (inputs, readers, base.inputs, base.readers, new_in),
            (outputs, writers, base.outputs, base.writers, new_out),
        ):
            old = base_own.get(node, set())
            own[node] = new
            for dataset in old | new:
                users = reverse.get(dataset)
                if users is None:
                    users = reverse[dataset] = set(base_reverse.get(dataset, set()))
                users.discard(node)
                if dataset in new:
                    users.add(node)
            added |= new
    graph = LineageGraph(inputs=ChainMap(inputs, base.inputs), outputs=ChainMap(outputs, base.outputs),  # type: ignore[arg-type]
                         readers=ChainMap(readers, base.readers), writers=ChainMap(writers, base.writers),  # type: ignore[arg-type]
                         nodes=UnionSet(base.nodes, added))  # type: ignore[arg-type]
    return graph, added


class LayeredRunDefinitions(Mapping[str, RunDefinition]):
    """run → its definition with the pending runs laid over the snapshot's: a pending run's from its job's new
    history; a snapshot run of a job with pending runs from the same history, at its new rank (``shifts``: per
    such job, each snapshot rank's new one); any other run's as the snapshot has it."""

    def __init__(self, base: Mapping[str, RunDefinition], base_runs: Mapping[str, tuple[str, int]],
                 histories: Mapping[str, JobHistory], ranks: dict[str, tuple[str, int]],
                 shifts: dict[str, np.ndarray]) -> None:
        self._base, self._base_runs, self._histories = base, base_runs, histories
        self._ranks, self._shifts = ranks, shifts

    def __getitem__(self, run: str) -> RunDefinition:
        found = self._ranks.get(run)
        if found is not None:
            return self._histories[found[0]].runs.run(found[1])
        definition = self._base[run]
        located = self._base_runs.get(run)
        shift = self._shifts.get(located[0]) if located is not None else None
        if shift is None:
            return definition
        return self._histories[located[0]].runs.run(int(shift[definition.rank]))

    def __iter__(self) -> Iterator[str]:
        yield from self._ranks
        yield from (run for run in self._base if run not in self._ranks)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _definitions_of(merge: _Merge, namespace: str, name: str, rows: list[dict[str, Any]]) -> list[RunDefinition]:
    """The definitions of runs of one job: a pending run's inputs and outputs merged with the snapshot's, another
    run's as the snapshot has them; the ``sourceCodeLocation`` the pending events carried, else the snapshot's.
    Their ranks are their places in ``rows``."""
    known_definitions = merge.base.version_state.run_definitions
    io: dict[str, list[tuple[str, DatasetRef]]] = {}
    locations: dict[str, str | None] = {}
    for row in rows:
        known = known_definitions.get(row["uuid"])
        if row["uuid"] in merge.io:
            io[row["uuid"]] = [(r["io_type"], (r["namespace_name"], r["name"])) for r in merge.io[row["uuid"]]]
        elif known is not None:
            io[row["uuid"]] = [("input", ref) for ref in known.inputs] + [("output", ref) for ref in known.outputs]
        fold = merge.folded.runs.get(row["uuid"])
        locations[row["uuid"]] = fold.location[1] if fold and fold.location else known.location if known else None
    return run_definitions(namespace, name, rows, io, locations)


def _merged_version_state(merge: _Merge, jobs: dict[DatasetKey, dict[str, Any]], runs: LayeredSlices) -> VersionState:
    """The snapshot's job versions with each pending job's history spliced: its replaced runs out, its pending
    runs in at their places (a run can change every later run's rank and the current version). That costs
    array copies of the job's runs, not an object per run (job_versions.spliced_history)."""
    state = merge.base.version_state
    histories: dict[str, JobHistory] = {}
    nominal: dict[str, tuple[str | None, str | None]] = {}
    ranks: dict[str, tuple[str, int]] = {}
    shifts: dict[str, np.ndarray] = {}
    dataset_jobs: dict[DatasetRef, set[str]] = {}
    job_keys = {keys.job_uuid(*key): key for key in jobs}
    for run_id, fold in merge.folded.runs.items():
        if fold.nominal is not None:
            nominal[run_id] = (nominal_iso(fold.nominal[1][0]), nominal_iso(fold.nominal[1][1]))
    pending_by_job: dict[str, list[dict[str, Any]]] = {}
    for run in merge.runs.values():
        pending_by_job.setdefault(run["job_uuid"], []).append(run)
    for job_uuid, pending in pending_by_job.items():
        namespace, name = job_keys[job_uuid]
        base = state.histories.get(job_uuid)
        if base is None:  # no history in the snapshot (a new job): one from all its runs
            definitions = _definitions_of(merge, namespace, name, runs.rows(job_uuid))
            histories[job_uuid] = build_history(namespace, name, definitions)
            ranks.update((d.run_uuid, (job_uuid, d.rank)) for d in definitions)
        else:
            replaced = [known.rank for known in (state.run_definitions.get(run["uuid"]) for run in pending
                                                 if not run.get("live_only")) if known is not None]
            added = _definitions_of(merge, namespace, name, pending)
            histories[job_uuid], added_ranks, shifts[job_uuid] = spliced_history(base, replaced, added)
            ranks.update((d.run_uuid, (job_uuid, int(rank))) for d, rank in zip(added, added_ranks, strict=True))
        for version in histories[job_uuid].versions.values():
            for ref in (*version.inputs, *version.outputs):
                if job_uuid not in state.dataset_jobs.get(ref, set()):
                    dataset_jobs.setdefault(ref, set(state.dataset_jobs.get(ref, set()))).add(job_uuid)
    return VersionState(
        histories=ChainMap(histories, state.histories),  # type: ignore[arg-type]
        run_definitions=LayeredRunDefinitions(state.run_definitions, merge.base.run_index, histories, ranks, shifts),
        nominal_times=ChainMap(nominal, state.nominal_times),  # type: ignore[arg-type]
        dataset_jobs=ChainMap(dataset_jobs, state.dataset_jobs),  # type: ignore[arg-type]
    )


def merged_snapshot(base: Snapshot, folded: Folded) -> Snapshot:
    """``base`` with ``folded`` laid over it (see the module docstring); ``base`` when nothing is pending."""
    if not (folded.runs or folded.jobs or folded.datasets or folded.namespaces):
        return base
    merge = _Merge(base, folded)
    merge.merge_runs()
    merge.output_versions()
    merge.merge_io()

    namespaces = {row["name"]: row for row in base.namespaces}
    for name, created in folded.namespaces.items():
        if name not in namespaces:
            namespaces[name] = {"name": name, "createdAt": iso(created)}

    jobs: dict[DatasetKey, dict[str, Any]] = {}
    for key, first_seen in folded.jobs.items():
        entry = dict(base.jobs.get(key) or {"uuid": keys.job_uuid(*key), "namespace": key[0], "name": key[1],
                                            "createdAt": None})
        if entry["createdAt"] is None or first_seen < _parse(entry["createdAt"]):
            entry["createdAt"] = iso(first_seen)
        jobs[key] = entry
    by_job: dict[str, list[dict[str, Any]]] = {}
    replaced: dict[str, set[str]] = {}
    for run in merge.runs.values():
        by_job.setdefault(run["job_uuid"], []).append(run)
        if not run.get("live_only"):
            replaced.setdefault(run["job_uuid"], set()).add(run["uuid"])
    runs = LayeredSlices(base.runs, by_job, "uuid", run_order_key, replaced)
    job_updated = {job: max(max(utc(r["updated_at"]) for r in rows),
                            utc(base.job_updated_at.get(job)) or _EARLIEST) for job, rows in by_job.items()}
    versions = LayeredSlices(base.versions, merge.versions, "version", version_order_key)
    graph, changed_nodes = _merged_graph(merge, jobs, runs)
    datasets = _merged_datasets(merge)
    stale = changed_nodes | {job_node_id(*k) for k in jobs} | {dataset_node_id(*k) for k in datasets}
    return dataclasses.replace(
        base,
        namespaces=[namespaces[name] for name in sorted(namespaces)],
        datasets=ChainMap(datasets, base.datasets),  # type: ignore[arg-type]
        jobs=ChainMap(jobs, base.jobs),  # type: ignore[arg-type]
        graph=graph,
        runs=runs,  # type: ignore[arg-type]
        run_index=ChainMap({run_id: (run["job_uuid"], runs.positions[run_id]) for run_id, run in merge.runs.items()},
                           base.run_index),  # type: ignore[arg-type]
        run_io=LayeredSlices(base.run_io, merge.io, "run_uuid", _io_order, whole_keys=True),  # type: ignore[arg-type]
        versions=versions,  # type: ignore[arg-type]
        version_index=ChainMap({row["version"]: (row["dataset_uuid"], versions.positions[row["version"]])
                                for rows in merge.versions.values() for row in rows},
                               base.version_index),  # type: ignore[arg-type]
        job_updated_at=ChainMap(job_updated, base.job_updated_at),  # type: ignore[arg-type]
        node_json=LayeredCache(base.node_json, stale),  # type: ignore[arg-type]
        version_state=_merged_version_state(merge, jobs, runs),
    )

"""Job versions and point-in-time lineage, built with the snapshot from what it already holds.

The runs and their inputs and outputs are the snapshot's ``runs`` and ``run_io``; per run, the url of the
``sourceCodeLocation`` job facet and the ``nominalTime`` times are ``RunDetails`` (run_details.py, which
reads them past a watermark).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from python_jobs.marquez_api.columns import positions_in
from python_jobs.marquez_api.graph import LineageGraph
from python_jobs.marquez_api.job_versions import (
    NO_TIME,
    DatasetRef,
    JobHistory,
    RunDefinition,
    RunDefinitions,
    aware,
    build_history,
    dataset_jobs,
    history_of_columns,
    job_version_id,
    run_definitions,
)
from python_jobs.marquez_api.run_details import WON_AT, RunDetails
from python_jobs.marquez_api.slices import Slices


@dataclass
class VersionState:
    """Per job (uuid) its version history; per run its definition and nominal times; per dataset the
    jobs any version of which read or wrote it."""

    histories: Mapping[str, JobHistory] = field(default_factory=dict)
    run_definitions: Mapping[str, RunDefinition] = field(default_factory=dict)
    nominal_times: Mapping[str, tuple[str | None, str | None]] = field(default_factory=dict)
    dataset_jobs: Mapping[DatasetRef, set[str]] = field(default_factory=dict)
    # The last graphs drawn as of a moment (a page reload or a client's repeated calls ask again).
    graphs_as_of: dict[datetime, LineageGraph] = field(default_factory=dict)


class NominalTimes(Mapping[str, tuple[str | None, str | None]]):
    """run → (nominal start, nominal end) as the API shows them. The times are two columns in the order of
    the snapshot's runs, found through ``run_index``: no second index of run ids."""

    def __init__(self, run_index: Mapping[str, tuple[str, int]], starts: pa.Array, ends: pa.Array,
                 present: np.ndarray) -> None:
        self._run_index, self._starts, self._ends, self._present = run_index, starts, ends, present

    def _position(self, run: object) -> int | None:
        found = self._run_index.get(run) if isinstance(run, str) else None
        return found[1] if found is not None and self._present[found[1]] else None

    def __getitem__(self, run: str) -> tuple[str | None, str | None]:
        position = self._position(run)
        if position is None:
            raise KeyError(run)
        return nominal_iso(self._starts[position].as_py()), nominal_iso(self._ends[position].as_py())

    def __contains__(self, run: object) -> bool:
        return self._position(run) is not None

    def __iter__(self) -> Iterator[str]:
        return (run for run in self._run_index if self._position(run) is not None)

    def __len__(self) -> int:
        return int(self._present.sum())


def nominal_times_of_runs(run_index: Mapping[str, tuple[str, int]], nominal: pa.Table) -> NominalTimes:
    """``nominal`` (``v0`` start, ``v1`` end, ``won_at``: run_details.py) is in the order of the snapshot's runs."""
    present = np.asarray(nominal.column(WON_AT).is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    return NominalTimes(run_index, nominal.column("v0").combine_chunks(), nominal.column("v1").combine_chunks(),
                        present)


class RunDefinitionsByRun(Mapping[str, RunDefinition]):
    """run → its definition, read from its job's history (``run_index`` gives the job and the row)."""

    def __init__(self, run_index: Mapping[str, tuple[str, int]], job_rows: Mapping[str, tuple[int, int]],
                 histories: Mapping[str, JobHistory]) -> None:
        self._run_index, self._job_rows, self._histories = run_index, job_rows, histories

    def __getitem__(self, run: str) -> RunDefinition:
        job, position = self._run_index[run]
        history = self._histories.get(job)
        if history is None:
            raise KeyError(run)
        return history.runs.run(position - self._job_rows[job][0])

    def __iter__(self) -> Iterator[str]:
        return (run for run in self._run_index if self._run_index[run][0] in self._histories)

    def __len__(self) -> int:
        return sum(stop - start for job, (start, stop) in self._job_rows.items() if job in self._histories)


def _micros(column: pa.ChunkedArray) -> np.ndarray:
    values = pc.cast(column, pa.timestamp("us")) if pa.types.is_timestamp(column.type) else column
    return np.asarray(pc.fill_null(pc.cast(values, pa.int64()), NO_TIME).to_numpy(), dtype=np.int64)


def _plain(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return array.dictionary_decode() if pa.types.is_dictionary(array.type) else array


@dataclass(frozen=True)
class RunIoKeys:
    """Each run's inputs and outputs as one bytes key, by the run's row in the snapshot's runs: the sorted,
    distinct codes of its (input or output, namespace, name) rows, so equal sets give equal keys. A key is
    decoded into datasets only when it makes a new definition, which is rare: a job's runs repeat a few."""

    keys: list[bytes]
    namespaces: list[str | None]
    names: list[str | None]

    def datasets(self, key: bytes) -> tuple[tuple[DatasetRef, ...], tuple[DatasetRef, ...]]:
        inputs: set[DatasetRef] = set()
        outputs: set[DatasetRef] = set()
        for code in np.frombuffer(key, dtype="<i8").tolist():
            pair, is_output = divmod(code, 2)
            namespace, name = divmod(pair, len(self.names))
            (outputs if is_output else inputs).add((self.namespaces[namespace], self.names[name]))
        return tuple(sorted(inputs)), tuple(sorted(outputs))


def run_io_keys(run_io: pa.Table, uuids: pa.Array) -> RunIoKeys:
    """``run_io``'s rows (``run_uuid, io_type, namespace_name, name``, in any order) as ``RunIoKeys`` of
    the runs ``uuids``: NumPy over the rows, Python once per run."""
    namespaces = pc.dictionary_encode(_plain(run_io.column("namespace_name")), null_encoding="encode")
    names = pc.dictionary_encode(_plain(run_io.column("name")), null_encoding="encode")
    width = max(len(names.dictionary), 1)
    output = pc.fill_null(pc.not_equal(_plain(run_io.column("io_type")), "input"), True)
    codes = ((namespaces.indices.to_numpy().astype(np.int64) * width + names.indices.to_numpy()) * 2
             + np.asarray(output.to_numpy(zero_copy_only=False), dtype=np.int64))
    positions = positions_in(run_io.column("run_uuid"), uuids).combine_chunks()
    known = np.asarray(positions.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    runs_of_rows = np.asarray(pc.fill_null(positions, -1).to_numpy(zero_copy_only=False), dtype=np.int64)[known]
    codes = codes[known]
    order = np.lexsort((codes, runs_of_rows))
    runs_of_rows, codes = runs_of_rows[order], codes[order]
    distinct = np.ones(len(codes), dtype=bool)
    distinct[1:] = (runs_of_rows[1:] != runs_of_rows[:-1]) | (codes[1:] != codes[:-1])
    runs_of_rows, codes = runs_of_rows[distinct], codes[distinct]
    starts = np.flatnonzero(np.r_[True, runs_of_rows[1:] != runs_of_rows[:-1]]) if len(codes) else np.empty(0, int)
    stops = np.append(starts[1:], len(codes)) if len(codes) else starts
    packed = codes.astype("<i8").tobytes()
    keys = [b""] * len(uuids)
    for run, start, stop in zip(runs_of_rows[starts].tolist(), (starts * 8).tolist(), (stops * 8).tolist(),
                                strict=True):
        keys[run] = packed[start:stop]
    return RunIoKeys(keys, namespaces.dictionary.to_pylist(), names.dictionary.to_pylist())


def job_run_definitions(
    namespace: str, name: str, run_uuids: pa.ChunkedArray, started: np.ndarray, created: np.ndarray,
    io_keys: list[bytes], io: RunIoKeys, locations: list[str | None],
) -> RunDefinitions:
    """One job's runs (rank order; ``io_keys`` theirs) with their versions, as ``run_definitions`` gives them."""
    index: dict[tuple[bytes, str | None], int] = {}
    definitions: list[tuple[str, tuple[DatasetRef, ...], tuple[DatasetRef, ...], str | None]] = []
    version_of_run = np.empty(len(locations), dtype=np.int32)
    for rank, key in enumerate(zip(io_keys, locations, strict=True)):
        found = index.get(key)
        if found is None:
            found = index[key] = len(definitions)
            inputs, outputs = io.datasets(key[0])
            location = key[1]
            definitions.append((job_version_id(namespace, name, inputs, outputs, location), inputs, outputs,
                                location))
        version_of_run[rank] = found
    return RunDefinitions(run_uuids=run_uuids, started=started, created=created, version_of_run=version_of_run,
                          definitions=definitions)


def columnar_version_state(jobs: dict[str, tuple[str, str]], runs: Slices, run_io: Slices,
                           run_index: Mapping[str, tuple[str, int]], details: RunDetails) -> VersionState:
    """Every job's history from the snapshot's runs (sorted by job, newest first) and their inputs and
    outputs: per run a few numbers, no object (see ``RunDefinitions``)."""
    table = runs.table
    uuids = table.column("uuid")
    started, created = _micros(table.column("started_at")), _micros(table.column("created_at"))
    run_locations = details.location.column("v0")
    io = run_io_keys(run_io.table, uuids.combine_chunks())
    histories: dict[str, JobHistory] = {}
    for job, (start, stop) in runs.ranges.items():
        if job not in jobs:
            continue
        namespace, name = jobs[job]
        definitions = job_run_definitions(
            namespace, name, uuids.slice(start, stop - start), started[start:stop], created[start:stop],
            io.keys[start:stop], io, run_locations.slice(start, stop - start).to_pylist(),
        )
        histories[job] = history_of_columns(namespace, name, definitions)
    return VersionState(
        histories=histories, run_definitions=RunDefinitionsByRun(run_index, runs.ranges, histories),
        nominal_times=nominal_times_of_runs(run_index, details.nominal), dataset_jobs=dataset_jobs(histories),
    )


def build_version_state(
    jobs: dict[str, tuple[str, str]], runs_by_job: dict[str, list[dict]],
    io: dict[str, list[tuple[str, DatasetRef]]], locations: dict[str, str | None],
    nominal: dict[str, tuple[str | None, str | None]],
) -> VersionState:
    """``jobs``: job uuid → (namespace, name); ``runs_by_job``: each job's runs newest first."""
    state = VersionState(nominal_times={
        run: (nominal_iso(start), nominal_iso(end)) for run, (start, end) in nominal.items()})
    for job_uuid, runs in runs_by_job.items():
        if job_uuid not in jobs:
            continue
        namespace, name = jobs[job_uuid]
        definitions = run_definitions(namespace, name, runs, io, locations)
        state.histories[job_uuid] = build_history(namespace, name, definitions)
        state.run_definitions.update((d.run_uuid, d) for d in definitions)
    state.dataset_jobs = dataset_jobs(state.histories)
    return state


def nominal_iso(text: str | None) -> str | None:
    """A nominal time as the API's timestamp text (UTC, with a Z); the sent text when it does not parse."""
    if not text:
        return None
    try:
        parsed = aware(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        return text
    return parsed.isoformat().replace("+00:00", "Z") if parsed else None

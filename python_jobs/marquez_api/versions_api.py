"""The read API's job versions, the version fields of runs and jobs, and point-in-time lineage.

``VersionedReads`` is mixed into ``MarquezReadApi``: it answers
``/namespaces/{ns}/jobs/{job}/versions[/{version}]`` in Marquez's JobVersion shape, adds to runs their
``jobVersion``, dataset versions and nominal times, to jobs their ``currentVersion`` and parent, and
draws the lineage graph as of a moment (``asOf``): each job's version current then, the datasets that
existed then, and node data as of then.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from python_jobs.keys import job_uuid
from python_jobs.marquez_api.graph import (
    Direction,
    LineageGraph,
    dataset_node_id,
    job_node_id,
    lineage_response,
    neighbourhood,
    parse_node_id,
)
from python_jobs.marquez_api.job_versions import (
    DatasetRef,
    JobHistory,
    JobVersion,
    add_version_edges,
    aware,
    start_job,
)
from python_jobs.marquez_api.params import BadRequest, NotFound, moment, paging
from python_jobs.marquez_api.snapshot import iso, latest_run_facets
from python_jobs.marquez_api.symlinks import merged_aliases

if TYPE_CHECKING:
    from python_jobs.marquez_api.snapshot import Snapshot

LATEST_RUNS = 10  # Marquez's ``latestRuns`` on a job
DEFAULT_DEPTH = 20
GRAPHS_KEPT = 8  # graphs as of a moment kept per snapshot


def dataset_ids(refs: tuple[DatasetRef, ...]) -> list[dict[str, str]]:
    return [{"namespace": namespace, "name": name} for namespace, name in sorted(refs)]


def parent_job(facets: dict[str, Any]) -> tuple[str | None, str | None]:
    """The job name and key of OpenLineage's ``parent`` run facet; (None, None) without one."""
    job = (facets.get("parent") or {}).get("job") or {}
    name, namespace = job.get("name"), job.get("namespace")
    if not isinstance(name, str) or not name:
        return None, None
    return name, job_uuid(namespace, name) if isinstance(namespace, str) and namespace else None


class VersionedReads:
    """Needs from ``MarquezReadApi``: the snapshot, ``_run``, ``_job``, ``_dataset`` and the entry lookups."""

    _snapshot: Snapshot

    if TYPE_CHECKING:
        def _run(self, row: dict[str, Any], facets: dict[str, Any] | None = None,
                 io: list[dict[str, Any]] | None = None) -> dict[str, Any]: ...
        def _job(self, entry: dict[str, Any]) -> dict[str, Any]: ...
        def _dataset(self, entry: dict[str, Any]) -> dict[str, Any]: ...
        def _job_entry(self, namespace: str, name: str) -> dict[str, Any]: ...
        def _dataset_entry(self, namespace: str, name: str) -> dict[str, Any]: ...
        def _namespaces(self) -> list[str]: ...
        def _start_node(self, node_id: str, graph: LineageGraph | None = None, when: str = "") -> str: ...

    # -- job versions --------------------------------------------------------------------------

    def _history(self, entry: dict[str, Any]) -> JobHistory | None:
        return self._snapshot.version_state.histories.get(entry["uuid"])

    def _run_row(self, run_uuid: str) -> dict[str, Any] | None:
        snap = self._snapshot
        found = snap.run_index.get(run_uuid)
        if found is None or snap.runs is None:
            return None
        return snap.runs.row(found[1])  # a pending run's row too, in the live view (its position is negative)

    def _job_version(self, history: JobHistory, entry: JobVersion) -> dict[str, Any]:
        row = self._run_row(entry.latest_run.run_uuid)
        return {
            "id": {"namespace": history.namespace, "name": history.name, "version": entry.version},
            "name": history.name,
            "createdAt": iso(entry.created_at),
            "version": entry.version,
            "namespace": history.namespace,
            "location": entry.location,
            "inputs": dataset_ids(entry.inputs),
            "outputs": dataset_ids(entry.outputs),
            "latestRun": self._run(row) if row is not None else None,
        }

    def list_job_versions(self, namespace: str, job: str, limit: int | None = None,
                          offset: int | None = None) -> dict[str, Any]:
        """Marquez's GET /namespaces/{ns}/jobs/{job}/versions: newest first."""
        limit, offset = paging(limit, offset)
        history = self._history(self._job_entry(namespace, job))
        if history is None:
            return {"versions": [], "totalCount": 0}
        page = history.version_order[offset:offset + limit]
        return {"versions": [self._job_version(history, history.versions[v]) for v in page],
                "totalCount": len(history.version_order)}

    def get_job_version(self, namespace: str, job: str, version: str) -> dict[str, Any]:
        history = self._history(self._job_entry(namespace, job))
        entry = history.versions.get(version.lower()) if history else None
        if history is None or entry is None:
            raise NotFound(f"Job version '{version}' not found for job '{job}' in namespace '{namespace}'.")
        return self._job_version(history, entry)

    # -- version fields of runs and jobs -------------------------------------------------------

    def _run_version_fields(self, run_uuid: str, io: list[dict[str, Any]]) -> dict[str, Any]:
        """A run's ``jobVersion``, ``input/outputDatasetVersions`` and nominal times."""
        state = self._snapshot.version_state
        definition = state.run_definitions.get(run_uuid)
        history = None
        if definition is not None:
            found = self._snapshot.run_index.get(run_uuid)
            history = state.histories.get(found[0]) if found else None

        def versions(kind: str) -> list[dict[str, Any]]:
            return [{"datasetVersionId": {"namespace": r["namespace_name"], "name": r["name"],
                                          "version": r["dataset_version_uuid"]}, "facets": {}}
                    for r in io if r["io_type"] == kind and r["dataset_version_uuid"] is not None]

        start, end = state.nominal_times.get(run_uuid, (None, None))
        return {
            "nominalStartTime": start,
            "nominalEndTime": end,
            "jobVersion": ({"namespace": history.namespace, "name": history.name, "version": definition.version}
                           if history is not None and definition is not None else None),
            "inputDatasetVersions": versions("input"),
            "outputDatasetVersions": versions("output"),
        }

    def _job_version_fields(self, entry: dict[str, Any]) -> dict[str, Any]:
        """A job's ``currentVersion`` and parent: its latest run's version and ``parent`` facet."""
        history = self._history(entry)
        current = history.current if history else None
        if current is None:
            return {"currentVersion": None, "parentJobName": None, "parentJobUuid": None}
        name, uuid = parent_job(latest_run_facets(self._snapshot, current.run_uuid))
        return {"currentVersion": current.version, "parentJobName": name, "parentJobUuid": uuid}

    # -- lineage: the start of a dataset's graph, and the graph as of a moment ------------------

    def _dataset_start_job(self, ref: DatasetRef, as_of: datetime | None = None) -> str | None:
        """The node id of the job Marquez's lineage from dataset ``ref`` starts at, None when no job
        read or wrote it (by ``as_of``)."""
        snap = self._snapshot
        state = snap.version_state
        aliases = snap.symlink_aliases.get(ref, [])
        candidates = set(state.dataset_jobs.get(ref, set())).union(*(state.dataset_jobs.get(a, set()) for a in aliases))
        key = start_job(ref, state.histories, candidates, as_of, aliases)
        if key is None:
            return None
        history = state.histories[key]
        return job_node_id(history.namespace, history.name)

    def _walk(self, graph: LineageGraph, start: str, depth: int, direction: Direction,
              as_of: datetime | None = None) -> set[str]:
        """Marquez's walk: from a dataset, the graph of its start job (plus the dataset itself)."""
        if direction != "both" or not start.startswith("dataset:"):
            return neighbourhood(graph, start, depth, direction)
        ref = parse_node_id(start, self._namespaces())
        job = self._dataset_start_job((ref.namespace, ref.name), as_of)
        if job is None or job not in graph.nodes:
            return {start}
        return neighbourhood(graph, job, depth, direction) | {start}

    def graph_as_of(self, as_of: datetime) -> LineageGraph:
        """The graph at ``as_of``: the jobs and datasets created by then, and the edges of each job's
        version current then."""
        snap = self._snapshot
        cached = snap.version_state.graphs_as_of.get(as_of)
        if cached is not None:
            return cached
        graph = LineageGraph()
        for entries, node_id in ((snap.datasets, dataset_node_id), (snap.jobs, job_node_id)):
            for (namespace, name), entry in entries.items():
                if entry["createdAt"] and moment(entry["createdAt"]) <= as_of:
                    graph.add_node(node_id(namespace, name))
        add_version_edges(graph, snap.version_state.histories.values(), as_of)
        graph = merged_aliases(graph, snap.symlinks)
        cache = snap.version_state.graphs_as_of
        if len(cache) >= GRAPHS_KEPT:
            cache.pop(next(iter(cache)), None)
        cache[as_of] = graph
        return graph

    def lineage_as_of(self, node_id: str | None, depth: int | None, as_of_text: str,
                      direction: Direction = "both") -> dict[str, Any]:
        """Marquez's lineage body as the graph was at ``as_of_text`` (an ISO-8601 timestamp)."""
        as_of = moment(as_of_text)
        depth = DEFAULT_DEPTH if depth is None else depth
        if depth < 0:
            raise BadRequest("depth must be greater than or equal to 0")
        graph = self.graph_as_of(as_of)
        if node_id is None:
            nodes = set(graph.nodes)
        else:
            start = self._start_node(node_id, graph, f" as of {as_of_text}")
            nodes = self._walk(graph, start, depth, direction, as_of)
        return lineage_response(graph, nodes, lambda node: self.node_data_as_of(node, as_of))

    def node_data_as_of(self, node: str, as_of: datetime) -> dict[str, Any]:
        ref = parse_node_id(node, self._namespaces())
        if ref.kind == "dataset":
            return self._dataset_as_of(self._dataset_entry(ref.namespace, ref.name), as_of)
        return self._job_as_of(self._job_entry(ref.namespace, ref.name), as_of)

    def _dataset_as_of(self, entry: dict[str, Any], as_of: datetime) -> dict[str, Any]:
        """The dataset with its version and fields of then (its facets stay the current ones)."""
        body = self._dataset(entry)
        versions = self._snapshot.versions
        if versions is None or not versions.count(entry["uuid"]):
            return body  # no version recorded: nothing to go back to
        row = next((r for r in versions.rows(entry["uuid"])  # newest first
                    if aware(r["created_at"]) is not None and aware(r["created_at"]) <= as_of), None)
        schema = row["dataset_schema_version_uuid"] if row else None
        body.update({
            "currentVersion": row["version"] if row else None,
            "updatedAt": iso(row["created_at"]) if row else body["createdAt"],
            "fields": self._snapshot.schema_fields.get(schema, []) if schema else [],
        })
        return body

    def _job_as_of(self, entry: dict[str, Any], as_of: datetime) -> dict[str, Any]:
        """The job with its version, inputs, outputs and runs of then."""
        body = self._job(entry)
        history = self._history(entry)
        run = history.run_as_of(as_of) if history else None
        if history is None or run is None:
            body.update({"currentVersion": None, "inputs": [], "outputs": [], "latestRun": None, "latestRuns": [],
                         "parentJobName": None, "parentJobUuid": None, "updatedAt": body["createdAt"]})
            return body
        version = history.versions[run.version]
        started = history.runs_by(as_of, LATEST_RUNS)
        rows = [row for row in (self._run_row(r.run_uuid) for r in started) if row is not None]
        facets = latest_run_facets(self._snapshot, run.run_uuid)  # loaded for current latest runs only
        name, uuid = parent_job(facets)
        body.update({
            "currentVersion": version.version, "inputs": dataset_ids(version.inputs),
            "outputs": dataset_ids(version.outputs), "latestRuns": [self._run(row) for row in rows],
            "latestRun": self._run(rows[0], facets) if rows else None,
            "parentJobName": name, "parentJobUuid": uuid,
            "updatedAt": iso(rows[0]["updated_at"]) if rows else body["updatedAt"],
        })
        return body

"""``MarquezReadApi``: Marquez's read endpoints answered from the warehouse.

Each method returns the JSON body Marquez returns (field names, nesting, paging) or raises
``NotFound`` / ``BadRequest``, which the routes turn into Marquez's error body. Values the
warehouse does not have are null (or empty lists and objects where Marquez's type is a list or
object); the README's compatibility table lists them.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

from python_jobs.marquez_api.curated import curate, merged_tags, tag_list, tagged_fields
from python_jobs.marquez_api.curation import CurationState, Deletable
from python_jobs.marquez_api.curation_store import last_seen, read_state
from python_jobs.marquez_api.graph import (
    Direction,
    LineageGraph,
    dataset_node_id,
    job_node_id,
    lineage_response,
    lineage_response_json,
    parse_node_id,
)
from python_jobs.marquez_api.live import LiveOverlay
from python_jobs.marquez_api.params import BadRequest, NotFound, moment, paging
from python_jobs.marquez_api.snapshot import (
    RUN_STATES,
    Laps,
    Snapshot,
    dataset_facets,
    describe_laps,
    iso,
    job_facets,
    latest_run_facets,
    load_snapshot,
)
from python_jobs.marquez_api.sources import sightings, with_put_sources
from python_jobs.marquez_api.sources import sources as sources_of
from python_jobs.marquez_api.stats import StatsError, event_counts, intervals, running_counts
from python_jobs.marquez_api.versions_api import VersionedReads
from python_jobs.marquez_api.warehouse_listing import SETTLE_SECONDS
from python_jobs.settings import Settings

DEFAULT_DEPTH = 20
DEFAULT_SEARCH_LIMIT = 10
LATEST_RUNS = 10  # Marquez's ``latestRuns`` on a job
STATS_ASSETS = ("lineage-events", "jobs", "datasets", "sources")
FACET_KINDS = ("run", "job")


def duration_ms(run: dict[str, Any]) -> int | None:
    started, ended = run.get("started_at"), run.get("ended_at")
    if started is None or ended is None:
        return None
    return int((ended - started).total_seconds() * 1000)


def job_type(facets: dict[str, Any]) -> str:
    """Marquez's job type: STREAM when the ``jobType`` facet says STREAMING, else BATCH (every
    OpenLineage job is BATCH to Marquez unless told otherwise)."""
    processing = str((facets.get("jobType") or {}).get("processingType") or "").upper()
    return "STREAM" if processing == "STREAMING" else "BATCH"


def tag_names(facets: dict[str, Any]) -> list[str]:
    """The tags of OpenLineage's ``tags`` facet (``{"tags": [{"key", "value", "source"}]}``), by key;
    tags naming a field (``field``) belong to that field, not to the entity."""
    tags = (facets.get("tags") or {}).get("tags")
    if not isinstance(tags, list):
        return []
    entity_tags = [tag for tag in tags if isinstance(tag, dict) and tag.get("key") and not tag.get("field")]
    return sorted({str(tag["key"]) for tag in entity_tags})


def dataset_column_lineage(rows: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Marquez's ``columnLineage`` of a dataset: per output field, its input fields; null when the
    dataset has none."""
    fields: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["input_namespace"] is None:
            continue
        entry = fields.setdefault(row["output_field"], {
            "name": row["output_field"], "inputFields": [],
            "transformationDescription": row["transformation_description"],
            "transformationType": row["transformation_type"],
        })
        entry["inputFields"].append({
            "namespace": row["input_namespace"], "dataset": row["input_dataset"], "field": row["input_field"],
            "transformationDescription": row["transformation_description"],
            "transformationType": row["transformation_type"],
        })
    return list(fields.values()) or None


def run_states(values: list[str]) -> set[str] | None:
    """``lastRunStates`` (repeated or comma-separated) as Marquez's run states; None when absent."""
    states = {v.strip().upper() for value in values for v in value.split(",") if v.strip()}
    unknown = states - {"NEW", *RUN_STATES.values()}
    if unknown:
        raise BadRequest(f"lastRunStates: unknown run state(s) {', '.join(sorted(unknown))}")
    return states or None


class LikeMatcher:
    """Marquez's search: a case-insensitive substring match where ``%`` and ``_`` are SQL wildcards.

    One regular expression with a ``.*`` per ``%`` backtracks exponentially in the number of ``%``
    (eight took 8 s on a 40-character name). Here the query is cut at each ``%`` into pieces of
    literals and ``_`` (each a regex without quantifiers), and each piece is searched for after the
    end of the previous one: the leftmost match of each piece in turn finds a match whenever one
    exists, in time linear in the name for each piece."""

    def __init__(self, query: str) -> None:
        self.pieces = [
            re.compile("".join("." if c == "_" else re.escape(c) for c in piece), re.IGNORECASE | re.DOTALL)
            for piece in query.split("%")
            if piece
        ]

    def search(self, name: str) -> bool:
        position = 0
        for piece in self.pieces:
            found = piece.search(name, position)
            if found is None:
                return False
            position = found.end()
        return True


class MarquezReadApi(VersionedReads):
    """Reads the warehouse tables; holds the graph and the per-entity slices in memory. Call
    ``refresh()`` after each build (the serve loop does)."""

    def __init__(self, spark: SparkSession, settings: Settings, load: bool = True) -> None:
        self.spark = spark
        self.settings = settings
        self._base = Snapshot()  # as loaded, before the API's writes are applied
        self._last_seen: dict[Deletable, datetime] = {}
        # The curated snapshot, with the events the collector accepted since laid over it (live.py).
        self.live = LiveOverlay(Snapshot())
        self._refresh_lock = threading.Lock()
        self._spark_lock = threading.Lock()
        # Held by a write (log append, then swap) and by refresh's swap: no write is lost between them.
        self.curation_lock = threading.Lock()
        # The last refresh's seconds per part (snapshot.py's parts, then the writes): serve logs them.
        self.refresh_seconds: dict[str, float] = {}
        # How old the newest file must be before a refresh that finds the same files keeps the snapshot.
        self.settle_seconds = SETTLE_SECONDS
        if load:
            self.refresh()

    # -- state ---------------------------------------------------------------------------------

    def refresh(self, absorbed: bool = False) -> None:
        """Reload from the warehouse (the slices kept between refreshes only past the previous snapshot's marks;
        nothing when no file changed since it was loaded: warehouse_listing.py);
        requests keep reading the previous snapshot until the new one is complete, then switch in one
        assignment. ``absorbed``: the build round since ``live.begin_round()`` succeeded, so its events
        leave the live overlay."""
        with self._refresh_lock:
            base = load_snapshot(self.spark, self.settings, previous=self._base, settle_seconds=self.settle_seconds)
            laps = Laps(dict(base.load_seconds))
            with self.curation_lock:
                with self._spark_lock:
                    state = read_state(self.spark, self.settings)
                    self._last_seen = last_seen(self.spark, self.settings, state)
                self._base = base
                self.live.install(curate(base, state, self._last_seen), absorbed=absorbed)
            laps.lap("the API's writes laid over it")
            self.refresh_seconds = laps.seconds

    def refresh_after_round(self, absorbed: bool, log: Callable[[str], None] = print) -> None:
        """Serve's hook after each build round: ``refresh``, then one line on where its time went (the parts
        that grow with history show first)."""
        self.refresh(absorbed=absorbed)
        log(f"[read API] refreshed in {describe_laps(self.refresh_seconds)}")

    def recurate(self, state: CurationState) -> None:
        """Show ``state`` (after a write; the caller holds ``curation_lock``); the live events stay."""
        self.live.replace_base(curate(self._base, state, self._last_seen))

    @property
    def spark_lock(self) -> threading.Lock:
        return self._spark_lock

    @property
    def _snapshot(self) -> Snapshot:
        return self.live.view()

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    @property
    def graph(self) -> LineageGraph:
        return self._snapshot.graph

    # -- namespaces ----------------------------------------------------------------------------

    def _namespace(self, row: dict[str, Any]) -> dict[str, Any]:
        return {"name": row["name"], "createdAt": row["createdAt"], "updatedAt": row.get("updatedAt"),
                "ownerName": row.get("ownerName"), "description": row.get("description"),
                "isHidden": row.get("isHidden", False)}

    def list_namespaces(self, limit: int | None = None, offset: int | None = None) -> dict[str, Any]:
        limit, offset = paging(limit, offset)
        rows = self._snapshot.namespaces
        return {"namespaces": [self._namespace(r) for r in rows[offset:offset + limit]], "totalCount": len(rows)}

    def get_namespace(self, name: str) -> dict[str, Any]:
        snap = self._snapshot
        for row in snap.namespaces:
            if row["name"] == name:
                return self._namespace(row)
        if name in snap.curation.hidden_namespaces:  # deleted: Marquez still answers it, isHidden true
            return self._namespace(snap.curation.hidden_namespaces[name])
        raise NotFound(f"Namespace '{name}' not found.")

    def _require_namespace(self, name: str) -> None:
        self.get_namespace(name)

    # -- datasets ------------------------------------------------------------------------------

    def _dataset_entry(self, namespace: str, name: str) -> dict[str, Any]:
        snap = self._snapshot
        entry = snap.datasets.get((namespace, name)) or snap.curation.deleted_datasets.get((namespace, name))
        if entry is None and (namespace, name) in snap.symlinks:  # a symlink no event names: its main dataset
            entry = snap.datasets.get(snap.symlinks[(namespace, name)])
        if entry is None:
            raise NotFound(f"Dataset '{name}' not found in namespace '{namespace}'.")
        return entry

    def _dataset(self, entry: dict[str, Any]) -> dict[str, Any]:
        snap = self._snapshot
        facets = dataset_facets(snap, entry["uuid"])
        fields = snap.schema_fields.get(entry["schemaVersion"], []) if entry["schemaVersion"] else []
        return {
            "id": {"namespace": entry["namespace"], "name": entry["name"]},
            "type": "DB_TABLE",
            "name": entry["name"],
            "physicalName": entry["name"],
            "createdAt": entry["createdAt"],
            "updatedAt": entry["updatedAt"],
            "namespace": entry["namespace"],
            "sourceName": (facets.get("dataSource") or {}).get("name"),
            "fields": tagged_fields(snap, entry["namespace"], entry["name"], fields, facets),
            "tags": merged_tags(snap, "dataset", entry["namespace"], entry["name"], tag_names(facets)),
            "lastModifiedAt": entry["lastModifiedAt"],
            "lastLifecycleState": (facets.get("lifecycleStateChange") or {}).get("lifecycleStateChange"),
            "description": (facets.get("documentation") or {}).get("description"),
            "currentVersion": entry["currentVersion"],
            "columnLineage": dataset_column_lineage(snap.column_lineage.get((entry["namespace"], entry["name"]), [])),
            "facets": facets,
            "deleted": entry.get("deleted", False),
        }

    def get_dataset(self, namespace: str, name: str) -> dict[str, Any]:
        return self._dataset(self._dataset_entry(namespace, name))

    def list_datasets(self, namespace: str, limit: int | None = None, offset: int | None = None) -> dict[str, Any]:
        limit, offset = paging(limit, offset)
        self._require_namespace(namespace)
        names = sorted(n for (ns, n) in self._snapshot.datasets if ns == namespace)
        page = [self.get_dataset(namespace, n) for n in names[offset:offset + limit]]
        return {"datasets": page, "totalCount": len(names)}

    def _version(self, entry: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
        snap = self._snapshot
        facets = dataset_facets(snap, entry["uuid"])
        run = self._run_by_id(row["run_uuid"]) if row["run_uuid"] else None
        return {
            "id": {"namespace": entry["namespace"], "name": entry["name"], "version": row["version"]},
            "type": "DB_TABLE",
            "name": entry["name"],
            "physicalName": entry["name"],
            "createdAt": iso(row["created_at"]),
            "version": row["version"],
            "namespace": entry["namespace"],
            "sourceName": (facets.get("dataSource") or {}).get("name"),
            "schemaVersion": row["dataset_schema_version_uuid"],
            "fields": snap.schema_fields.get(row["dataset_schema_version_uuid"], []),
            "tags": [],
            "lifecycleState": None,
            "description": (facets.get("documentation") or {}).get("description"),
            "createdByRun": run,
            "facets": {},
        }

    def list_dataset_versions(
        self, namespace: str, name: str, limit: int | None = None, offset: int | None = None
    ) -> dict[str, Any]:
        limit, offset = paging(limit, offset)
        entry = self._dataset_entry(namespace, name)
        versions = self._snapshot.versions
        if versions is None:
            return {"versions": [], "totalCount": 0}
        rows = versions.rows(entry["uuid"], offset, limit)
        return {"versions": [self._version(entry, r) for r in rows], "totalCount": versions.count(entry["uuid"])}

    def get_dataset_version(self, namespace: str, name: str, version: str) -> dict[str, Any]:
        entry = self._dataset_entry(namespace, name)
        snap = self._snapshot
        found = snap.version_index.get(version.lower())
        if found is None or found[0] != entry["uuid"] or snap.versions is None:
            raise NotFound(f"Dataset version '{version}' not found for dataset '{name}' in namespace '{namespace}'.")
        row = snap.versions.row(found[1])
        return self._version(entry, row)

    # -- jobs and runs -------------------------------------------------------------------------

    def _job_entry(self, namespace: str, name: str) -> dict[str, Any]:
        entry = self._snapshot.jobs.get((namespace, name))
        if entry is None:
            raise NotFound(f"Job '{name}' not found in namespace '{namespace}'.")
        return entry

    def _job(self, entry: dict[str, Any]) -> dict[str, Any]:
        snap = self._snapshot
        node = job_node_id(entry["namespace"], entry["name"])
        facets = job_facets(snap, entry["uuid"])
        latest_run, latest_runs = self._latest_runs(entry)

        def ids(datasets: set[str]) -> list[dict[str, str]]:
            refs = sorted((r.namespace, r.name) for r in (parse_node_id(d, self._namespaces()) for d in datasets))
            return [{"namespace": namespace, "name": name} for namespace, name in refs]

        return {
            "id": {"namespace": entry["namespace"], "name": entry["name"]},
            "type": job_type(facets),
            "name": entry["name"],
            "simpleName": entry["name"],
            "createdAt": entry["createdAt"],
            "updatedAt": self._job_updated_at(entry),
            "namespace": entry["namespace"],
            "inputs": ids(snap.graph.inputs.get(node, set())),
            "outputs": ids(snap.graph.outputs.get(node, set())),
            "location": (facets.get("sourceCodeLocation") or {}).get("url"),
            "description": (facets.get("documentation") or {}).get("description"),
            "latestRun": latest_run,
            "latestRuns": latest_runs,
            "facets": facets,
            "tags": merged_tags(snap, "job", entry["namespace"], entry["name"], tag_names(facets)),
            **self._job_version_fields(entry),
        }

    def _latest_runs(self, entry: dict[str, Any]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """A job's ``latestRun`` (with its current facets) and ``latestRuns`` (its newest runs)."""
        snap = self._snapshot
        rows = snap.runs.rows(entry["uuid"], 0, LATEST_RUNS) if snap.runs else []
        io = self._page_io([r["uuid"] for r in rows])
        runs = [self._run(r, io=io.get(r["uuid"], [])) for r in rows]
        if not rows:
            return None, runs
        return self._run(rows[0], latest_run_facets(snap, rows[0]["uuid"]), io.get(rows[0]["uuid"], [])), runs

    def _job_updated_at(self, entry: dict[str, Any]) -> str | None:
        updated = self._snapshot.job_updated_at.get(entry["uuid"])
        return iso(updated) if updated is not None else entry["createdAt"]

    def _job_updated_moment(self, entry: dict[str, Any]) -> datetime:
        """For sorting: ISO texts with and without fractions of a second do not sort as their times."""
        text = self._job_updated_at(entry)
        return moment(text) if text else datetime.min.replace(tzinfo=UTC)

    def _last_run_state(self, entry: dict[str, Any]) -> str | None:
        snap = self._snapshot
        latest = snap.runs.rows(entry["uuid"], 0, 1) if snap.runs else []
        return RUN_STATES.get(latest[0]["current_run_state"] or "", "NEW") if latest else None

    def _namespaces(self) -> list[str]:
        return [n["name"] for n in self._snapshot.namespaces]

    def get_job(self, namespace: str, name: str) -> dict[str, Any]:
        return self._job(self._job_entry(namespace, name))

    def list_jobs(self, namespace: str | None, limit: int | None = None, offset: int | None = None,
                  last_run_states: list[str] | None = None) -> dict[str, Any]:
        """One namespace's jobs, or every job when ``namespace`` is None (``GET /api/v1/jobs``); newest
        update first, as Marquez; ``last_run_states`` keeps the jobs whose latest run is in one of them."""
        limit, offset = paging(limit, offset)
        if namespace is not None:
            self._require_namespace(namespace)
        states = run_states(last_run_states or [])
        entries = [e for (ns, _), e in self._snapshot.jobs.items() if namespace is None or ns == namespace]
        if states is not None:
            entries = [e for e in entries if self._last_run_state(e) in states]
        entries.sort(key=lambda e: (e["namespace"], e["name"]))
        entries.sort(key=self._job_updated_moment, reverse=True)
        return {"jobs": [self._job(e) for e in entries[offset:offset + limit]], "totalCount": len(entries)}

    def _run(
        self, row: dict[str, Any], facets: dict[str, Any] | None = None, io: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        snap = self._snapshot
        if io is None:
            io = snap.run_io.rows(row["uuid"]) if snap.run_io else []

        def versions(kind: str) -> list[dict[str, str]]:
            return [{"namespace": r["namespace_name"], "name": r["name"], "version": r["dataset_version_uuid"]}
                    for r in io if r["io_type"] == kind]

        return {
            "id": row["uuid"],
            "createdAt": iso(row["created_at"]),
            "updatedAt": iso(row["updated_at"]),
            # A run with only OTHER events has no state yet: Marquez's NEW.
            "state": RUN_STATES.get(row["current_run_state"] or "", "NEW"),
            "startedAt": iso(row["started_at"]),
            "endedAt": iso(row["ended_at"]),
            "durationMs": duration_ms(row),
            "args": {},
            "inputVersions": versions("input"),
            "outputVersions": versions("output"),
            "context": {},
            "facets": facets if facets is not None else {},
            **self._run_version_fields(row["uuid"], io),
        }

    def _run_by_id(self, run_id: str) -> dict[str, Any] | None:
        snap = self._snapshot
        found = snap.run_index.get(run_id.lower())
        if found is None or snap.runs is None:
            return None
        return self._run(snap.runs.row(found[1]))

    def list_job_runs(
        self, namespace: str, job: str, limit: int | None = None, offset: int | None = None
    ) -> dict[str, Any]:
        limit, offset = paging(limit, offset)
        entry = self._job_entry(namespace, job)
        snap = self._snapshot
        rows = snap.runs.rows(entry["uuid"], offset, limit) if snap.runs else []
        total = snap.runs.count(entry["uuid"]) if snap.runs else 0
        io = self._page_io([r["uuid"] for r in rows])
        return {"runs": [self._run(r, io=io.get(r["uuid"], [])) for r in rows], "totalCount": total}

    def _page_io(self, run_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
        """The inputs and outputs of a page of one job's runs: one contiguous slice of ``run_io``."""
        run_io = self._snapshot.run_io
        return run_io.rows_of(run_ids) if run_io is not None else {}

    def job_of_run(self, run_id: str) -> tuple[str, str] | None:
        """The (namespace, name) of a run's job; None for a run the API does not know."""
        snap = self._snapshot
        found = snap.run_index.get(run_id.lower())
        if found is None:
            return None
        history = snap.version_state.histories.get(found[0])
        if history is not None:
            return history.namespace, history.name
        for entry in snap.jobs.values():  # a run the live overlay holds, not the build yet
            if entry["uuid"] == found[0]:
                return entry["namespace"], entry["name"]
        return None

    def get_run(self, run_id: str) -> dict[str, Any]:
        snap = self._snapshot
        found = snap.run_index.get(run_id.lower())
        if found is None or snap.runs is None:
            raise NotFound(f"Run '{run_id}' not found.")
        row = snap.runs.row(found[1])
        # A run only pending events know has no facets in the warehouse yet: no Spark query.
        return self._run(row, {} if row.get("live_only") else self._run_facets(row["uuid"]))

    def run_facets(self, run_id: str, kind: str | None = None) -> dict[str, Any]:
        """Marquez's GET /api/v1/jobs/runs/{id}/facets?type=run|job: the run's facets, or the job
        facets its events carried."""
        kind = (kind or "run").lower()
        if kind not in FACET_KINDS:
            raise BadRequest(f"type must be run or job, not '{kind}'")
        found = self._snapshot.run_index.get(run_id.lower())
        if found is None:
            raise NotFound(f"Run '{run_id}' not found.")
        run_uuid = run_id.lower()
        facets = self._run_facets(run_uuid) if kind == "run" else self._job_facets_of_run(run_uuid)
        return {"runId": run_uuid, "facets": facets}

    def _job_facets_of_run(self, run_uuid: str) -> dict[str, Any]:
        """The job facets of one run's events, the later event's body winning per name."""
        table = self.settings.table("lineage", "job_facets")
        with self._spark_lock:
            if not self.spark.catalog.tableExists(table):
                return {}
            rows = self.spark.sql(
                f"select facet from {table} where run_id = :run order by lineage_event_time, job_facet_key",
                args={"run": run_uuid},
            ).collect()
        merged: dict[str, Any] = {}
        for row in rows:
            merged.update(json.loads(row.facet) if row.facet else {})
        return merged

    def _run_facets(self, run_uuid: str) -> dict[str, Any]:
        """One run's current facets: a filter on the bucketed winners' key (one bucket read)."""
        table = self.settings.table("lineage", "current_run_facets")
        with self._spark_lock:
            rows = self.spark.sql(f"select facets from {table} where run_id = :run", args={"run": run_uuid}).collect()
        return json.loads(rows[0].facets) if rows and rows[0].facets else {}

    # -- tags and stats ------------------------------------------------------------------------

    def list_tags(self, limit: int | None = None, offset: int | None = None) -> dict[str, Any]:
        """Marquez's GET /api/v1/tags: the tags put or used through the API and those the jobs' and
        datasets' ``tags`` facets name, by name."""
        limit, offset = paging(limit, offset)
        snap = self._snapshot
        names = {t for e in snap.jobs.values() for t in tag_names(job_facets(snap, e["uuid"]))}
        names |= {t for e in snap.datasets.values() for t in tag_names(dataset_facets(snap, e["uuid"]))}
        return {"tags": tag_list(snap, names)[offset:offset + limit]}

    def stats(self, asset: str, period: str | None, timezone: str | None,
              now: datetime | None = None) -> list[dict[str, Any]]:
        """Marquez's GET /api/v1/stats/{lineage-events,jobs,datasets,sources}?period=DAY|WEEK&timezone=."""
        if asset not in STATS_ASSETS:
            raise NotFound(f"No stats for '{asset}'.")
        if asset == "lineage-events" and (period or "").upper() == "WEEK" and not timezone:
            raise BadRequest("Timezone must be specified for period 'WEEK'")
        try:
            spans = intervals(period, timezone, now or datetime.now(UTC))
        except StatsError as error:
            raise BadRequest(str(error)) from error
        snap = self._snapshot
        if asset == "lineage-events":
            events = snap.events
            pairs = [] if events is None else zip(events.column("event_time").to_pylist(),
                                                  events.column("event_type").to_pylist(), strict=True)
            return event_counts(pairs, spans)
        return running_counts((moment(text) for text in self._created(asset) if text), spans)

    def _created(self, asset: str) -> list[str | None]:
        """When each job, dataset or source (a ``dataSource`` facet's name) first appeared."""
        snap = self._snapshot
        if asset == "jobs":
            return [e["createdAt"] for e in snap.jobs.values()]
        if asset == "datasets":
            return [e["createdAt"] for e in snap.datasets.values()]
        return [source["createdAt"] for source in self._sources()]

    # -- sources -------------------------------------------------------------------------------

    def _sources(self) -> list[dict[str, Any]]:
        """Computed once per snapshot: every dataset's facets are parsed for it."""
        snap = self._snapshot
        if snap.sources is None:
            found = sightings(snap.datasets.values(), lambda uuid: dataset_facets(snap, uuid), moment)
            snap.sources = with_put_sources(sources_of(found), snap.curation.state.sources)
        return snap.sources

    def list_sources(self, limit: int | None = None, offset: int | None = None) -> dict[str, Any]:
        """Marquez's GET /api/v1/sources, by name."""
        limit, offset = paging(limit, offset)
        found = self._sources()
        return {"sources": found[offset:offset + limit], "totalCount": len(found)}

    def get_source(self, name: str) -> dict[str, Any]:
        for source in self._sources():
            if source["name"] == name:
                return source
        raise NotFound(f"Source '{name}' not found.")

    # -- lineage -------------------------------------------------------------------------------

    def node_data(self, node: str) -> dict[str, Any]:
        ref = parse_node_id(node, self._namespaces())
        if ref.kind == "dataset":
            return self.get_dataset(ref.namespace, ref.name)
        return self.get_job(ref.namespace, ref.name)

    def _start_node(self, node_id: str, graph: LineageGraph | None = None, when: str = "") -> str:
        """The graph node a lineage call from ``node_id`` starts at (a symlink's main dataset); 400 for a
        field or a malformed id, 404 for a node not in ``graph`` (the current one, or ``when`` says which)."""
        try:
            ref = parse_node_id(node_id, self._namespaces())
        except ValueError as error:
            raise BadRequest(str(error)) from error
        if ref.kind == "datasetField":
            raise BadRequest(f"Invalid nodeId '{node_id}': the lineage graph has dataset and job nodes")
        main = self._snapshot.symlinks.get((ref.namespace, ref.name)) if ref.kind == "dataset" else None
        node = dataset_node_id(*main) if main is not None else ref.node_id  # a symlink's graph is its main's
        if node not in (graph or self.graph).nodes:
            kind = "Dataset" if ref.kind == "dataset" else "Job"
            raise NotFound(f"{kind} '{ref.name}' not found in namespace '{ref.namespace}'{when}.")
        return node

    def _lineage_nodes(self, node_id: str | None, depth: int | None, direction: Direction) -> set[str]:
        depth = DEFAULT_DEPTH if depth is None else depth
        if depth < 0:
            raise BadRequest("depth must be greater than or equal to 0")
        if node_id is None:
            return set(self.graph.nodes)
        return self._walk(self.graph, self._start_node(node_id), depth, direction)

    def lineage(self, node_id: str | None, depth: int | None = None, direction: Direction = "both") -> dict[str, Any]:
        """Marquez's GET /api/v1/lineage; ``node_id`` None gives the whole graph."""
        return lineage_response(self.graph, self._lineage_nodes(node_id, depth, direction), self.node_data)

    def lineage_json(self, node_id: str | None, depth: int | None = None, direction: Direction = "both") -> str:
        """``lineage`` as JSON text, each node's data serialized once per snapshot."""
        snap = self._snapshot
        nodes = self._lineage_nodes(node_id, depth, direction)

        def node_json(node: str) -> str:
            text = snap.node_json.get(node)
            if text is None:
                text = json.dumps(self.node_data(node), ensure_ascii=False, separators=(",", ":"))
                snap.node_json[node] = text
            return text

        return lineage_response_json(snap.graph, nodes, node_json)

    # -- column lineage ------------------------------------------------------------------------

    def column_lineage(self, node_id: str, depth: int | None = None, with_downstream: bool = False) -> dict[str, Any]:
        """Marquez's GET /api/v1/column-lineage: DATASET_FIELD nodes, edges from input field to
        output field, upstream to ``depth`` (and downstream with ``withDownstream``)."""
        depth = DEFAULT_DEPTH if depth is None else depth
        try:
            ref = parse_node_id(node_id, self._namespaces())
        except ValueError as error:
            raise BadRequest(str(error)) from error
        snap = self._snapshot
        if ref.kind == "job":
            node = self._start_node(ref.node_id)
            starts = {(ds.namespace, ds.name, row["output_field"])
                      for ds in (parse_node_id(d, self._namespaces()) for d in self.graph.outputs.get(node, set()))
                      for row in snap.column_lineage.get((ds.namespace, ds.name), [])}
        elif ref.kind == "dataset":
            self._dataset_entry(ref.namespace, ref.name)
            starts = {(ref.namespace, ref.name, row["output_field"])
                      for row in snap.column_lineage.get((ref.namespace, ref.name), [])}
            starts |= {key for key in snap.column_readers if key[:2] == (ref.namespace, ref.name)}
        else:
            self._dataset_entry(ref.namespace, ref.name)
            starts = {(ref.namespace, ref.name, ref.field or "")}
        fields = self._walk_fields(starts, depth, with_downstream)
        return {"graph": [self._field_node(f, fields) for f in sorted(fields)]}

    def _field_inputs(self, key: tuple[str, str, str]) -> list[dict[str, Any]]:
        return [row for row in self._snapshot.column_lineage.get(key[:2], []) if row["output_field"] == key[2]]

    def _walk_fields(
        self, starts: set[tuple[str, str, str]], depth: int, downstream: bool
    ) -> set[tuple[str, str, str]]:
        seen = set(starts)
        queue = deque((key, 0) for key in starts)
        while queue:
            key, level = queue.popleft()
            if level >= depth:
                continue
            nexts = {(r["input_namespace"], r["input_dataset"], r["input_field"]) for r in self._field_inputs(key)
                     if r["input_namespace"] is not None}
            if downstream:
                nexts |= self._snapshot.column_readers.get(key, set())
            for nxt in nexts - seen:
                seen.add(nxt)
                queue.append((nxt, level + 1))
        return seen

    def _field_node(self, key: tuple[str, str, str], chosen: set[tuple[str, str, str]]) -> dict[str, Any]:
        namespace, dataset, field_name = key
        snap = self._snapshot
        entry = snap.datasets.get((namespace, dataset))
        field_type = None
        if entry and entry["schemaVersion"]:
            field_type = next((f["type"] for f in snap.schema_fields.get(entry["schemaVersion"], [])
                               if f["name"] == field_name), None)
        inputs = self._field_inputs(key)
        node_id = f"datasetField:{namespace}:{dataset}:{field_name}"

        def input_id(row: dict[str, Any]) -> str:
            return f"datasetField:{row['input_namespace']}:{row['input_dataset']}:{row['input_field']}"

        readers = sorted(snap.column_readers.get(key, set()) & chosen)
        first = inputs[0] if inputs else {}
        return {
            "id": node_id,
            "type": "DATASET_FIELD",
            "data": {
                "namespace": namespace,
                "dataset": dataset,
                "datasetVersion": first.get("output_dataset_version_uuid"),
                "field": field_name,
                "fieldType": field_type,
                "transformationDescription": first.get("transformation_description"),
                "transformationType": first.get("transformation_type"),
                "inputFields": [
                    {"namespace": r["input_namespace"], "dataset": r["input_dataset"], "datasetVersion": None,
                     "field": r["input_field"], "transformationDescription": r["transformation_description"],
                     "transformationType": r["transformation_type"],
                     "transformations": [{k: v for k, v in t.items()} for t in (r["transformations"] or [])]}
                    for r in inputs
                ],
            },
            "inEdges": [{"origin": input_id(r), "destination": node_id} for r in inputs
                        if r["input_namespace"] is not None
                        and (r["input_namespace"], r["input_dataset"], r["input_field"]) in chosen],
            "outEdges": [{"origin": node_id, "destination": f"datasetField:{ns}:{ds}:{fl}"} for ns, ds, fl in readers],
        }

    # -- search and events ---------------------------------------------------------------------

    def search(self, q: str, filter_: str | None = None, sort: str | None = None,
               limit: int | None = None, namespace: str | None = None) -> dict[str, Any]:
        limit, _ = paging(limit, 0, DEFAULT_SEARCH_LIMIT)
        if not q:
            raise BadRequest("query must not be empty")
        kind = (filter_ or "").upper() or None
        if kind not in (None, "DATASET", "JOB"):
            raise BadRequest(f"filter must be DATASET or JOB, not '{filter_}'")
        pattern = LikeMatcher(q)
        snap = self._snapshot
        results = []
        if kind in (None, "DATASET"):
            results += [{"type": "DATASET", "name": e["name"], "updatedAt": e["updatedAt"], "namespace": e["namespace"],
                         "nodeId": dataset_node_id(e["namespace"], e["name"])}
                        for e in snap.datasets.values() if pattern.search(e["name"])]
        if kind in (None, "JOB"):
            for e in snap.jobs.values():
                if pattern.search(e["name"]):
                    latest = snap.runs.rows(e["uuid"], 0, 1) if snap.runs else []
                    updated = iso(latest[0]["updated_at"]) if latest else e["createdAt"]
                    results.append({"type": "JOB", "name": e["name"], "updatedAt": updated,
                                    "namespace": e["namespace"], "nodeId": job_node_id(e["namespace"], e["name"])})
        if namespace:
            results = [r for r in results if r["namespace"] == namespace]
        if (sort or "name").lower() == "updated_at":
            results.sort(key=lambda r: (r["updatedAt"] or "", r["name"]), reverse=True)
        else:
            results.sort(key=lambda r: (r["name"], r["namespace"], r["type"]))
        return {"totalCount": len(results), "results": results[:limit]}

    def list_events(self, namespace: str | None = None, limit: int | None = None, offset: int | None = None,
                    before: str | None = None, after: str | None = None,
                    sort_direction: str = "desc") -> dict[str, Any]:
        """Marquez's GET /api/v1/events/lineage: the stored OpenLineage events, newest first. The
        page is picked from the in-memory (event time, ingest_seq) index, then read by ingest_seq
        and block, so Spark opens only the blocks the page lies in."""
        limit, offset = paging(limit, offset)
        events = self._snapshot.events
        if events is None:
            return {"events": [], "totalCount": 0}
        if namespace is not None:
            events = events.filter(pc.equal(events.column("job_namespace"), namespace))
        times = events.column("event_time")
        if before:
            events = events.filter(pc.less(times, pa.scalar(moment(before), type=times.type)))
            times = events.column("event_time")
        if after:  # inclusive, as Marquez's (before is exclusive)
            events = events.filter(pc.greater_equal(times, pa.scalar(moment(after), type=times.type)))
        if sort_direction.lower() == "asc":
            events = events.sort_by([("event_time", "ascending"), ("ingest_seq", "ascending")])
        page = events.slice(offset, limit)
        seqs = page.column("ingest_seq").to_pylist()
        if not seqs:
            return {"events": [], "totalCount": events.num_rows}
        blocks = sorted(set(page.column("ingest_block").to_pylist()))
        raw = self.settings.table("raw", "lineage_events")
        with self._spark_lock:
            rows = self.spark.sql(
                f"select ingest_seq, event_json from {raw} where ingest_block in ({', '.join(map(str, blocks))}) "
                f"and ingest_seq in ({', '.join(map(str, seqs))})"
            ).collect()
        by_seq = {r.ingest_seq: r.event_json for r in rows}
        return {"events": [stored_event(by_seq[s]) for s in seqs if s in by_seq], "totalCount": events.num_rows}


def stored_event(text: str) -> Any:
    """A stored event's body. Ingest before trailing text was refused stored a line such as
    ``ev1 ev2`` whole, after validating its first value: that value is the event the row holds."""
    try:
        return json.loads(text)
    except ValueError:
        return json.JSONDecoder().raw_decode(text.lstrip(" \t\r\n"))[0]


def lineage_page_inputs(
    api: MarquezReadApi, node_id: str | None, depth: int, direction: Direction = "both", as_of: str | None = None
) -> tuple[dict, dict]:
    """What ``render_lineage_page`` draws: Marquez's lineage body for ``node_id`` (the whole graph
    when None), as of ``as_of`` when given, and, per node, the details a click shows."""
    graph = api.lineage(node_id, depth, direction) if not as_of else api.lineage_as_of(node_id, depth, as_of, direction)
    snap = api.snapshot
    details: dict[str, dict] = {}
    for node in graph["graph"]:
        data = node["data"]
        if node["type"] == "DATASET":
            entry = snap.datasets[(data["namespace"], data["name"])]
            details[node["id"]] = {
                "fields": [{"name": f["name"], "type": f["type"], "description": f["description"]}
                           for f in data["fields"]],
                "schemaVersions": [
                    {"id": v["id"], "createdAt": v["createdAt"],
                     "fields": [{"name": f["name"], "type": f["type"], "description": f["description"]}
                                for f in v["fields"]]}
                    for v in snap.schema_versions.get(entry["uuid"], [])
                ],
                "facets": data["facets"],
            }
        else:
            runs = api.list_job_runs(data["namespace"], data["name"], limit=10)["runs"]
            details[node["id"]] = {"latestRuns": [
                {k: run[k] for k in ("id", "state", "startedAt", "endedAt", "durationMs")} for run in runs
            ]}
    return graph, details

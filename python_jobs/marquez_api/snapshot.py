"""What the read API holds in memory between builds, loaded from the warehouse in one pass.

Everything a hot endpoint needs (datasets, jobs, the graph, runs per job, versions per dataset,
run inputs and outputs) is read once per build into Python structures and Arrow tables sorted
so that one entity's rows are a contiguous slice: a request slices, it does not scan. Facet
bodies of datasets and jobs are kept as JSON text and parsed on first use.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

from python_jobs.marquez_api.columns import as_references, encode_repeated, single_chunk
from python_jobs.marquez_api.curation import CuratedView
from python_jobs.marquez_api.dataset_versions import KEPT as VERSIONS_KEPT
from python_jobs.marquez_api.dataset_versions import load_versions
from python_jobs.marquez_api.graph import LineageGraph, dataset_node_id, job_node_id
from python_jobs.marquez_api.job_versions import add_version_edges
from python_jobs.marquez_api.key_index import RowIndex
from python_jobs.marquez_api.latest_run_facets import LatestRunFacets, load_latest_run_facets
from python_jobs.marquez_api.run_details import RunDetails, load_run_details
from python_jobs.marquez_api.run_io import KEPT as RUN_IO_KEPT
from python_jobs.marquez_api.run_io import load_run_io
from python_jobs.marquez_api.run_summaries import RunSummaries, load_run_summaries, split_state_keys
from python_jobs.marquez_api.schema_versions import SchemaVersions, load_schema_versions
from python_jobs.marquez_api.slices import Slices, nulls_last, runs_of, slices_by
from python_jobs.marquez_api.stored_events import StoredEvents, load_stored_events
from python_jobs.marquez_api.symlinks import merged_aliases, symlink_targets
from python_jobs.marquez_api.tails import KeptColumns, split_kept, timeline_changes
from python_jobs.marquez_api.version_loading import VersionState, columnar_version_state
from python_jobs.marquez_api.warehouse_listing import SETTLE_SECONDS, WarehouseListing, list_warehouse
from python_jobs.marquez_api.watermarks import Watermark
from python_jobs.settings import Settings

# OpenLineage event types → Marquez's run states (Marquez's RunState enum).
RUN_STATES = {"START": "RUNNING", "RUNNING": "RUNNING", "COMPLETE": "COMPLETED", "FAIL": "FAILED",
              "ABORT": "ABORTED"}


def iso(moment: datetime | None) -> str | None:
    """Marquez's timestamp text: ISO-8601 in UTC with a Z."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


@dataclass
class Snapshot:
    namespaces: list[dict[str, Any]] = field(default_factory=list)
    datasets: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    jobs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    dataset_facet_text: dict[str, str] = field(default_factory=dict)
    job_facet_text: dict[str, str] = field(default_factory=dict)
    schema_fields: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    schema_versions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # The schema versions and fields with the mark they are complete through, for the next load (schema_versions.py).
    kept_schemas: SchemaVersions | None = None
    graph: LineageGraph = field(default_factory=LineageGraph)
    runs: Slices | None = None
    run_index: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    run_io: Slices | None = None
    versions: Slices | None = None
    version_index: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    column_lineage: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    column_readers: dict[tuple[str, str, str], set[tuple[str, str, str]]] = field(default_factory=dict)
    events: pa.Table | None = None
    # The events' index with the raw files it was read from, for the next load to extend (stored_events.py).
    stored_events: StoredEvents | None = None
    # Per job: the newest ``updated_at`` of its runs; the current facets of its latest run.
    job_updated_at: dict[str, datetime] = field(default_factory=dict)
    latest_facets: LatestRunFacets = field(default_factory=LatestRunFacets)  # kept between refreshes
    loaded_at: str = ""
    parsed_facets: dict[str, dict[str, Any]] = field(default_factory=dict)
    sources: list[dict[str, Any]] | None = None  # Marquez's sources, computed on first use
    node_json: dict[str, str] = field(default_factory=dict)
    # The API's writes (tags, deletes) as this snapshot shows them: see curated.py.
    curation: CuratedView = field(default_factory=CuratedView)
    version_state: VersionState = field(default_factory=VersionState)
    # symlink (namespace, name) → its main dataset's, from the datasets' ``symlinks`` facets (symlinks.py).
    symlinks: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    symlink_aliases: dict[tuple[str, str], list[tuple[str, str]]] = field(default_factory=dict)  # main → symlinks
    # Per run, the facet values job versions need, kept for the next load to extend (run_details.py).
    run_details: RunDetails | None = None
    # What the next load needs to extend the runs by the run events past a mark (run_summaries.py).
    run_summaries: RunSummaries | None = None
    # What the next load needs to extend the runs' inputs and outputs and the dataset versions by the builds
    # past a mark (run_io.py, dataset_versions.py), and the mark (tails.py).
    kept_run_io: KeptColumns | None = None
    kept_versions: KeptColumns | None = None
    timeline_watermark: Watermark | None = None
    # The files of the layers it was loaded from, listed before it was (None: its tables did not all exist).
    inputs: WarehouseListing | None = None
    # Seconds each part of the load took, in load order: where a refresh's time goes as history grows.
    load_seconds: dict[str, float] = field(default_factory=dict)


class Laps:
    """Records the seconds since the previous lap under a part's name (a part may lap more than once)."""

    def __init__(self, into: dict[str, float]) -> None:
        self.seconds = into
        self._last = time.perf_counter()

    def lap(self, part: str) -> None:
        now = time.perf_counter()
        self.seconds[part] = self.seconds.get(part, 0.0) + now - self._last
        self._last = now


def describe_laps(seconds: Mapping[str, float], parts: int = 4) -> str:
    """``"12.3 s (runs 5.1, versions 3.2, ...)"``: the total and the slowest parts, slowest first."""
    slowest = sorted(seconds.items(), key=lambda item: (-item[1], item[0]))[:parts]
    return f"{sum(seconds.values()):.1f} s (" + ", ".join(f"{name} {value:.1f}" for name, value in slowest) + ")"


def _facets(text: str | None) -> dict[str, Any]:
    return json.loads(text) if text else {}


# A job's runs, newest first: Marquez's ``started_at desc nulls last``, then creation and id.
RUN_ORDER = [("started_at", "descending"), ("created_at", "descending"), ("uuid", "ascending")]

REQUIRED_TABLES = (
    "namespaces", "datasets", "jobs", "runs", "dataset_versions", "dataset_fields", "dataset_schema_versions",
    "dataset_schema_versions_field_mapping", "runs_input_mapping", "runs_output_mapping", "column_lineage",
    "current_dataset_facets", "current_job_facets",
)
# What the runs' inputs and outputs and the dataset versions are read from (run_io.py, dataset_versions.py): the
# live revisions behind the views.
REQUIRED_STAGING = ("int_lineage_dataset_sightings", "int_lineage_dataset_versions", "int_lineage_build_tails",
                    "int_lineage_version_revisions", "int_lineage_dataset_version_schemas")


def missing_tables(spark: SparkSession, settings: Settings) -> list[str]:
    names = [settings.table("lineage", t) for t in REQUIRED_TABLES] + [settings.table("raw", "lineage_events")]
    names += [settings.table("staging", t) for t in REQUIRED_STAGING]
    return [name for name in names if not spark.catalog.tableExists(name)]


def load_snapshot(spark: SparkSession, settings: Settings, previous: Snapshot | None = None,
                  settle_seconds: float = SETTLE_SECONDS) -> Snapshot:
    """The whole snapshot; an empty one while the warehouse has not been built yet. ``previous``: the snapshot
    this one replaces, whose runs and run details it extends rather than reads again, and which it is when
    no file of the warehouse changed since it was loaded (warehouse_listing.py)."""
    snap = Snapshot(loaded_at=iso(datetime.now(UTC)) or "")
    laps = Laps(snap.load_seconds)
    inputs = list_warehouse(spark, settings)
    if previous is not None and inputs.unchanged_since(previous.inputs, settle_seconds):
        laps.lap("unchanged warehouse")
        return replace(previous, load_seconds=snap.load_seconds)
    laps.lap("warehouse listing")
    lineage = settings.schema("lineage")
    raw = settings.table("raw", "lineage_events")
    if missing_tables(spark, settings):
        return snap
    snap.inputs = inputs

    for row in spark.sql(f"select name, created_at from {lineage}.namespaces order by name").collect():
        snap.namespaces.append({"name": row.name, "createdAt": iso(row.created_at)})

    snap.kept_schemas = load_schema_versions(spark, settings, previous.kept_schemas if previous is not None else None)
    snap.schema_fields = snap.kept_schemas.fields
    snap.schema_versions = snap.kept_schemas.by_dataset(iso)
    laps.lap("namespaces and schemas")

    kept_runs = (previous.runs.table, previous.run_summaries) if (
        previous is not None and previous.runs is not None and previous.run_summaries is not None) else None
    runs, summaries = load_run_summaries(spark, settings, kept_runs)
    del kept_runs
    laps.lap("runs")
    # Read before the runs are sorted and compacted: in the other order the process kept about 170 MiB more of
    # the memory the load freed (582 against 413 MiB of RSS growth at 1M), with the same live Arrow memory.
    kept = _kept_timeline_rows(previous)
    changes = timeline_changes(spark, settings, previous.timeline_watermark if kept and previous else None)
    snap.timeline_watermark = changes.watermark
    run_io, io_read = load_run_io(spark, settings, changes, kept[0] if kept else None)
    laps.lap("runs' inputs and outputs")
    sorted_runs = slices_by(runs, "job_uuid", RUN_ORDER)
    del runs  # the sorted copy replaces it
    runs_table, snap.run_summaries = split_state_keys(sorted_runs.table, summaries)
    sorted_runs = sorted_runs.with_table(runs_table)
    del runs_table
    run_jobs = sorted_runs.table.column("job_uuid")
    snap.runs, run_uuids = _compact_runs(sorted_runs)
    del sorted_runs
    snap.run_index = RowIndex(snap.runs.table, "uuid", "job_uuid")
    laps.lap("runs")

    sorted_io = _io_in_run_order(run_io, run_uuids, run_jobs)
    del run_io, run_jobs
    io_table, snap.kept_run_io = split_kept(sorted_io.table, RUN_IO_KEPT, io_read)
    sorted_io = sorted_io.with_table(io_table)
    del io_table
    snap.run_io = sorted_io.with_table(as_references(
        encode_repeated(sorted_io.table, ("io_type", "namespace_name", "name", "job_uuid")), "run_uuid", run_uuids))
    laps.lap("runs' inputs and outputs")

    version_rows, versions_read = load_versions(spark, settings, changes, kept[1] if kept else None)
    del kept
    versions = slices_by(_with_run_columns(version_rows, snap.runs.table, run_uuids), "dataset_uuid",
                         [("created_at", "descending"), ("version", "ascending")])
    del version_rows
    version_table, snap.kept_versions = split_kept(versions.table, VERSIONS_KEPT, versions_read)
    version_table, version_keys = single_chunk(version_table, "version")
    snap.versions = versions = versions.with_table(as_references(encode_repeated(
        version_table, ("dataset_uuid", "dataset_schema_version_uuid", "run_state")), "run_uuid", run_uuids))
    snap.run_io = snap.run_io.with_table(as_references(snap.run_io.table, "dataset_version_uuid", version_keys))
    snap.version_index = RowIndex(versions.table, "version", "dataset_uuid")
    current = _current_versions(versions)
    laps.lap("dataset versions")

    facet_texts = {r.dataset_uuid: r.facets for r in spark.sql(
        f"select dataset_uuid, facets from {lineage}.current_dataset_facets").collect()}
    for row in spark.sql(f"select uuid, namespace_name, name, created_at from {lineage}.datasets").collect():
        latest = current.get(row.uuid, {})
        snap.datasets[(row.namespace_name, row.name)] = {
            "uuid": row.uuid, "namespace": row.namespace_name, "name": row.name,
            "createdAt": iso(row.created_at), "updatedAt": iso(latest.get("created_at") or row.created_at),
            "currentVersion": latest.get("version"), "schemaVersion": latest.get("dataset_schema_version_uuid"),
            "lastModifiedAt": iso(latest.get("last_modified_at")),
        }
        snap.dataset_facet_text[row.uuid] = facet_texts.get(row.uuid) or ""
        snap.graph.add_node(dataset_node_id(row.namespace_name, row.name))
    laps.lap("datasets and their facets")

    _load_latest_runs(spark, settings, snap, previous)
    laps.lap("latest runs' facets")

    job_facets = {r.job_uuid: r.facets for r in spark.sql(
        f"select job_uuid, facets from {lineage}.current_job_facets").collect()}
    job_names: dict[str, str] = {}
    for row in spark.sql(f"select uuid, namespace_name, name, created_at from {lineage}.jobs").collect():
        snap.jobs[(row.namespace_name, row.name)] = {
            "uuid": row.uuid, "namespace": row.namespace_name, "name": row.name, "createdAt": iso(row.created_at),
        }
        snap.job_facet_text[row.uuid] = job_facets.get(row.uuid) or ""
        job_names[row.uuid] = job_node_id(row.namespace_name, row.name)
        snap.graph.add_node(job_names[row.uuid])
    laps.lap("jobs and their facets")
    snap.run_details = load_run_details(spark, settings, run_uuids, previous.run_details if previous else None)
    laps.lap("run details")
    snap.version_state = _load_versions(snap)
    laps.lap("job versions")
    # The job → dataset edges: each job's current version (its latest run's inputs and outputs), as
    # Marquez's graph, not every dataset any of its runs ever touched.
    add_version_edges(snap.graph, snap.version_state.histories.values())
    # Only the datasets whose facets name ``symlinks`` are parsed for it.
    linked = [entry for entry in snap.datasets.values() if '"symlinks"' in snap.dataset_facet_text[entry["uuid"]]]
    snap.symlinks = symlink_targets(linked, lambda uuid: dataset_facets(snap, uuid),
                                    lambda entry: entry["updatedAt"] or "")
    for alias, main in sorted(snap.symlinks.items()):
        snap.symlink_aliases.setdefault(main, []).append(alias)
    snap.graph = merged_aliases(snap.graph, snap.symlinks)
    laps.lap("graph and symlinks")

    _load_column_lineage(spark, lineage, snap)
    laps.lap("column lineage")
    snap.stored_events = load_stored_events(spark, raw, previous.stored_events if previous is not None else None)
    snap.events = snap.stored_events.table
    # Arrow keeps freed buffers for reuse; the sorts above left their inputs' behind.
    pa.default_memory_pool().release_unused()
    laps.lap("events")
    return snap


def _kept_timeline_rows(previous: Snapshot | None) -> tuple[tuple[pa.Table, KeptColumns],
                                                             tuple[pa.Table, KeptColumns]] | None:
    """The previous snapshot's runs' inputs and outputs and its versions, with what it kept of them to extend
    both (they are read and extended together, past one mark: tails.py)."""
    if (previous is None or previous.run_io is None or previous.kept_run_io is None or previous.versions is None
            or previous.kept_versions is None):
        return None
    return (previous.run_io.table, previous.kept_run_io), (previous.versions.table, previous.kept_versions)


def _io_in_run_order(run_io: pa.Table, run_uuids: pa.Array, run_jobs: pa.ChunkedArray) -> Slices:
    """The runs' inputs and outputs with their run's job, in the order of the runs (``run_uuids``: job, newest
    first), then by kind, namespace, name and version: a page of a job's runs has its inputs and outputs in one
    contiguous slice. Sorting by the run's row compares one integer where the runs' own keys would compare three
    columns. Rows of a run the runs lack go last."""
    position = pc.index_in(run_io.column("run_uuid"), value_set=run_uuids)
    ordered = run_io.append_column("job_uuid", run_jobs.take(position)).append_column("run_position", position)
    ordered = ordered.sort_by(nulls_last([
        ("run_position", "ascending"), ("run_uuid", "ascending"), ("io_type", "ascending"),
        ("namespace_name", "ascending"), ("name", "ascending"), ("dataset_version_uuid", "ascending"),
    ]))
    return runs_of(ordered.drop_columns(["run_position"]), "run_uuid")


def _compact_runs(runs: Slices) -> tuple[Slices, pa.Array]:
    """The runs with their uuids in one chunk (the dictionary the run references of ``run_io`` and
    ``versions`` share) and their job and state stored once per value."""
    table, uuids = single_chunk(runs.table, "uuid")
    return runs.with_table(encode_repeated(table, ("job_uuid", "current_run_state"))), uuids


def _with_run_columns(versions: pa.Table, runs: pa.Table, run_uuids: pa.Array) -> pa.Table:
    """Each version's run state and end (``run_state``, ``run_ended_at``; null without a run), from the
    runs already loaded: joining the ``runs`` view in Spark would aggregate every run state again."""
    where = pc.index_in(versions.column("run_uuid"), value_set=run_uuids)
    state = runs.column("current_run_state").take(where).combine_chunks()
    if pa.types.is_dictionary(state.type):
        state = state.dictionary_decode()
    return versions.append_column("run_state", state).append_column(
        "run_ended_at", runs.column("ended_at").take(where))


def _load_versions(snap: Snapshot) -> VersionState:
    """Each job's version history, from the runs, their inputs and outputs and details already loaded."""
    if snap.runs is None or snap.run_io is None or snap.run_details is None:
        return VersionState()
    jobs = {entry["uuid"]: (namespace, name) for (namespace, name), entry in snap.jobs.items()}
    return columnar_version_state(jobs, snap.runs, snap.run_io, snap.run_index, snap.run_details)


def _load_latest_runs(spark: SparkSession, settings: Settings, snap: Snapshot, previous: Snapshot | None) -> None:
    """Each job's newest run update, and the current facets of its latest run (the first of its slice)."""
    runs = snap.runs
    if runs is None or not runs.ranges:
        return
    newest = runs.table.group_by("job_uuid").aggregate([("updated_at", "max")])
    snap.job_updated_at = dict(zip(newest.column("job_uuid").to_pylist(),
                                   newest.column("updated_at_max").to_pylist(), strict=True))
    uuids = runs.table.column("uuid")
    latest = [uuids[start].as_py() for start, _ in runs.ranges.values()]
    snap.latest_facets = load_latest_run_facets(spark, settings, latest,
                                                previous.latest_facets if previous is not None else None)


def _current_versions(versions: Slices) -> dict[str, dict[str, Any]]:
    """Per dataset: its current version row plus the end of its last COMPLETE run that wrote it."""
    table = versions.table
    current: dict[str, dict[str, Any]] = {}
    flags = table.column("is_current_version").to_pylist()
    for dataset_uuid, (start, stop) in versions.ranges.items():
        chosen = next((p for p in range(start, stop) if flags[p]), start)
        row = table.slice(chosen, 1).to_pylist()[0]
        rows = table.slice(start, stop - start)
        completed = rows.filter(pc.equal(rows.column("run_state"), "COMPLETE"))
        row["last_modified_at"] = pc.max(completed.column("run_ended_at")).as_py() if completed.num_rows else None
        current[dataset_uuid] = row
    return current


def _load_column_lineage(spark: SparkSession, lineage: str, snap: Snapshot) -> None:
    """Per output dataset, the column lineage of the latest run (or event) that recorded any: the
    current column lineage, as Marquez shows it."""
    for row in spark.sql(f"""
        with latest as (
            select output_namespace, output_dataset, max_by(coalesce(run_uuid, event_id), ingest_seq) as recorder
            from {lineage}.column_lineage
            group by output_namespace, output_dataset
        )
        select c.output_namespace, c.output_dataset, c.output_field, c.input_namespace, c.input_dataset,
            c.input_field, c.transformation_type, c.transformation_description, c.transformations,
            c.output_dataset_version_uuid
        from {lineage}.column_lineage as c
        join latest
            on c.output_namespace = latest.output_namespace and c.output_dataset = latest.output_dataset
            and coalesce(c.run_uuid, c.event_id) = latest.recorder
        order by c.output_namespace, c.output_dataset, c.output_field, c.input_namespace, c.input_dataset,
            c.input_field
    """).collect():
        entry = row.asDict(recursive=True)
        snap.column_lineage.setdefault((row.output_namespace, row.output_dataset), []).append(entry)
        if row.input_namespace is not None:
            snap.column_readers.setdefault((row.input_namespace, row.input_dataset, row.input_field), set()).add(
                (row.output_namespace, row.output_dataset, row.output_field)
            )


def dataset_facets(snap: Snapshot, dataset_uuid: str) -> dict[str, Any]:
    """Parsed once per snapshot (a lineage response repeats them for every node)."""
    key = f"dataset:{dataset_uuid}"
    if key not in snap.parsed_facets:
        snap.parsed_facets[key] = _facets(snap.dataset_facet_text.get(dataset_uuid))
    return snap.parsed_facets[key]


def latest_run_facets(snap: Snapshot, run_uuid: str) -> dict[str, Any]:
    """The current facets of a job's latest run (loaded with the snapshot)."""
    key = f"run:{run_uuid}"
    if key not in snap.parsed_facets:
        snap.parsed_facets[key] = _facets(snap.latest_facets.text.get(run_uuid))
    return snap.parsed_facets[key]


def job_facets(snap: Snapshot, job_uuid: str) -> dict[str, Any]:
    key = f"job:{job_uuid}"
    if key not in snap.parsed_facets:
        snap.parsed_facets[key] = _facets(snap.job_facet_text.get(job_uuid))
    return snap.parsed_facets[key]

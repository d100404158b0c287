"""The read API's live overlay (python_jobs/marquez_api/live*.py), without Spark: a hand-made
snapshot, events accepted over it, the merged view, and what a round's install keeps."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pyarrow as pa
from lineage_events import run_event  # tests/python is on sys.path

from python_jobs import keys
from python_jobs.marquez_api import live as live_module
from python_jobs.marquez_api.graph import LineageGraph, dataset_node_id, job_node_id
from python_jobs.marquez_api.job_versions import job_version_id
from python_jobs.marquez_api.live import LiveOverlay
from python_jobs.marquez_api.live_events import event_time, parse_pending
from python_jobs.marquez_api.live_view import LayeredSlices, newest_written_by_then, run_order_key
from python_jobs.marquez_api.snapshot import RUN_ORDER, Snapshot, iso, runs_of, slices_by
from python_jobs.marquez_api.version_loading import build_version_state

OLD_RUN = "00000000-0000-4000-8000-00000000000a"
NEW_RUN = "00000000-0000-4000-8000-00000000000b"
NS = "tests"
JOB = (NS, "job")


def _at(hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 1, 1, hour, minute, tzinfo=UTC)


def base_snapshot() -> Snapshot:
    """One job whose run OLD_RUN started at 01:00, read db.a and wrote db.b (version of OLD_RUN)."""
    job_uuid = keys.job_uuid(*JOB)
    snap = Snapshot(namespaces=[{"name": "db", "createdAt": iso(_at(1))}, {"name": NS, "createdAt": iso(_at(1))}])
    snap.jobs[JOB] = {"uuid": job_uuid, "namespace": NS, "name": "job", "createdAt": iso(_at(1))}
    b_version = keys.dataset_version_uuid("db", "b", OLD_RUN)
    a_version = keys.dataset_version_uuid("db", "a", "")
    for name, version in (("a", a_version), ("b", b_version)):
        snap.datasets[("db", name)] = {
            "uuid": keys.dataset_uuid("db", name), "namespace": "db", "name": name, "createdAt": iso(_at(1)),
            "updatedAt": iso(_at(1)), "currentVersion": version, "schemaVersion": None, "lastModifiedAt": None}
    runs = pa.table({"uuid": [OLD_RUN], "job_uuid": [job_uuid], "created_at": [_at(1)], "updated_at": [_at(1)],
                     "current_run_state": ["START"], "started_at": [_at(1)], "ended_at": pa.array([None], pa.timestamp(
                         "us", "UTC"))})
    snap.runs = slices_by(runs, "job_uuid", RUN_ORDER)
    snap.run_index = {OLD_RUN: (job_uuid, 0)}
    snap.run_io = runs_of(pa.table({
        "run_uuid": [OLD_RUN, OLD_RUN], "io_type": ["input", "output"], "namespace_name": ["db", "db"],
        "name": ["a", "b"], "dataset_version_uuid": [a_version, b_version], "job_uuid": [job_uuid] * 2,
        "started_at": [_at(1)] * 2, "created_at": [_at(1)] * 2}), "run_uuid")
    snap.versions = slices_by(pa.table({
        "dataset_uuid": [keys.dataset_uuid("db", "a"), keys.dataset_uuid("db", "b")], "version": [a_version, b_version],
        "created_at": [_at(1), _at(1)], "dataset_schema_version_uuid": [None, None], "run_uuid": [None, OLD_RUN],
        "is_current_version": [True, True], "run_state": [None, "START"],
        "run_ended_at": pa.array([None, None], pa.timestamp("us", "UTC"))}),
        "dataset_uuid", [("created_at", "descending"), ("version", "ascending")])
    snap.version_index = {a_version: (keys.dataset_uuid("db", "a"), 0), b_version: (keys.dataset_uuid("db", "b"), 1)}
    snap.job_updated_at = {job_uuid: _at(1)}
    snap.graph = LineageGraph()
    snap.graph.add_edge(job_node_id(*JOB), dataset_node_id("db", "a"), "input")
    snap.graph.add_edge(job_node_id(*JOB), dataset_node_id("db", "b"), "output")
    return snap


def body(**changes: object) -> bytes:
    return json.dumps(run_event(**changes)).encode()


def run_of(snap: Snapshot, run_id: str) -> dict:
    found = snap.run_index[run_id]
    return snap.runs.row(found[1])


def test_event_times_parse_as_spark_reads_them():
    assert event_time("2026-01-01T02:00:00.123456789+01:00") == datetime(2026, 1, 1, 1, 0, 0, 123456, tzinfo=UTC)
    assert event_time("2026-01-01T02:00:00Z") == _at(2)
    assert event_time("2026-01-01T02:00:00.5") == datetime(2026, 1, 1, 2, 0, 0, 500000, tzinfo=UTC)
    pending = parse_pending(body(eventType="complete", run={"runId": NEW_RUN.upper()}), 7)
    assert pending is not None and pending.run_id == NEW_RUN and pending.event_type == "COMPLETE"
    assert parse_pending(b"not json", 1) is None


def test_a_new_run_shows_with_its_job_datasets_versions_and_edges():
    live = LiveOverlay(base_snapshot())
    live.accept(body(eventType="START", eventTime="2026-01-01T03:00:00Z", run={"runId": NEW_RUN},
                     job={"namespace": "fresh", "name": "loader"},
                     inputs=[{"namespace": "db", "name": "b"}], outputs=[{"namespace": "wh", "name": "c"}]))
    live.accept(body(eventType="COMPLETE", eventTime="2026-01-01T03:05:00Z", run={"runId": NEW_RUN},
                     job={"namespace": "fresh", "name": "loader"}, inputs=[], outputs=[]))
    snap = live.view()
    run = run_of(snap, NEW_RUN)
    assert (run["current_run_state"], run["started_at"], run["ended_at"], run["created_at"], run["updated_at"]) == (
        "COMPLETE", _at(3), _at(3, 5), _at(3), _at(3, 5))
    assert run["job_uuid"] == keys.job_uuid("fresh", "loader")
    assert [n["name"] for n in snap.namespaces] == ["db", "fresh", NS, "wh"]
    assert snap.jobs[("fresh", "loader")]["createdAt"] == "2026-01-01T03:00:00Z"
    c_version = keys.dataset_version_uuid("wh", "c", NEW_RUN)
    assert snap.datasets[("wh", "c")]["currentVersion"] == c_version
    assert snap.datasets[("wh", "c")]["lastModifiedAt"] == "2026-01-01T03:05:00Z"
    # The input is db.b's version current at 03:00: OLD_RUN's output.
    io = {(r["io_type"], r["name"]): r["dataset_version_uuid"] for r in snap.run_io.rows(NEW_RUN)}
    assert io == {("input", "b"): keys.dataset_version_uuid("db", "b", OLD_RUN), ("output", "c"): c_version}
    job = job_node_id("fresh", "loader")
    assert snap.graph.inputs[job] == {dataset_node_id("db", "b")} and snap.graph.outputs[job] == {
        dataset_node_id("wh", "c")}
    assert snap.graph.readers[dataset_node_id("db", "b")] == {job}
    assert job in snap.graph.nodes and dataset_node_id("wh", "c") in snap.graph.nodes
    assert snap.versions.rows(keys.dataset_uuid("wh", "c"))[0]["run_uuid"] == NEW_RUN
    assert snap.runs.count(keys.job_uuid("fresh", "loader")) == 1
    assert live.view() is snap  # built once per change


def test_a_pending_complete_finishes_a_snapshot_run_and_moves_its_jobs_edges():
    base = base_snapshot()
    base.node_json[job_node_id(*JOB)] = "{}"
    live = LiveOverlay(base)
    live.accept(body(eventType="COMPLETE", eventTime="2026-01-01T02:00:00Z", run={"runId": OLD_RUN},
                     inputs=[], outputs=[{"namespace": "db", "name": "d"}]))
    # A RUNNING after the COMPLETE: terminal states win (runs.sql).
    live.accept(body(eventType="RUNNING", eventTime="2026-01-01T02:30:00Z", run={"runId": OLD_RUN}, inputs=[],
                     outputs=[]))
    snap = live.view()
    run = run_of(snap, OLD_RUN)
    assert (run["current_run_state"], run["started_at"], run["ended_at"], run["updated_at"]) == (
        "COMPLETE", _at(1), _at(2), _at(2, 30))
    assert snap.runs.count(keys.job_uuid(*JOB)) == 1
    assert [r["uuid"] for r in snap.runs.rows(keys.job_uuid(*JOB))] == [OLD_RUN]
    assert sorted(r["name"] for r in snap.run_io.rows(OLD_RUN)) == ["a", "b", "d"]
    node = job_node_id(*JOB)
    assert snap.graph.outputs[node] == {dataset_node_id("db", "b"), dataset_node_id("db", "d")}
    assert snap.datasets[("db", "b")]["lastModifiedAt"] == "2026-01-01T02:00:00Z"
    assert snap.job_updated_at[keys.job_uuid(*JOB)] == _at(2, 30)
    assert node not in snap.node_json and snap.node_json.get(dataset_node_id("db", "a")) is None


def test_a_newer_run_replaces_the_jobs_edges_with_its_own():
    live = LiveOverlay(base_snapshot())
    live.accept(body(eventType="START", eventTime="2026-01-01T04:00:00Z", run={"runId": NEW_RUN},
                     inputs=[{"namespace": "db", "name": "x"}], outputs=[]))
    snap = live.view()
    node = job_node_id(*JOB)
    assert [r["uuid"] for r in snap.runs.rows(keys.job_uuid(*JOB))] == [NEW_RUN, OLD_RUN]
    assert snap.graph.inputs[node] == {dataset_node_id("db", "x")} and snap.graph.outputs[node] == set()
    assert node not in snap.graph.readers[dataset_node_id("db", "a")]
    assert snap.graph.writers[dataset_node_id("db", "b")] == set()
    # x was never written: the run read its input version.
    assert snap.run_io.rows(NEW_RUN)[0]["dataset_version_uuid"] == keys.dataset_version_uuid("db", "x", "")
    assert snap.datasets[("db", "x")]["currentVersion"] == keys.dataset_version_uuid("db", "x", "")


def test_install_drops_exactly_the_events_before_the_rounds_mark():
    live = LiveOverlay(base_snapshot())
    live.accept(body(eventType="START", eventTime="2026-01-01T03:00:00Z", run={"runId": NEW_RUN}))
    live.begin_round()  # the collector seals its file after this
    live.accept(body(eventType="COMPLETE", eventTime="2026-01-01T03:05:00Z", run={"runId": NEW_RUN}))
    assert run_of(live.view(), NEW_RUN)["current_run_state"] == "COMPLETE"
    # A failed round keeps everything.
    live.install(base_snapshot(), absorbed=False)
    assert live.pending_count() == 2
    live.begin_round()
    live.accept(body(eventType="COMPLETE", eventTime="2026-01-01T03:06:00Z", run={"runId": OLD_RUN}))
    # The round built the first two: only the third stays, over the new snapshot.
    live.install(base_snapshot(), absorbed=True)
    assert live.pending_count() == 1
    snap = live.view()
    assert NEW_RUN not in snap.run_index  # (the test's new base does not have it: it was dropped)
    assert run_of(snap, OLD_RUN)["current_run_state"] == "COMPLETE"
    live.install(base_snapshot(), absorbed=True)  # no begin_round since: nothing is dropped
    assert live.pending_count() == 1


def test_an_event_the_snapshot_has_already_changes_nothing():
    live = LiveOverlay(base_snapshot())
    live.accept(body(eventType="START", eventTime="2026-01-01T01:00:00Z", run={"runId": OLD_RUN}))
    snap, base = live.view(), base_snapshot()
    merged = run_of(snap, OLD_RUN)
    for column in ("created_at", "updated_at", "started_at", "ended_at", "current_run_state", "job_uuid"):
        assert merged[column] == base.runs.row(0)[column]
    assert snap.run_io.rows(OLD_RUN) == base.run_io.rows(OLD_RUN)
    assert snap.graph.inputs[job_node_id(*JOB)] == base.graph.inputs[job_node_id(*JOB)]
    assert snap.datasets[("db", "b")] == base.datasets[("db", "b")]


def test_pending_events_are_bounded():
    live = LiveOverlay(base_snapshot(), max_pending=2)
    for minute in range(3):
        live.accept(body(eventTime=f"2026-01-01T03:0{minute}:00Z", run={"runId": NEW_RUN}))
    assert live.pending_count() == 2 and live.overflow == 1


def test_layered_runs_page_like_one_sorted_list():
    """Pages over a job's runs when pending runs are added and one of the snapshot's is replaced."""
    job = "j"
    hours = [1, 2, 3, 4, 5]
    base_rows = pa.table({"uuid": [f"r{h}" for h in hours], "job_uuid": [job] * 5,
                          "started_at": [_at(h) for h in hours], "created_at": [_at(h) for h in hours]})
    base = slices_by(base_rows, "job_uuid", RUN_ORDER)
    extra = {job: [{"uuid": "r3", "job_uuid": job, "started_at": _at(3, 30), "created_at": _at(3)},
                   {"uuid": "n6", "job_uuid": job, "started_at": _at(6), "created_at": _at(6)},
                   {"uuid": "n0", "job_uuid": job, "started_at": None, "created_at": _at(7)}]}
    layered = LayeredSlices(base, extra, "uuid", run_order_key, {job: {"r3"}})
    everything = [r["uuid"] for r in layered.rows(job)]
    assert everything == ["n6", "r5", "r4", "r3", "r2", "r1", "n0"]
    assert layered.count(job) == 7
    for offset in range(8):
        for limit in range(1, 4):
            assert [r["uuid"] for r in layered.rows(job, offset, limit)] == everything[offset:offset + limit]
    assert layered.row(layered.positions["r3"])["started_at"] == _at(3, 30)
    assert layered.rows("other") == []


def test_a_pending_run_gets_its_job_version_and_nominal_times():
    """The pending run's definition (inputs, outputs, sourceCodeLocation) is its job's current version
    at once, with the version id the build gives it; the snapshot's runs keep theirs."""
    base = base_snapshot()
    job_uuid = keys.job_uuid(*JOB)
    base.version_state = build_version_state(
        {job_uuid: JOB}, {job_uuid: base.runs.rows(job_uuid)},
        {OLD_RUN: [("input", ("db", "a")), ("output", ("db", "b"))]}, {}, {})
    facet = {"_producer": "https://example.com/tests", "_schemaURL": "https://example.com/facet.json"}
    live = LiveOverlay(base)
    live.accept(body(
        eventType="START", eventTime="2026-01-01T04:00:00Z",
        run={"runId": NEW_RUN, "facets": {"nominalTime": {**facet, "nominalStartTime": "2026-01-01T04:00:00Z"}}},
        job={"namespace": NS, "name": "job", "facets": {
            "sourceCodeLocation": {**facet, "type": "git", "url": "https://git.example.com/job.py"}}},
        inputs=[{"namespace": "db", "name": "a"}], outputs=[]))
    state = live.view().version_state
    current = state.histories[job_uuid].current
    assert current is not None and current.run_uuid == NEW_RUN
    assert current.version == job_version_id(NS, "job", [("db", "a")], [], "https://git.example.com/job.py")
    assert state.run_definitions[OLD_RUN].version == job_version_id(NS, "job", [("db", "a")], [("db", "b")], None)
    # The snapshot's run moved down one place in its job's order; the pending run is the latest.
    assert (state.run_definitions[OLD_RUN].rank, state.run_definitions[NEW_RUN].rank) == (1, 0)
    assert len(state.histories[job_uuid].versions) == 2
    assert state.nominal_times[NEW_RUN] == ("2026-01-01T04:00:00Z", None)
    assert job_uuid in state.dataset_jobs[("db", "a")]
    assert base.version_state.histories[job_uuid].current.run_uuid == OLD_RUN  # the snapshot is not changed


def test_expedite_shows_a_write_the_rebuild_limit_would_defer(monkeypatch):
    monkeypatch.setattr(live_module, "REBUILD_FACTOR", 1e9)  # any rebuild after the first waits "forever"
    live = LiveOverlay(base_snapshot())
    live.accept(body(eventType="OTHER", eventTime="2026-01-01T03:00:00Z", run={"runId": NEW_RUN}))
    assert run_of(live.view(), NEW_RUN)["current_run_state"] is None
    live.accept(body(eventType="START", eventTime="2026-01-01T03:01:00Z", run={"runId": NEW_RUN}))
    assert run_of(live.view(), NEW_RUN)["current_run_state"] is None  # deferred by the limit
    live.expedite()
    assert run_of(live.view(), NEW_RUN)["current_run_state"] == "START"


def test_the_version_a_pending_run_read_is_the_newest_another_run_wrote_by_then():
    """live_view.newest_written_by_then: the dataset's versions newest first, skipping the reading run's own and
    versions without a run, past the first window of rows it reads."""
    # Another dataset's versions sort right after this one's: a search must not run into them.
    dataset, after = sorted([keys.dataset_uuid("db", "a"), keys.dataset_uuid("db", "b")])
    rows = [(_at(5), "v5", "other")] + [(_at(4, minute), f"v4-{minute:02d}", OLD_RUN) for minute in range(12)]
    rows += [(_at(3), "v3", None), (_at(2), "v2", "writer"), (_at(1), "v1", "first"), (None, "v-untimed", "other")]
    others = [(_at(hour), f"other-{hour}", "other") for hour in range(6)]
    owners = [dataset] * len(rows) + [after] * len(others)
    rows += others
    versions = slices_by(pa.table({
        "dataset_uuid": owners, "version": [r[1] for r in rows],
        "created_at": pa.array([r[0] for r in rows], pa.timestamp("us", "UTC")), "run_uuid": [r[2] for r in rows]}),
        "dataset_uuid", [("created_at", "descending"), ("version", "ascending")])
    assert newest_written_by_then(versions, dataset, OLD_RUN, _at(6)) == (_at(5), "v5")
    assert newest_written_by_then(versions, dataset, OLD_RUN, _at(4, 30)) == (_at(2), "v2")
    assert newest_written_by_then(versions, dataset, "writer", _at(2)) == (_at(1), "v1")
    assert newest_written_by_then(versions, dataset, "first", _at(1)) is None
    assert newest_written_by_then(versions, dataset, OLD_RUN, _at(0)) is None
    assert newest_written_by_then(versions, keys.dataset_uuid("db", "none"), OLD_RUN, _at(6)) is None
    assert newest_written_by_then(versions, after, "other", _at(6)) is None

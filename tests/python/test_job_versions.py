"""Job versions and version histories (python_jobs/marquez_api/job_versions.py): pure, no Spark."""

from __future__ import annotations

from datetime import UTC, datetime

from python_jobs.keys import name_uuid
from python_jobs.marquez_api.graph import LineageGraph
from python_jobs.marquez_api.job_versions import (
    add_version_edges,
    build_history,
    dataset_jobs,
    job_version_id,
    run_definitions,
    start_job,
)


def at(day: int, hour: int = 0) -> datetime:
    return datetime(2026, 2, day, hour, tzinfo=UTC)


def test_version_id_is_a_deterministic_hash_of_the_definition():
    version = job_version_id("ns", "job", [("db", "b"), ("db", "a")], [("db", "out")], "https://git/x")
    assert version == job_version_id("ns", "job", [("db", "a"), ("db", "b"), ("db", "a")], [("db", "out")],
                                     "https://git/x")
    canonical = ('{"inputs":["db:a","db:b"],"job":"job","location":"https://git/x","namespace":"ns",'
                 '"outputs":["db:out"]}')
    assert version == name_uuid(f"job_version:{canonical}")
    assert version != job_version_id("ns", "job", [("db", "a")], [("db", "out")], "https://git/x")
    assert version != job_version_id("ns", "job", [("db", "a"), ("db", "b")], [("db", "out")], None)
    # An input and an output of one name are different definitions.
    assert job_version_id("ns", "j", [("db", "a")], [], None) != job_version_id("ns", "j", [], [("db", "a")], None)


def history_of(runs: list[tuple[str, datetime | None, datetime, list[str], list[str]]]):
    """``runs``: (id, started, created, inputs, outputs), newest first as the snapshot orders them."""
    rows = [{"uuid": run, "started_at": started, "created_at": created} for run, started, created, _, _ in runs]
    io = {run: [("input", ("db", d)) for d in ins] + [("output", ("db", d)) for d in outs]
          for run, _, _, ins, outs in runs}
    definitions = run_definitions("ns", "job", rows, io, {})
    return build_history("ns", "job", definitions)


def test_history_versions_and_the_version_current_at_a_moment():
    history = history_of([
        ("r3", at(3), at(3), ["b"], ["out"]),
        ("r2", at(2), at(2), ["b"], ["out"]),
        ("r1", at(1), at(1), ["a"], ["out"]),
    ])
    old = job_version_id("ns", "job", [("db", "a")], [("db", "out")], None)
    new = job_version_id("ns", "job", [("db", "b")], [("db", "out")], None)
    assert history.version_order == [new, old]  # newest first
    assert history.current is not None and history.current.run_uuid == "r3" and history.current.version == new
    assert [r.run_uuid for r in history.runs_of_version(new)] == ["r3", "r2"]
    assert history.versions[new].latest_run.run_uuid == "r3" and history.versions[new].run_count == 2
    assert history.versions[new].created_at == at(2)
    assert history.run_as_of(at(1, 12)).run_uuid == "r1"  # type: ignore[union-attr]
    assert history.run_as_of(at(2)).run_uuid == "r2"  # type: ignore[union-attr]  (inclusive)
    assert history.run_as_of(at(1)).run_uuid == "r1"  # type: ignore[union-attr]
    assert history.run_as_of(datetime(2026, 1, 31, tzinfo=UTC)) is None
    assert history.version_as_of(at(1, 12)).inputs == (("db", "a"),)  # type: ignore[union-attr]
    assert history.version_as_of(None).inputs == (("db", "b"),)  # type: ignore[union-attr]


def test_a_run_that_never_started_is_latest_only_without_started_runs():
    """Marquez's order (started_at desc nulls last): a newer run with no start stays behind a started one,
    at any moment after both exist."""
    history = history_of([
        ("started", at(1), at(1), ["a"], ["out"]),
        ("queued", None, at(2), ["b"], ["out"]),
    ])
    assert history.current.run_uuid == "started"  # type: ignore[union-attr]
    assert history.run_as_of(at(3)).run_uuid == "started"  # type: ignore[union-attr]
    only_queued = history_of([("queued", None, at(2), ["b"], ["out"])])
    assert only_queued.run_as_of(at(2)).run_uuid == "queued"  # type: ignore[union-attr]
    assert only_queued.run_as_of(at(1)) is None


def test_edges_of_current_versions_and_the_start_job_of_a_dataset():
    producer = history_of([("p2", at(2), at(2), ["b"], ["out"]), ("p1", at(1), at(1), ["a"], ["out"])])
    reader = build_history("ns", "reader", run_definitions(
        "ns", "reader", [{"uuid": "q1", "started_at": at(1), "created_at": at(1)}],
        {"q1": [("input", ("db", "out")), ("output", ("db", "report"))]}, {}))
    histories = {"producer": producer, "reader": reader}
    now = LineageGraph()
    add_version_edges(now, histories.values())
    assert now.inputs["job:ns:job"] == {"dataset:db:b"}  # not a: only the current version's inputs
    then = LineageGraph()
    add_version_edges(then, histories.values(), at(1, 12))
    assert then.inputs["job:ns:job"] == {"dataset:db:a"}
    index = dataset_jobs(histories)
    assert index[("db", "a")] == {"producer"} and index[("db", "out")] == {"producer", "reader"}
    # Writers before readers; a dataset an old version read still starts at that job.
    assert start_job(("db", "out"), histories, index[("db", "out")]) == "producer"
    assert start_job(("db", "a"), histories, index[("db", "a")]) == "producer"
    assert start_job(("db", "report"), histories, index[("db", "report")]) == "reader"
    assert start_job(("db", "b"), histories, index[("db", "b")], at(1, 12)) is None  # no version read b yet

"""Job versions and version histories (python_jobs/marquez_api/job_versions.py): pure, no Spark."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime

import pyarrow as pa

from python_jobs.keys import name_uuid
from python_jobs.marquez_api.graph import LineageGraph
from python_jobs.marquez_api.job_versions import (
    JobHistory,
    RunDefinition,
    RunDefinitions,
    add_version_edges,
    build_history,
    dataset_jobs,
    job_version_id,
    run_definitions,
    spliced_history,
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


def _in_run_order(runs: list[RunDefinition]) -> list[RunDefinition]:
    """Marquez's order (started desc nulls last, created desc nulls last, uuid), ranks renumbered."""
    def key(run: RunDefinition) -> tuple:
        times = [part for moment in (run.started_at, run.created_at)
                 for part in (moment is None, -(moment.timestamp() if moment else 0.0))]
        return (*times, run.run_uuid)
    return [replace(run, rank=rank) for rank, run in enumerate(sorted(runs, key=key))]


def _random_run(chooser: random.Random, number: int) -> RunDefinition:
    """Times on a coarse grid (ties are common), a tenth never started, one of three definitions."""
    inputs, outputs, location = chooser.choice([((("db", "a"),), (("db", "out"),), None),
                                                ((("db", "b"),), (("db", "out"),), None),
                                                ((("db", "a"),), (("db", "out"),), "https://git/job.py")])
    started = None if chooser.random() < 0.1 else at(1 + chooser.randrange(5), chooser.randrange(3))
    return RunDefinition(
        run_uuid=f"{chooser.randrange(16 ** 8):08x}-run-{number}", rank=0, started_at=started,
        created_at=at(1 + chooser.randrange(5), chooser.randrange(3)), inputs=inputs, outputs=outputs,
        location=location, version=job_version_id("ns", "job", inputs, outputs, location))


def _arrow_uuids(history: JobHistory) -> JobHistory:
    """The history with its run uuids as an Arrow column, as the snapshot's columnar histories hold them."""
    runs = history.runs
    columns = RunDefinitions(pa.chunked_array([[runs.run(rank).run_uuid for rank in range(len(runs))]]),
                             runs.started, runs.created, runs.version_of_run, runs.definitions)
    return replace(history, runs=columns)


def test_a_spliced_history_equals_the_history_built_over_all_its_runs():
    """Pending runs laid over a job's history (job_versions.spliced_history, which the live view uses) give the
    history build_history gives for the same runs: the same order, ranks, versions and points in time; each
    kept run's new rank is its rank there."""
    chooser = random.Random(30)
    for case in range(60):
        base_runs = _in_run_order([_random_run(chooser, n) for n in range(chooser.randrange(0, 40))])
        base = build_history("ns", "job", base_runs)
        if case % 2:
            base = _arrow_uuids(base)
        replaced = chooser.sample(base_runs, k=min(len(base_runs), chooser.randrange(0, 4)))
        # A replaced run comes back with later events: it may have started and changed its definition.
        changed = [replace(_random_run(chooser, 1000 + i), run_uuid=run.run_uuid) for i, run in enumerate(replaced)]
        added = changed + [_random_run(chooser, 2000 + n) for n in range(chooser.randrange(0, 6))]
        chooser.shuffle(added)
        gone = {run.run_uuid for run in replaced}
        expected_runs = _in_run_order([run for run in base_runs if run.run_uuid not in gone] + added)
        expected = build_history("ns", "job", expected_runs)

        spliced, added_ranks, base_ranks = spliced_history(base, [run.rank for run in replaced], added)

        assert [spliced.runs.run(r) for r in range(len(spliced.runs))] == expected_runs, case
        assert spliced.version_order == expected.version_order
        assert {v: (e.created_at, e.latest_run, e.run_count) for v, e in spliced.versions.items()} == {
            v: (e.created_at, e.latest_run, e.run_count) for v, e in expected.versions.items()}
        assert list(spliced.moments) == list(expected.moments)
        assert list(spliced.newest_upto) == list(expected.newest_upto)
        for day in range(1, 7):
            assert spliced.run_as_of(at(day, 1)) == expected.run_as_of(at(day, 1))
        rank_of = {run.run_uuid: run.rank for run in expected_runs}
        assert [int(r) for r in added_ranks] == [rank_of[run.run_uuid] for run in added]
        assert [int(r) for r in base_ranks] == [-1 if run.run_uuid in gone else rank_of[run.run_uuid]
                                               for run in base_runs]

"""The read API's column-backed lookups (key_index.py) and job versions built from columns
(version_loading.columnar_version_state) against the per-object build they replace. Pure: no Spark."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest

from python_jobs.marquez_api.columns import as_references, encode_repeated, positions_in, single_chunk
from python_jobs.marquez_api.key_index import RangeIndex, RowIndex
from python_jobs.marquez_api.run_details import WON_AT, RunDetails, aligned
from python_jobs.marquez_api.slices import runs_of
from python_jobs.marquez_api.version_loading import (
    build_version_state,
    columnar_version_state,
    nominal_iso,
    run_io_keys,
)


@pytest.mark.parametrize("keys", [
    ["c3", "a1", "b2"],  # one length: NumPy's search
    ["ccc", "a", "bb"],  # lengths differ: bisect over Arrow
    ["b\x00", "a\x00", "c\x00"],  # a trailing NUL: not the NumPy path, which drops it
])
def test_row_index_finds_each_key_and_its_group(keys):
    table = pa.table({"key": keys, "group": ["g0", "g1", "g2"]})
    index = RowIndex(table, "key", "group")
    assert {key: index[key] for key in keys} == {key: (f"g{i}", i) for i, key in enumerate(keys)}
    assert index.get("missing") is None and "missing" not in index and keys[0] in index
    assert sorted(index) == sorted(keys) and len(index) == 3
    assert index.get(keys[0][:-1]) is None  # a prefix is not the key


def test_row_index_skips_null_keys_and_handles_no_rows():
    index = RowIndex(pa.table({"key": ["a", None], "group": ["x", "y"]}), "key", "group")
    assert dict(index) == {"a": ("x", 0)}
    empty = RowIndex(pa.table({"key": pa.array([], pa.string()), "group": pa.array([], pa.string())}), "key", "group")
    assert len(empty) == 0 and empty.get("a") is None


def test_range_index_gives_the_rows_of_each_key_in_table_order():
    ranges = RangeIndex(pa.chunked_array([["j2", "j2"], ["j2", "j1", "j3", "j3"]]))
    assert ranges.items() == [("j2", (0, 3)), ("j1", (3, 4)), ("j3", (4, 6))]
    assert ranges["j3"] == (4, 6) and ranges.get("j9") is None and list(ranges) == ["j2", "j1", "j3"]
    assert ranges.values() == [(0, 3), (3, 4), (4, 6)] and len(ranges) == 3
    assert RangeIndex(pa.array([], pa.string())).items() == []


def at(day: int) -> datetime:
    return datetime(2026, 3, day, tzinfo=UTC)


# (job, run, started, created, inputs, outputs, location, nominal start), newest first within each job.
RUNS = [
    ("job-a", "r4", None, at(6), ["in"], ["out"], "https://git/v2", None),
    ("job-a", "r3", at(5), at(5), ["in"], ["out"], "https://git/v2", "2026-03-05T00:00:00+00:00"),
    ("job-a", "r2", at(3), at(3), ["in", "extra"], ["out"], "https://git/v1", None),
    ("job-a", "r1", at(1), at(1), ["in"], ["out"], "https://git/v1", None),
    ("job-b", "r6", at(4), at(4), ["out"], [], None, None),
    ("job-b", "r5", None, None, [], [], None, None),
    ("job-c", "r7", at(2), at(2), ["in"], ["c-out"], None, None),  # a job the snapshot does not list
]


def test_columnar_versions_equal_the_per_object_build():
    runs = runs_of(pa.table({
        "uuid": [r[1] for r in RUNS], "job_uuid": [r[0] for r in RUNS],
        "started_at": pa.array([r[2] for r in RUNS], pa.timestamp("us")),
        "created_at": pa.array([r[3] for r in RUNS], pa.timestamp("us")),
    }), "job_uuid")
    io_rows = [(job, run, kind, name) for job, run, _, _, ins, outs, _, _ in RUNS
               for kind, names in (("input", ins), ("output", outs)) for name in sorted(set(names))]
    io_rows.append(("job-a", "r2", "input", "in"))  # one dataset read twice: one input of the definition
    run_io = runs_of(pa.table({
        "run_uuid": [r[1] for r in io_rows], "io_type": [r[2] for r in io_rows],
        "namespace_name": ["db"] * len(io_rows), "name": [r[3] for r in io_rows],
        "job_uuid": [r[0] for r in io_rows],
    }), "run_uuid")
    located = [(r[1], r[6]) for r in RUNS if r[6]]
    uuids = runs.table.column("uuid").combine_chunks()
    won_at = pa.array([at(1)] * len(located), pa.timestamp("us", tz="UTC"))
    details = RunDetails(
        run_uuids=uuids,
        location=aligned(uuids, pa.table({"run_id": [r for r, _ in located], "v0": [u for _, u in located],
                                          WON_AT: won_at})),
        nominal=aligned(uuids, pa.table({"run_id": ["r3"], "v0": ["2026-03-05T00:00:00+00:00"],
                                         "v1": pa.array([None], pa.string()),
                                         WON_AT: pa.array([at(1)], pa.timestamp("us", tz="UTC"))})),
    )
    jobs = {"job-a": ("ns", "a"), "job-b": ("ns", "b")}
    run_index = RowIndex(runs.table, "uuid", "job_uuid")
    columns = columnar_version_state(jobs, runs, run_io, run_index, details)

    rows_by_job: dict[str, list[dict]] = {}
    for job, run, started, created, *_ in RUNS:
        rows_by_job.setdefault(job, []).append({"uuid": run, "started_at": started, "created_at": created})
    io = {}
    for _, run, kind, name in io_rows:
        io.setdefault(run, []).append((kind, ("db", name)))
    objects = build_version_state(jobs, rows_by_job, io, {r[1]: r[6] for r in RUNS},
                                  {"r3": ("2026-03-05T00:00:00+00:00", None)})

    assert set(columns.histories) == set(objects.histories) == {"job-a", "job-b"}
    for job, expected in objects.histories.items():
        got = columns.histories[job]
        assert got.version_order == expected.version_order and got.current == expected.current
        assert {v: (e.inputs, e.outputs, e.location, e.created_at, e.latest_run, e.run_count)
                for v, e in got.versions.items()} == {
            v: (e.inputs, e.outputs, e.location, e.created_at, e.latest_run, e.run_count)
            for v, e in expected.versions.items()}
        for day in range(0, 8):
            moment = datetime(2026, 3, 1, tzinfo=UTC) if day == 0 else at(day)
            assert got.run_as_of(moment) == expected.run_as_of(moment)
            assert got.runs_by(moment, 2) == expected.runs_by(moment, 2)
    assert len(columns.histories["job-a"].versions) == 3  # v1, v1 with an extra input, v2
    assert dict(columns.run_definitions) == dict(objects.run_definitions)
    assert "r7" not in columns.run_definitions  # its job is not listed
    assert dict(columns.nominal_times) == {"r3": (nominal_iso("2026-03-05T00:00:00+00:00"), None)}
    assert columns.dataset_jobs == objects.dataset_jobs


def test_compacted_columns_keep_every_value_and_share_the_key_column():
    runs = pa.table({"uuid": pa.chunked_array([["r1", "r2"], ["r3"]]), "job": ["j1", "j1", "j2"]})
    runs, uuids = single_chunk(runs, "uuid")
    runs = encode_repeated(runs, ("job",))
    assert runs.column("uuid").num_chunks == 1 and pa.types.is_dictionary(runs.column("job").type)
    io = pa.table({"run_uuid": ["r3", "r1", None, "r3"], "name": ["a", "b", "a", "a"]})
    referenced = as_references(io, "run_uuid", uuids)
    column = referenced.column("run_uuid").combine_chunks()
    assert column.dictionary.buffers()[2].address == uuids.buffers()[2].address  # shared, not copied
    assert referenced.to_pylist() == io.to_pylist()
    # A value the key column lacks: encoded on its own, nothing lost.
    strays = as_references(pa.table({"run_uuid": ["r1", "r9"]}), "run_uuid", uuids)
    assert strays.column("run_uuid").to_pylist() == ["r1", "r9"]
    # The lookups read compacted columns as they read plain ones.
    index = RowIndex(runs, "uuid", "job")
    assert index["r3"] == ("j2", 2)
    assert dict(RangeIndex(runs.column("job")).items()) == {"j1": (0, 2), "j2": (2, 3)}


def test_positions_look_up_each_chunk_plain_or_through_its_own_dictionary():
    keys = pa.array(["a", "b", "c"])
    column = pa.chunked_array([
        pa.array(["c", "x", None]).dictionary_encode(),
        pa.array(["b", "a", "a"]).dictionary_encode(),  # another dictionary, in another order
    ])
    assert positions_in(column, keys).to_pylist() == [2, None, None, 1, 0, 0]
    assert positions_in(pa.chunked_array([["a", None], ["x", "b"]]), keys).to_pylist() == [0, None, None, 1]


def test_run_io_keys_are_equal_for_equal_sets_in_any_row_order():
    uuids = pa.array(["r1", "r2", "r3", "r4"])
    rows = [  # (run, io_type, namespace, name)
        ("r1", "input", "db", "a"), ("r1", "output", "db", "b"),
        ("r2", "output", "db", "b"), ("r2", "input", "db", "a"), ("r2", "input", "db", "a"),  # read twice
        ("r3", "input", "db", "b"), ("r3", "output", "db", "a"),  # the same names, the other way round
        ("r9", "input", "db", "a"),  # a run the snapshot does not hold
        ("r4", None, "other", "a"),  # no io_type: an output, as the per-object build has it
    ]
    table = pa.table({name: [row[i] for row in rows]
                      for i, name in enumerate(("run_uuid", "io_type", "namespace_name", "name"))})
    # As the snapshot holds them: the run a reference into the runs' uuids, the rest dictionaries (r9 and r4 left out).
    referenced = encode_repeated(as_references(table.slice(0, 7), "run_uuid", uuids),
                                 ("io_type", "namespace_name", "name"))
    for given in (table, table.take([8, 6, 5, 4, 3, 2, 1, 0, 7]), referenced):
        io = run_io_keys(given, uuids)
        assert len(io.keys) == 4
        assert io.keys[0] == io.keys[1] != io.keys[2] and io.keys[0]
        assert io.datasets(io.keys[0]) == ((("db", "a"),), (("db", "b"),))
        assert io.datasets(io.keys[2]) == ((("db", "b"),), (("db", "a"),))
        assert io.datasets(io.keys[3]) == (((), (("other", "a"),)) if given is not referenced else ((), ()))
        assert pa.types.is_dictionary(referenced.column("run_uuid").type)
    assert run_io_keys(table.slice(0, 0), uuids).keys == [b""] * 4

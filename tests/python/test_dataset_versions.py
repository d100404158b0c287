"""The dataset versions kept between refreshes (dataset_versions.py): the kept versions with each changed
dataset's tail replaced, every pointer read again and the current flags set again equal all the versions read
again. Pure: the timelines are simulated here (a build rewrites a dataset's
versions from its tail start and re-points the version it carried); test_marquez_api checks the Spark read
against the ``dataset_versions`` view."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from python_jobs.marquez_api.dataset_versions import (
    POINTER_SCHEMA,
    VERSION_SCHEMA,
    merged,
    with_current_flags,
    with_own_pointers,
)
from python_jobs.marquez_api.tails import TAIL_SCHEMA, TimelineChanges
from python_jobs.marquez_api.watermarks import Watermark

START = datetime(2026, 3, 1, tzinfo=UTC)
Position = tuple[datetime, int, int]  # event time, ingest_seq, kind


@dataclass
class Version:
    name: str
    position: Position
    pointer: str | None  # the schema version it points at now (None: no pointer row, so left out)


def table_of(timelines: dict[str, list[Version]], with_pointers: bool = True) -> pa.Table:
    return pa.Table.from_pylist([
        {"dataset_uuid": dataset, "version": v.name, "created_at": v.position[0],
         "dataset_schema_version_uuid": v.pointer if with_pointers else None, "run_uuid": f"run-{v.name}",
         "is_current_version": False, "first_ingest_seq": v.position[1], "key_at": v.position[0],
         "key_seq": v.position[1], "key_kind": v.position[2]}
        for dataset, versions in sorted(timelines.items()) for v in versions
    ], schema=VERSION_SCHEMA)


def full_read(timelines: dict[str, list[Version]]) -> pa.Table:
    rows = table_of(timelines, with_pointers=False)
    pointers = pa.Table.from_pylist([{"version": v.name, "dataset_schema_version_uuid": v.pointer}
                                     for versions in timelines.values() for v in versions if v.pointer],
                                    schema=POINTER_SCHEMA)
    return with_current_flags(with_own_pointers(rows, pointers))


def as_set(table: pa.Table) -> list[tuple]:
    return sorted(tuple(row.values()) for row in table.to_pylist())


def current_of(table: pa.Table) -> dict[str, str]:
    return {row["dataset_uuid"]: row["version"] for row in table.to_pylist() if row["is_current_version"]}


@pytest.mark.parametrize("seed", range(30))
def test_kept_versions_with_the_tails_replaced_equal_a_full_read(seed):
    rng = random.Random(seed)
    seq = 0

    def position(earliest: Position | None = None) -> Position:
        nonlocal seq
        while True:
            seq += 1
            # Few distinct times: versions often tie on creation and are ordered by their first ingest_seq.
            found = (START + timedelta(minutes=rng.randrange(10)), seq, rng.randrange(2))
            if earliest is None or found >= earliest:
                return found

    def version(earliest: Position | None = None) -> Version:
        # Every version has a pointer: its own field set (or the empty one), or a merged one.
        pointer = rng.choice(["s1", "s2", "s3", "s3"])
        return Version(f"v{seq + 1}", position(earliest), pointer)

    timelines = {d: sorted((version() for _ in range(rng.randrange(6))), key=lambda v: v.position)
                 for d in ("d1", "d2", "d3")}
    kept = full_read(timelines)
    for _refresh in range(3):
        starts: dict[str, Position] = {}
        for dataset in rng.sample(sorted(timelines), rng.randrange(len(timelines) + 1)):
            start = position()
            starts[dataset] = start
            before = [v for v in timelines[dataset] if v.position < start]
            if before:  # the version current at the tail start: its position stays, its pointer is recomputed
                before[-1].pointer = rng.choice([before[-1].pointer, "s1", "s4"])
            timelines[dataset] = before + sorted((version(start) for _ in range(rng.randrange(4))),
                                                 key=lambda v: v.position)
        changes = TimelineChanges(Watermark(), 0, pa.Table.from_pylist([
            {"dataset_uuid": d, "tail_at": at, "tail_seq": s, "tail_kind": k} for d, (at, s, k) in starts.items()
        ], schema=TAIL_SCHEMA))
        newer = table_of({d: [v for v in timelines[d] if v.position >= starts[d]] for d in starts},
                         with_pointers=False)
        pointers = pa.Table.from_pylist([
            {"version": v.name, "dataset_schema_version_uuid": v.pointer}
            for versions in timelines.values() for v in versions if v.pointer
        ], schema=POINTER_SCHEMA)
        kept = merged(kept, changes, newer, pointers)
        assert kept.schema == VERSION_SCHEMA
        assert as_set(kept) == as_set(full_read(timelines))


def test_the_current_version_is_the_latest_created_then_the_latest_first_ingest_seq():
    at = START + timedelta(hours=1)
    table = table_of({"d": [Version("old", (START, 9, 1), "s"), Version("tie-early", (at, 3, 1), "s"),
                            Version("tie-late", (at, 4, 1), "s")],
                      "e": [Version("only", (START, 1, 0), "s")]})
    assert current_of(with_current_flags(table)) == {"d": "tie-late", "e": "only"}
    assert current_of(with_current_flags(table.take([2, 0, 3, 1]))) == {"d": "tie-late", "e": "only"}


def test_a_new_version_without_a_pointer_is_left_out_as_by_the_views_inner_join():
    rows = table_of({"d": [Version("pointed", (START, 1, 1), None), Version("unpointed", (START, 2, 1), None)]},
                    with_pointers=False)
    pointers = pa.Table.from_pylist([{"version": "pointed", "dataset_schema_version_uuid": "s"}],
                                    schema=POINTER_SCHEMA)
    assert [(r["version"], r["dataset_schema_version_uuid"]) for r in with_own_pointers(rows, pointers).to_pylist()] \
        == [("pointed", "s")]

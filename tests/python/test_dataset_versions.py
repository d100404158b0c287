"""The dataset versions kept between refreshes (dataset_versions.py): the kept versions with each changed
dataset's tail replaced, their pointers taken from the builds' new pointer rows (or read again where one was
superseded) and the current flags set again equal all the versions read again. Pure: the timelines are simulated
here (a build rewrites a dataset's versions from its tail start, supersedes every pointer row from there on and
continues the pointers of the version it carried); test_marquez_api checks the Spark read against the
``dataset_versions`` view."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from python_jobs.marquez_api.dataset_versions import (
    POINTER_SCHEMA,
    VERSION_SCHEMA,
    latest_pointers,
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
    # Its live pointer rows (position, schema version); the current one is the latest. None: no pointer rows.
    pointers: list[tuple[Position, str]] | None = field(default_factory=list)

    @property
    def pointer(self) -> str | None:
        return max(self.pointers)[1] if self.pointers else None


def table_of(timelines: dict[str, list[Version]], with_pointers: bool = True) -> pa.Table:
    rows = []
    for dataset, versions in sorted(timelines.items()):
        for v in versions:
            at = max(v.pointers)[0] if with_pointers and v.pointers else (None, None, None)
            rows.append({"dataset_uuid": dataset, "version": v.name, "created_at": v.position[0],
                         "dataset_schema_version_uuid": v.pointer if with_pointers else None,
                         "run_uuid": f"run-{v.name}", "is_current_version": False, "first_ingest_seq": v.position[1],
                         "key_at": v.position[0], "key_seq": v.position[1], "key_kind": v.position[2],
                         "pointer_at": at[0], "pointer_seq": at[1], "pointer_kind": at[2]})
    return pa.Table.from_pylist(rows, schema=VERSION_SCHEMA)


def pointer_rows(versions: list[tuple[str, list[tuple[Position, str]]]]) -> pa.Table:
    return pa.Table.from_pylist([
        {"version": name, "dataset_schema_version_uuid": schema, "pointer_at": at[0], "pointer_seq": at[1],
         "pointer_kind": at[2]} for name, rows in versions for at, schema in rows
    ], schema=POINTER_SCHEMA)


def full_read(timelines: dict[str, list[Version]]) -> pa.Table:
    rows = table_of(timelines, with_pointers=False)
    every = pointer_rows([(v.name, v.pointers or []) for versions in timelines.values() for v in versions])
    return with_current_flags(with_own_pointers(rows, latest_pointers(every)))


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

    def schema() -> str:
        return rng.choice(["s1", "s2", "s3", "s3", "s4"])

    def version(earliest: Position | None = None) -> Version:
        # Every version points at its own field set (or the empty one) from its creation, then maybe at merged
        # ones as sightings show more fields.
        at = position(earliest)
        made = Version(f"v{seq}", at, [(at, schema())])
        made.pointers = (made.pointers or []) + [(position(at), schema()) for _ in range(rng.randrange(3))]
        return made

    timelines = {d: sorted((version() for _ in range(rng.randrange(6))), key=lambda v: v.position)
                 for d in ("d1", "d2", "d3")}
    kept = full_read(timelines)
    reread_count = 0
    for _refresh in range(3):
        starts: dict[str, Position] = {}
        written: list[tuple[str, list[tuple[Position, str]]]] = []
        for dataset in rng.sample(sorted(timelines), rng.randrange(len(timelines) + 1)):
            start = position()
            starts[dataset] = start
            before = [v for v in timelines[dataset] if v.position < start]
            for old in before:  # every pointer row from the tail start on is superseded
                old.pointers = [(at, s) for at, s in old.pointers or [] if at < start]
            if before:  # the version current at the tail start continues its pointers from there
                carried = [(position(start), schema()) for _ in range(rng.randrange(3))]
                before[-1].pointers = (before[-1].pointers or []) + carried
                written.append((before[-1].name, carried))
            fresh = sorted((version(start) for _ in range(rng.randrange(4))), key=lambda v: v.position)
            written += [(v.name, v.pointers or []) for v in fresh]
            timelines[dataset] = before + fresh
        changes = TimelineChanges(Watermark(), 0, pa.Table.from_pylist([
            {"dataset_uuid": d, "tail_at": at, "tail_seq": s, "tail_kind": k} for d, (at, s, k) in starts.items()
        ], schema=TAIL_SCHEMA))
        newer = table_of({d: [v for v in timelines[d] if v.position >= starts[d]] for d in starts},
                         with_pointers=False)
        by_name = {v.name: v for versions in timelines.values() for v in versions}

        def reread(names: list[str], by_name: dict[str, Version] = by_name) -> pa.Table:
            nonlocal reread_count
            reread_count += len(names)
            return pointer_rows([(name, by_name[name].pointers or []) for name in names])

        kept = merged(kept, changes, newer, pointer_rows(written), reread)
        assert kept.schema == VERSION_SCHEMA
        assert as_set(kept) == as_set(full_read(timelines))
    assert reread_count <= sum(len(versions) for versions in timelines.values()) * 3


def test_a_kept_pointer_superseded_without_a_new_one_is_read_again():
    """The version current at the tail start had a merged pointer after it; the build's sightings no longer
    merge anything into it: its pointer falls back to its own field set, which only a read by name finds."""
    own, merged_at, tail = (START, 1, 1), (START + timedelta(minutes=5), 3, 0), (START + timedelta(minutes=2), 2, 0)
    version = Version("v", own, [(own, "own"), (merged_at, "merged")])
    kept = full_read({"d": [version]})
    assert kept.column("dataset_schema_version_uuid").to_pylist() == ["merged"]
    changes = TimelineChanges(Watermark(), 0, pa.Table.from_pylist(
        [{"dataset_uuid": "d", "tail_at": tail[0], "tail_seq": tail[1], "tail_kind": tail[2]}], schema=TAIL_SCHEMA))
    asked: list[list[str]] = []

    def reread(names: list[str]) -> pa.Table:
        asked.append(names)
        return pointer_rows([("v", [(own, "own")])])

    after = merged(kept, changes, table_of({}, with_pointers=False), pointer_rows([]), reread)
    assert asked == [["v"]] and after.column("dataset_schema_version_uuid").to_pylist() == ["own"]
    # A kept pointer before the tail start stays without any read.
    untouched = merged(full_read({"d": [Version("v", own, [(own, "own")])]}), changes,
                       table_of({}, with_pointers=False), pointer_rows([]), reread)
    assert len(asked) == 1 and untouched.column("dataset_schema_version_uuid").to_pylist() == ["own"]


def test_the_current_version_is_the_latest_created_then_the_latest_first_ingest_seq():
    at = START + timedelta(hours=1)
    table = table_of({"d": [Version("old", (START, 9, 1), [((START, 9, 1), "s")]),
                            Version("tie-early", (at, 3, 1), [((at, 3, 1), "s")]),
                            Version("tie-late", (at, 4, 1), [((at, 4, 1), "s")])],
                      "e": [Version("only", (START, 1, 0), [((START, 1, 0), "s")])]})
    assert current_of(with_current_flags(table)) == {"d": "tie-late", "e": "only"}
    assert current_of(with_current_flags(table.take([2, 0, 3, 1]))) == {"d": "tie-late", "e": "only"}


def test_a_new_version_without_a_pointer_is_left_out_as_by_the_views_inner_join():
    rows = table_of({"d": [Version("pointed", (START, 1, 1), None), Version("unpointed", (START, 2, 1), None)]},
                    with_pointers=False)
    pointers = pointer_rows([("pointed", [((START, 1, 1), "s")])])
    assert [(r["version"], r["dataset_schema_version_uuid"]) for r in with_own_pointers(rows, pointers).to_pylist()] \
        == [("pointed", "s")]

"""The runs' inputs and outputs kept between refreshes (run_io.py): the kept rows with each changed dataset's
tail replaced by the rows of the builds past the mark equal all the rows read again. Pure: the timelines are
simulated here (a build rewrites a dataset's records from its tail start, as the revision tables do);
test_marquez_api checks the Spark read against the two views."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from python_jobs.marquez_api.run_io import ROW_SCHEMA, merged
from python_jobs.marquez_api.tails import TAIL_SCHEMA, TimelineChanges
from python_jobs.marquez_api.watermarks import Watermark

START = datetime(2026, 3, 1, tzinfo=UTC)
Position = tuple[datetime, int, int]  # event time, ingest_seq, kind (0 a sighting, 1 a version)
# One record on a dataset's timeline: run, io type, version, position. An input run may read a version twice.
Record = tuple[str, str, str, Position]


def rows_of(timelines: dict[str, list[Record]]) -> pa.Table:
    """What a read gives for these records: each (run, io type, version, dataset) once, at its earliest
    position (``min(timeline_key)``)."""
    earliest: dict[tuple[str, str, str, str], Position] = {}
    for dataset, records in timelines.items():
        for run, io_type, version, position in records:
            identity = (run, io_type, version, dataset)
            earliest[identity] = min(earliest.get(identity, position), position)
    return pa.Table.from_pylist([
        {"run_uuid": run, "io_type": io_type, "namespace_name": "ns", "name": f"name-{dataset}",
         "dataset_version_uuid": version, "dataset_uuid": dataset, "key_at": at, "key_seq": seq, "key_kind": kind}
        for (run, io_type, version, dataset), (at, seq, kind) in sorted(earliest.items())
    ], schema=ROW_SCHEMA)


def tails_of(starts: dict[str, Position]) -> pa.Table:
    return pa.Table.from_pylist([
        {"dataset_uuid": dataset, "tail_at": at, "tail_seq": seq, "tail_kind": kind}
        for dataset, (at, seq, kind) in sorted(starts.items())
    ], schema=TAIL_SCHEMA)


def changes_of(starts: dict[str, Position]) -> TimelineChanges:
    return TimelineChanges(Watermark(), 0, tails_of(starts))


def as_set(table: pa.Table) -> list[tuple]:
    return sorted(tuple(row.values()) for row in table.to_pylist())


def random_position(rng: random.Random, seq: int, earliest: Position | None = None) -> Position:
    while True:
        # Few distinct times: positions often tie on time and are ordered by ingest_seq, then kind.
        position = (START + timedelta(minutes=rng.randrange(12)), seq, rng.randrange(2))
        if earliest is None or position >= earliest:
            return position


def random_record(rng: random.Random, seq: int, earliest: Position | None = None) -> Record:
    run = f"run-{rng.randrange(8)}"
    io_type = rng.choice(["input", "output"])
    return run, io_type, f"version-{rng.randrange(3)}", random_position(rng, seq, earliest)


@pytest.mark.parametrize("seed", range(30))
def test_kept_rows_with_the_tails_replaced_equal_a_full_read(seed):
    rng = random.Random(seed)
    seq = 0
    timelines: dict[str, list[Record]] = {}
    for dataset in ("d1", "d2", "d3", "d4"):
        timelines[dataset] = []
        for _ in range(rng.randrange(8)):
            seq += 1
            timelines[dataset].append(random_record(rng, seq))
    kept = rows_of(timelines)
    for _refresh in range(3):
        # One or more builds past the mark: each rewrites its datasets from a tail start; the refresh sees each
        # touched dataset's earliest tail start, and the live rows of those builds (every record after it).
        starts: dict[str, Position] = {}
        for _build in range(rng.randrange(1, 3)):
            for dataset in rng.sample(sorted(timelines), rng.randrange(len(timelines) + 1)):
                seq += 1
                start = random_position(rng, seq)
                starts[dataset] = min(starts.get(dataset, start), start)
                before = [record for record in timelines[dataset] if record[3] < start]
                rewritten = [random_record(rng, seq, start) for _ in range(rng.randrange(5))]
                timelines[dataset] = before + rewritten
        newer = rows_of({dataset: [r for r in timelines[dataset] if r[3] >= start]
                         for dataset, start in starts.items()})
        kept = merged(kept, changes_of(starts), newer)
        assert kept.schema == ROW_SCHEMA
        assert as_set(kept) == as_set(rows_of(timelines))


def test_a_row_read_both_before_and_after_a_tail_start_stays_once_with_its_earlier_position():
    early, late = (START, 1, 0), (START + timedelta(hours=1), 5, 0)
    kept = rows_of({"d": [("r", "input", "v", early)]})
    newer = rows_of({"d": [("r", "input", "v", late)]})
    result = merged(kept, changes_of({"d": (START + timedelta(minutes=30), 3, 0)}), newer)
    assert as_set(result) == as_set(kept)

"""The stored events' index kept between refreshes (stored_events.py): extending it by the rows of new files gives
what one read of every file gives. Pure: no Spark (the API's Spark tests read it from a warehouse)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from python_jobs.marquez_api.stored_events import blocks_of, extended, file_name, ordered

START = datetime(2026, 3, 1, tzinfo=UTC)


def rows(events: list[tuple[datetime, int, str, str]]) -> pa.Table:
    return pa.table({
        "event_time": pa.array([e[0] for e in events], pa.timestamp("us", tz="UTC")),
        "ingest_seq": pa.array([e[1] for e in events], pa.int64()),
        "ingest_block": pa.array([e[1] // 4 for e in events], pa.int32()),
        "job_namespace": pa.array([e[2] for e in events], pa.string()),
        "event_type": pa.array([e[3] for e in events], pa.string()),
    })


def test_a_file_is_known_by_its_name_and_its_block_by_its_folder():
    uri = "file:/w/raw.db/lineage_events/ingest_block=12/part-00000-1b2c.c000.parquet"
    assert file_name(uri) == file_name("/w/raw.db/lineage_events/ingest_block=12/part-00000-1b2c.c000.parquet")
    assert blocks_of({uri, "file:/w/raw.db/lineage_events/ingest_block=3/part-1.parquet"}) == {3, 12}
    assert blocks_of({"file:/w/raw.db/lineage_events/part-1.parquet"}) is None  # an unpartitioned table
    assert blocks_of(set()) == set()


@pytest.mark.parametrize("seed", range(20))
def test_extending_by_any_files_equals_one_read_of_every_file(seed):
    rng = random.Random(seed)
    events = [(START + timedelta(minutes=rng.randrange(30)), seq, rng.choice(["ns-a", "ns-b", "ns-c"]),
               rng.choice(["START", "COMPLETE", "FAIL"])) for seq in range(rng.randrange(0, 50))]
    # Files come in any order of time: a late file may hold older events than the kept ones.
    cut = rng.randrange(len(events) + 1)
    kept = ordered(rows(events[:cut]))
    result = extended(kept, rows(events[cut:]))
    expected = ordered(rows(events))
    assert result.to_pylist() == expected.to_pylist()
    assert pa.types.is_dictionary(result.schema.field("job_namespace").type)


def test_nothing_new_keeps_the_index_as_it_is():
    kept = ordered(rows([(START, 1, "ns", "START")]))
    assert extended(kept, rows([])) is kept

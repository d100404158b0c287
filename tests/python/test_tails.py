"""Which kept rows the builds past a mark may have changed (tails.py): those at or after their dataset's tail start."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyarrow as pa

from python_jobs.marquez_api.tails import (
    POSITION_FIELDS,
    TAIL_SCHEMA,
    TimelineChanges,
    at_or_after_tail,
    before_tails,
    may_reach_kept_rows,
)
from python_jobs.marquez_api.watermarks import Watermark

AT = datetime(2026, 3, 1, 0, 5, tzinfo=UTC)


def test_positions_compare_by_time_then_ingest_seq_then_kind():
    rows = pa.Table.from_pylist([
        {"dataset_uuid": "d", "key_at": AT - timedelta(minutes=1), "key_seq": 99, "key_kind": 1},  # earlier time
        {"dataset_uuid": "d", "key_at": AT, "key_seq": 6, "key_kind": 1},  # the same time, an earlier ingest_seq
        {"dataset_uuid": "d", "key_at": AT, "key_seq": 7, "key_kind": 0},  # the same time and seq, earlier kind
        {"dataset_uuid": "d", "key_at": AT, "key_seq": 7, "key_kind": 1},  # the tail start itself
        {"dataset_uuid": "d", "key_at": AT, "key_seq": 8, "key_kind": 0},  # a later ingest_seq
        {"dataset_uuid": "other", "key_at": AT + timedelta(days=1), "key_seq": 100, "key_kind": 1},  # no tail
    ], schema=pa.schema([pa.field("dataset_uuid", pa.string()), *POSITION_FIELDS]))
    tails = pa.Table.from_pylist([{"dataset_uuid": "d", "tail_at": AT, "tail_seq": 7, "tail_kind": 1}],
                                 schema=TAIL_SCHEMA)
    assert at_or_after_tail(rows, tails).to_pylist() == [False, False, False, True, True, False]
    encoded = rows.set_column(0, "dataset_uuid", rows.column("dataset_uuid").combine_chunks().dictionary_encode())
    assert at_or_after_tail(encoded, tails).to_pylist() == [False, False, False, True, True, False]
    assert not any(at_or_after_tail(rows, TAIL_SCHEMA.empty_table()).to_pylist())


def test_kept_rows_are_not_copied_where_the_builds_only_appended():
    rows = pa.Table.from_pylist([
        {"dataset_uuid": "d", "key_at": AT - timedelta(minutes=1), "key_seq": 5, "key_kind": 1},
        {"dataset_uuid": "other", "key_at": AT + timedelta(days=1), "key_seq": 100, "key_kind": 1},
    ], schema=pa.schema([pa.field("dataset_uuid", pa.string()), *POSITION_FIELDS]))
    appended = pa.Table.from_pylist([{"dataset_uuid": "d", "tail_at": AT, "tail_seq": 7, "tail_kind": 1}],
                                    schema=TAIL_SCHEMA)
    assert before_tails(rows, TimelineChanges(Watermark(), 1, appended)) is rows
    reaching_back = pa.Table.from_pylist([{"dataset_uuid": "d", "tail_at": AT - timedelta(hours=1), "tail_seq": 1,
                                           "tail_kind": 0}], schema=TAIL_SCHEMA)
    assert before_tails(rows, TimelineChanges(Watermark(), 1, reaching_back)).column("dataset_uuid").to_pylist() == [
        "other"]


def test_only_a_tail_start_at_or_before_a_datasets_latest_time_may_reach_its_rows():
    schema = pa.schema([pa.field("dataset_uuid", pa.string()), *POSITION_FIELDS])
    first = pa.Table.from_pylist([
        {"dataset_uuid": "d", "key_at": AT - timedelta(hours=2), "key_seq": 5, "key_kind": 1},
        {"dataset_uuid": "d", "key_at": AT, "key_seq": 9, "key_kind": 1},  # d's latest
        {"dataset_uuid": "e", "key_at": None, "key_seq": 3, "key_kind": 0},  # no time: the earliest position
    ], schema=schema)
    second = pa.Table.from_pylist([{"dataset_uuid": "e", "key_at": AT - timedelta(days=1), "key_seq": 4,
                                    "key_kind": 1}], schema=schema)
    # Kept rows as the snapshot holds them: dictionary columns, a chunk per load with a dictionary of its own.
    rows = pa.concat_tables([table.set_column(0, "dataset_uuid", table.column("dataset_uuid").combine_chunks()
                                              .dictionary_encode()) for table in (first, second)])

    def tails(*starts: tuple[str, datetime | None]) -> pa.Table:
        return pa.Table.from_pylist([{"dataset_uuid": dataset, "tail_at": at, "tail_seq": 1, "tail_kind": 0}
                                     for dataset, at in starts], schema=TAIL_SCHEMA)

    later = tails(("d", AT + timedelta(minutes=1)), ("e", AT - timedelta(hours=23)), ("new", AT - timedelta(days=9)))
    assert not may_reach_kept_rows(rows, later)
    assert not any(at_or_after_tail(rows, later).to_pylist())  # what the full comparison says too
    assert may_reach_kept_rows(rows, tails(("d", AT)))  # the same time: seq and kind decide, so the rows are compared
    assert may_reach_kept_rows(rows, tails(("e", AT - timedelta(days=2))))
    assert may_reach_kept_rows(rows, tails(("d", None)))
    assert not may_reach_kept_rows(rows, TAIL_SCHEMA.empty_table())
    assert not may_reach_kept_rows(rows.slice(0, 0), later)

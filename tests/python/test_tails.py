"""Which kept rows the builds past a mark may have changed (tails.py): those at or after their dataset's tail start."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyarrow as pa

from python_jobs.marquez_api.tails import POSITION_FIELDS, TAIL_SCHEMA, TimelineChanges, at_or_after_tail, before_tails
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

"""The run details kept between refreshes (run_details.py): extending them by the rows published after their
mark gives what one read of every row gives. Pure: no Spark (the Spark reads are covered by the API's tests)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from python_jobs.marquez_api import run_details
from python_jobs.marquez_api.run_details import (
    NOMINAL,
    WON_AT,
    BodyValues,
    aligned,
    empty_keyed,
    merged,
    with_values,
)

START = datetime(2026, 3, 1, tzinfo=UTC)


def keyed(rows: list[tuple[str, str | None, datetime]]) -> pa.Table:
    return pa.table({
        "run_id": pa.array([r[0] for r in rows], pa.string()), "v0": pa.array([r[1] for r in rows], pa.string()),
        WON_AT: pa.array([r[2] for r in rows], pa.timestamp("us", tz="UTC")),
    })


def latest_per_run(rows: list[tuple[str, str | None, datetime, int]]) -> list[tuple[str, str | None, datetime]]:
    """The full read's rule in Python: per run the row with the highest (event time, ingest_seq)."""
    winners: dict[str, tuple[str, str | None, datetime, int]] = {}
    for row in rows:
        if row[0] not in winners or (row[2], row[3]) > (winners[row[0]][2], winners[row[0]][3]):
            winners[row[0]] = row
    return [(run, value, moment) for run, value, moment, _ in winners.values()]


def test_a_newer_row_wins_unless_the_kept_one_is_later():
    kept_uuids = pa.array(["a", "b", "c"])
    kept = aligned(kept_uuids, keyed([("a", "x", START + timedelta(2)), ("b", "y", START + timedelta(5))]))
    newer = keyed([
        ("b", "y-earlier", START + timedelta(3)),  # an older event that arrived later: the kept value stays
        ("a", "x-same-time", START + timedelta(2)),  # a tie on time: the higher ingest_seq (the newer row) wins
        ("c", "z", START + timedelta(1)),  # the run's first value
        ("d", None, START + timedelta(4)),  # a new run whose facet has no such field: present, null value
        ("gone", "v", START),  # a run the snapshot no longer has
    ])
    runs = pa.array(["d", "c", "b", "a", "e"])
    result = merged(kept, kept_uuids, runs, newer)
    assert result.column("v0").to_pylist() == [None, "z", "y", "x-same-time", None]
    assert result.column(WON_AT).is_valid().to_pylist() == [True, True, True, True, False]


def test_an_empty_side_merges():
    runs = pa.array(["a", "b"])
    nothing = keyed([])
    kept = aligned(pa.array([], pa.string()), nothing)
    assert merged(kept, pa.array([], pa.string()), runs, keyed([("b", "v", START)])).column("v0").to_pylist() == [
        None, "v"]
    kept = aligned(runs, keyed([("a", "v", START)]))
    assert merged(kept, runs, runs, nothing).column("v0").to_pylist() == ["v", None]


@pytest.mark.parametrize("seed", range(20))
def test_extending_at_any_mark_equals_one_read_of_everything(seed):
    rng = random.Random(seed)
    runs = [f"r{i}" for i in range(12)]
    rows = [(rng.choice(runs), rng.choice(["u1", "u2", None]), START + timedelta(hours=rng.randrange(6)), seq)
            for seq in range(rng.randrange(1, 60))]
    mark = rng.randrange(len(rows) + 1)
    kept_runs = pa.array(rng.sample(runs, 8))  # the runs the earlier snapshot had, in its order
    now_runs = pa.array(rng.sample(runs, 10))  # and the new one's: runs come and go
    kept = aligned(kept_runs, keyed(latest_per_run(rows[:mark])))
    result = merged(kept, kept_runs, now_runs, keyed(latest_per_run(rows[mark:])))
    # Only runs the earlier snapshot had keep values from before the mark.
    kept_set = set(kept_runs.to_pylist())
    visible = [row for i, row in enumerate(rows) if i >= mark or row[0] in kept_set]
    assert result.to_pylist() == aligned(now_runs, keyed(latest_per_run(visible))).to_pylist()


def test_each_winner_takes_its_bodys_values_and_one_without_a_body_is_dropped():
    winners = pa.table({
        "run_id": ["a", "b", "c"], "body_hash": ["h1", "h2", "h1"],
        WON_AT: pa.array([START, START + timedelta(1), START + timedelta(2)], pa.timestamp("us", tz="UTC")),
    })
    rows = with_values(winners, NOMINAL, {"h1": ("s1", None), "h3": ("s3", "e3")})
    assert rows.schema == empty_keyed(NOMINAL).schema
    assert rows.to_pylist() == [
        {"run_id": "a", "v0": "s1", "v1": None, WON_AT: START},
        {"run_id": "c", "v0": "s1", "v1": None, WON_AT: START + timedelta(2)},
    ]


def test_the_kept_bodies_are_bounded_and_prefer_the_latest_winners(monkeypatch):
    monkeypatch.setattr(run_details, "KEPT_BODIES", 3)
    first = BodyValues().kept({"a": ("1",), "b": ("2",), "c": ("3",), "d": ("4",)}, ["a", "b", "c", "d"])
    assert list(first.values) == ["b", "c", "d"]  # the oldest winner's body goes first
    # A refresh whose winners reuse a kept body and bring one new: the least recent kept body goes.
    second = first.kept({"e": ("5",)}, ["e", "b"])
    assert second.values == {"d": ("4",), "e": ("5",), "b": ("2",)}
    # Nothing new: the kept bodies stay as they were.
    assert first.kept({}, []).values == first.values

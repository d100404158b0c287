"""The run summaries kept between refreshes (run_summaries.py): combining the summary of the rows through a mark
with the summary of the rows past it gives the summary of all of them. Pure: the rule is written out here in
Python, the ``runs`` view's rule; test_marquez_api checks the Spark read against the view itself."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from python_jobs.marquez_api.run_summaries import (
    SUMMARY_SCHEMA,
    merged,
)

START = datetime(2026, 3, 1, tzinfo=UTC)
TERMINAL = ("COMPLETE", "FAIL", "ABORT")
StateRow = tuple[str, str, str, datetime | None, int]  # run, job, state, event time, ingest_seq


def summarize(rows: list[StateRow]) -> pa.Table:
    """The ``runs`` view's rule over ``rows``, with each state's key, one row per run."""
    by_run: dict[str, list[StateRow]] = {}
    for row in rows:
        by_run.setdefault(row[0], []).append(row)
    out = []
    for run, group in by_run.items():
        times = [r[3] for r in group if r[3] is not None]
        keyed = [((r[2] in TERMINAL), r[3], r[4], r[2]) for r in group if r[2] != "OTHER"]
        # Spark orders a null field first: a null event time is the least.
        best = max(keyed, key=lambda k: (k[0], k[1] is not None, k[1] or START, k[2]), default=None)
        starts = [r[3] for r in group if r[2] == "START" and r[3] is not None]
        ends = [r[3] for r in group if r[2] in TERMINAL and r[3] is not None]
        out.append({
            "uuid": run, "job_uuid": min(r[1] for r in group),
            "created_at": min(times, default=None), "updated_at": max(times, default=None),
            "current_run_state": best[3] if best else None,
            "started_at": min(starts, default=None), "ended_at": max(ends, default=None),
            "state_is_terminal": best[0] if best else None, "state_at": best[1] if best else None,
            "state_seq": best[2] if best else None,
        })
    return pa.Table.from_pylist(out, schema=SUMMARY_SCHEMA)


def by_run(table: pa.Table) -> dict[str, dict]:
    return {row["uuid"]: row for row in table.to_pylist()}


def test_a_later_terminal_state_wins_and_other_never_does():
    kept = summarize([("r1", "j", "START", START, 1), ("r1", "j", "COMPLETE", START + timedelta(2), 2),
                      ("r2", "j", "START", START, 3), ("r3", "j", "OTHER", START, 4)])
    newer = summarize([
        ("r1", "j", "RUNNING", START + timedelta(5), 10),  # a late RUNNING does not undo the COMPLETE
        ("r2", "j", "OTHER", START + timedelta(9), 11),  # OTHER moves the update time, never the state
        ("r3", "j", "FAIL", START + timedelta(1), 12),  # the first typed event of a run that had only OTHER
        ("r4", "k", "START", None, 13),  # a new run, without an event time
    ])
    result = by_run(merged(kept, newer))
    assert {run: row["current_run_state"] for run, row in result.items()} == {
        "r1": "COMPLETE", "r2": "START", "r3": "FAIL", "r4": "START"}
    assert result["r1"]["updated_at"] == START + timedelta(5)
    assert result["r1"]["ended_at"] == START + timedelta(2)
    assert result["r2"]["updated_at"] == START + timedelta(9)
    assert result["r3"]["ended_at"] == START + timedelta(1)
    assert result["r4"]["created_at"] is None and result["r4"]["job_uuid"] == "k"


def test_nothing_newer_keeps_the_table():
    kept = summarize([("r1", "j", "START", START, 1)])
    assert merged(kept, summarize([]).cast(SUMMARY_SCHEMA)) is kept


@pytest.mark.parametrize("seed", range(25))
def test_extending_at_any_mark_equals_one_summary_of_everything(seed):
    rng = random.Random(seed)
    states = ("START", "RUNNING", "COMPLETE", "FAIL", "ABORT", "OTHER")
    rows: list[StateRow] = []
    for seq in range(rng.randint(1, 120)):
        moment = None if rng.random() < 0.05 else START + timedelta(minutes=rng.randint(0, 30))
        run = f"r{rng.randint(0, 15)}"
        rows.append((run, f"j{rng.randint(0, 1)}", rng.choice(states), moment, seq))
    marks = sorted(rng.sample(range(len(rows) + 1), k=min(3, len(rows) + 1)))
    summaries = summarize([r for r in rows if r[4] < marks[0]])
    for low, high in zip(marks, [*marks[1:], len(rows)], strict=True):
        summaries = merged(summaries, summarize([r for r in rows if low <= r[4] < high]))
    assert by_run(summaries) == by_run(summarize(rows))

"""Each run's summary of its ``run_states`` rows (the ``runs`` view), kept between refreshes and read past a mark.

Every column of the summary combines: the first and last event times (``created_at``, ``updated_at``), the
earliest START and the latest terminal time (``started_at``, ``ended_at``), the job (the least), and the
current state, which is the state of the row with the greatest key (is terminal, event time, ingest_seq),
rows without a type (OTHER) never winning. So the summary of the rows through a mark and the summary of
the rows past it combine into the summary of all of them, and a refresh need not aggregate every run event
again (about half of the read API's "runs" part: the run events outnumber the runs two to one or more).

The snapshot keeps the summaries with each state's key and the ``run_states`` mark they are complete
through (its ``lineage.input_through`` property: the windowed build sets it after the rows through it are
written). The next refresh reads and aggregates only the rows past that mark, then combines per run. The
kept summaries are trusted only while ``run_states`` has grown by appends alone (watermarks.py).

The rule is the ``runs`` view's (models/lineage/runs.sql); a Spark test checks that the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

from python_jobs.marquez_api.columns import TIMESTAMP, decoded
from python_jobs.marquez_api.watermarks import Watermark, can_extend, property_mark, table_files
from python_jobs.settings import Settings

# What the read API takes from each run, then the key its current state won with (null: only OTHER rows).
SUMMARY_SCHEMA = pa.schema([
    pa.field("uuid", pa.string()),
    pa.field("job_uuid", pa.string()),
    pa.field("created_at", TIMESTAMP),
    pa.field("updated_at", TIMESTAMP),
    pa.field("current_run_state", pa.string()),
    pa.field("started_at", TIMESTAMP),
    pa.field("ended_at", TIMESTAMP),
    pa.field("state_is_terminal", pa.bool_()),
    pa.field("state_at", TIMESTAMP),
    pa.field("state_seq", pa.int64()),
])
SUMMARY_COLUMNS = tuple(SUMMARY_SCHEMA.names[:7])
STATE_KEY = ("state_is_terminal", "state_at", "state_seq")


@dataclass(frozen=True)
class RunSummaries:
    """What a snapshot keeps to extend its runs: the key each run's state won with (``STATE_KEY``), one row per
    run in the order of the snapshot's runs (the rest of each summary is the runs table itself); ``watermark``:
    the ``run_states`` mark they are complete through and its files read."""

    state_keys: pa.Table
    watermark: Watermark = field(default_factory=Watermark)
    rows_read: int = 0  # run summaries read from the warehouse to make these (all of them, or the changed ones)


def kept_summaries(runs: pa.Table, kept: RunSummaries) -> pa.Table:
    """The full summaries (``SUMMARY_SCHEMA``) of a snapshot's runs and the state keys it kept."""
    columns = [decoded(runs.column(name)) for name in SUMMARY_COLUMNS]
    columns += [kept.state_keys.column(name) for name in STATE_KEY]
    return pa.Table.from_arrays(columns, schema=SUMMARY_SCHEMA)


def split_state_keys(runs: pa.Table, summaries: RunSummaries) -> tuple[pa.Table, RunSummaries]:
    """``runs`` (summaries in the snapshot's order) without the state keys, and ``summaries`` holding them."""
    keys = runs.select(list(STATE_KEY))
    return runs.drop_columns(list(STATE_KEY)), replace(summaries, state_keys=keys)


def read_summaries(spark: SparkSession, run_states: str, after: int | None, through: int | None) -> pa.Table:
    """The summary of each run over its rows with ``after < ingest_seq <= through`` (an open bound where None)."""
    bounds = " and ".join(part for part in (
        f"ingest_seq > {int(after)}" if after is not None else "",
        f"ingest_seq <= {int(through)}" if through is not None else "",
    ) if part) or "true"
    return spark.sql(f"""
        with states as (
            select
                run_uuid, state, transitioned_at, job_uuid, ingest_seq,
                state in ('COMPLETE', 'FAIL', 'ABORT') as is_terminal
            from {run_states}
            where {bounds}
        ),

        summaries as (
            select
                run_uuid,
                min(transitioned_at) as created_at,
                max(transitioned_at) as updated_at,
                min(job_uuid) as job_uuid,
                max_by(state, if(state = 'OTHER', null, struct(is_terminal, transitioned_at, ingest_seq)))
                    as current_run_state,
                max(if(state = 'OTHER', null, struct(is_terminal, transitioned_at, ingest_seq))) as state_key,
                min(if(state = 'START', transitioned_at, null)) as started_at,
                max(if(is_terminal, transitioned_at, null)) as ended_at
            from states
            group by run_uuid
        )

        select
            run_uuid as uuid, job_uuid, created_at, updated_at, current_run_state, started_at, ended_at,
            state_key.is_terminal as state_is_terminal, state_key.transitioned_at as state_at,
            state_key.ingest_seq as state_seq
        from summaries
    """).toArrow().cast(SUMMARY_SCHEMA)


def _element_wise(function: str, old: pa.ChunkedArray, new: pa.ChunkedArray) -> pa.ChunkedArray:
    """``min_element_wise`` or ``max_element_wise`` skipping nulls; Arrow has no kernel for zoned timestamps,
    so those compare as their integer microseconds."""
    if pa.types.is_timestamp(new.type):
        result = pc.call_function(function, [old.cast(pa.int64()), new.cast(pa.int64())],
                                  pc.ElementWiseAggregateOptions(skip_nulls=True))
        return result.cast(new.type)
    return pc.call_function(function, [old, new], pc.ElementWiseAggregateOptions(skip_nulls=True))


def _least(old: pa.ChunkedArray, new: pa.ChunkedArray) -> pa.ChunkedArray:
    return _element_wise("min_element_wise", old, new)


def _greatest(old: pa.ChunkedArray, new: pa.ChunkedArray) -> pa.ChunkedArray:
    return _element_wise("max_element_wise", old, new)


def _later_key(old: pa.Table, new: pa.Table) -> pa.ChunkedArray:
    """Per row, whether ``new``'s state key is greater than ``old``'s (a null key is the least; equal keys
    cannot happen: ``new``'s rows are past every ``old`` row's ingest_seq)."""
    terminal_new = pc.fill_null(new.column("state_is_terminal").cast(pa.int8()), -1)
    terminal_old = pc.fill_null(old.column("state_is_terminal").cast(pa.int8()), -1)
    at_new, at_old = new.column("state_at"), old.column("state_at")
    at_later = pc.or_(pc.fill_null(pc.greater(at_new, at_old), False),
                      pc.and_(at_new.is_valid(), at_old.is_null()))
    at_equal = pc.fill_null(pc.equal(at_new, at_old), pc.and_(at_new.is_null(), at_old.is_null()))
    seq_later = pc.fill_null(pc.greater(new.column("state_seq"), pc.fill_null(old.column("state_seq"), -1)), False)
    later = pc.or_(pc.greater(terminal_new, terminal_old), pc.and_(
        pc.equal(terminal_new, terminal_old), pc.or_(at_later, pc.and_(at_equal, seq_later))))
    return pc.and_(new.column("state_seq").is_valid(), later)


def combined(old: pa.Table, new: pa.Table) -> pa.Table:
    """Row by row, the summary of both (``old`` null where a run had no earlier rows)."""
    state_wins = _later_key(old, new)
    columns = {
        "uuid": new.column("uuid"),
        "job_uuid": _least(old.column("job_uuid"), new.column("job_uuid")),
        "created_at": _least(old.column("created_at"), new.column("created_at")),
        "updated_at": _greatest(old.column("updated_at"), new.column("updated_at")),
        "current_run_state": pc.if_else(state_wins, new.column("current_run_state"), old.column("current_run_state")),
        "started_at": _least(old.column("started_at"), new.column("started_at")),
        "ended_at": _greatest(old.column("ended_at"), new.column("ended_at")),
    }
    for name in STATE_KEY:
        columns[name] = pc.if_else(state_wins, new.column(name), old.column(name))
    return pa.table(columns, schema=SUMMARY_SCHEMA)


def merged(kept: pa.Table, newer: pa.Table) -> pa.Table:
    """The kept summaries with ``newer`` (the summaries of later rows) combined in: the runs ``newer`` lacks
    as they were, then the runs it has, combined with their kept summary where there is one."""
    if newer.num_rows == 0:
        return kept
    where = pc.index_in(newer.column("uuid"), value_set=kept.column("uuid").combine_chunks())
    untouched = kept.filter(pc.invert(pc.is_in(kept.column("uuid"), value_set=newer.column("uuid").combine_chunks())))
    return pa.concat_tables([untouched, combined(kept.take(where), newer)]).combine_chunks()


def load_run_summaries(spark: SparkSession, settings: Settings,
                       previous: tuple[pa.Table, RunSummaries] | None = None) -> tuple[pa.Table, RunSummaries]:
    """Every run's summary (``SUMMARY_SCHEMA``, in no order) with what the snapshot keeps of them (its state keys
    still empty: ``split_state_keys`` fills them once the runs are in the snapshot's order). ``previous``: the
    previous snapshot's runs and kept summaries, extended by the rows past their mark where they can be
    (``can_extend``), else everything is read again."""
    run_states = settings.table("lineage", "run_states")
    through = property_mark(spark, run_states)
    current = Watermark(through, table_files(spark, [run_states]))
    if previous is not None and can_extend(previous[1].watermark, current):
        newer = read_summaries(spark, run_states, previous[1].watermark.through, through)
        table = merged(kept_summaries(*previous), newer)
    else:
        # Without a mark (a warehouse from before the property) every row is read, and so on the next load.
        newer = table = read_summaries(spark, run_states, None, through)
    return table, RunSummaries(state_keys=table.select(list(STATE_KEY)).slice(0, 0), watermark=current,
                               rows_read=newer.num_rows)

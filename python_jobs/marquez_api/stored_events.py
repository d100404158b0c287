"""The stored events' index (``/events/lineage`` and its stats), kept between refreshes and extended by new files.

Per stored event the snapshot keeps what picking a page needs (event time, ``ingest_seq``, block, the job's
namespace, the event type), newest first. The events are the rows of ``raw.lineage_events``, and an ingest adds
files to its blocks without changing the files there. So the snapshot keeps the index with the names of the
files it was read from, and a refresh reads only the files added since: the blocks that hold them, then only
their rows. That is sound while every file read before is still there; compaction, erasure and retention
replace files, and the refresh after them reads every file again.

A file list rather than an ``ingest_seq`` mark: an ingest moves its files into the table one by one, so a
refresh during an ingest may see part of a batch. A mark would skip the batch's files it missed; a file list
reads them next time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

from python_jobs.marquez_api.columns import encode_repeated
from python_jobs.marquez_api.watermarks import table_files

COLUMNS = ("event_time", "ingest_seq", "ingest_block", "job_namespace", "event_type")
REPEATED = ("job_namespace", "event_type")
NEWEST_FIRST = [("event_time", "descending"), ("ingest_seq", "descending")]
BLOCK_FOLDER = re.compile(r"/ingest_block=(-?\d+)/")


@dataclass(frozen=True)
class StoredEvents:
    """``table``: the index, newest first; ``files``: the names of the raw files it was read from (``None``: it
    cannot be extended); ``rows_read``: the rows read from the warehouse to make it."""

    table: pa.Table
    files: frozenset[str] | None = None
    rows_read: int = 0


def file_name(path: str) -> str:
    """A file's name: Spark names each data file it writes uniquely, so the name identifies it within a table
    whatever form (URI or path) its location is given in."""
    return path.rstrip("/").rsplit("/", 1)[-1]


def blocks_of(paths: frozenset[str] | set[str]) -> set[int] | None:
    """The ``ingest_block`` partitions that hold these files (None when one is not in a block's folder)."""
    blocks = set()
    for path in paths:
        found = BLOCK_FOLDER.search(path)
        if found is None:
            return None
        blocks.add(int(found.group(1)))
    return blocks


def ordered(rows: pa.Table) -> pa.Table:
    """The index as the snapshot holds it: newest first, the repeated strings stored once."""
    return encode_repeated(rows.sort_by(NEWEST_FIRST), REPEATED)


def extended(kept: pa.Table, newer: pa.Table) -> pa.Table:
    """``kept`` (an index) with the ``newer`` rows in their places."""
    if newer.num_rows == 0:
        return kept
    both = pa.concat_tables([kept, encode_repeated(newer, REPEATED)]).unify_dictionaries().combine_chunks()
    return both.sort_by(NEWEST_FIRST)


def _select(raw: str, where: str = "", with_file: bool = False) -> str:
    file_column = ", _metadata.file_name as file_name" if with_file else ""
    return f"select {', '.join(COLUMNS)}{file_column} from {raw} where event_id is not null{where}"


def load_stored_events(spark: SparkSession, raw: str, kept: StoredEvents | None = None) -> StoredEvents:
    """Every stored event's index: ``kept`` with the rows of the files added since where it can be extended,
    else every file read."""
    paths = table_files(spark, [raw])
    names = frozenset(file_name(path) for path in paths)
    added = {path for path in paths if file_name(path) not in (kept.files or frozenset())} if kept else set()
    blocks = blocks_of(added)
    if kept is not None and kept.files is not None and kept.files <= names and blocks is not None:
        if not added:
            return StoredEvents(kept.table, names, 0)
        listed = ", ".join(str(block) for block in sorted(blocks))
        rows = spark.sql(_select(raw, f" and ingest_block in ({listed})", with_file=True)).toArrow()
        new_names = pa.array(sorted(file_name(path) for path in added), pa.string())
        rows = rows.filter(pc.is_in(rows.column("file_name"), value_set=new_names)).drop_columns(["file_name"])
        return StoredEvents(extended(kept.table, rows), names, rows.num_rows)
    rows = spark.sql(_select(raw)).toArrow()
    return StoredEvents(ordered(rows), names, rows.num_rows)

"""Where rows the read API keeps between refreshes are complete through, and whether a refresh may extend them.

A slice of the snapshot that is kept between refreshes (the runs, their facet details, their inputs and
outputs) was read from some tables through a mark: a sequence number (an ``ingest_seq`` or a ``build_seq``)
that every row through it had reached when it was read. The next refresh reads only what lies past that mark
and combines it with what was kept. That is sound only while the tables have grown by appends alone: every
file the kept rows were read from is still there, and the mark has not gone back. A full refresh,
compaction, erasure and retention rewrite files (or start the marks again), and the refresh after them
reads everything.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pyspark.sql import SparkSession

# The windowed build's mark (windowed_append): set on a table after the rows through it are written.
INPUT_THROUGH = "lineage.input_through"


@dataclass(frozen=True)
class Watermark:
    """``through``: the mark kept rows are complete through (None: unknown, so never extended); ``sources``:
    the files of the tables they were read from."""

    through: int | None = None
    sources: frozenset[str] = frozenset()

    def extends_to(self, current: Watermark) -> bool:
        """Whether rows kept at this watermark plus the rows past its mark equal a full read at ``current``:
        the tables only gained files since, and the mark did not go back."""
        return (self.through is not None and current.through is not None and self.through <= current.through
                and self.sources <= current.sources)


def can_extend(kept: Watermark | None, current: Watermark) -> bool:
    return kept is not None and kept.extends_to(current)


def table_files(spark: SparkSession, tables: Iterable[str]) -> frozenset[str]:
    """Every file of the tables that exist."""
    files: set[str] = set()
    for table in tables:
        if spark.catalog.tableExists(table):
            files.update(spark.table(table).inputFiles())
    return frozenset(files)


def property_mark(spark: SparkSession, table: str, name: str = INPUT_THROUGH) -> int | None:
    """A table's integer property (None when it is not set or the table does not exist)."""
    if not spark.catalog.tableExists(table):
        return None
    rows = spark.sql(f"show tblproperties {table}").collect()
    value = next((row.value for row in rows if row.key == name), None)
    return None if value is None else int(value)


def least_mark(spark: SparkSession, tables: Iterable[str], name: str = INPUT_THROUGH) -> int | None:
    """The lowest of the tables' marks: rows through it are complete in all of them (None when one lacks it)."""
    marks = [property_mark(spark, table, name) for table in tables]
    return None if not marks or any(mark is None for mark in marks) else min(m for m in marks if m is not None)

"""Row ranges of Arrow tables sorted by a key: a request for one entity's rows slices, it does not scan."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from python_jobs.marquez_api.key_index import RangeIndex


@dataclass
class Slices:
    """Row ranges of an Arrow table sorted by a key: key → (start, stop)."""

    table: pa.Table
    ranges: Mapping[str, tuple[int, int]]
    key: str = ""

    def rows(self, key: str, offset: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        start, stop = self.ranges.get(key, (0, 0))
        start = min(start + offset, stop)
        if limit is not None:
            stop = min(stop, start + limit)
        return self.table.slice(start, stop - start).to_pylist() if stop > start else []

    def with_table(self, table: pa.Table) -> Slices:
        """The same ranges over another table with the same rows in the same order (a compacted copy)."""
        return Slices(table, self.ranges, self.key)

    def count(self, key: str) -> int:
        start, stop = self.ranges.get(key, (0, 0))
        return stop - start

    def row(self, position: int) -> dict[str, Any]:
        return self.table.slice(position, 1).to_pylist()[0]

    def rows_of(self, keys: list[str]) -> dict[str, list[dict[str, Any]]]:
        """The rows of several keys whose ranges are near each other (a page of one job's runs):
        one slice from the first to the last, grouped by key."""
        spans = [self.ranges[k] for k in keys if k in self.ranges]
        if not spans:
            return {}
        start, stop = min(s for s, _ in spans), max(e for _, e in spans)
        wanted = set(keys)
        grouped: dict[str, list[dict[str, Any]]] = {}
        for row in self.table.slice(start, stop - start).to_pylist():
            if row[self.key] in wanted:
                grouped.setdefault(row[self.key], []).append(row)
        return grouped


def slices_by(table: pa.Table, key: str, order: list[tuple[str, str]]) -> Slices:
    """Nulls sort last in every key (Marquez's runs: ``started_at desc nulls last``)."""
    return runs_of(table.sort_by(nulls_last([(key, "ascending"), *order])), key)


def nulls_last(keys: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    return [(name, order, "at_end") for name, order in keys]


def runs_of(ordered: pa.Table, key: str) -> Slices:
    """The ranges of equal ``key`` values in a table whose rows with one key are adjacent."""
    return Slices(ordered, RangeIndex(ordered.column(key)), key)

"""Snapshot files for the changelog tests: CSV exports written the way a nightly job writes them."""

from __future__ import annotations

import csv
from pathlib import Path


def write_csv(path: Path, header: list[str], rows: list[tuple]) -> Path:
    """One export: the header line, then a line per row."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path

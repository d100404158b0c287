"""``bench retention``'s report: its figures and the section it keeps in BENCHMARKS.md (pure; the pieces that read a
warehouse are tested on the retention test's warehouse, in test_retention.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from python_jobs.tools.bench.retention import (
    SECTION_END,
    SECTION_START,
    RetentionBench,
    existing_section,
    figures,
    replace_section,
    section,
)
from python_jobs.warehouse.erasure import TableChange
from python_jobs.warehouse.retention import RetentionReport

CUT_OFF = datetime(2026, 3, 1, tzinfo=UTC)


def measured() -> RetentionBench:
    report = RetentionReport(CUT_OFF, dry_run=False, tables=[
        TableChange("raw.lineage_events", rows_before=1_000_000, removed=99_000, bytes_freed=40_000_000),
        TableChange("audit.lineage_events_rejected", rows_before=0),
        TableChange("raw.lineage_entity_keys", rows_before=404),
    ])
    return RetentionBench(
        events=1_000_000, share=0.1, input_bytes=3_000_000_000, ingest_seconds=100.0, full_build_seconds=300.0,
        cut_off=CUT_OFF, dry_run_seconds=12.0, retain_seconds=30.0, rebuild_seconds=270.0, report=report,
        warehouse_bytes_before=900_000_000, warehouse_bytes_after=810_000_000, load_before="1.00 / 1.00 / 1.00",
        load_after="2.00 / 1.50 / 1.20",
    )


def rows(text: str) -> dict[str, str]:
    cells = [[cell.strip() for cell in line.strip().strip("|").split(" | ")] for line in text.splitlines()[2:]]
    return {figure: value for figure, value in cells}


def test_figures_put_the_retention_beside_the_full_rebuild() -> None:
    table = rows(figures(measured()).table())
    assert table["retain in all, against the full rebuild"] == "300.0 s (1.00x)"
    assert table["raw.lineage_events: rows before / removed / kept / bytes freed"] == (
        "1,000,000 / 99,000 / 901,000 / 40.0 MB")
    assert table["warehouse on disk before / after (every table)"] == "900.0 MB / 810.0 MB (90.0 MB freed, 10.0%)"
    assert table["cut-off"] == "2026-03-01T00:00:00+00:00 (10% of the events before it)"


def test_the_section_replaces_its_old_self_and_nothing_else() -> None:
    new = section(measured(), "python -m python_jobs bench retention --events 1000000 --share 0.1", "2026-11-28")
    assert new.startswith(SECTION_START) and new.endswith(SECTION_END)
    report = f"# Report\n\nbefore\n\n{SECTION_START}\nold\n{SECTION_END}\n\nafter\n"
    assert replace_section(report, new) == f"# Report\n\nbefore\n\n{new}\n\nafter\n"
    assert replace_section("# Report\n", new) == f"# Report\n\n{new}\n"


def test_the_existing_section_is_found_whole() -> None:
    new = section(measured(), "python -m python_jobs bench retention", "2026-11-28")
    assert existing_section(f"# Report\n\n{new}\n\nafter\n") == new
    assert existing_section("# Report\n") is None

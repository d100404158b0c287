"""``bench all``: the report's structure (every table with figures, baselines and ratios), never its timings."""

from __future__ import annotations

import re
from pathlib import Path

from python_jobs.bench.areas import Plan, parse_size
from python_jobs.bench.report import Area, Row, RunInfo, Target, render_report

AREA_TITLES = (
    "Lineage ingest",
    "Lineage build",
    "Incremental cost against history",
    "Facets",
    "Changelog",
    "Registry",
)
NUMBER = re.compile(r"\d")


def table_rows(report: str, title: str) -> list[list[str]]:
    """The body rows of the table under ``## title``, as cells."""
    section = report.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines[1:]]


def test_targets_are_checked_on_the_ratio_or_the_measured_value() -> None:
    area = Area("Lineage ingest", "floor")
    area.add(Row("cpu", "30 s", "10 s", 3.0, Target(2.0)))
    area.add(Row("no-op", "4 s", "3 s", 4 / 3, Target(5.0, on_measured=True, unit=" s"), 4.0))
    area.add(Row("rate", "6,000 events/s", target=Target(5_000, at_most=False, on_measured=True), value=6_000.0))
    info = RunInfo("Benchmark report", "python -m python_jobs bench all", "today", [("cores", "2")],
                   [("Spark", "4")], "1 / 1 / 1", "1 / 1 / 1", smoke=True)
    report = render_report(info, [area], [("whole run", 1.0)], [])
    rows = table_rows(report, "Lineage ingest")
    assert [row[-1] for row in rows] == ["**missed**", "met", "met"]
    assert rows[0][3] == "3.00" and rows[0][4] == "≤ 2x"
    assert "Smoke run" in report
    assert report.split("## Targets missed\n", 1)[1].strip() == "- Lineage ingest: cpu"


def test_sizes() -> None:
    assert parse_size("small") == 20_000 and parse_size("1,000,000") == 1_000_000
    plan = Plan(1_000_000)
    assert (plan.small_history, plan.increment, plan.changelog_rows) == (100_000, 10_000, 1_000_000)


def test_bench_all_writes_every_table_with_figures_and_ratios(spark, settings, tmp_path: Path) -> None:
    from python_jobs.bench.run_all import run_all

    out = tmp_path / "BENCHMARKS.md"
    command = "python -m python_jobs bench all --size 1000"
    report, timings = run_all(spark, settings, 1_000, out, tmp_path / "work", command, collector=False)

    assert out.read_text() == report
    assert f"`{command}`" in report and "Smoke run" in report
    for name in ("cores", "memory", "CPU", "Python", "Java", "Spark", "dbt-core", "pyarrow", "duckdb"):
        assert f"| {name} |" in report
    assert "Not measured" not in report, report
    for title in AREA_TITLES:
        rows = table_rows(report, title)
        assert rows, title
        assert all(NUMBER.search(row[1]) for row in rows), (title, rows)
        assert any(NUMBER.search(row[3]) for row in rows), f"{title} has no ratio"
    verdicts = {row[0]: row[-1] for title in AREA_TITLES for row in table_rows(report, title)}
    targeted = [figure for figure, verdict in verdicts.items() if verdict in ("met", "**missed**")]
    assert len(targeted) >= 3, verdicts  # ingest CPU, +1% build on the larger history, no-new-events build
    assert len(table_rows(report, "Changelog")) == 8  # rounds 0-6 and round 6 against round 2
    for plot in ("history_cost.png", "changelog_rounds.png"):
        png = tmp_path / "docs" / "bench" / plot
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"docs/bench/{plot}" in report
    assert timings[-1][0] == "whole run"
    left = [db.name for db in spark.catalog.listDatabases() if db.name.startswith(("bench_all_", "bench_registry_"))]
    assert not left
    assert not (tmp_path / "work").exists()

"""``bench all``: the report's structure (every table with figures, baselines and ratios), never its timings."""

from __future__ import annotations

import re
from pathlib import Path

from python_jobs.tools.bench.plan import Plan, parse_bench_size
from python_jobs.tools.bench.report import Area, Row, RunInfo, Target, render_report
from python_jobs.tools.bench.retention import SECTION_END as RETENTION_END
from python_jobs.tools.bench.retention import SECTION_START as RETENTION_START

AREA_TITLES = (
    "Lineage ingest",
    "Lineage build",
    "Incremental cost against history",
    "Facets",
    "Changelog",
    "Registry",
    "Collector (POST /api/v1/lineage on loopback)",
    "Marquez read API",
    "SQL endpoint",
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
    assert parse_bench_size("small") == 20_000 and parse_bench_size("1,000,000") == 1_000_000
    plan = Plan(1_000_000)
    assert (plan.small_history, plan.increment, plan.changelog_rows) == (100_000, 10_000, 1_000_000)


def every_area_from_figures(tmp_path: Path) -> tuple[list[Area], list[tuple[str, str]]]:
    """Each area's table and the plots, built from results shaped as the benchmarks return them."""
    from test_bench_sql import fake_sql_bench  # tests/python is on sys.path

    from python_jobs.tools.bench import areas, plots
    from python_jobs.tools.bench.changelog import BenchConfig, BenchReport, RoundResult
    from python_jobs.tools.bench.collector import CollectorBench
    from python_jobs.tools.bench.facets import FacetBench, Measured
    from python_jobs.tools.bench.harness import Figures
    from python_jobs.tools.bench.lineage import Cost, ExampleResult, SizeResult
    from python_jobs.tools.bench.read_api import LATENCY_CASES, ApiLatency
    from python_jobs.tools.bench.registry import MIGRATION_BUILD_STEP, Figure

    def history(events: int, build: float) -> SizeResult:
        return SizeResult(events, events * 3_000, Cost(2.0, 3.5), Cost(5.0, 8.0), events, 0, build, 100, 1.0,
                          4.0, 2.5, True)

    small, large = history(1_000, 10.0), history(10_000, 30.0)
    example = ExampleResult(4_320, 4_320, 1, 20, 86_400, 12.0)
    facets = FacetBench(Figures(), 1_000, 9.0, Measured(0.05, 10, 2_000, []), Measured(2.0, 100, 90_000, []),
                        3_000, 600, 5.0, 40.0)
    rounds = [RoundResult(n, 1_000, 1_000 if n == 0 else 20, 1.0, {"incremental": 2.0 + n / 10,
                                                                    "rebuild": 2.0 + n}) for n in range(7)]
    changelog = BenchReport(BenchConfig(rows=1_000), rounds, True)
    registry = [Figure(step, 100, 2.0) for step in (
        "ingest + validate events", "re-ingest the same file (0 new)", "dbt build: create + load typed table",
        "dbt build: no new events", "dbt build: +10% events", MIGRATION_BUILD_STEP)]
    tables = [
        areas.ingest_area(large, areas.PeerCost(1.5, 2.5)),
        areas.build_area(large, example),
        areas.incremental_area(small, large),
        areas.facets_table(facets, 128 * 1024),
        areas.changelog_table(changelog),
        areas.registry_table(registry, 100),
        areas.collector_table(CollectorBench({
            (fsync, clients): {"events_per_s": (3_000 if fsync else 5_000) * clients ** 0.3, "p50_ms": 2.0,
                               "p99_ms": 8.0 * clients ** 0.5, "acked": 1, "load_average": "1.0"}
            for fsync in (True, False) for clients in (1, 8, 32)
        }, 2_900.0, [90.0, 20.0, 22.0])),
        areas.read_api_table(ApiLatency(60.0, "3 jobs / 4 datasets / 5 runs",
                                        {name: [1.0, 2.0, 400.0 if "lineage" in name else 3.0] * 10
                                         for name in LATENCY_CASES}, "1", "1"), 10_000),
        areas.sql_table(fake_sql_bench()),
    ]
    plot_dir = tmp_path / "docs" / "bench"
    drawn = [
        ("cost", plots.history_cost_plot(small, large, plot_dir / "history_cost.png")),
        ("rounds", plots.changelog_rounds_plot(changelog, plot_dir / "changelog_rounds.png")),
    ]
    return tables, [(caption, str(path.relative_to(tmp_path))) for caption, path in drawn]


def check_tables(report: str, titles: tuple[str, ...]) -> dict[str, str]:
    """Every table has rows, every row a number, every table a ratio; returns each figure's verdict."""
    verdicts = {}
    for title in titles:
        rows = table_rows(report, title)
        assert rows, title
        assert all(NUMBER.search(row[1]) for row in rows), (title, rows)
        assert any(NUMBER.search(row[3]) for row in rows), f"{title} has no ratio"
        verdicts.update({row[0]: row[-1] for row in rows})
    return verdicts


def test_every_area_renders_with_baselines_ratios_targets_and_plots(tmp_path: Path) -> None:
    tables, plots = every_area_from_figures(tmp_path)
    info = RunInfo("Benchmark report", "python -m python_jobs bench all --size 1000000", "today",
                   [("cores", "2")], [("Spark", "4")], "1 / 1 / 1", "1 / 1 / 1", smoke=False)
    report = render_report(info, tables, [("whole run", 60.0)], plots)

    verdicts = check_tables(report, AREA_TITLES)
    checked = {figure: verdict for figure, verdict in verdicts.items() if verdict != "-"}
    assert checked == {
        "ingest vs Spark from_json + Parquet write (floor), JVM CPU": "**missed**",  # 8.0 / 3.5 CPU s
        "+100-event batch: build on the 10,000-event history": "met",  # 4.0 / 4.0 s
        "no new events: build": "met",  # 2.5 s
        "acknowledged events/s, 32 clients": "met",  # 0.6 of the no-fsync bound
        "acknowledged events/s at 32 clients (goal)": "met",  # about 8,500 events/s
        "p99 at 32 clients (goal)": "met",  # 45 ms
        "get_dataset: p95 (max 3 ms)": "met",
        "list_job_runs (limit 100): p95 (max 3 ms)": "met",
        "lineage depth 5: p95 (max 400 ms)": "**missed**",
        "search: p95 (max 3 ms)": "met",
    }  # no pipeline target below 1M events
    assert "- Lineage ingest: ingest vs Spark from_json + Parquet write (floor), JVM CPU" in report
    assert "Smoke run" not in report
    for plot in ("history_cost.png", "changelog_rounds.png"):
        assert (tmp_path / "docs" / "bench" / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"(docs/bench/{plot})" in report
    assert len(table_rows(report, "Changelog")) == 8  # rounds 0-6 and round 6 against round 2


def test_bench_all_runs_an_area_in_the_shared_session(spark, settings, tmp_path: Path) -> None:
    """The registry area for real, through ``run_all`` (the whole run takes minutes, too long for
    the suite): its table holds measured figures and ratios, and it cleans up after itself."""
    from python_jobs.tools.bench.run_all import run_all
    from python_jobs.tools.bench.scale_report import SECTION_END, SECTION_START, existing_section

    out = tmp_path / "BENCHMARKS.md"
    scale_section = f"{SECTION_START}\n## History scale\n\nmeasured by bench scale\n{SECTION_END}"
    retention = f"{RETENTION_START}\n## Retention\n\nmeasured by bench retention\n{RETENTION_END}"
    out.write_text(f"# An older report\n\n{scale_section}\n\n{retention}\n")
    command = "python -m python_jobs bench all --size 1000 --areas registry"
    report, timings = run_all(spark, settings, 1_000, out, tmp_path / "work", command, only=("registry",))

    assert out.read_text() == report
    assert existing_section(report) == scale_section and "An older report" not in report  # bench scale's kept
    assert report.count(retention) == 1  # and bench retention's
    assert f"`{command}`" in report and "Smoke run" in report
    for name in ("cores", "memory", "CPU", "Python", "Java", "Spark", "dbt-core", "pyarrow", "duckdb"):
        assert f"| {name} |" in report
    assert "Not measured" not in report, report
    check_tables(report, ("Registry",))
    assert "with 10 new events of it" in report  # the migration version's events were accepted and loaded
    assert [part for part, _ in timings][-1] == "whole run"
    assert not [db.name for db in spark.catalog.listDatabases() if db.name.startswith("bench_registry_")]
    assert not (tmp_path / "work").exists()

"""``bench all``: every area in one SparkSession, one Markdown report and its plots."""

from __future__ import annotations

import os
import shutil
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import SparkSession

from python_jobs.serve.sql_endpoint import SqlEndpoint
from python_jobs.settings import Settings
from python_jobs.tools.bench import areas, environment, plots, retention
from python_jobs.tools.bench.harness import load_average, timed
from python_jobs.tools.bench.plan import DEFAULT_AREAS, DEFAULT_SIZE, Plan
from python_jobs.tools.bench.report import Area, RunInfo, render_report
from python_jobs.tools.bench.scale import ScaleConfig, run_scale
from python_jobs.tools.bench.scale_report import existing_section, replace_section

PLOT_DIR = Path("docs") / "bench"


def _guarded(title: str, action: Callable[[], Area]) -> Area:
    """One area failing must not lose the others' figures: its table says why instead."""
    try:
        return action()
    except Exception as error:
        traceback.print_exc()
        return Area(title, "baseline", error=f"{type(error).__name__}: {error}")


def is_smoke(size: int, load_before: float, only: tuple[str, ...]) -> bool:
    """Not the report to publish: a smaller size, some areas only, or a machine busy with other work."""
    cores = os.cpu_count() or 1
    return size < DEFAULT_SIZE or load_before > cores or not set(DEFAULT_AREAS) <= set(only)


def run_all(
    spark: SparkSession,
    settings: Settings,
    size: int,
    out: Path,
    work_dir: Path,
    command: str,
    only: tuple[str, ...] = DEFAULT_AREAS,
    endpoint: SqlEndpoint | None = None,
) -> tuple[str, list[tuple[str, float]]]:
    """Runs the areas in ``only`` (all but scale by default), writes ``out`` and the plots under ``out``'s
    folder / docs/bench; returns the report text and the run time of each part. The sql area needs ``endpoint``,
    the SQL endpoint running in ``spark`` (``sql.session_with_endpoint``). The scale section of ``out``
    (``bench scale``'s) is rewritten by the scale area, else kept as it was."""
    plan = Plan(size)
    load_before = os.getloadavg()[0]
    load_before_text = load_average()
    started = datetime.now(UTC)
    work_dir.mkdir(parents=True, exist_ok=True)
    timings: list[tuple[str, float]] = []
    tables: list[Area] = []
    plot_files: list[tuple[str, str]] = []
    plot_dir = out.parent / PLOT_DIR
    if "sql" in only and endpoint is None:
        raise ValueError("the sql area needs the SQL endpoint running in the session (sql.session_with_endpoint)")
    if "lineage" in only:
        _lineage(spark, settings, plan, work_dir, out, plot_dir, timings, tables, plot_files, api="api" in only,
                 endpoint=endpoint if "sql" in only else None)
    if "facets" in only:
        took, facets = timed(lambda: _guarded("Facets", lambda: areas.facets_area(spark, settings, plan)))
        tables.append(facets)
        timings.append((f"facets: {plan.facet_events:,} events, load + lookups", took))
    if "changelog" in only:
        _changelog(spark, settings, plan, work_dir, out, plot_dir, timings, tables, plot_files)
    if "registry" in only:
        took, area = timed(lambda: _guarded("Registry", lambda: areas.registry_area(spark, settings, plan)))
        tables.append(area)
        timings.append((f"registry: {plan.registry_events:,} events, validation + 5 builds", took))
    if "collector" in only:
        _collector(settings, work_dir, timings, tables)
    scale_section = _scale(spark, settings, plan, out, work_dir, command, timings) if "scale" in only else None
    shutil.rmtree(work_dir, ignore_errors=True)
    timings.append(("whole run", (datetime.now(UTC) - started).total_seconds()))
    smoke = is_smoke(size, load_before, only)
    info = RunInfo(
        title="Benchmark report (smoke run)" if smoke else "Benchmark report",
        command=command,
        date=started.strftime("%Y-%m-%d %H:%M UTC"),
        machine=environment.machine(),
        versions=environment.versions(spark),
        load_before=load_before_text,
        load_after=load_average(),
        smoke=smoke,
    )
    text = render_report(info, tables, timings, plot_files)
    previous = out.read_text() if out.exists() else ""
    # The sections that have commands of their own: `bench scale`'s (unless this run measured it) and `bench
    # retention`'s are kept.
    kept = scale_section or existing_section(previous)
    if kept:
        text = replace_section(text, kept)
    kept = retention.existing_section(previous)
    if kept:
        text = retention.replace_section(text, kept)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return text, timings


def _lineage(
    spark: SparkSession, settings: Settings, plan: Plan, work_dir: Path, out: Path, plot_dir: Path,
    timings: list[tuple[str, float]], tables: list[Area], plot_files: list[tuple[str, str]], api: bool = False,
    endpoint: SqlEndpoint | None = None,
) -> None:
    try:
        lineage_tables, small, large = areas.lineage_areas(spark, settings, plan, work_dir, timings, api, endpoint)
    except Exception as error:
        traceback.print_exc()
        tables.append(Area("Lineage", "baseline", error=f"{type(error).__name__}: {error}"))
        return
    tables.extend(lineage_tables)
    path = plots.history_cost_plot(small, large, plot_dir / "history_cost.png")
    plot_files.append(("Lineage build cost against history size", str(path.relative_to(out.parent))))


def _changelog(
    spark: SparkSession, settings: Settings, plan: Plan, work_dir: Path, out: Path, plot_dir: Path,
    timings: list[tuple[str, float]], tables: list[Area], plot_files: list[tuple[str, str]],
) -> None:
    started = time.monotonic()
    try:
        area, report = areas.changelog_area(spark, settings, plan, work_dir)
    except Exception as error:
        traceback.print_exc()
        tables.append(Area("Changelog", "baseline", error=f"{type(error).__name__}: {error}"))
        return
    finally:
        timings.append((f"changelog: {plan.changelog_rows:,} rows, 7 snapshots, two models",
                        time.monotonic() - started))
    tables.append(area)
    path = plots.changelog_rounds_plot(report, plot_dir / "changelog_rounds.png")
    plot_files.append(("Changelog round times", str(path.relative_to(out.parent))))


def _scale(spark: SparkSession, settings: Settings, plan: Plan, out: Path, work_dir: Path, command: str,
           timings: list[tuple[str, float]]) -> str | None:
    """``bench scale`` at the plan's sizes; its section, or ``None`` (the old one kept) when it failed."""
    config = ScaleConfig(sizes=plan.scale_sizes)
    try:
        took, (_, section) = timed(lambda: run_scale(spark, settings, config, out, work_dir / "scale", command))
    except Exception:
        traceback.print_exc()
        return None
    timings.append((f"scale: {', '.join(f'{size:,}' for size in config.sizes)} events", took))
    return section


def _collector(settings: Settings, work_dir: Path, timings: list[tuple[str, float]], tables: list[Area]) -> None:
    try:
        took, table = timed(lambda: areas.collector_area(settings, work_dir))
    except Exception as error:
        traceback.print_exc()
        took, table = 0.0, Area("Collector", "baseline", error=f"{type(error).__name__}: {error}")
    tables.append(table)
    timings.append(("collector", took))

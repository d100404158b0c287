"""``bench scale``: the targets' verdicts and the report section (pure), then the whole command at two tiny sizes in
the shared session, against a copy of BENCHMARKS.md."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from python_jobs.dbt import run_dbt
from python_jobs.errors import UserFacingError
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.lineage.event_parsing import CORRUPT_COLUMN, PARSE_OPTIONS, TEXT_PARSE_SCHEMA
from python_jobs.settings import PROJECT_DIR
from python_jobs.tools.bench.harness import BENCH_BUILD, drop_warehouse, reset_warehouse
from python_jobs.tools.bench.parsers import orjson_batches
from python_jobs.tools.bench.read_api import LATENCY_CASES
from python_jobs.tools.bench.scale_report import (
    GIB,
    LIVE_PENDING,
    SECTION_END,
    SECTION_START,
    Cost,
    Latency,
    ScaleResult,
    existing_section,
    render_table,
    replace_section,
    scale_targets,
)
from python_jobs.tools.generate.lineage import SyntheticSpec, write_events


def result(events: int, batch_build: float, p95: float = 10.0, **changes: object) -> ScaleResult:
    measured = ScaleResult(
        events=events, input_bytes=events * 1_500, floor=Cost(10.0, 20.0), ingest=Cost(20.0, 28.0), accepted=events,
        rejected=0, first_build_seconds=100.0, api_load_seconds=2.0, api_rss_bytes=GIB, api_rss_growth_bytes=GIB // 4,
        counts="200 jobs / 204 datasets / 1 runs",
        latency={case: Latency(p95 / 2, p95, p95 * 2) for case in LATENCY_CASES},
        increment_events=100, increment_ingest_seconds=3.0, increment_build_seconds=batch_build, refresh_seconds=4.0,
        noop_build_seconds=3.0, noop_unchanged=True, warehouse_bytes=events * 300, jvm_peak_rss_bytes=2 * GIB,
        load_before="0.50 / 0.40 / 0.30", load_after="1.50 / 0.90 / 0.40",
    )
    return replace(measured, **changes)


def verdicts(results: list[ScaleResult]) -> dict[str, tuple[str, str, str]]:
    """Each target's figure: (largest history's, smallest's, verdict)."""
    rows = scale_targets(results, LATENCY_CASES).rows
    return {row.figure: (row.measured, row.baseline, row.verdict()) for row in rows}


def test_targets_compare_the_largest_history_with_the_smallest() -> None:
    small, middle = result(1_000, 10.0), result(3_000, 30.0)
    large = result(10_000, 12.0, p95=60.0, api_rss_bytes=5 * GIB, refresh_seconds=6.0, noop_build_seconds=4.9,
                   ingest=Cost(20.0, 31.0))
    checked = verdicts([large, small, middle])  # in any order
    assert checked == {
        "+100-event batch: build": ("12.0 s", "10.0 s", "met"),  # 1.2x, the middle size's 30 s plays no part
        "no-new-events build": ("4.9 s", "3.0 s", "met"),
        **{f"read API {case}: p95": ("60.0 ms", "10.0 ms", "**missed**") for case in LATENCY_CASES},
        "read API process RSS after load": ("5.00 GiB", "1.00 GiB", "**missed**"),
        "read API refresh after the batch build": ("6.0 s", "4.0 s", "**missed**"),
        "ingest JVM CPU against the floor's (same file)": ("1.55x", "1.40x", "**missed**"),
    }
    slower = verdicts([small, result(10_000, 12.6, noop_build_seconds=5.0)])
    assert slower["+100-event batch: build"][2] == "**missed**"  # 1.26x
    assert slower["no-new-events build"][2] == "met"  # the target is at most 5 s
    assert slower["ingest JVM CPU against the floor's (same file)"][2] == "met"  # 1.4x


def test_the_section_replaces_its_old_self_and_nothing_else() -> None:
    text = f"# Report\n\nbefore\n\n{SECTION_START}\nold figures\n{SECTION_END}\n\nafter\n"
    section = f"{SECTION_START}\nnew figures\n{SECTION_END}"
    replaced = replace_section(text, section)
    assert replaced == f"# Report\n\nbefore\n\n{section}\n\nafter\n"
    assert existing_section(replaced) == section
    assert replace_section("# Report\n\nno section yet\n", section) == f"# Report\n\nno section yet\n\n{section}\n"
    assert existing_section("# Report\n") is None


def test_the_table_has_a_column_per_size() -> None:
    table = render_table([result(1_000, 1.0), result(3_000, 1.0)], LATENCY_CASES)
    lines = table.splitlines()
    assert lines[0] == "| figure | 1,000 events | 3,000 events |"
    assert all(line.count(" | ") == 2 for line in lines[2:])
    assert "| search: p50 / p95 ms | 5.0 / 10.0 | 5.0 / 10.0 |" in lines


def table_cells(section: str, figure: str) -> list[str]:
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if cells[0] == figure:
            return cells[1:]
    raise AssertionError(f"no row {figure!r}")


def test_bench_scale_at_a_tiny_size(spark, settings, tmp_path: Path) -> None:
    """The whole command for real at one size (three builds; the table's columns per size and the verdicts across
    sizes are tested above): every figure, the section between its markers in a copy of the report, the rest of it
    untouched, the plots drawn, the schemas and files gone."""
    from python_jobs.tools.bench.scale import PLOTS, ScaleConfig, run_scale

    out = tmp_path / "BENCHMARKS.md"
    original = (PROJECT_DIR / "BENCHMARKS.md").read_text()
    old = existing_section(original)
    outside = original.replace(old, "") if old else original
    out.write_text(original)
    command = "python -m python_jobs bench scale --sizes 2000 --requests 20"
    config = ScaleConfig(sizes=(2_000,), requests=20)
    results, section = run_scale(spark, settings, config, out, tmp_path / "work", command)

    written = out.read_text()
    assert existing_section(written) == section
    assert written.replace(section, "").rstrip() == outside.rstrip()  # the rest of the report as it was
    assert written.count(SECTION_START) == 1 and written.count(SECTION_END) == 1
    assert f"`{command}`" in section and "Smoke run" in section
    assert f"driver memory {spark.sparkContext.getConf().get('spark.driver.memory')}, " in section

    assert [r.events for r in results] == [2_000]
    for measured in results:
        assert (measured.accepted, measured.rejected, measured.increment_events) == (measured.events, 0, 20)
        assert measured.noop_unchanged
        assert measured.counts.startswith("200 jobs / ")
        assert 1_000 < measured.input_bytes_per_event < 2_000  # the lean events
        assert measured.warehouse_bytes > 0 and measured.api_rss_bytes > 0
        assert all(value.p95_ms > 0 for value in measured.latency.values())
        assert re.fullmatch(r"[\d.]+ s \((.+ [\d.]+, ){3}.+ [\d.]+\)", measured.refresh_parts)  # the slowest four
        assert measured.live_view_seconds is not None and measured.live_view_seconds > 0
        after, peak = measured.api_rss_after_refresh_bytes, measured.api_refresh_peak_rss_bytes
        assert after is not None and peak is not None and 0 < after <= peak  # the peak includes the end
    assert table_cells(section, "read API refresh: slowest parts s") == [results[0].refresh_parts]
    assert table_cells(section, f"read API live view of {LIVE_PENDING:,} pending events s") == [
        f"{results[0].live_view_seconds:.2f}"]
    assert table_cells(section, "read / accepted / rejected") == ["2,000 / 2,000 / 0"]
    assert re.fullmatch(r"[\d.]+ GiB \([\d.]+ GiB\)",
                        table_cells(section, "read API process RSS after the refresh (peak during it)")[0])
    assert table_cells(section, "no-new-events build s (tables unchanged)")[0].endswith("(yes)")
    for case in LATENCY_CASES:
        assert re.fullmatch(r"[\d.,]+ / [\d.,]+", table_cells(section, f"{case}: p50 / p95 ms")[0])
    targets = section.split("## History scale: targets at 2,000 events\n", 1)[1]
    assert targets.count("| met |") + targets.count("| **missed** |") == 5 + len(LATENCY_CASES)

    for stem, *_ in PLOTS:
        plot = tmp_path / "docs" / "bench" / f"{stem}.png"
        assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"(docs/bench/{stem}.png)" in section
    assert not [row.namespace for row in spark.sql("show databases").collect() if "bench_scale_" in row.namespace]
    assert not (tmp_path / "work").exists()


def _corpus_event_lines(corpus: Path) -> list[str]:
    lines = []
    for path in sorted((corpus / "openlineage").rglob("*.json")):
        try:
            document = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            continue
        for event in document if isinstance(document, list) else [document]:
            if isinstance(event, dict) and "eventTime" in event:
                lines.append(json.dumps(event))
    return lines


def _comparable(item: object) -> object:
    """A parsed row with each JSON text in it (a facet body) read back: both parsers keep a facet as its
    compact text, and compact JSON may spell a number or an escape differently without changing the value."""
    if isinstance(item, dict):
        return {key: _comparable(inner) for key, inner in item.items()}
    if isinstance(item, list):
        return [_comparable(inner) for inner in item]
    if isinstance(item, str) and item[:1] in ("{", "["):
        try:
            return json.loads(item)
        except ValueError:
            return item
    return item


def test_the_orjson_floor_parses_real_events_as_from_json_does(spark, shared_corpus, tmp_path) -> None:
    lines = _corpus_event_lines(shared_corpus)
    assert len(lines) > 20
    path = tmp_path / "events.ndjson"
    path.write_text("\n".join([*lines, "{not json", "[1, 2]"]) + "\n")
    schema = StructType.fromDDL(TEXT_PARSE_SCHEMA.removeprefix("struct<").removesuffix(">"))
    by_python = spark.read.text(str(path)).mapInArrow(orjson_batches(schema), schema).collect()
    by_spark = spark.read.text(str(path)).select(
        F.from_json("value", TEXT_PARSE_SCHEMA, PARSE_OPTIONS).alias("event")).select("event.*").collect()
    assert len(by_python) == len(by_spark) == len(lines) + 2
    for mine, theirs in zip(by_python[:len(lines)], by_spark[:len(lines)], strict=True):
        assert _comparable(mine.asDict(recursive=True)) == _comparable(theirs.asDict(recursive=True))
    assert all(row[CORRUPT_COLUMN] is not None for row in by_python[len(lines):])


def test_bench_refresh_on_a_kept_scale_warehouse(spark, settings, tmp_path: Path, capsys) -> None:
    """``bench refresh`` on a tiny warehouse named as ``bench scale --keep`` names it: each batch's runs are new
    ones, each refresh is timed with its parts and the profile is printed; without the warehouse, a clear error."""
    from python_jobs.tools.bench.refresh import RefreshConfig, run_refresh, scale_settings

    size = 1_500
    with pytest.raises(UserFacingError, match=f"bench scale --sizes {size} --keep"):
        scale_settings(spark, settings, size)
    scoped = reset_warehouse(spark, settings.with_prefix(f"{settings.schema_prefix}bench_scale_{size}_"))
    try:
        history = tmp_path / "history.ndjson"
        write_events(SyntheticSpec.lean(size), history)
        ingest_lineage(spark, scoped, [history])
        run_dbt(scoped, BENCH_BUILD)
        def runs() -> int:  # a new DataFrame each time: one keeps the files it listed first
            return spark.table(scoped.table("lineage", "runs")).count()

        before = runs()

        figures = run_refresh(spark, settings, RefreshConfig(size=size, batch=40, batches=2, profile=True),
                              tmp_path / "work")
        assert runs() == before + 2 * 20  # two batches of 20 new runs (a START and a COMPLETE each)
        assert [events for events, *_ in figures.refreshes] == [40, 40] and figures.load_seconds > 0
        assert all(re.fullmatch(r"[\d.]+ s \((.+ [\d.]+, )*.+ [\d.]+\)", parts) for *_, parts in figures.refreshes)
        printed = capsys.readouterr().out
        assert all(live > 0 for _, live, *_ in figures.refreshes)  # the batch's events pending in the live view
        assert f"batch 2: +40 events, live view of the first {LIVE_PENDING:,} pending " in printed
        assert "Ordered by: cumulative time" in printed
        assert re.search(r"RSS after it [\d,]+ MiB, peak [\d,]+ MiB during it, [\d,]+ minor page faults", printed)
        assert not list((tmp_path / "work").iterdir())  # the batch files are removed
    finally:
        drop_warehouse(spark, scoped)

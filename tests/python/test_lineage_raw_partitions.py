"""``raw.lineage_events`` is partitioned by ``ingest_block``: ingest writes the blocks, windows list only
their own partitions, and a table of the older unpartitioned layout is rewritten once."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from python_jobs.dbt import DbtCommandError, run_dbt
from python_jobs.facets.raw_events import contract_row, raw_events_frame
from python_jobs.ingest import lineage as ingest
from python_jobs.ingest.lineage_contract import INGEST_BLOCK_EVENTS, RAW_LINEAGE_EVENTS
from python_jobs.settings import PROJECT_DIR

PRODUCER = "https://example.com/tests"


def run_event(index: int, event_type: str = "START") -> dict:
    return {
        "eventType": event_type,
        "eventTime": f"2026-04-01T00:{index % 60:02d}:00Z",
        "run": {"runId": f"00000000-0000-4000-8000-{index:012d}"},
        "job": {"namespace": "blocks", "name": f"job_{index}"},
        "producer": PRODUCER,
    }


def write_events(path: Path, indexes: range) -> Path:
    path.write_text("".join(json.dumps(run_event(i)) + "\n" for i in indexes))
    return path


def partition_blocks(spark, table: str) -> list[int]:
    return sorted(int(row[0].split("=", 1)[1]) for row in spark.sql(f"show partitions {table}").collect())


def test_block_size_is_defined_once_for_python_and_dbt():
    macro = (PROJECT_DIR / "macros" / "lineage" / "input_window.sql").read_text()
    assert "var('lineage_ingest_block_events')" in macro
    assert INGEST_BLOCK_EVENTS == 65536


def test_ingest_writes_each_row_into_the_partition_of_its_block(spark, isolated_settings, tmp_path, monkeypatch):
    # Blocks of 4 events, so a few small batches span several of them.
    monkeypatch.setattr(ingest, "INGEST_BLOCK_EVENTS", 4)
    table = isolated_settings.table("raw", "lineage_events")
    first = ingest.ingest_lineage(spark, isolated_settings, [write_events(tmp_path / "a.ndjson", range(1, 7))])
    second = ingest.ingest_lineage(spark, isolated_settings, [write_events(tmp_path / "b.ndjson", range(7, 12))])
    assert (first.accepted, second.accepted) == (6, 5)
    stored = spark.table(table).select("ingest_seq", "ingest_block").collect()
    assert sorted(r["ingest_seq"] for r in stored) == list(range(1, 12))
    assert all(r["ingest_block"] == r["ingest_seq"] // 4 for r in stored)
    assert partition_blocks(spark, table) == [0, 1, 2]
    # every file sits in the folder of its rows' block
    per_file = spark.table(table).selectExpr("input_file_name() as file", "ingest_block").distinct().collect()
    assert all(f"/ingest_block={r['ingest_block']}/" in r["file"] for r in per_file)
    # a filter on the blocks lists only their partitions' files
    window = spark.table(table).where("ingest_block between 2 and 2")
    assert window.inputFiles() and all("/ingest_block=2/" in f for f in window.inputFiles())
    assert ingest.max_ingest_seq(spark, table, partitioned_files=True) == 11
    # re-ingesting changes nothing, and the next batch continues after 11
    again = ingest.ingest_lineage(spark, isolated_settings, [tmp_path / "a.ndjson", tmp_path / "b.ndjson"])
    assert (again.accepted, again.duplicates) == (0, 11)
    third = ingest.ingest_lineage(spark, isolated_settings, [write_events(tmp_path / "c.ndjson", range(12, 13))])
    assert third.accepted == 1
    assert spark.table(table).where("ingest_seq = 12 and ingest_block = 3").count() == 1


def test_highest_seq_skips_an_empty_partition_left_by_a_crash(spark, isolated_settings, tmp_path, monkeypatch):
    monkeypatch.setattr(ingest, "INGEST_BLOCK_EVENTS", 4)
    table = isolated_settings.table("raw", "lineage_events")
    ingest.ingest_lineage(spark, isolated_settings, [write_events(tmp_path / "a.ndjson", range(1, 4))])
    spark.sql(f"alter table {table} add partition (ingest_block=7)")  # registered, no file moved in
    assert ingest.max_ingest_seq(spark, table, partitioned_files=True) == 3


def old_layout_table(spark, settings, events: list[dict], name: str = "lineage_events") -> str:
    """A raw table as versions before the partitions wrote it: no ingest_block column."""
    table = settings.table("raw", name)
    rows = [contract_row(event, seq, "old.ndjson", seq) for seq, event in enumerate(events, start=1)]
    frame = raw_events_frame(spark, rows).drop("ingest_block")
    frame.write.format("parquet").saveAsTable(table)
    return table


def unpartition(spark, table: str) -> None:
    """Turns an ingested raw table back into the layout of older versions."""
    spark.table(table).drop("ingest_block").write.format("parquet").saveAsTable(f"{table}_old_layout")
    spark.sql(f"drop table {table}")
    spark.sql(f"alter table {table}_old_layout rename to {table}")


def test_an_unpartitioned_table_is_rewritten_once_and_dbt_asks_for_it(spark, isolated_settings, tmp_path):
    ingest.ingest_lineage(spark, isolated_settings, [write_events(tmp_path / "old.ndjson", range(1, 4))])
    table = isolated_settings.table("raw", "lineage_events")
    unpartition(spark, table)
    assert "ingest_block" not in spark.table(table).columns
    # dbt does not build from the old layout: it says which command rewrites it
    with pytest.raises(DbtCommandError, match="ingest lineage"):
        run_dbt(isolated_settings, ["run", "--select", "stg_lineage_events"])

    # the ingest rewrites it, keeps every row and id, and continues the numbering
    before = {r["event_id"]: r["ingest_seq"] for r in spark.table(table).collect()}
    report = ingest.ingest_lineage(
        spark, isolated_settings, [write_events(tmp_path / "new.ndjson", [1, 4])]  # event 1 is a duplicate
    )
    assert (report.accepted, report.duplicates) == (1, 1)
    assert ingest.is_partitioned_by_block(spark, table)
    after = {r["event_id"]: (r["ingest_seq"], r["ingest_block"]) for r in spark.table(table).collect()}
    assert {key: seq for key, (seq, _) in after.items() if key in before} == before
    assert sorted(seq for seq, _ in after.values()) == [1, 2, 3, 5]  # 4 went to the duplicate
    assert all(block == seq // INGEST_BLOCK_EVENTS for seq, block in after.values())
    assert [c.name for c in spark.table(table).schema] == RAW_LINEAGE_EVENTS.fieldNames()
    assert not spark.catalog.tableExists(f"{table}__unpartitioned")
    assert not spark.catalog.tableExists(f"{table}__partitioned")


def test_an_interrupted_rewrite_is_finished(spark, isolated_settings):
    table = old_layout_table(spark, isolated_settings, [run_event(1), run_event(2)])
    copy, old = f"{table}__partitioned", f"{table}__unpartitioned"
    # the copy was complete and the old table renamed away when the run stopped
    ingest._create_raw_table(spark, copy, "parquet")
    spark.table(table).withColumn("ingest_block", ingest.ingest_block()).select(
        *RAW_LINEAGE_EVENTS.fieldNames()).write.insertInto(copy)
    spark.sql(f"alter table {table} rename to {old}")
    ingest.partition_raw_table(spark, table)
    assert ingest.is_partitioned_by_block(spark, table)
    assert spark.table(table).count() == 2
    assert not spark.catalog.tableExists(old) and not spark.catalog.tableExists(copy)

    # a copy that a stopped run left half written beside the old table is made again
    other = old_layout_table(spark, isolated_settings, [run_event(5)], name="other_events")
    ingest._create_raw_table(spark, f"{other}__partitioned", "parquet")
    ingest.partition_raw_table(spark, other)
    assert [r["ingest_seq"] for r in spark.table(other).collect()] == [1]


def test_windows_name_their_blocks_and_miss_no_event_across_block_edges(spark, isolated_settings):
    from python_jobs.facets.raw_events import append_raw_events

    selection = ["run", "--select", "stg_lineage_events", "jobs", "namespaces", "run_states"]
    def append(seqs: list[int]) -> None:
        append_raw_events(spark, isolated_settings, [
            contract_row(run_event(seq), seq, "blocks.ndjson", seq) for seq in seqs
        ])

    edge = INGEST_BLOCK_EVENTS
    append([edge - 3, edge - 2, edge - 1])  # the end of block 0
    run_dbt(isolated_settings, selection)
    append([edge, edge + 1, 3 * edge + 5])  # blocks 1 and 3
    outcome = run_dbt(isolated_settings, selection)
    compiled = {r.node.name: r.node.compiled_code for r in outcome.result.results}
    lineage = isolated_settings.schema("lineage")
    for model in ("jobs", "run_states", "namespaces"):
        # The model names the bound window's partitions; the materialization records what it bound.
        assert re.search(r"ingest_block between `windowed_append__\w+`\.low_partition and", compiled[model]), model
        assert window_read(spark, f"{lineage}.{model}") == f"({edge - 1}, {3 * edge + 5}] partitions 1..3", model

    jobs = {r["name"] for r in spark.table(f"{lineage}.jobs").collect()}
    assert jobs == {f"job_{seq}" for seq in (edge - 3, edge - 2, edge - 1, edge, edge + 1, 3 * edge + 5)}
    assert spark.table(f"{lineage}.run_states").count() == 6
    assert spark.table(f"{lineage}.namespaces").count() == 1

    # A build that adds no job still moves the jobs window on (the recorded table property, read
    # from dbt's relation cache), so the next one starts after it, not after the newest job.
    known_job = {**run_event(4 * edge), "job": {"namespace": "blocks", "name": f"job_{edge}"}}
    append_raw_events(spark, isolated_settings, [contract_row(known_job, 4 * edge, "blocks.ndjson", 1)])
    run_dbt(isolated_settings, selection)
    append([5 * edge])
    run_dbt(isolated_settings, selection)
    assert window_read(spark, f"{lineage}.jobs") == f"({4 * edge}, {5 * edge}] partitions 4..5"
    assert spark.table(f"{lineage}.jobs").count() == 7


def window_read(spark, table: str) -> str | None:
    """The input window the table's last build read (its ``lineage.input_window`` property)."""
    properties = {row.key: row.value for row in spark.sql(f"show tblproperties {table}").collect()}
    return properties.get("lineage.input_window")

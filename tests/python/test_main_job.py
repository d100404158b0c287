"""The main job end to end on the generated sample: real tables, a summary that matches them and the sample,
a second build changes nothing, and neither does compacting the tables."""

from __future__ import annotations

import io
import re
from collections import Counter

from rich.console import Console

from python_jobs.dbt import run_dbt
from python_jobs.ops.compaction import compact_warehouse
from python_jobs.progress import Reporter
from python_jobs.settings import LAYERS
from python_jobs.summary import render_summary
from python_jobs.warehouse.fingerprint import warehouse_fingerprint
from python_jobs.warehouse.main_job import LINEAGE_PAGE_NAME, SAMPLE_DBT_VARS, WITHOUT_DATA_TESTS


def test_every_layer_is_a_spark_database(sample_warehouse, spark):
    databases = {row.namespace for row in spark.sql("show databases").collect()}
    assert {sample_warehouse.schema(layer) for layer in LAYERS} <= databases


def test_main_job_leaves_parquet_tables_in_the_metastore(sample_warehouse, spark):
    fingerprint = warehouse_fingerprint(spark, sample_warehouse)
    assert fingerprint, "the main job built no tables"
    for table in fingerprint:
        rows = spark.sql(
            f"describe table extended {sample_warehouse.schema(table.split('.')[0])}.{table.split('.', 1)[1]}"
        ).collect()
        details = {r.col_name: r.data_type for r in rows}
        if details.get("Type") == "VIEW":
            continue
        assert details.get("Provider", "").lower() == "parquet", (table, details.get("Provider"))


def test_second_build_with_no_new_input_changes_no_table(sample_warehouse, spark):
    before = warehouse_fingerprint(spark, sample_warehouse)
    # Without the data tests, which only read; the build after the compaction below runs them.
    run_dbt(sample_warehouse, ["build", *WITHOUT_DATA_TESTS], extra_vars=SAMPLE_DBT_VARS)
    after = warehouse_fingerprint(spark, sample_warehouse)
    assert after == before


def test_compacting_the_warehouse_keeps_every_row_and_the_next_build_changes_nothing(sample_warehouse, spark):
    before = warehouse_fingerprint(spark, sample_warehouse)
    done = compact_warehouse(spark, sample_warehouse, min_files=2)
    assert done, "a built warehouse holds tables of several files"
    assert warehouse_fingerprint(spark, sample_warehouse) == before
    assert compact_warehouse(spark, sample_warehouse, min_files=2) == []
    # Incremental models read their properties and newest rows from the compacted tables; the dedup
    # tests run on them too.
    run_dbt(sample_warehouse, ["build"], extra_vars=SAMPLE_DBT_VARS)
    assert warehouse_fingerprint(spark, sample_warehouse) == before


# ---------------------------------------------------------------- the summary the main job ends with


def test_summary_counts_every_public_table(main_run, sample_warehouse, spark):
    rows = main_run.summary.table_rows
    assert not any("__" in name for name in rows), "state tables and dbt internals are left out"
    for name in ("lineage.jobs", "lineage.runs", "lineage.datasets", "changelog.crm_accounts",
                 "registry.com_example_checkout_1"):
        layer, table = name.split(".")
        assert rows[name] == spark.table(sample_warehouse.table(layer, table)).count() > 0, name


def test_summary_rejections_per_reason_hold_every_bad_record_of_the_sample(main_run, main_sample, sample_warehouse,
                                                                          spark):
    rejected, manifest = main_run.summary.rejected, main_sample
    for table, reasons in rejected.items():
        assert sum(reasons.values()) == spark.table(sample_warehouse.table("audit", table)).count(), table
    lineage_rejects = spark.table(sample_warehouse.table("audit", "lineage_events_rejected"))
    from_sample = lineage_rejects.where(lineage_rejects.source_file.contains(str(manifest.root / "lineage")))
    assert from_sample.count() == manifest.lineage.malformed
    assert sum(rejected["sd_events_rejected"].values()) == manifest.sd_invalid
    assert len(rejected["sd_events_rejected"]) >= 5, "several kinds of invalid event, each its own reason"


def test_summary_changelog_ops_are_what_the_exports_imply(main_run, main_sample, sample_warehouse, spark):
    manifest = main_sample
    assert main_run.summary.changelog_ops["crm_accounts"] == dict(sum(map(Counter, manifest.changelog_ops), Counter()))
    stream = spark.table(sample_warehouse.table("changelog", "crm_accounts"))
    per_round = Counter((row.system_time, row.op) for row in stream.select("system_time", "op").collect())
    expected = Counter({
        (snapshot.system_time.replace(tzinfo=None), op): n
        for snapshot, ops in zip(manifest.snapshots, manifest.changelog_ops, strict=True) for op, n in ops.items()
    })
    assert per_round == expected
    key = manifest.reappearing_keys[0]
    history = [row.op for row in stream.where(stream.account_id == key).orderBy("offset").collect()]
    assert history[0] == 0 and 1 in history and history[history.index(1) + 1:].count(0) >= 1


def test_summary_schema_versions_and_registry_tables(main_run, sample_warehouse, spark):
    dedup = main_run.summary.schema_dedup
    lineage = sample_warehouse.schema("lineage")
    assert dedup.per_version_mapping_rows == spark.table(f"{lineage}.dataset_versions_field_mapping").count()
    assert dedup.schema_versions < dedup.dataset_versions
    assert 0 < dedup.schema_mapping_rows < dedup.per_version_mapping_rows
    registry = {entry.table: entry for entry in main_run.summary.registry_tables}
    assert registry["com_example_checkout_1"].versions == ("1-0-0", "1-0-1", "1-0-2")
    assert registry["com_example_signup_1"].versions == ("1-0-0", "1-0-1")
    [recovery] = [entry for entry in registry.values() if entry.is_recovery]
    assert recovery.table.startswith("com_example_page_view_1_recovered_") and recovery.versions == ("1-1-0",)
    assert all(entry.rows > 0 for entry in registry.values())


def test_summary_reads_as_plain_text_in_a_log(main_run):
    console = Console(file=io.StringIO(), width=150, force_terminal=False, color_system=None)
    render_summary(main_run.summary, console)
    text = console.file.getvalue()
    assert "\x1b" not in text and "\r" not in text
    for title in ("Rows per public table", "Rejected records", "Schema versions against Marquez",
                  "Changelog ops per stream", "Registry tables and their versions"):
        assert title in text
    assert f"docs:         {main_run.summary.docs_page}" in text and main_run.summary.docs_page.is_file()
    assert f"lineage page: {main_run.summary.lineage_page}" in text
    assert main_run.summary.lineage_page.name == LINEAGE_PAGE_NAME


def test_progress_in_a_log_is_a_start_and_a_result_line():
    console = Console(file=io.StringIO(), width=150)
    reporter = Reporter(console)
    with reporter.step("ingest things", "rows", total=3) as step:
        step.advance(2)
        step.advance()
        step.finish(note="2 accepted")
    lines = console.file.getvalue().splitlines()
    assert lines[0] == "== ingest things"
    assert re.fullmatch(r"   ingest things: 3 rows in \d+\.\ds \([\d,.]+ rows/s\); 2 accepted", lines[1])
    assert len(lines) == 2

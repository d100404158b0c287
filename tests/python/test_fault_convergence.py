"""Crash convergence: regressions for what the fault suite found, checked in the shared Spark session by
interrupting a writer at the step that broke, and a small run of the suite itself (subprocesses with their
own warehouse home, killed with SIGKILL)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from python_jobs.ingest import lineage as ingest_module
from python_jobs.ingest.lineage import RAW_TABLE, REJECTED_TABLE, HadoopFiles, ingest_lineage
from python_jobs.ops.leftovers import remove_stale_writes
from python_jobs.settings import LAYERS
from python_jobs.spark import ensure_schemas
from python_jobs.tools.faults.suite import Point, batch_files, format_report, plan_points, run_suite, write_batch
from python_jobs.warehouse.fingerprint import table_fingerprint


class SimulatedCrash(RuntimeError):
    pass


def _raw_and_audit(spark, settings) -> dict[str, dict[str, object]]:
    return {name: table_fingerprint(spark, settings.table(*name)) for name in (RAW_TABLE, REJECTED_TABLE)}


@pytest.fixture()
def small_splits(spark) -> Iterator[None]:
    """Small input splits stand in for a batch of large files: several staged files, so a crash can land
    between them (a small batch stages one file, and a single move is atomic)."""
    keys = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")
    previous = {key: spark.conf.get(key) for key in keys}
    for key in keys:
        spark.conf.set(key, "4096")
    yield
    for key, value in previous.items():
        spark.conf.set(key, value)


def test_ingest_interrupted_after_part_of_the_batch_stores_the_rest_as_one_run_would(
    spark, isolated_settings, small_splits, tmp_path: Path, monkeypatch
) -> None:
    batch = tmp_path / "batch"
    write_batch(batch, 24, seed=5)
    clean = isolated_settings
    crashed = clean.with_prefix(f"{clean.schema_prefix}crashed_")
    ensure_schemas(spark, crashed, LAYERS)

    clean_report = ingest_lineage(spark, clean, [batch])
    assert clean_report.reconciles() and clean_report.rejected == 3 and clean_report.duplicates > 0

    # The crash lands after the partly kept files were rewritten into the table and one clean file
    # moved in: part of the batch is stored, which raised the table's maximum ingest_seq.
    original_move = HadoopFiles.move_into
    moved: list[str] = []

    def move_then_crash(self: HadoopFiles, file_uri: str, folder: str) -> None:
        if moved:
            raise SimulatedCrash("killed between two moves")
        moved.append(file_uri)
        original_move(self, file_uri, folder)

    monkeypatch.setattr(HadoopFiles, "move_into", move_then_crash)
    with pytest.raises(SimulatedCrash):
        ingest_lineage(spark, crashed, [batch])
    monkeypatch.setattr(HadoopFiles, "move_into", original_move)
    assert spark.table(crashed.table(*RAW_TABLE)).count() > 0

    again = ingest_lineage(spark, crashed, [batch])
    assert again.reconciles()
    assert again.read == clean_report.read and again.batch_id == clean_report.batch_id
    # Same rows, same ingest_seq and batch id as the uninterrupted run: nothing lost, nothing doubled.
    assert _raw_and_audit(spark, crashed) == _raw_and_audit(spark, clean)
    assert ingest_lineage(spark, crashed, [batch]).accepted == 0


def test_batch_files_hold_bad_lines_and_duplicates() -> None:
    files = batch_files(30, seed=1)
    lines = [line for text in files.values() for line in text.splitlines()]
    assert len(files) == 4 and len(lines) == 30 + 3 + 3
    assert "not json at all" in files["part-2.ndjson"]


def test_points_are_seeded() -> None:
    counts = {"ingest": 14, "compact": 40}
    first = plan_points(["ingest", "compact"], counts, 6, seed=3)
    assert first == plan_points(["ingest", "compact"], counts, 6, seed=3)
    assert [p.scenario for p in first] == ["ingest", "compact"] * 3
    assert all(1 <= p.step <= counts[p.scenario] for p in first)
    assert Point.parse(first[0].label()) == first[0]


def test_fault_suite_small_run_converges(tmp_path: Path) -> None:
    """Two seeded kills of `ingest lineage` (with bad lines and duplicates), each re-run and compared
    with the uninterrupted run. Three JVM starts for the reference and two per point."""
    results = run_suite(tmp_path / "faults", points=2, seed=4, size="small", scenarios=["ingest"])
    report = format_report(results, ["ingest"])
    print(report)
    assert len(results) == 2
    assert all(r.rerun_ok and r.converged for r in results), report
    killed = [r for r in results if r.killed]
    assert killed, report
    assert all(r.takeover_message for r in killed), report


def test_ingest_intent_is_removed_after_a_complete_ingest(spark, isolated_settings, tmp_path: Path) -> None:
    batch = tmp_path / "batch"
    write_batch(batch, 8, seed=2)
    ingest_lineage(spark, isolated_settings, [batch])
    location = spark.sql(f"describe formatted {isolated_settings.table(*RAW_TABLE)}").where(
        "col_name = 'Location'").first()["data_type"]
    assert HadoopFiles(spark).read_text(f"{location}/{ingest_module.INTENT_FILE}") is None


def test_ingest_creates_its_tables_over_a_folder_left_by_a_killed_create(spark, isolated_settings, tmp_path) -> None:
    """A kill inside ``saveAsTable`` of the audit table (fault point ``ingest:5:130``) left its folder without
    a table; every later ingest failed with LOCATION_ALREADY_EXISTS."""
    database_uri = spark.catalog.getDatabase(isolated_settings.schema("audit")).locationUri.rstrip("/")
    leftover = f"{database_uri}/{REJECTED_TABLE[1]}/part-00000-leftover.parquet"
    spark.createDataFrame([(1,)], "x int").coalesce(1).write.parquet(leftover)
    batch = tmp_path / "batch"
    write_batch(batch, 8, seed=3)
    report = ingest_lineage(spark, isolated_settings, [batch])
    assert report.reconciles() and report.rejected == 3
    assert spark.table(isolated_settings.table(*REJECTED_TABLE)).count() == 3


def test_rows_of_a_write_killed_before_its_job_commit_are_not_merged_by_the_next_write(
    spark, isolated_settings, capfd
) -> None:
    """Fault point ``build-incremental:461:778``: a build killed after some tasks of an insert had committed
    left ``<table>/_temporary/0/task_*``; the re-run's insert, committing through the same folder, moved those
    files in as well, and the model held its rows twice. Taking the writer lock removes the leftovers first."""
    table = isolated_settings.table("staging", "killed_insert")
    spark.sql(f"create table {table} (id int) using parquet")
    spark.sql(f"insert into {table} values (1), (2)")
    folder = Path(spark.sql(f"describe formatted {table}").where("col_name = 'Location'").first()["data_type"]
                  .removeprefix("file:"))
    committed_task = folder / "_temporary" / "0" / "task_202611250000_0001_m_000000"
    committed_task.mkdir(parents=True)
    part = next(folder.glob("part-*"))
    (committed_task / "part-00000-killed.snappy.parquet").write_bytes(part.read_bytes())

    # What a fresh writer-lock acquisition runs first (test_writer_lock.py checks that it does); this pytest
    # process already holds the lock through the adapter, so taking it here would only re-enter it.
    remove_stale_writes(isolated_settings)
    spark.sql(f"insert into {table} values (3)")
    spark.sql(f"refresh table {table}")

    assert sorted(row.id for row in spark.table(table).collect()) == [1, 2, 3]
    assert not (folder / "_temporary").exists()
    assert "removed 1 unfinished write folder(s) left by a killed writer" in capfd.readouterr().err

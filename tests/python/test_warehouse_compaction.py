"""``warehouse compact``: many appended files become few, and nothing else about the table changes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from dbt.adapters.spark_python.published_writes import clear_retired_default_folder, replace_table_data

from python_jobs.ops import compaction
from python_jobs.ops.compaction import (
    COMPACTED_MARK,
    MANIFEST,
    compact_warehouse,
    compacted_name,
    data_files,
    foreign_folders,
    is_hidden,
    late_entries,
    manifest_text,
    needs_compaction,
    output_file_count,
    rewritten_files,
    stale_action,
    stale_folders,
    table_files,
)
from python_jobs.ops.leftovers import remove_expired_retired
from python_jobs.ops.retired_folders import GRACE_ENV, MARKER, marker_text
from python_jobs.warehouse.fingerprint import warehouse_fingerprint


def test_output_file_count_and_threshold() -> None:
    assert output_file_count(0) == 1
    assert output_file_count(128 * 1024 * 1024) == 1
    assert output_file_count(128 * 1024 * 1024 + 1) == 2
    small = [(f"part-{i}", 1000) for i in range(5)]
    assert needs_compaction(small, min_files=5)
    assert not needs_compaction(small, min_files=6)
    assert not needs_compaction(small[:1], min_files=1)  # one file is as compact as it gets
    big = [(f"part-{i}", 200 * 1024 * 1024) for i in range(2)]
    assert not needs_compaction(big, min_files=2)  # a rewrite would give two files again


def test_data_files_skip_hidden_entries_and_folders() -> None:
    entries = [("part-1.parquet", False, 10), ("_SUCCESS", False, 0), (".part-1.crc", False, 1), ("sub", True, 0)]
    assert data_files(entries) == [("part-1.parquet", 10)]
    # Spark's rule: a leading underscore hides a name unless it holds "=" (a partition folder).
    assert is_hidden("_staged_append") and is_hidden(".x.crc") and is_hidden("part-1._COPYING_")
    assert not is_hidden("_a=1") and not is_hidden("append-20261126T232100123456Z")


def test_table_files_are_the_root_files_and_the_files_of_append_folders_at_any_depth() -> None:
    tree = {
        "t": [("part-0", False, 5), ("_SUCCESS", False, 0), ("append-1", True, 0), ("append-2", True, 0),
              ("_staged_append", True, 0), (MARKER, False, 9)],
        "t/append-1": [("part-1", False, 6), (".part-1.crc", False, 1), ("_SUCCESS", False, 0)],
        "t/append-2": [("part-2", False, 7), ("deeper", True, 0), ("_hidden", True, 0)],
        "t/append-2/deeper": [("part-3", False, 8)],
        "t/append-2/_hidden": [("part-4", False, 9)],
        "t/_staged_append": [("part-5", False, 10)],
    }
    files = table_files(lambda folder: tree.get(folder, []), "t")
    assert files == [("append-1/part-1", 6), ("append-2/deeper/part-3", 8), ("append-2/part-2", 7), ("part-0", 5)]
    assert foreign_folders(tree["t"]) == []
    assert foreign_folders([*tree["t"], ("other", True, 0), ("_p=1", True, 0)]) == ["_p=1", "other"]


def test_late_entries_are_root_files_and_whole_append_folders_the_rewrite_did_not_list() -> None:
    entries = [("part-0", False, 5), ("part-late", False, 5), ("append-1", True, 0), ("append-late", True, 0),
               ("_staged_append", True, 0), (MANIFEST, False, 1)]
    rewritten = {"part-0", "append-1/part-1"}
    assert late_entries(entries, rewritten) == ["append-late", "part-late"]


def test_what_becomes_of_a_folder_the_table_left() -> None:
    assert stale_action("jobs", "jobs", retired=False, replaced_by_current=False) == "retire"  # the original
    assert stale_action("jobs__compacted-1", "jobs", retired=False, replaced_by_current=True) == "retire"
    assert stale_action("jobs__compacted-2", "jobs", retired=False, replaced_by_current=False) == "delete"
    assert stale_action("jobs", "jobs", retired=True, replaced_by_current=True) == "keep"


def test_folder_names() -> None:
    name = compacted_name("jobs", ["b", "a"])
    assert name.startswith("jobs" + COMPACTED_MARK)
    assert name == compacted_name("jobs", ["a", "b"])
    assert name != compacted_name("jobs", ["a", "c"])
    siblings = ["jobs", name, "jobs__compacted-0123", "jobs_history", "other"]
    assert stale_folders(name, siblings) == ["jobs", "jobs__compacted-0123"]
    assert stale_folders("jobs", siblings) == sorted([name, "jobs__compacted-0123"])


def test_manifest_names_the_rewritten_files_of_one_folder() -> None:
    text = manifest_text("jobs", ["part-2", "part-1"])
    assert rewritten_files(text, "jobs") == {"part-1", "part-2"}
    assert rewritten_files(text, "jobs__compacted-0123") is None  # a folder it did not replace
    assert rewritten_files(None, "jobs") is None


def _local(location: str) -> Path:
    return Path(location.removeprefix("file:"))


def _location(spark, table: str) -> str:
    return spark.sql(f"describe formatted {table}").where("col_name = 'Location'").first()[1]


def test_compaction_keeps_rows_properties_and_append_order(spark, isolated_settings) -> None:
    staging = isolated_settings.schema("staging")
    table, small, parted = f"{staging}.appended", f"{staging}.few_files", f"{staging}.parted"
    spark.sql(f"create table {table} (ingest_seq bigint, name string) using parquet comment 'kept' "
              "tblproperties ('lineage.input_through' = '40')")
    for batch in range(5):
        values = ", ".join(f"({batch * 10 + i}, 'n{batch}-{i}')" for i in range(10))
        spark.sql(f"insert into {table} values {values}")
    spark.sql(f"create table {small} (a int) using parquet")
    spark.sql(f"insert into {small} values (1)")
    spark.sql(f"create table {parted} (a int, p int) using parquet partitioned by (p)")
    for batch in range(5):
        spark.sql(f"insert into {parted} values ({batch}, 1)")
    bucketed = f"{staging}.bucketed"
    spark.sql(f"create table {bucketed} (a int) using parquet clustered by (a) into 2 buckets")
    for batch in range(5):
        spark.sql(f"insert into {bucketed} values ({batch}), ({batch + 1})")
    spark.sql(f"create view {staging}.a_view as select * from {table}")
    original = _local(_location(spark, table))
    # A folder that a compaction which stopped before switching the table left behind.
    orphan = original.parent / f"appended{COMPACTED_MARK}deadbeefdeadbeef"
    orphan.mkdir()
    (orphan / "part-0.parquet").write_bytes(b"not parquet")
    before = warehouse_fingerprint(spark, isolated_settings)
    files = len(spark.table(table).inputFiles())
    assert files >= 5

    planned = compact_warehouse(spark, isolated_settings, min_files=5, dry_run=True)
    assert [(c.table, c.files_before) for c in planned] == [(table, files)]
    assert len(spark.table(table).inputFiles()) == files and orphan.exists()  # a dry run changes nothing

    done = compact_warehouse(spark, isolated_settings, min_files=5)
    assert [(c.table, c.files_before, c.files_after) for c in done] == [(table, files, 1)]
    assert warehouse_fingerprint(spark, isolated_settings) == before
    assert len(spark.table(table).inputFiles()) == 1
    # Partitioned and bucketed tables are left alone.
    assert len(spark.table(parted).inputFiles()) == 5
    assert len(spark.table(bucketed).inputFiles()) >= 5
    # The old folder is retired (kept for readers that listed it), the never-switched-to orphan deleted.
    assert (original / MARKER).exists() and not orphan.exists()
    assert _local(_location(spark, table)).name.startswith("appended" + COMPACTED_MARK)
    properties = {row["key"]: row["value"] for row in spark.sql(f"show tblproperties {table}").collect()}
    assert properties["lineage.input_through"] == "40"
    assert spark.sql(f"describe table extended {table}").where("col_name = 'Comment'").first()[1] == "kept"
    # The rewritten file keeps the order of the appends (files of one append: by write time, then
    # name), so a window on ingest_seq still maps to a range of rows.
    batches_in_file_order = [row["ingest_seq"] // 10 for row in spark.table(table).collect()]
    assert batches_in_file_order == sorted(batches_in_file_order)

    # The table goes on as before: appends land beside the compacted file, and a second run only
    # rewrites when there are enough files again.
    spark.sql(f"insert into {table} values (50, 'n5-0')")
    assert spark.table(table).count() == 51
    files = len(spark.table(table).inputFiles())
    assert compact_warehouse(spark, isolated_settings, min_files=files + 1) == []
    first_compacted = _local(_location(spark, table))
    done = compact_warehouse(spark, isolated_settings, min_files=files)
    assert [(c.table, c.files_before, c.files_after) for c in done] == [(table, files, 1)]
    assert (first_compacted / MARKER).exists() and (original / MARKER).exists()
    assert spark.table(table).count() == 51


def test_a_switch_whose_old_folder_was_not_retired_is_retired_by_the_next_run(spark, isolated_settings) -> None:
    staging = isolated_settings.schema("staging")
    table = f"{staging}.switched"
    spark.sql(f"create table {table} (a int) using parquet")
    for value in range(3):
        spark.sql(f"insert into {table} values ({value})")
    original = _location(spark, table)
    # A run that stopped after the switch: the table reads the new folder, the old one is still there.
    target = f"{original}{COMPACTED_MARK}0000000000000000"
    spark.table(table).coalesce(1).write.parquet(target)
    spark.sql(f"alter table {table} set location '{target}'")
    spark.sql(f"refresh table {table}")
    assert _local(original).exists()

    assert compact_warehouse(spark, isolated_settings, min_files=2) == []
    assert (_local(original) / MARKER).exists()  # the table read it: a reader may still be reading it
    assert sorted(row["a"] for row in spark.table(table).collect()) == [0, 1, 2]

    # Dropped and created again under its name (dbt's full refresh): the retired first folder at the default
    # location gives way, where Spark alone would refuse with LOCATION_ALREADY_EXISTS.
    assert not clear_retired_default_folder(spark, table)  # the table still exists and points elsewhere
    spark.sql(f"drop table {table}")
    assert clear_retired_default_folder(spark, table)
    spark.sql(f"create table {table} using parquet as select 7 as a")
    assert [row["a"] for row in spark.table(table).collect()] == [7]
    assert _location(spark, table) == original


def test_a_python_table_switches_its_data_and_rebuilds_whole_when_its_columns_change(spark, isolated_settings) -> None:
    table = isolated_settings.table("staging", "python_table")
    replace_table_data(spark, spark.range(3).selectExpr("id as a"), table, "parquet", None)
    first = _location(spark, table)
    replace_table_data(spark, spark.range(4).selectExpr("id as a"), table, "parquet", None)
    # Same columns: the new data in a folder beside, the old one retired for readers still listing it.
    assert _location(spark, table) != first and (_local(first) / MARKER).exists()
    assert spark.table(table).count() == 4
    # Changed columns: dropped and created again at the default location, which the retired folder held.
    replace_table_data(spark, spark.range(2).selectExpr("id as a", "'x' as b"), table, "parquet", None)
    assert _location(spark, table) == first
    assert sorted(tuple(row) for row in spark.table(table).collect()) == [(0, "x"), (1, "x")]


def test_an_append_that_commits_during_a_compaction_is_kept(spark, isolated_settings, monkeypatch) -> None:
    staging = isolated_settings.schema("staging")
    table = f"{staging}.busy"
    spark.sql(f"create table {table} (a int) using parquet")
    for value in range(4):
        spark.sql(f"insert into {table} values ({value})")
    original = _local(_location(spark, table))
    rewrite = compaction._rewrite

    def rewrite_while_a_build_appends(*args, **kwargs) -> None:
        rewrite(*args, **kwargs)
        spark.sql(f"insert into {table} values (100)")  # lands in the folder the table still reads

    def stop_after_the_switch(*args, **kwargs) -> int:
        raise RuntimeError("stopped after the switch")

    monkeypatch.setattr(compaction, "_rewrite", rewrite_while_a_build_appends)
    monkeypatch.setattr(compaction, "retire_folder", stop_after_the_switch)
    with pytest.raises(RuntimeError, match="stopped after the switch"):
        compact_warehouse(spark, isolated_settings, min_files=4)
    compacted = _local(_location(spark, table))
    assert compacted.name.startswith("busy" + COMPACTED_MARK) and (compacted / MANIFEST).exists()
    # The late row is only in the old folder, which the next run finds beside the table's own.
    assert sorted(row["a"] for row in spark.table(table).collect()) == [0, 1, 2, 3]
    assert len(data_files((p.name, p.is_dir(), 0) for p in original.iterdir())) == 5

    monkeypatch.undo()
    assert compact_warehouse(spark, isolated_settings, min_files=10) == []
    # The late file moved over, the rewritten ones stay for readers, and the folder is retired.
    assert len(data_files((p.name, p.is_dir(), 0) for p in original.iterdir())) == 4
    assert (original / MARKER).exists()
    assert sorted(row["a"] for row in spark.table(table).collect()) == [0, 1, 2, 3, 100]

    # Without a stop, the late row is moved over in the same run.
    monkeypatch.setattr(compaction, "_rewrite", rewrite_while_a_build_appends)
    (done,) = compact_warehouse(spark, isolated_settings, min_files=2)
    assert (done.files_before, done.files_after) == (2, 2)  # the rewritten file and the late one
    assert sorted(row["a"] for row in spark.table(table).collect()) == [0, 1, 2, 3, 100, 100]
    assert (compacted / MARKER).exists()


def _publish_append(spark, folder: Path, values: list[int], stamp: str) -> Path:
    """What the adapter's published append does: write into the hidden ``_staged_append``, then one rename."""
    staged = folder / "_staged_append"
    spark.createDataFrame([(value,) for value in values], "a int").write.parquet(str(staged))
    published = folder / f"append-{stamp}"
    staged.rename(published)
    return published


def test_append_folders_are_compacted_and_the_old_folder_is_retired_until_its_grace_is_over(
    spark, isolated_settings, monkeypatch
) -> None:
    table = isolated_settings.table("staging", "published")
    spark.sql(f"create table {table} (a int) using parquet options ('recursiveFileLookup' = 'true')")
    spark.sql(f"insert into {table} values (0), (1)")  # the first build writes at the root
    original = _local(_location(spark, table))
    for index in range(1, 4):
        _publish_append(spark, original, [10 * index, 10 * index + 1], f"2026112{index}T000000000000000Z")
    spark.sql(f"refresh table {table}")
    values = [0, 1, 10, 11, 20, 21, 30, 31]
    assert sorted(row["a"] for row in spark.table(table).collect()) == values
    # A reader that listed the table's files before the compaction, in a session of its own as the SQL
    # endpoint gives each client (the writer's session re-lists its own DataFrames at each refresh).
    before_switch = spark.newSession().table(table)
    files = len(before_switch.inputFiles())
    assert files >= 4

    rewrite = compaction._rewrite
    late = "append-20261129T000000000000000Z"

    def rewrite_while_an_append_publishes(*args, **kwargs) -> None:
        rewrite(*args, **kwargs)
        _publish_append(spark, original, [99], late.removeprefix("append-"))  # not in the listing

    monkeypatch.setattr(compaction, "_rewrite", rewrite_while_an_append_publishes)
    (done,) = compact_warehouse(spark, isolated_settings, min_files=4)
    monkeypatch.undo()
    compacted = _local(_location(spark, table))
    assert compacted.name.startswith("published" + COMPACTED_MARK)
    # One rewritten file, and the late append moved over whole.
    assert (compacted / late).is_dir() and not (original / late).exists()
    late_files = len(data_files((p.name, p.is_dir(), 0) for p in (compacted / late).iterdir()))
    assert (done.files_before, done.files_after) == (files, 1 + late_files)
    assert sorted(row["a"] for row in spark.table(table).collect()) == [*values, 99]
    # The old folder is retired, not deleted: the reader's listing still opens.
    assert json.loads((original / MARKER).read_text())["table"] == table
    assert sorted(row["a"] for row in before_switch.collect()) == values
    # Appends go on into the new folder, read through the storage option the switch kept.
    _publish_append(spark, compacted, [100], "20261130T000000000000000Z")
    spark.sql(f"refresh table {table}")
    assert sorted(row["a"] for row in spark.table(table).collect()) == [*values, 99, 100]

    # The sweep a writer runs before releasing the lock: within the grace it keeps the folder.
    assert remove_expired_retired(isolated_settings) == []
    assert original.exists()
    # After the grace it deletes it, but never a folder a table points at, even a marked one (a switch that
    # failed after its old folder was marked).
    (compacted / MARKER).write_text(marker_text(table, datetime(2026, 1, 1, tzinfo=UTC)))
    monkeypatch.setenv(GRACE_ENV, "0")
    assert [_local(folder) for folder in remove_expired_retired(isolated_settings)] == [original]
    assert not original.exists() and compacted.exists()
    assert sorted(row["a"] for row in spark.table(table).collect()) == [*values, 99, 100]


def test_sealed_raw_blocks_are_compacted_and_ingest_goes_on(spark, isolated_settings, tmp_path, monkeypatch) -> None:
    from python_jobs.ingest import lineage as ingest

    # Blocks of 4 events and one event per ingest: each block gets a file per ingest.
    monkeypatch.setattr(ingest, "INGEST_BLOCK_EVENTS", 4)
    table = isolated_settings.table("raw", "lineage_events")
    paths = []
    for index in range(1, 13):
        paths.append(tmp_path / f"event-{index:02d}.ndjson")
        paths[-1].write_text(json.dumps(run_event(index)) + "\n")
        assert ingest.ingest_lineage(spark, isolated_settings, [paths[-1]]).accepted == 1
    files_per_block = {block: _block_files(spark, table, block) for block in range(4)}
    assert {block: len(files) for block, files in files_per_block.items()} == {0: 3, 1: 4, 2: 4, 3: 1}
    location = _local(_location(spark, table))
    # What a run that stopped after writing block 1's new folder (before switching to it) leaves.
    stray = location / f"_compacted-ingest_block=1{COMPACTED_MARK}{'0' * 16}"
    stray.mkdir()
    (stray / "part-0.parquet").write_bytes(b"not parquet")
    before = warehouse_fingerprint(spark, isolated_settings)

    planned = compact_warehouse(spark, isolated_settings, min_files=3, dry_run=True)
    # The key owners table (one small file per ingest that met new names) is compacted whole.
    keys_table = isolated_settings.table("raw", "lineage_entity_keys")
    key_files = len(spark.table(keys_table).inputFiles())
    sealed = [(f"{table} (ingest_block={block})", files) for block, files in ((0, 3), (1, 4), (2, 4))]
    sealed.append((keys_table, key_files))
    assert [(c.table, c.files_before) for c in planned] == sealed
    assert stray.exists()  # a dry run deletes nothing
    done = compact_warehouse(spark, isolated_settings, min_files=3)
    # Block 3 holds the highest ingest_seq: a later ingest may still add files to its folder.
    assert [(c.table, c.files_before, c.files_after) for c in done] == [(label, n, 1) for label, n in sealed]
    assert warehouse_fingerprint(spark, isolated_settings) == before
    for block in range(3):
        (compacted,) = _block_files(spark, table, block)
        assert f"/_compacted-ingest_block={block}{COMPACTED_MARK}" in compacted
        assert (location / f"ingest_block={block}" / MARKER).exists()  # retired, not deleted
    assert not stray.exists()
    assert _block_files(spark, table, 3) == files_per_block[3]

    # Ingest reads the compacted blocks for its duplicate check and appends above them as before.
    again = ingest.ingest_lineage(spark, isolated_settings, paths)
    assert (again.accepted, again.duplicates) == (0, 12)
    extra = tmp_path / "event-13.ndjson"
    extra.write_text(json.dumps(run_event(13)) + "\n")
    assert ingest.ingest_lineage(spark, isolated_settings, [extra]).accepted == 1
    assert spark.table(table).where("ingest_seq = 13 and ingest_block = 3").count() == 1
    assert len(_block_files(spark, table, 3)) == 2
    # Block 3 is still the highest, so the raw table has nothing to compact.
    assert [c.table for c in compact_warehouse(spark, isolated_settings, min_files=2) if c.table != keys_table] == []

    # Once their grace is over, the retired block folders go; the partitions' current folders stay.
    monkeypatch.setenv(GRACE_ENV, "0")
    assert compact_warehouse(spark, isolated_settings, min_files=1000) == []
    for block in range(3):
        assert not (location / f"ingest_block={block}").exists()
        assert len(_block_files(spark, table, block)) == 1
    assert spark.table(table).count() == 13


def _block_files(spark, table: str, block: int) -> list[str]:
    return sorted(spark.table(table).where(f"ingest_block = {block}").inputFiles())


def run_event(index: int) -> dict:
    return {
        "eventType": "START",
        "eventTime": f"2026-04-01T00:{index:02d}:00Z",
        "run": {"runId": f"00000000-0000-4000-8000-{index:012d}"},
        "job": {"namespace": "compaction", "name": f"job_{index}"},
        "producer": "https://example.com/tests",
    }

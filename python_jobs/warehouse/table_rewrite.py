"""Rewriting a stored table without some of its rows: what ``warehouse erase`` and ``warehouse retain`` share.

Two layouts, the two that hold raw input:

- ``raw.lineage_events``, one partition per ingest block: only the blocks that hold a removed or changed
  row are written again; a block left empty is dropped as a partition. A *sealed* block (below the highest)
  gets a new folder beside its own, named as compaction names its folders, and the partition is switched to
  it in one metastore update, so a reader sees all old rows or all new ones; the old folder is retired
  (``ops/retired_folders.py``) and deleted after the grace period. The *open* block (the highest) stays in
  its folder, since ingest moves new files into ``<table>/ingest_block=<n>`` by path: its new files are
  written to a staging folder, an intent file lists them and the old files, and then they are moved in and
  the old ones deleted. A run stopped after the intent finishes it (``finish_open_block``); one stopped
  before it leaves a staging folder that the next run deletes.
- a plain unpartitioned table (the quarantine, the entity key table): written whole into a folder beside
  its own and switched with ``set location``, as compaction does (its manifest tells compaction later that
  every old file was rewritten).

The rows are written in ``ingest_seq`` order where there is one, since the incremental models read the
raw table by ranges of it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from python_jobs.ingest.lineage import RAW_COMPRESSION, HadoopFiles
from python_jobs.ingest.lineage_contract import RAW_PARTITION_COLUMN
from python_jobs.ops import retired_folders
from python_jobs.ops.compaction import (
    MANIFEST,
    base_name,
    compacted_block_name,
    compacted_name,
    data_files,
    manifest_text,
    output_file_count,
    retire_folder,
    table_files,
    table_folder,
)

OPEN_BLOCK_INTENT = "_rewrite_intent.json"  # hidden from Spark's listing
OPEN_BLOCK_STAGING = "_rewrite-staging"


@dataclass(frozen=True)
class Rewritten:
    """One table's (or block's) rewrite: its files' bytes before and after."""

    bytes_before: int
    bytes_after: int

    @property
    def bytes_freed(self) -> int:
        return self.bytes_before - self.bytes_after


def _split(location: str) -> tuple[str, str]:
    parent, _, name = location.rstrip("/").rpartition("/")
    return parent, name


def _write_sorted(rows: DataFrame, target: str, files: int, order: Sequence[str], compression: str | None) -> None:
    ordered = rows.repartitionByRange(files, *order).sortWithinPartitions(*order) if order else rows.coalesce(files)
    writer = ordered.write.mode("overwrite").format("parquet")
    if compression:
        writer = writer.option("compression", compression)
    writer.save(target)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:16]


def partition_location(spark: SparkSession, hadoop: HadoopFiles, table: str, block: int) -> str:
    rows = spark.sql(f"describe formatted {table} partition ({RAW_PARTITION_COLUMN}={block})").collect()
    return hadoop.path_of_uri(next(row["data_type"] for row in rows if row["col_name"] == "Location"))


def blocks_of(spark: SparkSession, table: str) -> list[int]:
    return sorted(int(row[0].split("=", 1)[1]) for row in spark.sql(f"show partitions {table}").collect())


def _folder_bytes(hadoop: HadoopFiles, folder: str) -> tuple[list[str], int]:
    files = data_files(hadoop.children(folder))
    return [name for name, _ in files], sum(size for _, size in files)


def replace_block(
    spark: SparkSession, hadoop: HadoopFiles, table: str, block: int, rows: DataFrame, tag: str, is_open: bool
) -> Rewritten:
    """Makes ``rows`` (the raw columns without ``ingest_block``) the whole content of ``block``. ``tag``
    names the change (an erasure's key hash, a retention's cut-off), so two changes of the same files get
    different folders."""
    folder = partition_location(spark, hadoop, table, block)
    names, before = _folder_bytes(hadoop, folder)
    files = output_file_count(before)
    if is_open:
        # Stays registered and in its folder even when emptied: ingest moves files into it by path.
        return Rewritten(before, _replace_open_block(spark, hadoop, table, folder, names, rows, files))
    if rows.isEmpty():
        spark.sql(f"alter table {table} drop if exists partition ({RAW_PARTITION_COLUMN}={block})")
        retired_folders.retire(hadoop, folder, table)
        spark.sql(f"refresh table {table}")
        return Rewritten(before, 0)
    parent, _ = _split(folder)
    target = f"{parent}/{compacted_block_name(block, [*names, tag])}"
    _write_sorted(rows, target, files, ["ingest_seq"], RAW_COMPRESSION)
    hadoop.write_text(f"{target}/{MANIFEST}", manifest_text(_split(folder)[1], names))
    spark.sql(f"alter table {table} partition ({RAW_PARTITION_COLUMN}={block}) set location '{target}'")
    retired_folders.retire(hadoop, folder, table)
    spark.sql(f"refresh table {table}")
    return Rewritten(before, _folder_bytes(hadoop, target)[1])


def _replace_open_block(
    spark: SparkSession, hadoop: HadoopFiles, table: str, folder: str, old: list[str], rows: DataFrame, files: int
) -> int:
    staging = f"{folder}/{OPEN_BLOCK_STAGING}"
    hadoop.delete(staging)
    _write_sorted(rows, staging, files, ["ingest_seq"], RAW_COMPRESSION)
    new = [name for name, _ in data_files(hadoop.children(staging))]
    hadoop.write_text(f"{folder}/{OPEN_BLOCK_INTENT}", json.dumps({"old": old, "new": new}))
    finish_open_block(hadoop, folder)
    spark.sql(f"refresh table {table}")
    return _folder_bytes(hadoop, folder)[1]


def reopen_block(spark: SparkSession, hadoop: HadoopFiles, table: str, table_location: str, block: int) -> None:
    """Puts ``block`` back in its default folder ``<table>/ingest_block=<n>`` when it became the highest
    non-empty block (every row above it removed) while a compaction or rewrite had moved it: ingest
    moves the next events into the highest block's default folder by path. A retired folder of the same
    name (the one a compaction switched away from) is deleted first; a reader still listing it fails."""
    default = f"{table_location.rstrip('/')}/{RAW_PARTITION_COLUMN}={block}"
    current = partition_location(spark, hadoop, table, block)
    if current.rstrip("/") == default:
        return
    hadoop.delete(default)
    rows = spark.table(table).where(F.col(RAW_PARTITION_COLUMN) == block).drop(RAW_PARTITION_COLUMN)
    _write_sorted(rows, default, output_file_count(_folder_bytes(hadoop, current)[1]), ["ingest_seq"],
                  RAW_COMPRESSION)
    spark.sql(f"alter table {table} partition ({RAW_PARTITION_COLUMN}={block}) set location '{default}'")
    retired_folders.retire(hadoop, current, table)
    spark.sql(f"refresh table {table}")


def finish_open_block(hadoop: HadoopFiles, folder: str) -> bool:
    """Completes a recorded open-block rewrite: moves the staged files in, deletes the old ones, then the
    intent. Every step can be repeated. Without an intent, deletes a staging folder a stopped run left.
    Returns whether there was an intent."""
    intent_text = hadoop.read_text(f"{folder}/{OPEN_BLOCK_INTENT}")
    staging = f"{folder}/{OPEN_BLOCK_STAGING}"
    if intent_text is None:
        hadoop.delete(staging)
        return False
    intent = json.loads(intent_text)
    present = {name for name, is_folder, _ in hadoop.children(folder) if not is_folder}
    staged = {name for name, is_folder, _ in hadoop.children(staging) if not is_folder} if any(
        name == OPEN_BLOCK_STAGING for name, _, _ in hadoop.children(folder)) else set()
    for name in intent["new"]:
        if name in staged and name not in present:
            hadoop.move_into(f"{staging}/{name}", folder)
    new = set(intent["new"])
    for name in intent["old"]:
        if name not in new:
            hadoop.delete(f"{folder}/{name}")
    hadoop.delete(staging)
    hadoop.delete(f"{folder}/{OPEN_BLOCK_INTENT}")
    return True


def replace_table(spark: SparkSession, hadoop: HadoopFiles, table: str, rows: DataFrame, tag: str) -> Rewritten:
    """Makes ``rows`` the whole content of a plain unpartitioned Parquet table."""
    folder = table_folder(spark, hadoop, table)
    if folder is None or folder.provider != "parquet" or folder.partitioned or folder.bucketed:
        raise ValueError(f"{table} is not a plain unpartitioned Parquet table")
    files = table_files(hadoop.children, folder.location)
    names = [name for name, _ in files]
    before = sum(size for _, size in files)
    parent, name = _split(folder.location)
    target = f"{parent}/{compacted_name(base_name(name), [*names, tag])}"
    rows.cache()
    try:
        _write_sorted(rows, target, output_file_count(before), [], None)
    finally:
        rows.unpersist()
    hadoop.write_text(f"{target}/{MANIFEST}", manifest_text(name, names))
    spark.sql(f"alter table {table} set location '{target}'")
    retire_folder(hadoop, folder.location, target, set(names), table)
    spark.sql(f"refresh table {table}")
    return Rewritten(before, sum(size for _, size in table_files(hadoop.children, target)))


def table_bytes(spark: SparkSession, hadoop: HadoopFiles, table: str) -> int:
    folder = table_folder(spark, hadoop, table)
    if folder is None:
        return 0
    return sum(size for _, size in table_files(hadoop.children, folder.location)) if not folder.partitioned else \
        sum(_folder_bytes(hadoop, partition_location(spark, hadoop, table, b))[1] for b in blocks_of(spark, table))


def tag_of(*parts: str) -> str:
    return _digest(*parts)

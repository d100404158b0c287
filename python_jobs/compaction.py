"""``warehouse compact``: rewrites tables that appends have split into many small files.

Every incremental build appends at least one file to each table it adds rows to. A warehouse built every
ten minutes gains thousands of files per table in a month, and every scan lists them and opens their
footers, so builds would slow down with the number of past builds rather than with new input. Delta and
Iceberg tables have their own compaction (``OPTIMIZE``, ``rewrite_data_files``); plain Parquet tables in
the Hive metastore have none, so this module provides it.

A table is rewritten into a new folder beside its own (``<folder>__compacted-<digest of the old file
list>``), then pointed at it with ``alter table ... set location``: one metastore update, so the table
changes from all old files to all new ones at once and keeps its properties (the incremental models'
``lineage.input_through``), comments and column types. The old folder is deleted last. A run that stops
at any step leaves at most a folder that the table does not point at, and the next run deletes such
folders before it looks at the table.

A reader that listed the old files before the switch fails when they are deleted, so run it while no
ingest or build runs, like any maintenance job. Only managed, unpartitioned, unbucketed Parquet tables are
rewritten: ``raw.lineage_events`` is partitioned by ingest block, which already bounds its files per
partition, and the facet winner tables are bucketed by entity.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from python_jobs.ingest.lineage import HadoopFiles
from python_jobs.settings import LAYERS, Settings

COMPACTED_MARK = "__compacted-"
DEFAULT_MIN_FILES = 32
TARGET_FILE_BYTES = 128 * 1024 * 1024


@dataclass(frozen=True)
class TableFolder:
    """Where a table keeps its files and whether this module may rewrite them."""

    table: str
    location: str
    provider: str
    managed: bool
    partitioned: bool
    bucketed: bool

    @property
    def compactable(self) -> bool:
        """Plain files only: a bucketed table's file names carry bucket ids that a rewrite would lose."""
        return self.provider == "parquet" and self.managed and not self.partitioned and not self.bucketed


@dataclass(frozen=True)
class Compaction:
    table: str
    files_before: int
    files_after: int
    seconds: float


def output_file_count(total_bytes: int, target_file_bytes: int = TARGET_FILE_BYTES) -> int:
    return max(1, -(-total_bytes // target_file_bytes))


def data_files(entries: Iterable[tuple[str, bool, int]]) -> list[tuple[str, int]]:
    """The files Spark reads in a table folder: Spark skips names starting with ``_`` or ``.``."""
    return sorted((name, size) for name, is_folder, size in entries
                  if not is_folder and not name.startswith(("_", ".")))


def needs_compaction(files: Sequence[tuple[str, int]], min_files: int) -> bool:
    """At least ``min_files`` files, and more than a rewrite would give."""
    return len(files) >= max(min_files, 2) and len(files) > output_file_count(sum(size for _, size in files))


def compacted_name(base_name: str, file_names: Sequence[str]) -> str:
    """The new folder's name: deterministic for the same files, different for any other set."""
    digest = hashlib.sha256("\n".join(sorted(file_names)).encode("utf-8")).hexdigest()[:16]
    return f"{base_name}{COMPACTED_MARK}{digest}"


def base_name(folder_name: str) -> str:
    """The name of the folder the table had before its first compaction."""
    return folder_name.split(COMPACTED_MARK, 1)[0]


def stale_folders(current_name: str, sibling_folders: Iterable[str]) -> list[str]:
    """Folders beside a table's own that earlier compactions left: its original folder or a compacted one
    that the table no longer points at (or never did, when a run stopped before the switch)."""
    base = base_name(current_name)
    return sorted(name for name in sibling_folders
                  if name != current_name and (name == base or name.startswith(base + COMPACTED_MARK)))


def _parent_and_name(location: str) -> tuple[str, str]:
    parent, _, name = location.rstrip("/").rpartition("/")
    return parent, name


def table_folder(spark: SparkSession, hadoop: HadoopFiles, table: str) -> TableFolder | None:
    """None for a view."""
    details = {row["col_name"]: row["data_type"] for row in spark.sql(f"describe formatted {table}").collect()}
    if str(details.get("Type", "")).upper() == "VIEW" or not details.get("Location"):
        return None
    return TableFolder(
        table=table,
        location=hadoop.path_of_uri(details["Location"]),
        provider=str(details.get("Provider", "")).lower(),
        managed=str(details.get("Type", "")).upper() == "MANAGED",
        partitioned=any(c.isPartition for c in spark.catalog.listColumns(table)),
        bucketed=str(details.get("Num Buckets", "") or "").strip() not in ("", "-1", "0"),
    )


# The position of a row in the order it was appended: its file's write time, the file, the row in the file.
APPEND_ORDER = ("file_modification_time", "file_name", "row_index")


def in_append_order(rows: DataFrame, partitions: int) -> DataFrame:
    """The rows in the order they were appended, cut into ``partitions`` ranges. Incremental models read
    a table's newest rows by ``ingest_seq`` or ``build_seq``, which grow with the append order, and Parquet
    skips the files and row groups whose min/max lie outside the range; rows in any other order would
    spread every range over every file and make those reads scan the whole table."""
    keys = [F.col(f"_metadata.{name}").alias(f"__append_{name}") for name in APPEND_ORDER]
    ordered = rows.select("*", *keys).repartitionByRange(partitions, *[f"__append_{n}" for n in APPEND_ORDER])
    return ordered.sortWithinPartitions(*[f"__append_{n}" for n in APPEND_ORDER]).drop(
        *[f"__append_{n}" for n in APPEND_ORDER]
    )


def remove_stale_folders(hadoop: HadoopFiles, folder: TableFolder) -> list[str]:
    parent, name = _parent_and_name(folder.location)
    siblings = [entry_name for entry_name, is_folder, _ in hadoop.children(parent) if is_folder]
    stale = stale_folders(name, siblings)
    for stale_name in stale:
        hadoop.delete(f"{parent}/{stale_name}")
    return stale


def compact_table(
    spark: SparkSession, hadoop: HadoopFiles, folder: TableFolder, min_files: int = DEFAULT_MIN_FILES
) -> Compaction | None:
    """Rewrites the table when it holds at least ``min_files`` files; None when it is left as it is."""
    started = time.monotonic()
    remove_stale_folders(hadoop, folder)
    files = data_files(hadoop.children(folder.location))
    if not needs_compaction(files, min_files):
        return None
    outputs = output_file_count(sum(size for _, size in files))
    parent, name = _parent_and_name(folder.location)
    target = f"{parent}/{compacted_name(base_name(name), [file_name for file_name, _ in files])}"
    in_append_order(spark.table(folder.table), outputs).write.mode("overwrite").format("parquet").save(target)
    spark.sql(f"alter table {folder.table} set location '{target}'")
    spark.sql(f"refresh table {folder.table}")
    hadoop.delete(folder.location)
    return Compaction(folder.table, len(files), len(data_files(hadoop.children(target))), time.monotonic() - started)


def warehouse_tables(spark: SparkSession, settings: Settings) -> list[str]:
    existing = {row.namespace for row in spark.sql("show databases").collect()}
    tables: list[str] = []
    for layer in LAYERS:
        schema = settings.schema(layer)
        if schema in existing:
            tables += [f"{schema}.{row.tableName}" for row in spark.sql(f"show tables in {schema}").collect()
                       if not row.isTemporary]
    return sorted(tables)


def compact_warehouse(
    spark: SparkSession, settings: Settings, min_files: int = DEFAULT_MIN_FILES, dry_run: bool = False
) -> list[Compaction]:
    """Compacts every eligible table of the warehouse with at least ``min_files`` files. ``dry_run`` only
    reports them (``files_after`` is 0)."""
    hadoop = HadoopFiles(spark)
    done: list[Compaction] = []
    for table in warehouse_tables(spark, settings):
        folder = table_folder(spark, hadoop, table)
        if folder is None or not folder.compactable:
            continue
        if dry_run:
            files = data_files(hadoop.children(folder.location))
            if needs_compaction(files, min_files):
                done.append(Compaction(table, len(files), 0, 0.0))
            continue
        result = compact_table(spark, hadoop, folder, min_files)
        if result is not None:
            done.append(result)
    return done

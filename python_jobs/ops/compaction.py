"""``warehouse compact``: rewrites tables that appends have split into many small files.

Every incremental build appends at least one file to each table it adds rows to. A warehouse built every
ten minutes gains thousands of files per table in a month, and every scan lists them and opens their
footers, so builds would slow down with the number of past builds rather than with new input. Delta and
Iceberg tables have their own compaction (``OPTIMIZE``, ``rewrite_data_files``); plain Parquet tables in
the Hive metastore have none, so this module provides it.

A table's folder holds the files of its first build or last compaction at its root, and, for a table the
adapter appends to (storage option ``recursiveFileLookup=true``), one ``append-<stamp>`` subfolder per append,
published by one folder rename. This module lists what Spark reads there: the root's files and the files in
``append-*`` subfolders, skipping hidden names (``_``, ``.``) at every level as Spark does; a table whose folder
holds any other visible subfolder is left alone, since a rewrite could not tell whether Spark reads it.

A table is rewritten into a new folder beside its own (``<folder>__compacted-<digest of the listed files>``),
then pointed at it with ``alter table ... set location``: one metastore update, so the table changes from all
old files to all new ones at once and keeps its properties (the incremental models' ``lineage.input_through``),
storage options, comments and column types. The old folder is then *retired*, not deleted
(``ops/retired_folders.py``): a hidden marker dates it, and it is deleted once the grace period is over, so a
reader that listed the old files before the switch still reads them. A run that stops at any step leaves at
most a folder that the table does not point at: the next run retires the old folder of a switch it finds
unfinished, and deletes at once a new folder it never switched to.

The rewrite reads exactly the files it listed, and the new folder records them in a hidden manifest
(``_compacted_from.json``). An append that commits in the old folder while the rewrite runs (a writer outside
the writer lock; every writer of the project takes it, so none does) is therefore not in the new files: its
``append-*`` folder is moved whole into the new folder, by one rename (a file at the root, the way plain
inserts append, is moved by itself), before the old folder is retired, also by the next run when this one
stopped after the switch. So such an append is kept; a reader may miss its rows between the switch and the
move, and one that listed its files in the old folder fails to open them once moved.
Managed, unpartitioned, unbucketed Parquet tables are rewritten whole (the facet winner tables are bucketed by
entity, and bucket ids live in file names); ``raw.lineage_events`` is rewritten one sealed ingest block at a
time, each partition switched with ``alter table ... partition ... set location`` and its old folder retired
the same way. Before it compacts, a run deletes the warehouse's retired folders whose grace is over.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from python_jobs.ingest.lineage import (
    RAW_COMPRESSION,
    RAW_TABLE,
    HadoopFiles,
    highest_block,
    is_partitioned_by_block,
)
from python_jobs.ingest.lineage_contract import RAW_PARTITION_COLUMN
from python_jobs.ops import retired_folders
from python_jobs.settings import LAYERS, Settings

COMPACTED_MARK = "__compacted-"
MANIFEST = "_compacted_from.json"  # hidden from Spark's listing: a leading underscore
APPEND_PREFIX = "append-"  # a published append: one subfolder per append (the adapter's published_writes)
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


def is_hidden(name: str) -> bool:
    """Names Spark's file listing skips: a leading ``.``, a leading ``_`` (but ``_a=1``, a partition folder,
    is read), and files still being copied."""
    return name.startswith(".") or (name.startswith("_") and "=" not in name) or name.endswith("._COPYING_")


def data_files(entries: Iterable[tuple[str, bool, int]]) -> list[tuple[str, int]]:
    """The files Spark reads in one folder's listing ``(name, is_folder, bytes)``: not folders, not hidden."""
    return sorted((name, size) for name, is_folder, size in entries if not is_folder and not is_hidden(name))


def is_append_folder(name: str) -> bool:
    return name.startswith(APPEND_PREFIX)


def foreign_folders(entries: Iterable[tuple[str, bool, int]]) -> list[str]:
    """Visible subfolders of a table folder that are not appends: Spark may read them, this module does not."""
    return sorted(name for name, is_folder, _ in entries
                  if is_folder and not is_hidden(name) and not is_append_folder(name))


Listing = Callable[[str], list[tuple[str, bool, int]]]


def _files_below(children: Listing, folder: str, prefix: str) -> list[tuple[str, int]]:
    entries = children(folder)
    files = [(f"{prefix}{name}", size) for name, size in data_files(entries)]
    for name, is_folder, _ in entries:
        if is_folder and not is_hidden(name):
            files += _files_below(children, f"{folder}/{name}", f"{prefix}{name}/")
    return files


def table_files(
    children: Listing, folder: str, entries: Sequence[tuple[str, bool, int]] | None = None
) -> list[tuple[str, int]]:
    """The data files of a table folder, as paths relative to it: the root's files and every visible file
    in its ``append-*`` subfolders (at any depth). ``children`` lists a folder; ``entries`` is the root's
    listing when the caller has it."""
    entries = children(folder) if entries is None else entries
    files = data_files(entries)
    for name, is_folder, _ in entries:
        if is_folder and is_append_folder(name):
            files += _files_below(children, f"{folder}/{name}", f"{name}/")
    return sorted(files)


def late_entries(entries: Iterable[tuple[str, bool, int]], rewritten: set[str]) -> list[str]:
    """What of an old table folder a compaction did not rewrite: root files and whole ``append-*`` folders
    that hold none of the rewritten files (``rewritten``: paths relative to the folder)."""
    entries = list(entries)
    rewritten_folders = {path.split("/", 1)[0] for path in rewritten if "/" in path}
    files = [name for name, _ in data_files(entries) if name not in rewritten]
    folders = [name for name, is_folder, _ in entries
               if is_folder and is_append_folder(name) and name not in rewritten_folders]
    return sorted(files + folders)


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


def stale_action(name: str, original: str, retired: bool, replaced_by_current: bool) -> str:
    """What becomes of a folder the table (or partition) does not point at, beside its current one:

    - ``keep``: it is retired already; it is deleted when its grace is over;
    - ``retire``: the table read it once, as its ``original`` folder or as the folder the current one's
      manifest says it replaced (``replaced_by_current``), and a reader may still be reading it;
    - ``delete``: a new folder of a run that stopped before switching to it: no reader ever listed it.
    """
    if retired:
        return "keep"
    return "retire" if replaced_by_current or name == original else "delete"


def manifest_text(source_folder: str, file_names: Iterable[str]) -> str:
    """What a compacted folder records about its origin: the folder it replaced and the files it rewrote."""
    return json.dumps({"source": source_folder, "files": sorted(file_names)}, indent=1)


def rewritten_files(manifest: str | None, folder_name: str) -> set[str] | None:
    """The files of ``folder_name`` that the compaction recorded in ``manifest`` rewrote; None when the
    manifest is missing or about another folder (then that folder holds no row the table lacks)."""
    if manifest is None:
        return None
    recorded = json.loads(manifest)
    return set(recorded["files"]) if recorded.get("source") == folder_name else None


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


def _rewrite(rows: DataFrame, files: Sequence[tuple[str, int]], target: str, compression: str | None = None) -> None:
    writer = in_append_order(rows, output_file_count(sum(size for _, size in files))).write
    if compression:
        writer = writer.option("compression", compression)
    writer.mode("overwrite").format("parquet").save(target)


def _read_listed(spark: SparkSession, folder: TableFolder, files: Sequence[tuple[str, int]]) -> DataFrame:
    """The rows of exactly these files: Spark's own listing of the table, made later, could include a
    file appended since, which would then be both rewritten and kept as a late append."""
    schema = spark.table(folder.table).schema
    return spark.read.schema(schema).parquet(*[f"{folder.location}/{name}" for name, _ in files])


def move_late_appends(hadoop: HadoopFiles, old: str, current: str, rewritten: set[str]) -> int:
    """Moves into ``current`` what a compaction of ``old`` did not rewrite: appends that committed while it
    ran, each ``append-*`` folder by one rename. Returns how many entries it moved."""
    late = late_entries(hadoop.children(old), rewritten)
    for name in late:
        hadoop.move_into(f"{old}/{name}", current)
    return len(late)


def retire_folder(hadoop: HadoopFiles, old: str, current: str, rewritten: set[str], table: str) -> int:
    """Retires a folder the table no longer reads, after moving into ``current`` every append that the
    compaction did not rewrite. Returns how many entries it moved."""
    moved = move_late_appends(hadoop, old, current, rewritten)
    retired_folders.retire(hadoop, old, table)
    return moved


def remove_stale_folders(hadoop: HadoopFiles, folder: TableFolder) -> int:
    """Settles the folders that earlier runs left beside the table's own (``stale_action``): the folder a
    switched table used to read is retired, after its late appends are moved over as the current folder's
    manifest tells; new folders never switched to are deleted. Returns how many entries it moved into the
    table."""
    parent, name = _parent_and_name(folder.location)
    siblings = [entry_name for entry_name, is_folder, _ in hadoop.children(parent) if is_folder]
    manifest = hadoop.read_text(f"{folder.location}/{MANIFEST}")
    moved = 0
    for stale_name in stale_folders(name, siblings):
        stale = f"{parent}/{stale_name}"
        rewritten = rewritten_files(manifest, stale_name)
        retired = retired_folders.read_retired(hadoop, stale) is not None
        if rewritten is not None:
            late = move_late_appends(hadoop, stale, folder.location, rewritten)
            moved += late
            if late and retired:  # it changed: its grace starts over
                retired_folders.retire(hadoop, stale, folder.table)
        action = stale_action(stale_name, base_name(name), retired, rewritten is not None)
        if action == "retire":
            retired_folders.retire(hadoop, stale, folder.table)
        elif action == "delete":
            hadoop.delete(stale)
    return moved


def compact_table(
    spark: SparkSession, hadoop: HadoopFiles, folder: TableFolder, min_files: int = DEFAULT_MIN_FILES
) -> Compaction | None:
    """Rewrites the table when it holds at least ``min_files`` files; None when it is left as it is."""
    started = time.monotonic()
    if remove_stale_folders(hadoop, folder):
        spark.sql(f"refresh table {folder.table}")
    entries = hadoop.children(folder.location)
    files = table_files(hadoop.children, folder.location, entries)
    if foreign_folders(entries) or not needs_compaction(files, min_files):
        return None
    parent, name = _parent_and_name(folder.location)
    file_names = [file_name for file_name, _ in files]
    target = f"{parent}/{compacted_name(base_name(name), file_names)}"
    _rewrite(_read_listed(spark, folder, files), files, target)
    hadoop.write_text(f"{target}/{MANIFEST}", manifest_text(name, file_names))
    spark.sql(f"alter table {folder.table} set location '{target}'")
    retire_folder(hadoop, folder.location, target, set(file_names), folder.table)
    spark.sql(f"refresh table {folder.table}")
    files_after = len(table_files(hadoop.children, target))
    return Compaction(folder.table, len(files), files_after, time.monotonic() - started)


# ---------------------------------------------------------------------------------------------
# raw.lineage_events: one partition per ingest block. Ingest only ever adds rows to the highest
# non-empty block or above it (``ingest_seq`` grows), so every lower block is sealed: its files can
# be rewritten and its partition pointed at them without racing a later ingest, which moves its
# files into ``<table>/ingest_block=<n>`` by path. A block fed by many small ingests holds many
# files, and the duplicate check of every ingest opens the footers of all blocks.

COMPACTED_BLOCK_PREFIX = "_compacted-"  # hidden from Spark's listing of the table folder


def compacted_block_name(block: int, file_names: Sequence[str]) -> str:
    return f"{COMPACTED_BLOCK_PREFIX}{compacted_name(f'{RAW_PARTITION_COLUMN}={block}', file_names)}"


def block_of_folder(name: str) -> int | None:
    """The block whose rows a folder of the raw table holds: ``ingest_block=7`` (as ingest writes it) or
    ``_compacted-ingest_block=7__compacted-<digest>`` (as this module does); None for anything else."""
    found = re.fullmatch(
        rf"(?:{COMPACTED_BLOCK_PREFIX})?{RAW_PARTITION_COLUMN}=(\d+)((?:{COMPACTED_MARK}[0-9a-f]{{16}})?)", name
    )
    if not found or bool(found.group(2)) != name.startswith(COMPACTED_BLOCK_PREFIX):
        return None
    return int(found.group(1))


def _partition_location(spark: SparkSession, hadoop: HadoopFiles, table: str, block: int) -> str:
    rows = spark.sql(f"describe formatted {table} partition ({RAW_PARTITION_COLUMN}={block})").collect()
    # The partition's location comes first; the table's follows.
    return hadoop.path_of_uri(next(row["data_type"] for row in rows if row["col_name"] == "Location"))


def _live_block_folders(
    spark: SparkSession, hadoop: HadoopFiles, table: str, location: str, remove_stale: bool = True
) -> dict[int, str]:
    """The folder of each sealed block. The other folders of a block (the one a compaction switched away
    from, or the new one of a run that stopped before its switch) are settled as ``stale_action`` says,
    unless ``remove_stale`` is false."""
    highest = highest_block(spark, table)
    folders: dict[int, list[str]] = {}
    for name, is_folder, _ in hadoop.children(location):
        block = block_of_folder(name) if is_folder else None
        if block is not None and highest is not None and block < highest[0]:
            folders.setdefault(block, []).append(name)
    live: dict[int, str] = {}
    for block, names in sorted(folders.items()):
        if len(names) == 1:
            live[block] = names[0]
            continue
        _, current = _parent_and_name(_partition_location(spark, hadoop, table, block))
        live[block] = current
        if not remove_stale:
            continue
        manifest = hadoop.read_text(f"{location}/{current}/{MANIFEST}")
        for name in names:
            if name == current:
                continue
            retired = retired_folders.read_retired(hadoop, f"{location}/{name}") is not None
            action = stale_action(name, f"{RAW_PARTITION_COLUMN}={block}", retired,
                                  rewritten_files(manifest, name) is not None)
            if action == "retire":
                retired_folders.retire(hadoop, f"{location}/{name}", table)
            elif action == "delete":
                hadoop.delete(f"{location}/{name}")
    return live


def compact_raw_blocks(
    spark: SparkSession, hadoop: HadoopFiles, settings: Settings, min_files: int, dry_run: bool = False
) -> list[Compaction]:
    table = settings.table(*RAW_TABLE)
    if not spark.catalog.tableExists(table):
        return []
    folder = table_folder(spark, hadoop, table)
    if folder is None or folder.provider != "parquet" or not folder.managed or not is_partitioned_by_block(
        spark, table
    ):
        return []
    done: list[Compaction] = []
    for block, name in _live_block_folders(spark, hadoop, table, folder.location, not dry_run).items():
        started = time.monotonic()
        block_folder = f"{folder.location}/{name}"
        files = data_files(hadoop.children(block_folder))
        if not needs_compaction(files, min_files):
            continue
        label = f"{table} ({RAW_PARTITION_COLUMN}={block})"
        if dry_run:
            done.append(Compaction(label, len(files), 0, 0.0))
            continue
        file_names = [file_name for file_name, _ in files]
        target = f"{folder.location}/{compacted_block_name(block, file_names)}"
        rows = spark.table(table).where(F.col(RAW_PARTITION_COLUMN) == block).drop(RAW_PARTITION_COLUMN)
        _rewrite(rows, files, target, RAW_COMPRESSION)
        hadoop.write_text(f"{target}/{MANIFEST}", manifest_text(name, file_names))
        spark.sql(f"alter table {table} partition ({RAW_PARTITION_COLUMN}={block}) set location '{target}'")
        spark.sql(f"refresh table {table}")
        # A sealed block gains no files: nothing to move over.
        retired_folders.retire(hadoop, block_folder, table)
        done.append(Compaction(label, len(files), len(data_files(hadoop.children(target))), time.monotonic() - started))
    return done


# ---------------------------------------------------------------------------------------------
# The warehouse


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
    """Deletes the retired folders whose grace is over, then compacts every eligible table of the warehouse
    with at least ``min_files`` files. ``dry_run`` only reports them (``files_after`` is 0) and deletes
    nothing."""
    hadoop = HadoopFiles(spark)
    if not dry_run:
        retired_folders.sweep(spark, settings, hadoop)
    done = compact_raw_blocks(spark, hadoop, settings, min_files, dry_run)
    for table in warehouse_tables(spark, settings):
        folder = table_folder(spark, hadoop, table)
        if folder is None or not folder.compactable:
            continue
        if dry_run:
            entries = hadoop.children(folder.location)
            files = table_files(hadoop.children, folder.location, entries)
            if not foreign_folders(entries) and needs_compaction(files, min_files):
                done.append(Compaction(table, len(files), 0, 0.0))
            continue
        result = compact_table(spark, hadoop, folder, min_files)
        if result is not None:
            done.append(result)
    return done

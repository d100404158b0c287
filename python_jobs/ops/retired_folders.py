"""Retired folders: folders a table (or a partition) stopped reading, kept for a grace period, then deleted.

A table moves to a new folder in one metastore update (``alter table ... set location``): compaction does so
(``ops/compaction.py``), and so do the full rebuilds of Python table models (``<table>__gen-<stamp>``, written
by the adapter). A reader that listed the old folder's files before the switch (a query of the SQL endpoint, a
DataFrame, another process on a shared metastore) opens them afterwards, so the old folder is not deleted at
once: it is *retired*. ``retire`` writes a marker into it, ``_retired_at`` (hidden from Spark's listing by its
leading underscore), holding JSON::

    {"table": "lineage.jobs", "retired_at": "2026-11-26T23:21:00.123456Z"}

(any ISO 8601 time with a zone, e.g. ``+00:00``, reads the same). ``sweep`` deletes retired folders whose marker
is older than the grace, 15 minutes unless ``LINEAGE_RETIRED_GRACE_SECONDS`` says otherwise. A reader that
takes longer than the grace between listing a table and opening its files can still fail; the grace is what
"a reader in flight" means (a session's cached listing lives ``spark.sql.metadataCacheTTLSeconds``, less).

A folder may be marked before the switch (the adapter does so): ``sweep`` never deletes a folder that a table
or a partition of the warehouse points at, nor one holding such a location (the adapter's append staging
tables aside, see ``STAGING_TABLE_SUFFIX``), so a switch that failed after the marker leaves the table
intact. Retiring a folder again (a later switch away from it) rewrites the marker, and the grace starts over.
A marker that cannot be read (a writer stopped while writing it) is rewritten with the current time, so the
folder goes one grace later rather than never.

Retired folders are looked for where tables keep their folders: beside a table's folder in a database folder of
the warehouse (what a table used to read) and, inside a table's folder, partition folders (names with ``=``:
the raw table's sealed blocks). The metastore is asked only when a retired folder is due: every table's
location, one ``show table extended`` per database, and the partitions of a table whose folder holds one.

Who sweeps: compaction, before it compacts, and every writer before it releases the writer lock, when it has a
Spark session (``ops/leftovers.py``), so folders retired by plain ``dbt build`` runs do not pile up.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from pyspark import SparkContext
from pyspark.sql import SparkSession

from python_jobs.ingest.lineage import HadoopFiles
from python_jobs.settings import LAYERS, Settings

MARKER = "_retired_at"
GRACE_ENV = "LINEAGE_RETIRED_GRACE_SECONDS"
DEFAULT_GRACE = timedelta(minutes=15)
UNKNOWN_TABLE = "unknown"
# The adapter's staging tables of published appends (``<table>__staged_append``, published_writes.py) point at
# ``<table folder>/_staged_append``, hidden scratch that nothing reads as a table; the adapter points them at
# the current folder on the next append. They do not keep a retired folder alive.
STAGING_TABLE_SUFFIX = "__staged_append"


class Folders(Protocol):
    """The file operations retirement needs; ``HadoopFiles`` (``ingest/lineage.py``) is one."""

    def children(self, folder: str) -> list[tuple[str, bool, int]]: ...

    def read_text(self, file: str) -> str | None: ...

    def write_text(self, file: str, text: str) -> None: ...

    def delete(self, folder: str) -> None: ...


@dataclass(frozen=True)
class Retired:
    """A retired folder; ``retired_at`` is None when its marker cannot be read."""

    folder: str
    table: str
    retired_at: datetime | None


def grace() -> timedelta:
    configured = os.environ.get(GRACE_ENV, "").strip()
    return timedelta(seconds=float(configured)) if configured else DEFAULT_GRACE


def utc_now() -> datetime:
    return datetime.now(UTC)


def marker_text(table: str, retired_at: datetime) -> str:
    stamp = retired_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return json.dumps({"table": table, "retired_at": stamp})


def parse_marker(folder: str, text: str) -> Retired:
    """The marker's content; ``retired_at`` None when it is not a complete marker."""
    try:
        recorded = json.loads(text)
        retired_at = datetime.fromisoformat(str(recorded["retired_at"]).replace("Z", "+00:00"))
        table = str(recorded.get("table", UNKNOWN_TABLE))
    except (ValueError, TypeError, KeyError, AttributeError):
        return Retired(folder, UNKNOWN_TABLE, None)
    if retired_at.tzinfo is None:
        retired_at = retired_at.replace(tzinfo=UTC)
    return Retired(folder, table, retired_at)


def _same(location: str) -> str:
    return location.rstrip("/")


def holds_a_current_location(folder: str, current: Iterable[str]) -> bool:
    """Whether deleting ``folder`` would delete a current location: it is one, or one lies inside it."""
    folder = _same(folder)
    return any(location == folder or location.startswith(folder + "/") for location in map(_same, current))


def due(retired: Iterable[Retired], now: datetime, grace_period: timedelta) -> list[Retired]:
    """The retired folders whose grace is over at ``now``."""
    over = [entry for entry in retired if entry.retired_at is not None and now - entry.retired_at >= grace_period]
    return sorted(over, key=lambda entry: entry.folder)


def expired(
    retired: Iterable[Retired], now: datetime, grace_period: timedelta, current: Collection[str]
) -> list[Retired]:
    """The retired folders to delete at ``now``: due, and neither a current location nor holding one
    (``current``: the folders the tables and partitions point at)."""
    return [entry for entry in due(retired, now, grace_period) if not holds_a_current_location(entry.folder, current)]


def is_partition_folder(name: str) -> bool:
    """A folder inside a table's folder that may hold one partition: ``ingest_block=3``, or the raw table's
    ``_compacted-ingest_block=3__compacted-<digest>``. ``append-*`` folders never do."""
    return "=" in name


def information_field(information: str, field: str) -> str | None:
    """A field of ``show table extended``'s ``information`` text (``Location``, ``Partition Columns``...)."""
    prefix = f"{field}: "
    return next((line[len(prefix):].strip() for line in information.splitlines() if line.startswith(prefix)), None)


# ---------------------------------------------------------------------------------------------
# Effects


def retire(files: Folders, folder: str, table: str, now: datetime | None = None) -> None:
    """Marks ``folder`` retired, or again (the grace starts over)."""
    files.write_text(f"{_same(folder)}/{MARKER}", marker_text(table, now or utc_now()))


def read_retired(files: Folders, folder: str) -> Retired | None:
    """The folder's marker; None when it is not retired."""
    text = files.read_text(f"{_same(folder)}/{MARKER}")
    return None if text is None else parse_marker(_same(folder), text)


def find_retired(files: Folders, database_folders: Iterable[str]) -> list[Retired]:
    """Retired folders where tables keep folders: beside table folders in these database folders, and
    partition folders inside the table folders. One listing per database and per folder in it."""
    found: list[Retired] = []
    for database in sorted({_same(folder) for folder in database_folders}):
        for name, is_folder, _ in files.children(database):
            if not is_folder:
                continue
            table_folder = f"{database}/{name}"
            entries = files.children(table_folder)
            candidates = [table_folder] if any(entry == MARKER and not sub for entry, sub, _ in entries) else []
            candidates += [f"{table_folder}/{entry}" for entry, sub, _ in entries if sub and is_partition_folder(entry)]
            found += [retired for retired in (read_retired(files, folder) for folder in candidates) if retired]
    return found


def remove_expired(
    files: Folders, retired: Sequence[Retired], current: Collection[str], now: datetime | None = None,
    grace_period: timedelta | None = None,
) -> list[str]:
    """Deletes the retired folders whose grace is over and that no table or partition points at (``current``);
    re-marks the ones whose marker cannot be read. Returns the deleted folders."""
    now = now or utc_now()
    for entry in retired:
        if entry.retired_at is None:
            retire(files, entry.folder, entry.table, now)
    removed = []
    for entry in expired(retired, now, grace() if grace_period is None else grace_period, current):
        files.delete(entry.folder)
        removed.append(entry.folder)
    return removed


# ---------------------------------------------------------------------------------------------
# The warehouse


def active_session() -> SparkSession | None:
    """This process's Spark session if it runs one; never starts one."""
    if SparkContext._active_spark_context is None:
        return None
    return SparkSession.builder.getOrCreate()


def _databases(spark: SparkSession, settings: Settings) -> list[str]:
    existing = {row.namespace for row in spark.sql("show databases").collect()}
    return [settings.schema(layer) for layer in LAYERS if settings.schema(layer) in existing]


def database_folder(spark: SparkSession, hadoop: HadoopFiles, database: str) -> str:
    rows = spark.sql(f"describe database {database}").collect()
    location = next(row[1] for row in rows if str(row[0]).strip().lower() == "location")
    return hadoop.path_of_uri(location)


def table_locations(spark: SparkSession, hadoop: HadoopFiles, databases: Iterable[str]) -> dict[str, str]:
    """Each table's folder (views have none) -> the table; one metastore listing per database."""
    found = {}
    for database in databases:
        for row in spark.sql(f"show table extended in {database} like '*'").collect():
            location = information_field(row["information"], "Location")
            if location and not row["isTemporary"]:
                found[hadoop.path_of_uri(location)] = f"{database}.{row['tableName']}"
    return found


def partition_locations(spark: SparkSession, hadoop: HadoopFiles, table: str) -> set[str]:
    """The folders of every partition of ``table``: one metastore call (Spark's SQL has no statement that
    lists partitions with their locations)."""
    database, name = table.split(".", 1)
    catalog = spark._jsparkSession.sessionState().catalog().externalCatalog()
    partitions = catalog.listPartitions(database, name, spark._jvm.scala.Option.empty())
    return {hadoop.path_of_uri(partitions.apply(i).location().toString()) for i in range(partitions.size())}


def sweep(
    spark: SparkSession, settings: Settings, hadoop: HadoopFiles | None = None, now: datetime | None = None
) -> list[str]:
    """Deletes the warehouse's retired folders whose grace is over and that nothing points at; returns them."""
    hadoop = hadoop or HadoopFiles(spark)
    now = now or utc_now()
    databases = _databases(spark, settings)
    found = find_retired(hadoop, [database_folder(spark, hadoop, database) for database in databases])
    if not due(found, now, grace()) and all(entry.retired_at is not None for entry in found):
        return []
    tables = {location: table for location, table in table_locations(spark, hadoop, databases).items()
              if not table.endswith(STAGING_TABLE_SUFFIX)}
    current = set(tables)
    owners = {tables[parent] for parent in (entry.folder.rpartition("/")[0] for entry in due(found, now, grace()))
              if parent in tables}
    for owner in sorted(owners):
        if any(column.isPartition for column in spark.catalog.listColumns(owner)):
            current |= partition_locations(spark, hadoop, owner)
    return remove_expired(hadoop, found, current, now)

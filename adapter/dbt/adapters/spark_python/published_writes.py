"""Writes that a reader sees whole or not at all: published appends and table-data switches.

A reader (the SQL endpoint in the writer's process, another process on a shared metastore) lists a table's
files when it plans a query. Spark's own writes are not atomic for it: an ``insert into`` moves each task's
files into the table folder one by one at job commit, and a Parquet table rebuilt with ``saveAsTable`` is
dropped and created again. So the adapter writes this way instead (Parquet, unpartitioned tables):

* **Published append.** The table carries the storage option ``recursiveFileLookup=true``, so Spark reads
  files in its subfolders too. New rows are inserted into ``<table folder>/_staged_append`` through an
  external staging table ``<table>__staged_append`` (same columns and bucketing; Spark's listing skips
  folders whose name starts with ``_``), then the folder is renamed to ``append-<UTC stamp>``: one rename,
  atomic on POSIX file systems and HDFS, so a reader lists all the new files or none of them.
* **Table-data switch.** A table model (Python or SQL) writes its new data into a folder beside the table's,
  ``<table folder>__gen-<UTC stamp>``, and points the table at it with ``alter table ... set location``: one
  metastore operation. The old folder is *retired*, not deleted: a hidden marker file (``RETIRED_MARKER``)
  records when, and the warehouse's cleanup deletes it after a grace period, so a query that listed its
  files before the switch still finds them.

A partitioned table, another file format, or a connection without a local Spark session (``thrift``)
writes the plain way; the callers fall back when ``append_staging`` answers None.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

RECURSIVE_OPTION = "recursiveFileLookup"
STAGED_FOLDER = "_staged_append"
STAGING_SUFFIX = "__staged_append"
APPEND_PREFIX = "append-"
GENERATION_MARK = "__gen-"
# A hidden file in a folder no table points at any more: when it was retired, and by which table.
RETIRED_MARKER = "_retired_at"
PUBLISHED_PROVIDERS = frozenset({"parquet"})

_FIELD_PREFIXES = {
    "location": "Location: ",
    "provider": "Provider: ",
    "storage": "Storage Properties: [",
    "partitions": "Partition Columns: [",
    "buckets": "Num Buckets: ",
    "bucket_columns": "Bucket Columns: [",
    "sort_columns": "Sort Columns: [",
}


@dataclass(frozen=True)
class TableFacts:
    """What ``show table extended`` says about a table that decides how it is written."""

    location: str
    provider: str
    storage_options: dict[str, str]
    partition_columns: str
    bucketing: str
    schema_tree: str

    @property
    def publishes_appends(self) -> bool:
        return self.provider.lower() in PUBLISHED_PROVIDERS and not self.partition_columns and bool(self.location)

    @property
    def bucketed(self) -> bool:
        return bool(self.bucketing.strip("|"))

    @property
    def reads_subfolders(self) -> bool:
        return self.storage_options.get(RECURSIVE_OPTION, "").lower() == "true"


def table_facts(information: str) -> TableFacts:
    """Parses the ``Information`` text of ``show table extended`` (one table)."""
    fields: dict[str, str] = {}
    tree: list[str] = []
    for line in information.splitlines():
        if line.startswith(" |-- ") or line.startswith(" |    "):
            tree.append(line.rstrip())
            continue
        for key, prefix in _FIELD_PREFIXES.items():
            if line.startswith(prefix) and key not in fields:
                value = line[len(prefix):].strip()
                fields[key] = value[:-1] if prefix.endswith("[") and value.endswith("]") else value
    return TableFacts(
        location=fields.get("location", ""),
        provider=fields.get("provider", ""),
        storage_options=_options(fields.get("storage", "")),
        partition_columns=fields.get("partitions", ""),
        bucketing="|".join(fields.get(key, "") for key in ("buckets", "bucket_columns", "sort_columns")),
        schema_tree="\n".join(tree),
    )


def _options(text: str) -> dict[str, str]:
    options = {}
    for entry in text.split(", ") if text else []:
        name, separator, value = entry.partition("=")
        if separator:
            options[name] = value
    return options


def stamp(now: datetime | None = None) -> str:
    """A folder-name stamp that sorts in time order: ``20261126T232100123456Z``."""
    return (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S%fZ")


def staged_folder(location: str) -> str:
    return f"{location.rstrip('/')}/{STAGED_FOLDER}"


def append_folder(location: str, when: datetime | None = None) -> str:
    return f"{location.rstrip('/')}/{APPEND_PREFIX}{stamp(when)}"


def generation_folder(location: str, when: datetime | None = None) -> str:
    """A new data folder beside ``location``: the base name (before any earlier generation mark) plus a stamp."""
    parent, _, name = location.rstrip("/").rpartition("/")
    return f"{parent}/{name.split(GENERATION_MARK, 1)[0]}{GENERATION_MARK}{stamp(when)}"


def retired_marker_text(table: str, when: datetime | None = None) -> str:
    return json.dumps({"table": table, "retired_at": (when or datetime.now(UTC)).isoformat()})


class HadoopFolders:
    """The few file-system calls these writes need, through the JVM's Hadoop client (any scheme Spark reads)."""

    def __init__(self, spark: Any) -> None:
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _path(self, path: str) -> tuple[Any, Any]:
        hadoop_path = self._jvm.org.apache.hadoop.fs.Path(path)
        return hadoop_path, hadoop_path.getFileSystem(self._conf)

    def visible_files(self, folder: str) -> int:
        """Data files directly in ``folder`` (names that Spark's listing does not hide), 0 when it is absent."""
        path, fs = self._path(folder)
        if not fs.exists(path):
            return 0
        return sum(1 for status in fs.listStatus(path)
                   if status.isFile() and not status.getPath().getName().startswith(("_", ".")))

    def rename(self, source: str, target: str) -> None:
        source_path, fs = self._path(source)
        target_path, _ = self._path(target)
        if fs.exists(target_path) or not fs.rename(source_path, target_path):
            raise OSError(f"could not rename {source} to {target}")

    def delete(self, folder: str) -> None:
        path, fs = self._path(folder)
        fs.delete(path, True)

    def exists(self, path: str) -> bool:
        hadoop_path, fs = self._path(path)
        return bool(fs.exists(hadoop_path))

    def write_text(self, path: str, text: str) -> None:
        hadoop_path, fs = self._path(path)
        stream = fs.create(hadoop_path, True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()


def describe(spark: Any, table: str) -> TableFacts | None:
    """The facts of ``schema.table`` asked from the metastore now, or None when it does not exist."""
    schema, _, name = table.rpartition(".")
    rows = spark.sql(f"show table extended in {schema} like '{name}'").collect() if schema else []
    return table_facts(str(rows[0]["information"])) if rows else None


def retire(folders: HadoopFolders, folder: str, table: str) -> None:
    folders.write_text(f"{folder.rstrip('/')}/{RETIRED_MARKER}", retired_marker_text(table))


def default_folder(spark: Any, table: str) -> str:
    """Where Spark puts a managed table of that name: its database's folder and the name in lower case."""
    schema, _, name = table.rpartition(".")
    database = spark.catalog.getDatabase(schema) if schema else spark.catalog.getDatabase(
        spark.catalog.currentDatabase())
    return f"{str(database.locationUri).rstrip('/')}/{name.lower()}"


def clear_retired_default_folder(spark: Any, table: str) -> bool:
    """Deletes a retired folder standing at the table's default location, when the table is not there.

    A table switched once (compaction, a data switch) leaves its first folder retired for a grace period.
    When the table is then dropped and created again (a full refresh, changed columns), Spark creates it at
    that default location and refuses a folder that exists. Once the table is dropped, nobody reads those
    files through it any more. Returns whether a folder was deleted."""
    folder = default_folder(spark, table)
    folders = HadoopFolders(spark)
    # While the table exists, a reader may still be reading the files its last switch retired.
    if not folders.exists(f"{folder}/{RETIRED_MARKER}") or describe(spark, table) is not None:
        return False
    folders.delete(folder)
    return True


def _columns(schema: Any) -> list[tuple[str, str]]:
    """Names and types; nullability left out (the metastore makes every column nullable)."""
    return [(field.name.lower(), field.dataType.simpleString()) for field in schema.fields]


def switch_table_data(spark: Any, frame: Any, table: str, facts: TableFacts) -> None:
    """Writes ``frame`` into a new folder beside the table's and points the table at it."""
    folders = HadoopFolders(spark)
    target = generation_folder(facts.location)
    frame.write.format("parquet").mode("errorifexists").save(target)
    # Marked before the switch: cleanup never deletes a table's current folder, so a failed switch is harmless.
    retire(folders, facts.location, table)
    spark.sql(f"alter table {table} set location '{target}'")
    spark.sql(f"refresh table {table}")


def switchable(spark: Any, facts: TableFacts | None, table: str, frame: Any) -> bool:
    """Whether the table can take ``frame`` as its new data in a switch: it exists, unpartitioned and
    unbucketed Parquet (the new files are written without the table's layout), with the same columns."""
    return (facts is not None and facts.publishes_appends and not facts.bucketed
            and _columns(spark.table(table).schema) == _columns(frame.schema))


def replace_table_data(spark: Any, frame: Any, table: str, file_format: str, partition_by: list[str] | None) -> None:
    """A Python table model's write: a data switch when the table can take one, else Spark's overwrite (the
    first build, where Spark writes the data before it creates the table, or a schema change, where readers
    may briefly find the table missing)."""
    facts = describe(spark, table)
    if not partition_by and switchable(spark, facts, table, frame):
        switch_table_data(spark, frame, table, facts)  # type: ignore[arg-type]
        return
    writer = frame.write.format(file_format)
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    if file_format in ("delta", "iceberg"):
        writer = writer.option("overwriteSchema", "true")
    elif facts is not None:
        # Parquet's overwrite drops and creates the table: drop first, so a retired folder at the
        # default location can be cleared before the create.
        spark.sql(f"drop table {table}")
    clear_retired_default_folder(spark, table)
    writer.mode("overwrite").saveAsTable(table)


def switch_to_query(spark: Any, table: str, sql: str) -> bool:
    """A SQL table model's rebuild as a data switch; False (nothing done) when the table must be dropped
    and created instead: it does not exist, cannot take a switch, or the query's columns differ."""
    facts = describe(spark, table)
    if facts is None or not facts.publishes_appends or facts.bucketed:
        return False
    frame = spark.sql(sql)
    if not switchable(spark, facts, table, frame):
        return False
    switch_table_data(spark, frame, table, facts)
    return True

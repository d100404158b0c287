"""Whether the warehouse changed since a snapshot was loaded: a listing of the files of the layers it reads.

Every write to a table adds, replaces or removes files under its schema's folder (Spark never writes a file
again under the same name), so a refresh that finds the same files, with the same sizes and modification
times, as the previous snapshot found would load the same snapshot again: it keeps that one. Listing the
folders costs milliseconds (about 30 ms for the 1,532 files of the 1M-event bench warehouse), where loading
costs seconds that grow with history; an idle serve loop refreshes after every round.

A write also changes the metastore, and not always at the same instant as the files: Spark registers the
partitions of an insert after it commits the files. A listing taken in that gap would match every later one
while the snapshot loaded after it misses the new partition. So a listing is trusted only once it is
settled: its newest file was at least ``SETTLE_SECONDS`` old when it was taken. The refresh right after a
write therefore loads once more; the later ones keep the snapshot. A snapshot loaded before its tables
existed has no listing and is never kept (a table is registered after its folder is written).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

from pyspark.sql import SparkSession

from python_jobs.settings import Settings

# The layers the snapshot reads: the raw events, the staging revisions and views, the lineage core.
SNAPSHOT_LAYERS = ("raw", "staging", "lineage")
# Far longer than the gap between a write's file commit and its metastore update (milliseconds), and shorter
# than a serve loop's usual round.
SETTLE_SECONDS = 30.0

FileEntry = tuple[str, int, int]  # path, bytes, modified (milliseconds since the epoch)


@dataclass(frozen=True)
class WarehouseListing:
    """The files under the layers' folders and when they were listed (seconds since the epoch)."""

    files: frozenset[FileEntry]
    listed_at: float

    def settled(self, settle_seconds: float = SETTLE_SECONDS) -> bool:
        """Whether the newest file was at least ``settle_seconds`` old when the folders were listed."""
        newest = max((modified for _, _, modified in self.files), default=0) / 1000
        return self.listed_at - newest >= settle_seconds

    def unchanged_since(self, earlier: WarehouseListing | None, settle_seconds: float = SETTLE_SECONDS) -> bool:
        """Whether a snapshot loaded after ``earlier`` was taken is still what the warehouse holds now."""
        return earlier is not None and earlier.settled(settle_seconds) and earlier.files == self.files


def list_warehouse(spark: SparkSession, settings: Settings, layers: Iterable[str] = SNAPSHOT_LAYERS,
                   ) -> WarehouseListing:
    """Every file under the folders of the layers' schemas that exist."""
    listed_at = time.time()
    files: set[FileEntry] = set()
    for layer in layers:
        schema = settings.schema(layer)
        if spark.catalog.databaseExists(schema):
            files.update(_files_under(spark, spark.catalog.getDatabase(schema).locationUri))
    return WarehouseListing(frozenset(files), listed_at)


def _files_under(spark: SparkSession, location: str) -> Iterator[FileEntry]:
    parsed = urlparse(location)
    if parsed.scheme in ("", "file"):
        yield from _local_files(unquote(parsed.path))
    else:
        yield from _hadoop_files(spark, location)


def _local_files(folder: str) -> Iterator[FileEntry]:
    # os.walk: one Python call per folder rather than a JVM round trip per file.
    for parent, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(parent, name)
            try:
                status = os.stat(path)
            except FileNotFoundError:  # removed while listed: the next listing differs anyway
                continue
            yield path, status.st_size, status.st_mtime_ns // 1_000_000


def _hadoop_files(spark: SparkSession, location: str) -> Iterator[FileEntry]:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(location)
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not fs.exists(path):
        return
    statuses = fs.listFiles(path, True)
    while statuses.hasNext():
        status = statuses.next()
        yield str(status.getPath().toString()), int(status.getLen()), int(status.getModificationTime())

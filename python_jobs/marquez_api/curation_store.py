"""The log of the API's writes in the warehouse: ``raw.marquez_api_writes`` (Parquet, in the metastore).

Its columns are the dbt source in models/staging/_api_write_sources.yml. No model builds it, so
builds and ``--full-refresh`` leave it alone. One append per write, made durable before the API
answers: Spark commits the file, then on a local warehouse the new files and their folder are
fsynced (Hadoop's local file system never calls fsync).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote, urlparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from python_jobs.contracts import API_WRITE_SOURCES, source_table
from python_jobs.marquez_api.curation import CurationState, CurationWrite, Deletable, earliest_delete, fold
from python_jobs.settings import Settings
from python_jobs.spark import ensure_schemas

WRITES_TABLE = ("raw", "marquez_api_writes")
WRITES_SCHEMA = source_table(API_WRITE_SOURCES, "api_writes_raw", "marquez_api_writes").schema


def writes_table(settings: Settings) -> str:
    return settings.table(*WRITES_TABLE)


def read_state(spark: SparkSession, settings: Settings) -> CurationState:
    """The fold of the whole log; empty before the first write."""
    table = writes_table(settings)
    if not spark.catalog.tableExists(table):
        return CurationState()
    rows = spark.table(table).orderBy("write_seq").collect()
    return fold(CurationWrite(**{**row.asDict(), "written_at": _aware(row.written_at)}) for row in rows)


def append_write(spark: SparkSession, settings: Settings, write: CurationWrite) -> None:
    """Appends one row; returns once it is committed (and fsynced on a local warehouse)."""
    table = writes_table(settings)
    if not spark.catalog.tableExists(table):
        ensure_schemas(spark, settings, (WRITES_TABLE[0],))
        spark.createDataFrame([], WRITES_SCHEMA).write.format("parquet").saveAsTable(table)
    row = {**asdict(write), "written_at": write.written_at.astimezone(UTC).replace(tzinfo=None)}
    started = time.time()
    spark.createDataFrame([row], WRITES_SCHEMA).coalesce(1).write.insertInto(table)
    _fsync_local_table(spark, table, started)


def last_seen(spark: SparkSession, settings: Settings, state: CurationState) -> dict[Deletable, datetime]:
    """Per dataset, job and namespace of a deleted entity: the latest event time naming it, among
    the events after the earliest delete (none when nothing was deleted: no scan then)."""
    since = earliest_delete(state)
    raw = settings.table("raw", "lineage_events")
    if since is None or not spark.catalog.tableExists(raw):
        return {}
    namespaces = sorted({namespace for _, namespace, _ in state.deleted_at})
    recent = spark.table(raw).where(F.col("event_time") > F.lit(since.astimezone(UTC).replace(tzinfo=None)))
    named = _named_entities(recent).where(F.col("namespace").isin(namespaces))
    seen: dict[Deletable, datetime] = {}
    for row in named.groupBy("kind", "namespace", "name").agg(F.max("event_time").alias("seen")).collect():
        seen[(row.kind, row.namespace, row.name)] = _aware(row.seen)
    for (kind, namespace, _), moment in list(seen.items()):
        if kind != "namespace":
            key = ("namespace", namespace, "")
            seen[key] = max(seen.get(key, moment), moment)
    return seen


def _named_entities(events: DataFrame) -> DataFrame:
    """(kind, namespace, name, event_time) of each job and dataset an event names."""
    jobs = events.where(F.col("job_name").isNotNull()).select(
        F.lit("job").alias("kind"), F.col("job_namespace").alias("namespace"), F.col("job_name").alias("name"),
        "event_time")
    parts = [jobs]
    for column in ("inputs", "outputs"):
        parts.append(events.select(F.explode(column).alias("d"), "event_time").select(
            F.lit("dataset").alias("kind"), F.col("d.namespace").alias("namespace"), F.col("d.name").alias("name"),
            "event_time"))
    parts.append(events.where(F.col("dataset").isNotNull()).select(
        F.lit("dataset").alias("kind"), F.col("dataset.namespace").alias("namespace"),
        F.col("dataset.name").alias("name"), "event_time"))
    named = parts[0]
    for part in parts[1:]:
        named = named.unionByName(part)
    return named


def _aware(moment: datetime) -> datetime:
    """Spark hands back session-local naive times; the session runs in UTC (profiles.yml)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _fsync_local_table(spark: SparkSession, table: str, since: float) -> None:
    """The files written from ``since`` on (this append's), then the folder that names them."""
    location = _table_location(spark, table)
    parsed = urlparse(location)
    if parsed.scheme not in ("", "file"):
        return  # a cluster's file system (HDFS, S3) makes its own durability promise
    folder = Path(unquote(parsed.path))
    _fsync_all(path for path in folder.iterdir() if path.is_file() and path.stat().st_mtime >= since - 1)
    _fsync_all([folder])


def _fsync_all(paths: Iterable[Path]) -> None:
    for path in paths:
        descriptor = os.open(path, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def _table_location(spark: SparkSession, table: str) -> str:
    rows = spark.sql(f"describe table extended {table}").collect()
    return next(row.data_type for row in rows if row.col_name == "Location")

"""``ingest lineage``: OpenLineage files → ``raw.lineage_events`` and ``audit.lineage_events_rejected``.

One run:

1. frames the input into records (file, line or array position, text) without collecting them;
2. parses and validates every record once (``python_jobs.lineage.event_parsing``) and writes the
   result to a batch folder under ``LINEAGE_HOME/ingest`` (Parquet), so counting and splitting
   never parse twice;
3. appends the rejected records to the audit table (anti-join on ``rejection_id``: re-ingesting a
   bad file adds nothing) and the accepted, not yet stored events to the raw table (first copy
   in ingest order per ``event_id``, anti-join on the ids already stored).

``ingest_seq`` is ``previous maximum + position of the record in this batch``, positions counted
over the sorted file list, so it increases across runs and is the same when the same files are
ingested into the same warehouse state.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from python_jobs.ingest.lineage_contract import RAW_LINEAGE_EVENTS, RAW_LINEAGE_EVENTS_REJECTED
from python_jobs.keys import name_uuid
from python_jobs.lineage import event_parsing as ep
from python_jobs.lineage.files import InputFile, discover
from python_jobs.settings import Settings
from python_jobs.spark import ensure_schemas

RAW_TABLE = ("raw", "lineage_events")
REJECTED_TABLE = ("audit", "lineage_events_rejected")
# Added to the audit contract: the deterministic id that keeps re-ingested bad records out.
REJECTED_SCHEMA = StructType([*RAW_LINEAGE_EVENTS_REJECTED.fields, StructField("rejection_id", LongType())])


@dataclass(frozen=True)
class IngestReport:
    files: int
    skipped_files: list[str]
    read: int
    accepted: int
    rejected: int
    duplicates: int
    batch_id: str
    seconds: float

    def reconciles(self) -> bool:
        return self.read == self.accepted + self.rejected + self.duplicates

    def summary(self) -> str:
        return (
            f"read {self.read} / accepted {self.accepted} / rejected {self.rejected} / "
            f"duplicates {self.duplicates}  ({self.files} files, {self.seconds:.1f}s, batch {self.batch_id})"
        )


def ensure_lineage_tables(spark: SparkSession, settings: Settings, file_format: str = "parquet") -> None:
    """Creates the raw and audit tables when missing (dbt's on-run-start does the same in SQL)."""
    ensure_schemas(spark, settings, ("raw", "audit"))
    for (layer, name), schema in ((RAW_TABLE, RAW_LINEAGE_EVENTS), (REJECTED_TABLE, REJECTED_SCHEMA)):
        table = settings.table(layer, name)
        if not spark.catalog.tableExists(table):
            spark.createDataFrame([], schema).write.format(file_format).saveAsTable(table)


# ---------------------------------------------------------------------------------------------
# Framing: files → records (source_file, source_line, record_text, record_pos)


def _line_records(spark: SparkSession, files: Sequence[InputFile]) -> DataFrame:
    """One record per non-blank line, with its 1-based line number in the file.

    Line numbers come from ``monotonically_increasing_id`` within each file split plus the line
    counts of the earlier splits of that file (a small aggregate collected to the driver).
    """
    lines = (
        spark.read.text([f.path for f in files])
        .select(
            F.col("_metadata.file_path").alias("file_uri"),
            F.col("_metadata.file_block_start").alias("block_start"),
            F.monotonically_increasing_id().alias("row_id"),
            F.col("value").alias("record_text"),
        )
    )
    blocks = (
        lines.groupBy("file_uri", "block_start")
        .agg(F.min("row_id").alias("first_row_id"), F.count(F.lit(1)).alias("line_count"))
        .withColumn(
            "lines_before",
            F.coalesce(
                F.sum("line_count").over(
                    Window.partitionBy("file_uri").orderBy("block_start").rowsBetween(Window.unboundedPreceding, -1)
                ),
                F.lit(0),
            ),
        )
        .select("file_uri", "block_start", "first_row_id", "lines_before")
    )
    block_rows = spark.createDataFrame(blocks.collect(), blocks.schema)
    return (
        lines.join(F.broadcast(block_rows), ["file_uri", "block_start"])
        .select(
            "file_uri",
            (F.col("lines_before") + F.col("row_id") - F.col("first_row_id") + 1).alias("record_pos"),
            "record_text",
        )
        .where(F.trim("record_text") != F.lit(""))
    )


def _document_records(spark: SparkSession, files: Sequence[InputFile]) -> DataFrame:
    """A JSON file holds one event (position 1) or an array of events (positions from 1).

    An array is split with ``from_json(..., array<string>)``, which keeps each element as its
    compact JSON text; a file that starts with ``[`` but is not a valid array becomes one record
    that the validation rejects.
    """
    documents = spark.read.text([f.path for f in files], wholetext=True).select(
        F.col("_metadata.file_path").alias("file_uri"), F.col("value").alias("document")
    )
    is_array = F.ltrim("document").startswith("[")
    elements = F.from_json("document", "array<string>")
    return documents.select(
        "file_uri",
        F.when(is_array & elements.isNotNull(), elements)
        .otherwise(F.array("document"))
        .alias("records"),
    ).select("file_uri", F.posexplode("records").alias("index", "record_text")).select(
        "file_uri", (F.col("index") + 1).alias("record_pos"), "record_text"
    )


def frame_records(spark: SparkSession, files: Sequence[InputFile]) -> DataFrame:
    """All records of all files: ``source_file``, ``source_line``, ``record_text``, ``file_rank``."""
    parts: list[DataFrame] = []
    line_files = [f for f in files if f.framing == "lines"]
    document_files = [f for f in files if f.framing == "document"]
    if line_files:
        parts.append(_line_records(spark, line_files))
    if document_files:
        parts.append(_document_records(spark, document_files))
    if not parts:
        return spark.createDataFrame([], "source_file string, source_line bigint, record_text string, file_rank int")
    records = parts[0]
    for part in parts[1:]:
        records = records.unionByName(part)
    ranks = spark.createDataFrame(
        [(f.path, rank) for rank, f in enumerate(files)], "source_file string, file_rank int"
    )
    # _metadata.file_path is a URI (file:/a%20b/c.json); map it back to the local path.
    local_path = F.call_function("url_decode", F.regexp_replace("file_uri", "^file:(//)?", ""))
    return records.join(F.broadcast(ranks), local_path == F.col("source_file")).select(
        "source_file", F.col("record_pos").alias("source_line"), "record_text", "file_rank"
    )


# ---------------------------------------------------------------------------------------------
# Parsing and validation


def parse_records(records: DataFrame) -> DataFrame:
    """Every contract column plus ``reason`` (null when accepted), ``file_rank`` and ``rejection_id``."""
    parsed = records.select(
        "source_file", "source_line", "record_text", "file_rank", ep.parse_event(F.col("record_text")).alias("p")
    )
    checked = parsed.select("*", *ep.extract_checked_fields(F.col("p"))).withColumn("event_kind", ep.event_kind())
    p = F.col("p")
    text = lambda label: F.col(ep.text_col(label))  # noqa: E731 - a short local alias reads best here
    is_run = F.col("event_kind") == F.lit("RunEvent")
    return checked.select(
        F.sha2(ep.canonical_event(p), 256).alias("event_id"),
        "event_kind",
        F.when(is_run, F.upper(text("eventType"))).alias("event_type"),
        ep.event_time_utc().alias("event_time"),
        text("eventTime").alias("event_time_raw"),
        ep.has_offset().alias("event_time_has_offset"),
        F.when(is_run, F.lower(text("run.runId"))).alias("run_id"),
        F.lower(ep.parent_field(p, "$.run.runId")).alias("parent_run_id"),
        ep.parent_field(p, "$.job.namespace").alias("parent_job_namespace"),
        ep.parent_field(p, "$.job.name").alias("parent_job_name"),
        text("job.namespace").alias("job_namespace"),
        text("job.name").alias("job_name"),
        text("producer").alias("producer"),
        text("schemaURL").alias("schema_url"),
        p["run"]["facets"].alias("run_facets"),
        p["job"]["facets"].alias("job_facets"),
        F.transform(p["inputs"], lambda d: ep.dataset_reference(d, "input")).alias("inputs"),
        F.transform(p["outputs"], lambda d: ep.dataset_reference(d, "output")).alias("outputs"),
        F.when(p["dataset"].isNotNull(), ep.dataset_reference(p["dataset"], None)).alias("dataset"),
        F.col("record_text").alias("event_json"),
        F.octet_length("record_text").cast("long").alias("event_bytes"),
        "source_file",
        F.col("source_line").cast("long").alias("source_line"),
        "file_rank",
        ep.rejection_reason(F.col("event_kind")).alias("reason"),
        F.xxhash64("source_file", "source_line", "record_text").alias("rejection_id"),
    )


# ---------------------------------------------------------------------------------------------
# The run


def _max_ingest_seq(spark: SparkSession, table: str) -> int:
    value = spark.table(table).agg(F.max("ingest_seq")).first()[0]
    return int(value) if value is not None else 0


def _batch_id(files: Sequence[InputFile], base_seq: int) -> str:
    """Deterministic: the same files ingested into the same warehouse state give the same id."""
    listing = "|".join(f"{f.path}:{f.size}:{f.modified_ns}" for f in files)
    return name_uuid(f"ingest_batch:lineage:{base_seq}:{listing}")


def _with_ingest_seq(spark: SparkSession, staged: DataFrame, base_seq: int) -> DataFrame:
    """``ingest_seq = base + records in earlier files + position in the file``."""
    per_file = staged.groupBy("file_rank").agg(F.max("source_line").alias("last_pos")).collect()
    offsets: dict[int, int] = {}
    running = base_seq
    for row in sorted(per_file, key=lambda r: r["file_rank"]):
        offsets[int(row["file_rank"])] = running
        running += int(row["last_pos"])
    offset_frame = spark.createDataFrame(list(offsets.items()), "file_rank int, file_offset bigint")
    return staged.join(F.broadcast(offset_frame), "file_rank").withColumn(
        "ingest_seq", F.col("file_offset") + F.col("source_line")
    )


def ingest_lineage(
    spark: SparkSession, settings: Settings, paths: Sequence[Path], file_format: str = "parquet"
) -> IngestReport:
    started = time.monotonic()
    files, skipped = discover(paths)
    ensure_lineage_tables(spark, settings, file_format)
    raw_table = settings.table(*RAW_TABLE)
    rejected_table = settings.table(*REJECTED_TABLE)
    base_seq = _max_ingest_seq(spark, raw_table)
    batch_id = _batch_id(files, base_seq)
    if not files:
        return IngestReport(0, skipped, 0, 0, 0, 0, batch_id, time.monotonic() - started)

    batch_dir = settings.lineage_home / "ingest" / f"lineage-{batch_id}"
    shutil.rmtree(batch_dir, ignore_errors=True)
    try:
        parse_records(frame_records(spark, files)).write.parquet(str(batch_dir))
        staged = _with_ingest_seq(spark, spark.read.parquet(str(batch_dir)), base_seq)
        ingested_at = F.current_timestamp()
        _append_rejected(spark, staged, rejected_table, batch_id, ingested_at)
        _append_accepted(spark, staged, raw_table, batch_id, ingested_at)
        counts = staged.agg(
            F.count(F.lit(1)).alias("read"), F.count("reason").alias("rejected")
        ).first()
        accepted = spark.table(raw_table).where(F.col("ingest_batch_id") == batch_id).count()
    finally:
        shutil.rmtree(batch_dir, ignore_errors=True)
    read, rejected = int(counts["read"]), int(counts["rejected"])
    return IngestReport(
        files=len(files),
        skipped_files=skipped,
        read=read,
        accepted=accepted,
        rejected=rejected,
        duplicates=read - rejected - accepted,
        batch_id=batch_id,
        seconds=time.monotonic() - started,
    )


def _append_rejected(
    spark: SparkSession, staged: DataFrame, table: str, batch_id: str, ingested_at: Column
) -> None:
    known = spark.table(table).select("rejection_id")
    rejected = (
        staged.where(F.col("reason").isNotNull())
        .dropDuplicates(["rejection_id"])
        .join(known, "rejection_id", "left_anti")
        .select(
            "source_file",
            "source_line",
            "reason",
            F.col("event_json").alias("raw_text"),
            F.lit(batch_id).alias("ingest_batch_id"),
            ingested_at.alias("ingested_at"),
            "rejection_id",
        )
    )
    rejected.select(*spark.table(table).columns).write.insertInto(table)


def _copies_to_drop(spark: SparkSession, valid: DataFrame, table: str) -> DataFrame:
    """``(event_id, ingest_seq)`` of every accepted record that must not be stored: later copies of an
    event within the batch and events already in the table. Computed on two narrow columns, so
    the wide rows are never shuffled; in the usual case the result is small and broadcast."""
    ids = valid.select("event_id", "ingest_seq")
    first_copy = ids.groupBy("event_id").agg(F.min("ingest_seq").alias("first_seq"), F.count(F.lit(1)).alias("copies"))
    later_copies = (
        ids.join(first_copy.where(F.col("copies") > 1), "event_id")
        .where(F.col("ingest_seq") != F.col("first_seq"))
        .select("event_id", "ingest_seq")
    )
    already_stored = ids.join(spark.table(table).select("event_id"), "event_id", "left_semi")
    return later_copies.unionByName(already_stored).distinct()


def _append_accepted(
    spark: SparkSession, staged: DataFrame, table: str, batch_id: str, ingested_at: Column
) -> None:
    valid = staged.where(F.col("reason").isNull())
    drop = _copies_to_drop(spark, valid, table).localCheckpoint()
    new_events = (
        valid.join(F.broadcast(drop), ["event_id", "ingest_seq"], "left_anti")
        .withColumn("ingest_batch_id", F.lit(batch_id))
        .withColumn("ingested_at", ingested_at)
    )
    new_events.select(*[field.name for field in RAW_LINEAGE_EVENTS.fields]).write.insertInto(table)

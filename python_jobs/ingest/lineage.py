"""``ingest lineage``: OpenLineage files → ``raw.lineage_events`` and ``audit.lineage_events_rejected``.

One run parses the input once and writes the wide rows once:

1. frames the input into records placed by (file, split offset, row id in the split); one narrow
   pass over the framed records (line files are not parsed: each line is only tested for being
   blank) gives a row per file split, collected, that turns split offsets into line numbers and
   ``ingest_seq``;
2. parses and validates every record (``python_jobs.lineage.event_parsing``: one ``from_json`` with
   the scalars as text; a second one with the scalars as ``variant``, to check their JSON types, only
   for the few records whose text could hide a non-string value) and writes the
   whole batch in the column layout of ``raw.lineage_events`` to a folder ``_ingest-<batch id>``
   inside the raw table's folder (Spark does not list folders starting with ``_``), in one
   sub-folder per ``ingest_block`` (the table's partitions); a rejected record is written with a
   null ``event_id``;
3. decides on the narrow staged ``event_id, ingest_seq`` columns which rows are kept (first copy in
   ingest order per ``event_id``, not already in the table), collected as a row per staged file;
4. appends the rejected records to the audit table (reason worked out again from the text: few
   records; anti-join on ``rejection_id``: re-ingesting a bad file adds nothing), registers the
   batch's partitions, then moves every staged file whose rows are all kept into its partition's
   folder (a rename: the wide rows are written once) and rewrites only the files that hold rejected
   or duplicate rows. A raw table in another format than plain Parquet (Delta...) gets the kept
   rows through Spark instead.

Between 3 and 4, the new events that name a job or dataset whose key (``'<kind>:<namespace>:<name>'``,
Marquez's) another (namespace, name) already owns are refused whole (``entity_keys``): the key table
``raw.lineage_entity_keys`` gets the batch's new owners first, then the audit table and the raw table
are written as above.

A crash leaves either nothing or a part of the batch's files in the raw table; ingesting the same
files again stores the rest (the stored events count as duplicates), numbered as the uninterrupted run
would have numbered them: the batch's base ``ingest_seq`` is recorded (``INTENT_FILE``) before anything
is written and reused by a re-run of the same files (found by ``python -m python_jobs faults``).
The next run deletes staging folders that a crashed run left (two ingest runs into one table never
overlap: each numbers its events from the table's maximum ``ingest_seq``).

``ingest_seq`` is ``previous maximum + position of the record in this batch``, positions counted
over the sorted file list, so it increases across runs and is the same when the same files are
ingested into the same warehouse state.

``event_id`` is the sha256 of the event's spec fields re-serialised as compact JSON
(``event_parsing.canonical_event``): insignificant whitespace, key order inside facets as sent, and
unknown top-level keys do not count. Hashing the text with whitespace removed by a regular
expression was measured slower than this re-serialisation, so the rule stayed. The JSON is written
from the text parse where it gives the same text as the variant parse (every present scalar is a
JSON string), and from the variant parse elsewhere, so ids do not depend on which parse a record got.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from python_jobs.ingest.entity_keys import (
    ENTITY_KEYS,
    ENTITY_KEYS_TABLE,
    KEY_COLUMNS,
    KeyCheck,
    check_entity_keys,
    owners_of_stored,
)
from python_jobs.ingest.lineage_contract import (
    INGEST_BLOCK_EVENTS,
    RAW_LINEAGE_EVENTS,
    RAW_LINEAGE_EVENTS_REJECTED,
    RAW_PARTITION_COLUMN,
)
from python_jobs.keys import name_uuid
from python_jobs.lineage import event_parsing as ep
from python_jobs.lineage.files import InputFile, discover
from python_jobs.settings import Settings
from python_jobs.spark import built_once_per_jvm, ensure_schemas

RAW_TABLE = ("raw", "lineage_events")
REJECTED_TABLE = ("audit", "lineage_events_rejected")


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
    """Creates the raw and audit tables when missing (dbt's on-run-start does the same in SQL), and
    partitions a raw table that an older version wrote without partitions."""
    ensure_schemas(spark, settings, ("raw", "audit"))
    raw_table = settings.table(*RAW_TABLE)
    partition_raw_table(spark, raw_table, file_format)
    if not spark.catalog.tableExists(raw_table):
        remove_orphan_table_folder(spark, raw_table)
        _create_raw_table(spark, raw_table, file_format)
    rejected_table = settings.table(*REJECTED_TABLE)
    if not spark.catalog.tableExists(rejected_table):
        remove_orphan_table_folder(spark, rejected_table)
        spark.createDataFrame([], RAW_LINEAGE_EVENTS_REJECTED).write.format(file_format).saveAsTable(rejected_table)
    ensure_entity_keys_table(spark, settings, file_format)


def ensure_entity_keys_table(spark: SparkSession, settings: Settings, file_format: str = "parquet") -> None:
    """Creates ``raw.lineage_entity_keys`` when missing, filled from the events already stored (a one-time
    backfill; empty on a new warehouse). ``saveAsTable`` writes the rows before it registers the table, so
    a run killed in between leaves an orphan folder and the next run builds the table again."""
    keys_table = settings.table(*ENTITY_KEYS_TABLE)
    if spark.catalog.tableExists(keys_table):
        return
    remove_orphan_table_folder(spark, keys_table)
    owners = owners_of_stored(spark.table(settings.table(*RAW_TABLE)))
    rows = owners.select(*[F.col(f.name).cast(f.dataType) for f in ENTITY_KEYS.fields])
    rows.repartition(1).sortWithinPartitions(*KEY_COLUMNS).write.format(file_format).saveAsTable(keys_table)


def remove_orphan_table_folder(spark: SparkSession, table: str) -> None:
    """Deletes the default folder of a managed table that the metastore does not know.

    ``saveAsTable`` writes the folder before it registers the table, so a process killed in between leaves a
    folder that no table owns, and every later create fails with LOCATION_ALREADY_EXISTS (found by the
    fault suite). The caller holds the writer lock and has checked that the table does not exist, so no
    table and no other writer uses that folder."""
    database, name = table.split(".", 1)
    database_uri = spark.catalog.getDatabase(database).locationUri.rstrip("/")
    HadoopFiles(spark).delete(f"{database_uri}/{name.lower()}")


def _create_raw_table(spark: SparkSession, table: str, file_format: str) -> None:
    empty = spark.createDataFrame([], RAW_LINEAGE_EVENTS)
    empty.write.format(file_format).partitionBy(RAW_PARTITION_COLUMN).saveAsTable(table)


def is_partitioned_by_block(spark: SparkSession, table: str) -> bool:
    return any(c.name == RAW_PARTITION_COLUMN and c.isPartition for c in spark.catalog.listColumns(table))


def partition_raw_table(spark: SparkSession, table: str, file_format: str = "parquet") -> None:
    """Rewrites a raw table of an older version (no ``ingest_block``) into the partitioned layout, once.

    The rows are copied into ``<table>__partitioned``; then the old table is renamed away, the copy
    renamed in, and the old one dropped. Each step can be interrupted: the next run finishes a swap
    whose copy is complete (the old table renamed away, no table under the name), redoes a copy
    that the old table still stands beside, and drops what is left of the old table."""
    copy, old = f"{table}__partitioned", f"{table}__unpartitioned"
    exists = spark.catalog.tableExists
    if not exists(table) and exists(old) and exists(copy):
        spark.sql(f"alter table {copy} rename to {table}")
    if exists(table) and not is_partitioned_by_block(spark, table):
        spark.sql(f"drop table if exists {copy}")
        _create_raw_table(spark, copy, file_format)
        rows = spark.table(table).withColumn(RAW_PARTITION_COLUMN, ingest_block())
        with _session_conf(spark, UNSORTED_PARTITION_WRITES):
            rows.select(*RAW_COLUMNS).write.option("compression", RAW_COMPRESSION).insertInto(copy)
        spark.sql(f"alter table {table} rename to {old}")
        spark.sql(f"alter table {copy} rename to {table}")
    spark.sql(f"drop table if exists {old}")


def ingest_block(ingest_seq_column: str = "ingest_seq") -> Column:
    """The block of an ``ingest_seq``, as SQL's integer ``div`` computes it (the dbt macros too)."""
    return F.expr(f"`{ingest_seq_column}` div {INGEST_BLOCK_EVENTS}")


# Spark sorts the rows of each task by the partition column before a partitioned write, unless it may
# keep a writer open per partition. A task's rows come in ingest_seq order and span one or two blocks,
# so the sort would only copy the wide rows once more.
UNSORTED_PARTITION_WRITES = {"spark.sql.maxConcurrentOutputFileWriters": "16"}


@contextmanager
def _session_conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


# ---------------------------------------------------------------------------------------------
# Framing: files → records (file_uri, block_start, row_id, record_text, is_blank)
#
# A record is placed by the Spark split it was read from (``block_start``, the split's byte offset in
# the file) and ``row_id`` (``monotonically_increasing_id``: consecutive within a split). Line numbers
# are fixed up after the parse from a per-split aggregate of those staged columns, so the input is
# read once. Blank lines are kept (flagged) until then because they count as lines.


def _line_records(spark: SparkSession, files: Sequence[InputFile]) -> DataFrame:
    return spark.read.text([f.path for f in files]).select(
        F.col("_metadata.file_path").alias("file_uri"),
        F.col("_metadata.file_block_start").alias("block_start"),
        F.monotonically_increasing_id().alias("row_id"),
        F.col("value").alias("record_text"),
        (F.trim("value") == F.lit("")).alias("is_blank"),
    )


def _document_records(spark: SparkSession, files: Sequence[InputFile]) -> DataFrame:
    """A JSON file holds one event (position 1) or an array of events (positions from 1).

    An array is split with ``from_json(..., array<string>)``, which keeps each element as its
    compact JSON text; a file that starts with ``[`` but is not a valid array becomes one record
    that the validation rejects. A whole file is one block and ``row_id`` is the 0-based index.
    """
    documents = spark.read.text([f.path for f in files], wholetext=True).select(
        F.col("_metadata.file_path").alias("file_uri"), F.col("value").alias("document")
    )
    # An array followed by anything but whitespace stays one record, which validation refuses whole:
    # from_json would read the array and drop what follows it unseen.
    is_array = F.ltrim("document").startswith("[") & ~ep.has_text_after_value(F.col("document"))
    elements = F.from_json("document", "array<string>")
    return documents.select(
        "file_uri",
        F.when(is_array & elements.isNotNull(), elements)
        .otherwise(F.array("document"))
        .alias("records"),
    ).select(
        "file_uri",
        F.lit(0).cast("long").alias("block_start"),
        F.posexplode("records").alias("row_id", "record_text"),
    ).select(
        "file_uri", "block_start", F.col("row_id").cast("long").alias("row_id"), "record_text",
        F.lit(False).alias("is_blank"),
    )


def frame_records(spark: SparkSession, files: Sequence[InputFile]) -> DataFrame:
    """All records of all files, blank lines included: ``file_uri``, ``block_start``, ``row_id``,
    ``record_text``, ``is_blank``. No Spark job runs here."""
    parts: list[DataFrame] = []
    line_files = [f for f in files if f.framing == "lines"]
    document_files = [f for f in files if f.framing == "document"]
    if line_files:
        parts.append(_line_records(spark, line_files))
    if document_files:
        parts.append(_document_records(spark, document_files))
    if not parts:
        return spark.createDataFrame(
            [], "file_uri string, block_start bigint, row_id bigint, record_text string, is_blank boolean"
        )
    records = parts[0]
    for part in parts[1:]:
        records = records.unionByName(part)
    return records


# ---------------------------------------------------------------------------------------------
# Parsing and validation


PLACEMENT_COLUMNS = ("file_uri", "block_start", "row_id")


@dataclass(frozen=True)
class RecordChecks:
    """The expressions of ``check_records`` and ``parse_records``, built once per JVM (``built_once_per_jvm``):
    they only name columns, and building them costs more than the small batches they check."""
    text_parse: Column
    typed_parse: Column
    trailing: Column
    checked_fields: tuple[Column, ...]
    reference_checks: tuple[Column, ...]
    kind: Column
    contract: tuple[Column, ...]
    reason: Column


@built_once_per_jvm
def record_checks() -> RecordChecks:
    p = F.col("p")
    # ``pv`` is non-null exactly where the flag is set (a record whose text parse is null is not flagged).
    needs_typed = ~F.col("is_blank") & p.isNotNull() & ep.needs_typed_parse(p)
    return RecordChecks(
        text_parse=F.when(~F.col("is_blank"), ep.parse_event_text(F.col("record_text"))).alias("p"),
        typed_parse=F.when(needs_typed, ep.parse_event(F.col("record_text"))).alias("pv"),
        trailing=F.when(p.isNotNull(), ep.has_text_after_value(F.col("record_text"))),
        checked_fields=tuple(ep.extract_checked_fields(p, F.col("pv"), F.col("typed"))),
        reference_checks=tuple(ep.blank_reference_checks()),
        kind=ep.event_kind().alias("event_kind"),
        contract=tuple(_contract_columns()),
        reason=F.when(~F.col("is_blank"), ep.rejection_reason(F.col("event_kind"))).alias("reason"),
    )


def check_records(records: DataFrame, keep: Sequence[str] = PLACEMENT_COLUMNS) -> DataFrame:
    """The parsed structs ``p`` (text scalars) and ``pv`` (variant scalars, only where ``typed``:
    see ``event_parsing.needs_typed_parse``) and the columns that ``event_parsing.rejection_reason``
    reads, beside ``keep``, ``record_text`` and ``is_blank``. Each step is a stage of its own so
    that Spark evaluates each parse once per record."""
    checks = record_checks()
    parsed = records.select(*keep, "record_text", "is_blank", checks.text_parse)
    # One stage for the flag and the typed parse: a stage boundary copies the wide row.
    both = parsed.select("*", checks.typed_parse)
    checked = both.select("*", F.col("pv").isNotNull().alias("typed"), checks.trailing.alias("has_trailing_text"))
    return checked.select("*", *checks.checked_fields).select("*", *checks.reference_checks, checks.kind)


def _contract_columns() -> list[Column]:
    """The contract columns of ``parse_records`` that the record itself determines, read from ``check_records``."""
    p = F.col("p")
    text = lambda label: F.col(ep.text_col(label))  # noqa: E731 - a short local alias reads best here
    is_run = F.col("event_kind") == F.lit("RunEvent")
    typed = F.col("typed")
    dataset = F.when(typed, ep.dataset_reference(F.col("pv")["dataset"], None)).otherwise(
        ep.dataset_reference(p["dataset"], None, typed=False)
    )
    return [
        ep.event_id(ep.canonical_event_of(p, F.col("pv"), typed)).alias("event_id"),
        F.col("event_kind"),
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
        F.col("inputs"),
        F.col("outputs"),
        F.when(p["dataset"].isNotNull(), dataset).alias("dataset"),
        F.col("record_text").alias("event_json"),
        F.octet_length("record_text").cast("long").alias("event_bytes"),
    ]


def parse_records(records: DataFrame, keep: Sequence[str] = PLACEMENT_COLUMNS) -> DataFrame:
    """Every contract column that the record itself determines, plus ``reason`` (null when
    accepted), ``is_blank`` and the ``keep`` columns of ``records`` (``record_text``, ``is_blank``
    and those); ``source_file``, ``source_line`` and ``ingest_seq`` come from ``place_records``.
    A blank line is not parsed: it only counts as a line."""
    checks = record_checks()
    return check_records(records, keep).select(*checks.contract, *keep, "is_blank", checks.reason)


# ---------------------------------------------------------------------------------------------
# Placement: split offsets → file, line, ingest_seq


@dataclass(frozen=True)
class BatchCounts:
    read: int
    rejected: int
    valid: int


def _local_path(file_uri: str) -> str:
    """``_metadata.file_path`` is a URI (``file:/a%20b/c.json``); the local path it names."""
    return unquote(urlparse(file_uri).path)


def block_stats(records: DataFrame) -> list:
    """One narrow pass over the framed input (no JSON parsing for line files): a row per file split
    with its line count, first ``row_id`` and last non-blank ``row_id``, collected."""
    return (
        records.groupBy("file_uri", "block_start")
        .agg(
            F.min("row_id").alias("first_row_id"),
            F.count(F.lit(1)).alias("lines"),
            F.max(F.when(~F.col("is_blank"), F.col("row_id"))).alias("last_record_row_id"),
            F.count(F.when(~F.col("is_blank"), F.lit(1))).alias("read"),
        )
        .collect()
    )


def placement(
    spark: SparkSession, blocks: Sequence, files: Sequence[InputFile], base_seq: int
) -> tuple[DataFrame, int]:
    """The records read, and a small frame ``file_uri, block_start → source_file, file_rank,
    line_base, seq_base`` with ``source_line = row_id + line_base`` and ``ingest_seq = row_id + seq_base``
    (``blocks`` from ``block_stats``).

    ``ingest_seq = base + records in earlier files + position in the file``, where the records of a
    file are counted up to its last non-blank line, files in the sorted order of ``discover``.
    """
    rank = {f.path: position for position, f in enumerate(files)}
    by_file: dict[str, list] = {}
    for block in blocks:
        by_file.setdefault(block["file_uri"], []).append(block)
    local = {file_uri: _local_path(file_uri) for file_uri in by_file}
    unknown = sorted(path for path in local.values() if path not in rank)
    if unknown:
        raise RuntimeError(f"Spark read files that were not listed for this batch: {unknown[:3]}")
    placed: list[tuple[str, int, str, int, int, int]] = []
    file_offset = base_seq
    for file_uri, file_blocks in sorted(by_file.items(), key=lambda item: rank[local[item[0]]]):
        lines_before = 0
        last_position = 0
        for block in sorted(file_blocks, key=lambda b: b["block_start"]):
            line_base = lines_before - block["first_row_id"] + 1
            placed.append((file_uri, block["block_start"], local[file_uri],
                           rank[local[file_uri]], line_base, file_offset + line_base))
            if block["last_record_row_id"] is not None:
                last_position = block["last_record_row_id"] + line_base
            lines_before += block["lines"]
        file_offset += last_position
    frame = spark.createDataFrame(
        placed,
        "file_uri string, block_start bigint, source_file string, file_rank int, line_base bigint, seq_base bigint",
    )
    return frame, sum(b["read"] for b in blocks)


def place_records(parsed: DataFrame, placed: DataFrame) -> DataFrame:
    """The parsed non-blank records with ``source_file``, ``source_line``, ``ingest_seq``, ``file_rank``."""
    return (
        parsed.where(~F.col("is_blank"))
        .join(F.broadcast(placed), ["file_uri", "block_start"])
        .withColumn("source_line", F.col("row_id") + F.col("line_base"))
        .withColumn("ingest_seq", F.col("row_id") + F.col("seq_base"))
    )


RAW_COLUMNS = [field.name for field in RAW_LINEAGE_EVENTS.fields]


def batch_rows(placed_records: DataFrame, batch_id: str) -> DataFrame:
    """Every record of the batch in the column layout of ``raw.lineage_events``. A rejected record
    has a null ``event_id`` (an accepted event never has one): that is how the later steps tell the
    two apart without a column the raw table does not have."""
    accepted = F.col("reason").isNull()
    columns = {
        "event_id": F.when(accepted, F.col("event_id")),
        "ingest_batch_id": F.lit(batch_id),
        "ingested_at": F.current_timestamp(),
        RAW_PARTITION_COLUMN: ingest_block(),
    }
    return placed_records.select(
        *[columns.get(field.name, F.col(field.name)).cast(field.dataType).alias(field.name)
          for field in RAW_LINEAGE_EVENTS.fields]
    )


# ---------------------------------------------------------------------------------------------
# The run


def max_ingest_seq(spark: SparkSession, table: str, partitioned_files: bool) -> int:
    """The table's highest ``ingest_seq``, read from its highest non-empty block when the partitions
    are in the metastore (a crashed run may leave an added partition empty), so that it does not read
    every file ever ingested."""
    if not partitioned_files:
        value = spark.table(table).agg(F.max("ingest_seq")).first()[0]
        return int(value) if value is not None else 0
    highest = highest_block(spark, table)
    return highest[1] if highest else 0


def highest_block(spark: SparkSession, table: str) -> tuple[int, int] | None:
    """The highest non-empty ``ingest_block`` of the partitioned raw table and its highest ``ingest_seq``.
    Later ingests only add rows to this block or above it."""
    events = spark.table(table)
    partitions = spark.sql(f"show partitions {table}").collect()
    for block in sorted((int(row[0].split("=", 1)[1]) for row in partitions), reverse=True):
        value = events.where(F.col(RAW_PARTITION_COLUMN) == block).agg(F.max("ingest_seq")).first()[0]
        if value is not None:
            return block, int(value)
    return None


def _batch_id(files: Sequence[InputFile], base_seq: int) -> str:
    """Deterministic: the same files ingested into the same warehouse state give the same id."""
    listing = "|".join(f"{f.path}:{f.size}:{f.modified_ns}" for f in files)
    return name_uuid(f"ingest_batch:lineage:{base_seq}:{listing}")


# Written before a batch changes anything, deleted when it is complete. A crash in between leaves part of
# the batch stored; ingesting the same files again must number the rest as the uninterrupted run would, so
# it reuses the recorded base instead of the table's new maximum ``ingest_seq`` (which the stored part
# raised). Any other ingest overwrites the record, so it never outlives the next batch.
INTENT_FILE = "_ingest_intent.json"  # not STAGING_PREFIX: the staging clean-up must not delete it


def _input_signature(files: Sequence[InputFile]) -> str:
    listing = "|".join(f"{f.path}:{f.size}:{f.modified_ns}" for f in files)
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()


def _resumable_base_seq(intent_text: str | None, signature: str) -> int | None:
    """The base ``ingest_seq`` of an interrupted ingest of the same files, else None."""
    if not intent_text:
        return None
    try:
        intent = json.loads(intent_text)
    except ValueError:
        return None
    if not isinstance(intent, dict) or intent.get("inputs") != signature:
        return None
    base = intent.get("base_seq")
    return base if isinstance(base, int) else None


# The staged files become the raw table's files. LZ4 (raw) wrote the wide rows about twice as fast as
# snappy when it was measured for staging; every Parquet reader of Spark 3.4+ reads it.
RAW_COMPRESSION = "lz4_raw"
STAGING_PREFIX = "_ingest-"


@dataclass(frozen=True)
class TableFiles:
    """Where a plain Parquet table keeps its files (a Hadoop path string), so staged files can be
    moved into it."""

    location: str

    def staging(self, batch_id: str) -> str:
        # Inside the table folder, so a move is a rename on one file system; Spark's file listing
        # skips names that start with ``_``, so readers of the table never see staged files.
        return f"{self.location.rstrip('/')}/{STAGING_PREFIX}{batch_id}"


class HadoopFiles:
    """Deletes and moves through Hadoop's FileSystem, so they work wherever Spark writes tables.
    Folders are Hadoop path strings (what Spark's readers take); files are the URIs of
    ``_metadata.file_path``."""

    def __init__(self, spark: SparkSession):
        self._jvm = spark.sparkContext._jvm
        self._conf = spark._jsparkSession.sessionState().newHadoopConf()

    def _fs(self, path):  # py4j objects
        return path.getFileSystem(self._conf)

    def path_of_uri(self, uri: str) -> str:
        return self._jvm.org.apache.hadoop.fs.Path(self._jvm.java.net.URI(uri)).toString()

    def parent_name(self, file_uri: str) -> str:
        """The name of the folder holding a file (a partition folder such as ``ingest_block=3``)."""
        return self._jvm.org.apache.hadoop.fs.Path(self._jvm.java.net.URI(file_uri)).getParent().getName()

    def move_into(self, file_uri: str, folder: str) -> None:
        source = self._jvm.org.apache.hadoop.fs.Path(self._jvm.java.net.URI(file_uri))
        folder_path = self._jvm.org.apache.hadoop.fs.Path(folder)
        target = self._jvm.org.apache.hadoop.fs.Path(folder_path, source.getName())
        self._fs(folder_path).mkdirs(folder_path)
        if not self._fs(source).rename(source, target):
            raise RuntimeError(f"could not move {file_uri} into {folder}")

    def delete(self, folder: str) -> None:
        path = self._jvm.org.apache.hadoop.fs.Path(folder)
        self._fs(path).delete(path, True)

    def write_text(self, file: str, text: str) -> None:
        path = self._jvm.org.apache.hadoop.fs.Path(file)
        stream = self._fs(path).create(path, True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()

    def read_text(self, file: str) -> str | None:
        """The file's text; None when it does not exist."""
        path = self._jvm.org.apache.hadoop.fs.Path(file)
        fs = self._fs(path)
        if not fs.exists(path):
            return None
        stream = fs.open(path)
        try:
            return bytes(self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream)).decode("utf-8")
        finally:
            stream.close()

    def children(self, folder: str) -> list[tuple[str, bool, int]]:
        """``(name, is_folder, bytes)`` of each entry of a folder; empty when the folder is missing."""
        path = self._jvm.org.apache.hadoop.fs.Path(folder)
        fs = self._fs(path)
        if not fs.exists(path):
            return []
        return [(s.getPath().getName(), bool(s.isDirectory()), int(s.getLen())) for s in fs.listStatus(path)]

    def delete_children(self, folder: str, prefix: str) -> None:
        path = self._jvm.org.apache.hadoop.fs.Path(folder)
        fs = self._fs(path)
        if fs.exists(path):
            for status in fs.listStatus(path):
                if status.getPath().getName().startswith(prefix):
                    fs.delete(status.getPath(), True)


def _table_files(spark: SparkSession, hadoop: HadoopFiles, table: str) -> TableFiles | None:
    """The table's folder when it is a Parquet table partitioned by ``ingest_block`` alone; None for
    other formats (Delta, Iceberg...), which must be written through Spark."""
    details = {row["col_name"]: row["data_type"] for row in spark.sql(f"describe formatted {table}").collect()}
    if str(details.get("Provider", "")).lower() != "parquet":
        return None
    partition_columns = [c.name for c in spark.catalog.listColumns(table) if c.isPartition]
    location = details.get("Location")
    if partition_columns != [RAW_PARTITION_COLUMN] or not location:
        return None
    return TableFiles(hadoop.path_of_uri(location))


def ingest_lineage(
    spark: SparkSession, settings: Settings, paths: Sequence[Path], file_format: str = "parquet"
) -> IngestReport:
    started = time.monotonic()
    files, skipped = discover(paths)
    ensure_lineage_tables(spark, settings, file_format)
    raw_table = settings.table(*RAW_TABLE)
    rejected_table = settings.table(*REJECTED_TABLE)
    hadoop = HadoopFiles(spark)
    table_files = _table_files(spark, hadoop, raw_table)
    intent_file = (
        f"{table_files.location.rstrip('/')}/{INTENT_FILE}" if table_files
        else str(settings.lineage_home / "ingest" / "lineage-intent.json")
    )
    signature = _input_signature(files)
    resumed = _resumable_base_seq(hadoop.read_text(intent_file), signature)
    base_seq = resumed if resumed is not None else max_ingest_seq(
        spark, raw_table, partitioned_files=table_files is not None
    )
    batch_id = _batch_id(files, base_seq)
    if not files:
        return IngestReport(0, skipped, 0, 0, 0, 0, batch_id, time.monotonic() - started)
    if resumed is not None:
        print(f"resuming the interrupted ingest of these files (batch {batch_id}): "
              "events it stored count as duplicates", flush=True)
    hadoop.write_text(intent_file, json.dumps({"inputs": signature, "base_seq": base_seq, "batch_id": batch_id}))

    batch_dir = (
        table_files.staging(batch_id) if table_files
        else str(settings.lineage_home / "ingest" / f"lineage-{batch_id}")
    )
    if table_files:
        hadoop.delete_children(table_files.location, STAGING_PREFIX)
    hadoop.delete(batch_dir)
    try:
        records = frame_records(spark, files)
        placed, read = placement(spark, block_stats(records), files, base_seq)
        rows = batch_rows(place_records(parse_records(records), placed), batch_id)
        with _session_conf(spark, UNSORTED_PARTITION_WRITES):
            rows.write.partitionBy(RAW_PARTITION_COLUMN).option("compression", RAW_COMPRESSION).parquet(batch_dir)
        staged = spark.read.schema(RAW_LINEAGE_EVENTS).parquet(batch_dir)
        keys_table = settings.table(*ENTITY_KEYS_TABLE)
        decision = _decide(spark, staged, raw_table, keys_table, batch_id)
        if decision.rows != read:
            raise RuntimeError(
                f"the input changed while it was ingested: {read} records counted, {decision.rows} parsed"
            )
        counts = BatchCounts(
            read=read, rejected=read - decision.valid + decision.collided_rows, valid=decision.valid
        )
        # Before the events: a re-run of a batch interrupted later finds these keys owned by the same
        # names, and a key is never left unrecorded for events that are stored.
        _append_new_owners(spark, decision.keys, keys_table)
        if counts.rejected:
            _append_rejected(spark, staged, rejected_table, decision.keys.rejected)
        if decision.accepted:
            _append_accepted(spark, decision, raw_table, table_files, hadoop)
    finally:
        hadoop.delete(batch_dir)
    hadoop.delete(intent_file)
    return IngestReport(
        files=len(files),
        skipped_files=skipped,
        read=counts.read,
        accepted=decision.accepted,
        rejected=counts.rejected,
        duplicates=counts.valid - decision.collided_rows - decision.accepted,
        batch_id=batch_id,
        seconds=time.monotonic() - started,
    )


def _append_new_owners(spark: SparkSession, keys: KeyCheck, table: str) -> None:
    """Adds the batch's new key owners to the key table, as one file (nothing when there are none). They
    were told from the table's rows for the batch's keys, so a re-run of an interrupted batch adds only
    what its first run did not."""
    if keys.new_owners.isEmpty():
        return
    keys.new_owners.select(*spark.table(table).columns).coalesce(1).write.insertInto(table)


def _append_rejected(
    spark: SparkSession, staged: DataFrame, table: str, collisions: dict[str, str] | None = None
) -> None:
    """The rejected records, with their reason worked out again from their text (the reason is a
    function of the text alone, and rejected records are few, so it is not staged), and every copy of
    the valid events refused for a key collision (``collisions``: event id → reason)."""
    known = spark.table(table).select("rejection_id")
    rejected = staged.where(F.col("event_id").isNull()).select(
        "source_file", "source_line", "event_json", "ingest_batch_id", "ingested_at"
    )
    reasons = parse_records(
        rejected.select("*", F.col("event_json").alias("record_text"), F.lit(False).alias("is_blank")),
        keep=["source_file", "source_line", "ingest_batch_id", "ingested_at"],
    ).select("source_file", "source_line", "reason", "event_json", "ingest_batch_id", "ingested_at")
    if collisions:
        collided = staged.join(
            F.broadcast(spark.createDataFrame(sorted(collisions.items()), "event_id string, reason string")),
            "event_id",
        ).select("source_file", "source_line", "reason", "event_json", "ingest_batch_id", "ingested_at")
        reasons = reasons.unionByName(collided)
    new_rejections = (
        reasons.withColumn("rejection_id", F.xxhash64("source_file", "source_line", "event_json"))
        .dropDuplicates(["rejection_id"])
        .join(known, "rejection_id", "left_anti")
        .select(
            "source_file",
            "source_line",
            "reason",
            F.col("event_json").alias("raw_text"),
            "ingest_batch_id",
            "ingested_at",
            "rejection_id",
        )
    )
    new_rejections.select(*spark.table(table).columns).write.insertInto(table)


@dataclass(frozen=True)
class Decision:
    """Which staged rows become raw rows. ``files``: staged file → (rows, rows kept);
    ``dropped``: ``ingest_seq`` of the rows to leave out of the files that are only partly kept."""

    rows: int
    valid: int
    accepted: int
    files: dict[str, tuple[int, int]]
    dropped: DataFrame
    staged: DataFrame
    keys: KeyCheck
    collided_rows: int  # staged rows of the events refused for a key collision (every copy)


# An ``eventTime`` without an offset is read in the session's time zone (UTC in every target), so a copy
# ingested under another zone gets another ``event_time``. Zones span UTC-12 to UTC+14, 26 hours apart;
# two days on either side cover any pair.
TIME_RANGE_MARGIN_MICROS = 48 * 3600 * 1_000_000


def batch_time_range(counted: Sequence) -> tuple[int, int] | None:
    """The first and last event time (Unix microseconds) of the batch's valid events, from the per-file
    rows of ``_decide``, widened by ``TIME_RANGE_MARGIN_MICROS``; None when the batch holds none."""
    firsts = [row["first_micros"] for row in counted if row["first_micros"] is not None]
    lasts = [row["last_micros"] for row in counted if row["last_micros"] is not None]
    if not firsts:
        return None
    return min(firsts) - TIME_RANGE_MARGIN_MICROS, max(lasts) + TIME_RANGE_MARGIN_MICROS


def stored_event_ids(spark: SparkSession, table: str, time_range: tuple[int, int] | None) -> DataFrame:
    """The ids of the stored events that a batch's events could duplicate: only those with an event time
    inside the batch's range. Two copies of an event have the same ``eventTime`` text (it is part of
    ``event_id``) and so the same ``event_time``; the range is a literal, so Parquet skips the row
    groups outside it, and a batch of recent events reads recent row groups instead of every id ever
    stored."""
    stored = spark.table(table).select("event_id", "event_time")
    if time_range is None:
        return stored.where(F.lit(False)).select("event_id")
    first, last = (F.timestamp_micros(F.lit(micros)) for micros in time_range)
    return stored.where(F.col("event_time").between(first, last)).select("event_id")


def _decide(spark: SparkSession, staged: DataFrame, table: str, keys_table: str, batch_id: str) -> Decision:
    """Keeps the first copy (lowest ``ingest_seq``) of each event not already in the table. Decided
    on the narrow ``event_id, ingest_seq`` columns, so the wide rows are never shuffled; the result
    per staged file is collected (a row per file).

    The first copy of an event carries its staged file through the aggregation, so the kept rows are
    counted per file straight from it: joining the kept copies back to every staged row, which cost a
    second shuffle of all the ids and a checkpoint, is only needed for the rows to leave out of partly
    kept files (``dropped``). The file travels as ``file_key``, a 64-bit hash of its name, with
    ``min_by``: a string (or a ``min`` over a struct holding one) in the aggregation buffer makes Spark
    sort every id instead of hashing them (SortAggregate). The keys of the batch's few files are
    checked to be distinct. The stored ids are read only within the batch's event-time range
    (``stored_event_ids``), so the check follows the batch, not the table's history.

    The new events that name a job or dataset key another (namespace, name) owns are then left out
    (``entity_keys.check_entity_keys``), every copy of them; they are rejected."""
    ids = staged.select(
        "event_id", "ingest_seq", "event_time", F.col("_metadata.file_path").alias("staged_file")
    ).withColumn("file_key", F.xxhash64("staged_file"))
    valid_micros = F.unix_micros(F.when(F.col("event_id").isNotNull(), F.col("event_time")))
    counted = (
        ids.groupBy("staged_file", "file_key")
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.count("event_id").alias("valid"),
            F.min(valid_micros).alias("first_micros"),
            F.max(valid_micros).alias("last_micros"),
        )
        .collect()
    )
    file_of_key = {row["file_key"]: row["staged_file"] for row in counted}
    if len(file_of_key) != len(counted):
        raise RuntimeError("two staged files got the same file_key; rerun the ingest")
    kept = (
        ids.where(F.col("event_id").isNotNull())
        .groupBy("event_id")
        .agg(F.min("ingest_seq").alias("ingest_seq"), F.min_by("file_key", "ingest_seq").alias("file_key"))
        .join(stored_event_ids(spark, table, batch_time_range(counted)), "event_id", "left_anti")
    )
    keys = check_entity_keys(
        spark, staged.where(F.col("event_id").isNotNull()), kept.select("event_id"), keys_table, batch_id
    )
    collided_rows = 0
    if keys.rejected:
        refused = F.broadcast(spark.createDataFrame([(e,) for e in sorted(keys.rejected)], "event_id string"))
        kept = kept.join(refused, "event_id", "left_anti")
        collided_rows = ids.join(refused, "event_id", "left_semi").count()
    kept_counts = {file_of_key[row["file_key"]]: row["kept"] for row in kept.groupBy("file_key").agg(
        F.count(F.lit(1)).alias("kept")).collect()}
    files = {row["staged_file"]: (row["rows"], kept_counts.get(row["staged_file"], 0)) for row in counted}
    partly_kept = [name for name, (rows, kept_rows) in files.items() if 0 < kept_rows < rows]
    dropped = (
        ids.where(F.col("staged_file").isin(partly_kept))
        .join(kept.select("ingest_seq"), "ingest_seq", "left_anti")
        .select("ingest_seq")
    )
    return Decision(
        rows=sum(row["rows"] for row in counted),
        valid=sum(row["valid"] for row in counted),
        accepted=sum(kept_counts.values()),
        files=files,
        dropped=dropped,
        staged=staged,
        keys=keys,
        collided_rows=collided_rows,
    )


def _append_accepted(
    spark: SparkSession, decision: Decision, table: str, table_files: TableFiles | None, hadoop: HadoopFiles
) -> None:
    """A staged file whose rows are all kept is moved into the table folder as it is (the batch is
    written once); a file with rejected or duplicate rows is rewritten without them. Tables in other
    formats get every kept row through Spark."""
    whole = [name for name, (rows, kept) in decision.files.items() if kept == rows > 0]
    partly = [name for name, (rows, kept) in decision.files.items() if 0 < kept < rows]
    rewrite = partly if table_files else whole + partly
    if rewrite:
        rows = (
            decision.staged.where(F.col("_metadata.file_path").isin(rewrite) & F.col("event_id").isNotNull())
            .join(F.broadcast(decision.dropped), ["ingest_seq"], "left_anti")
        )
        with _session_conf(spark, UNSORTED_PARTITION_WRITES):
            rows.select(*RAW_COLUMNS).write.option("compression", RAW_COMPRESSION).insertInto(table)
    if table_files and whole:
        # The partitions are registered before any file moves in: a file moved into a folder the
        # metastore does not know yet would stay invisible, and a later ingest of the same events would
        # store them again.
        folders = {name: hadoop.parent_name(name) for name in whole}
        blocks = sorted({int(folder.split("=", 1)[1]) for folder in folders.values()})
        partitions = " ".join(f"partition ({RAW_PARTITION_COLUMN}={block})" for block in blocks)
        spark.sql(f"alter table {table} add if not exists {partitions}")
        for name in sorted(whole):
            hadoop.move_into(name, f"{table_files.location.rstrip('/')}/{folders[name]}")
        spark.catalog.refreshTable(table)

"""``ingest events PATH``: self-describing events (NDJSON) -> ``raw.sd_events``.

Each line is ``{"schema": "iglu:vendor/name/jsonschema/M-R-A", "data": {...}}``. Validation runs
inside Spark (``mapPartitions``, registry broadcast to the executors); nothing is collected to the
driver but counts. An event that fails goes to ``audit.sd_events_rejected`` with file, line and
reason; an event whose schema is not registered is rejected, never dropped, and so is one whose
validation fails (a ``$ref`` that does not resolve within the registry): one event never aborts
the batch. Read = accepted + rejected. Ids are content hashes, so re-ingesting the same files adds nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import DataFrame, Row, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from python_jobs.contracts import REGISTRY_SOURCES, source_table
from python_jobs.errors import UserFacingError
from python_jobs.ingest.registry import create_table_if_absent, ensure_registry_tables
from python_jobs.keys import name_uuid
from python_jobs.registry.validation import Accepted, EventValidator, Rejected, validation_failure
from python_jobs.settings import Settings

EVENT_FILE_SUFFIXES = (".json", ".ndjson", ".jsonl")

# The columns are the dbt sources' (models/staging/_registry_sources.yml), which the on-run-start hook reads too.
SD_EVENTS = source_table(REGISTRY_SOURCES, "registry_raw", "sd_events").schema
SD_EVENTS_REJECTED = source_table(REGISTRY_SOURCES, "registry_audit", "sd_events_rejected").schema

# The columns of an accepted event that validation works out, in table order.
VALIDATED_COLUMNS = ("event_id", "schema_uri", "vendor", "name", "format", "version", "model", "revision", "addition")
# What the validating mapPartitions step emits per line; a rejected line has nulls in the validated columns.
CHECKED = StructType(
    [
        StructField("source_file", StringType()),
        StructField("source_line", LongType()),
        StructField("raw_text", StringType()),
        StructField("accepted", StringType()),  # "y" or "n"
        *(StructField(name, SD_EVENTS[name].dataType) for name in VALIDATED_COLUMNS),
        StructField("reason", StringType()),
    ]
)


@dataclass(frozen=True)
class EventIngestReport:
    read: int
    accepted: int
    new: int
    rejected: int

    def lines(self) -> list[str]:
        return [
            f"events: {self.read} read = {self.accepted} accepted ({self.new} new, "
            f"{self.accepted - self.new} repeated or already loaded) + {self.rejected} rejected "
            "(see audit.sd_events_rejected)"
        ]


def event_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path.resolve()]
    if path.is_dir():
        files = sorted(p.resolve() for p in path.rglob("*") if p.is_file() and p.suffix in EVENT_FILE_SUFFIXES)
        if files:
            return files
        raise UserFacingError(f"{path} holds no {', '.join(EVENT_FILE_SUFFIXES)} files")
    raise UserFacingError(f"{path} does not exist")


def read_lines(spark: SparkSession, files: list[Path]) -> DataFrame:
    """(source_file, source_line, raw_text) for every non-blank line; line numbers from 1."""
    frames = []
    for file in files:
        numbered = spark.sparkContext.textFile(str(file)).zipWithIndex()
        rows = numbered.map(lambda pair, name=str(file): (name, pair[1] + 1, pair[0]))
        frames.append(spark.createDataFrame(rows, "source_file string, source_line long, raw_text string"))
    lines = frames[0]
    for frame in frames[1:]:
        lines = lines.unionByName(frame)
    return lines.where(F.trim("raw_text") != "")


def registry_schemas(spark: SparkSession, settings: Settings) -> dict[str, str]:
    rows = spark.table(settings.table("raw", "registry_schemas")).select("schema_uri", "schema_json").collect()
    return {row.schema_uri: row.schema_json for row in rows}


def validate_frame(spark: SparkSession, lines: DataFrame, schemas: dict[str, str]) -> DataFrame:
    # mapPartitions rather than mapInArrow/mapInPandas: those need pandas, which the project does not ship.
    registry = spark.sparkContext.broadcast(schemas)

    def check_partition(rows: Iterator[Row]) -> Iterator[tuple]:
        validator = EventValidator({uri: json.loads(text) for uri, text in registry.value.items()})
        for row in rows:
            yield _checked_row(validator, (row.source_file, row.source_line, row.raw_text))

    return spark.createDataFrame(lines.rdd.mapPartitions(check_partition), CHECKED)


def _checked_row(validator: EventValidator, row: tuple) -> tuple:
    source_file, source_line, raw_text = row
    try:
        outcome = validator.check(raw_text)
    except Exception as error:  # check() answers for every event; this is the last guard
        outcome = Rejected(f"could not validate: {validation_failure(error)}", None)
    if isinstance(outcome, Accepted):
        key = outcome.key
        return (source_file, source_line, raw_text, "y", outcome.event_id, key.uri, key.vendor, key.name,
                key.format, str(key.version), key.version.model, key.version.revision, key.version.addition, None)
    return (source_file, source_line, raw_text, "n", None, outcome.schema_uri, None, None, None, None, None, None,
            None, outcome.reason)


def ensure_event_tables(spark: SparkSession, settings: Settings) -> None:
    ensure_registry_tables(spark, settings)
    create_table_if_absent(spark, settings.table("raw", "sd_events"), SD_EVENTS)
    create_table_if_absent(spark, settings.table("audit", "sd_events_rejected"), SD_EVENTS_REJECTED)


def ingest_events(spark: SparkSession, settings: Settings, path: Path) -> EventIngestReport:
    files = event_files(path)
    ensure_event_tables(spark, settings)
    batch_id = name_uuid("sd_events_batch:" + ",".join(f"{f}:{f.stat().st_size}" for f in files))
    now = datetime.now(UTC).replace(tzinfo=None)
    checked = validate_frame(spark, read_lines(spark, files), registry_schemas(spark, settings)).persist()
    try:
        counts = {row.accepted: row["count"] for row in checked.groupBy("accepted").count().collect()}
        new = _append_accepted(spark, settings, checked.where("accepted = 'y'"), batch_id, now)
        _append_rejected(spark, settings, checked.where("accepted = 'n'"), batch_id, now)
    finally:
        checked.unpersist()
    accepted, rejected = counts.get("y", 0), counts.get("n", 0)
    return EventIngestReport(accepted + rejected, accepted, new, rejected)


def _append_accepted(spark: SparkSession, settings: Settings, accepted: DataFrame, batch_id: str,
                     now: datetime) -> int:
    table = settings.table("raw", "sd_events")
    # The same event twice in one batch keeps its first occurrence (by file, then line).
    first = Window.partitionBy("event_id").orderBy("source_file", "source_line")
    fresh = (
        accepted.withColumn("occurrence", F.row_number().over(first))
        .where("occurrence = 1")
        .join(spark.table(table).select("event_id"), "event_id", "left_anti")
        .select(
            *VALIDATED_COLUMNS,
            F.to_json(F.expr("variant_get(parse_json(raw_text), '$.data')")).alias("data_json"),
            F.col("raw_text").alias("event_json"),
            "source_file", "source_line",
            F.lit(batch_id).alias("ingest_batch_id"),
            F.lit(now).cast("timestamp").alias("ingested_at"),
        )
    ).persist()
    try:
        written = fresh.count()
        if written:
            fresh.write.mode("append").format("parquet").saveAsTable(table)
    finally:
        fresh.unpersist()
    return written


def _append_rejected(spark: SparkSession, settings: Settings, rejected: DataFrame, batch_id: str,
                     now: datetime) -> None:
    table = settings.table("audit", "sd_events_rejected")
    reject_id = F.sha2(
        F.concat_ws("\u0001", F.lit("sd_rejected"), "source_file", F.col("source_line").cast("string"), "raw_text"),
        256,
    )
    fresh = (
        rejected.withColumn("reject_id", reject_id)
        .join(spark.table(table).select("reject_id"), "reject_id", "left_anti")
        .select("reject_id", "source_file", "source_line", "schema_uri", "reason", "raw_text",
                F.lit(batch_id).alias("ingest_batch_id"), F.lit(now).cast("timestamp").alias("ingested_at"))
    )
    fresh.write.mode("append").format("parquet").saveAsTable(table)

"""Ingest one full snapshot of a dataset (CSV, Parquet or NDJSON) into ``raw.<dataset>_snapshots``.

The raw table keeps every snapshot, one partition per snapshot (``snapshot_seq`` 0, 1, 2, ...),
with the data columns first, in source order, then the snapshot's metadata. The changelog models
diff consecutive partitions, so the table layout is their contract:

* data columns: fixed by the first snapshot (names, order, types); later snapshots must have the
  same columns (any order, values castable to the recorded types);
* ``snapshot_time``: when the snapshot was taken (user supplied, strictly increasing);
* ``system_time``: when it entered the warehouse (ingest wall clock, or ``--system-time``);
* ``source_file``, ``ingested_at``; partition ``snapshot_seq`` (dense, from 0).

Each loaded snapshot is also registered as a table property ``changelog.snapshot.<seq>`` =
``<snapshot_time>|<system_time>|<rows>``, written after its rows: that is the commit point, it
describes empty snapshots (which have no partition), and readers list snapshots without a scan.

A snapshot is all or nothing: a malformed record, a NULL or duplicate primary key, a reserved
column name or an out-of-order snapshot time rejects the whole file. Nothing is appended to the
raw table; one row describing the rejection goes to ``audit.snapshot_rejections``.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from python_jobs.contracts import CHANGELOG_RAW_METADATA_COLUMNS as RAW_METADATA_COLUMNS
from python_jobs.contracts import CHANGELOG_SYSTEM_COLUMNS
from python_jobs.errors import UserFacingError
from python_jobs.settings import Settings

# A data column may reuse neither the changelog's system columns nor the metadata columns the raw snapshot
# table adds after the data columns (RAW_METADATA_COLUMNS).
RESERVED_COLUMNS = tuple(dict.fromkeys(CHANGELOG_SYSTEM_COLUMNS + RAW_METADATA_COLUMNS))
PRIMARY_KEY_PROPERTY = "changelog.primary_key"
# One table property per loaded snapshot: "<snapshot_time>|<system_time>|<rows>". Partitions cannot
# describe an empty snapshot, and reading properties costs no scan.
SNAPSHOT_PROPERTY_PREFIX = "changelog.snapshot."
CORRUPT_COLUMN = "_corrupt_record"
FORMATS = ("csv", "parquet", "ndjson")
EXAMPLE_LIMIT = 5
DATASET_NAME = re.compile(r"^[a-z][a-z0-9_]{0,99}$")

REJECTIONS_SCHEMA = StructType(
    [
        StructField("dataset", StringType(), nullable=False),
        StructField("source_file", StringType(), nullable=False),
        StructField("snapshot_time", TimestampType()),
        StructField("reason", StringType(), nullable=False),
        StructField("detail", StringType()),
        StructField("rows_read", LongType()),
        StructField("ingested_at", TimestampType(), nullable=False),
    ]
)


class SnapshotRejected(UserFacingError):
    """The snapshot was not loaded; ``reason`` is a short code, the message says why and what to do."""

    def __init__(self, reason: str, message: str, rows_read: int | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.rows_read = rows_read


@dataclass(frozen=True)
class SnapshotLoad:
    dataset: str
    table: str
    snapshot_seq: int
    snapshot_time: datetime
    system_time: datetime
    rows: int
    already_loaded: bool


@dataclass(frozen=True)
class LoadedSnapshot:
    snapshot_seq: int
    snapshot_time: datetime
    system_time: datetime


# ---------------------------------------------------------------- pure helpers


def parse_timestamp(text: str, option: str) -> datetime:
    """ISO-8601 to a naive UTC datetime (Spark's session zone is UTC); no zone means UTC."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as error:
        raise UserFacingError(f"{option} {text!r} is not an ISO-8601 timestamp, e.g. 2024-05-01T02:00:00Z") from error
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


def parse_primary_key(text: str | None) -> list[str]:
    if not text:
        return []
    return [part.strip() for part in text.split(",") if part.strip()]


def snapshot_table_name(dataset: str) -> str:
    if not DATASET_NAME.match(dataset):
        raise UserFacingError(
            f"dataset name {dataset!r} must be lower-case letters, digits and underscores, starting with a letter"
        )
    return f"{dataset}_snapshots"


def detect_format(path: Path, explicit: str | None) -> str:
    if explicit:
        return explicit
    suffix = path.suffix.lower()
    by_suffix = {".csv": "csv", ".parquet": "parquet", ".ndjson": "ndjson", ".jsonl": "ndjson", ".json": "ndjson"}
    if suffix not in by_suffix:
        raise UserFacingError(f"cannot tell the format of {path} from its suffix; pass --format csv|parquet|ndjson")
    return by_suffix[suffix]


def column_name_problems(columns: Sequence[str]) -> list[str]:
    problems: list[str] = []
    lowered = [c.lower() for c in columns]
    reserved = [c for c in columns if c.lower() in RESERVED_COLUMNS]
    if reserved:
        problems.append(
            f"column(s) {', '.join(map(repr, reserved))} use reserved system column names "
            f"({', '.join(RESERVED_COLUMNS)}); rename them in the input"
        )
    duplicated = sorted({c for c in lowered if lowered.count(c) > 1})
    if duplicated:
        problems.append(
            f"column(s) {', '.join(map(repr, duplicated))} appear more than once (names are case-insensitive)"
        )
    if any(not c.strip() for c in columns):
        problems.append("the input has a column with an empty name")
    return problems


def schema_difference(existing: Sequence[str], incoming: Sequence[str]) -> str | None:
    existing_set = {c.lower() for c in existing}
    incoming_set = {c.lower() for c in incoming}
    missing = [c for c in existing if c.lower() not in incoming_set]
    unexpected = [c for c in incoming if c.lower() not in existing_set]
    if not missing and not unexpected:
        return None
    parts = []
    if missing:
        parts.append(f"missing {missing}")
    if unexpected:
        parts.append(f"unexpected {unexpected}")
    return "; ".join(parts)


def first_json_keys(path: Path) -> list[str]:
    """Key order of the first JSON object in an NDJSON file: Spark's reader sorts keys, we keep source order."""
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                first = json.loads(line)
            except json.JSONDecodeError:
                return []
            return list(first) if isinstance(first, dict) else []
    return []


def csv_header(path: Path) -> list[str]:
    with path.open(encoding="utf-8", newline="") as handle:
        header = next(csv.reader(handle), None)
    if not header:
        raise SnapshotRejected("empty_file", f"{path} has no header row")
    return header


def column(name: str) -> Column:
    """A column by its name, whatever characters the name holds (backticks doubled inside backticks)."""
    return F.col("`" + name.replace("`", "``") + "`")


def sql_string(text: str) -> str:
    """A Spark SQL string literal of ``text`` (column names reach table properties)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def timestamp_literal(value: datetime) -> Column:
    """A naive UTC datetime as a Spark timestamp, read in the session zone (UTC), not Python's local zone."""
    return F.lit(value.isoformat(sep=" ")).cast("timestamp")


def _aware(value: datetime | None) -> datetime | None:
    return value.replace(tzinfo=UTC) if value is not None else None


# ---------------------------------------------------------------- reading


def read_snapshot_file(spark: SparkSession, path: Path, file_format: str) -> DataFrame:
    """The file as a DataFrame in source column order, plus ``_corrupt_record`` for CSV and NDJSON."""
    location = str(path.resolve())
    if file_format == "parquet":
        return spark.read.parquet(location)
    if file_format == "csv":
        header = csv_header(path)
        problems = column_name_problems(header)
        if problems:
            raise SnapshotRejected("reserved_or_invalid_column", f"{path}: " + "; ".join(problems))
        # CSV carries no types: every column stays a string unless the dataset already has types.
        schema = StructType([StructField(name, StringType()) for name in header])
        schema = schema.add(StructField(CORRUPT_COLUMN, StringType()))
        return (
            spark.read.option("header", "true")
            .option("mode", "PERMISSIVE")
            .option("columnNameOfCorruptRecord", CORRUPT_COLUMN)
            .option("enforceSchema", "false")
            .schema(schema)
            .csv(location)
        )
    if file_format == "ndjson":
        frame = (
            spark.read.option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT_COLUMN).json(location)
        )
        source_order = [c for c in first_json_keys(path) if c in frame.columns]
        rest = [c for c in frame.columns if c not in source_order]
        return frame.select(*[column(c) for c in source_order + rest])
    raise UserFacingError(f"unknown format {file_format!r}; use one of {', '.join(FORMATS)}")


def count_rows(frame: DataFrame) -> tuple[int, int]:
    """(rows, malformed rows) in one pass."""
    malformed = F.count(F.col(CORRUPT_COLUMN)) if CORRUPT_COLUMN in frame.columns else F.lit(0)
    row = frame.agg(F.count(F.lit(1)).alias("rows"), malformed.alias("malformed")).first()
    return int(row["rows"]), int(row["malformed"])


def corrupt_examples(frame: DataFrame) -> list[str]:
    rows = frame.where(F.col(CORRUPT_COLUMN).isNotNull()).select(CORRUPT_COLUMN).limit(EXAMPLE_LIMIT).collect()
    return [str(row[0])[:200] for row in rows]


def key_problems(frame: DataFrame, primary_key: Sequence[str]) -> list[str]:
    """Examples of NULL and duplicate keys, as readable strings; empty when the key is sound (one Spark job)."""
    key_cols = [column(c) for c in primary_key]
    offending_rows = F.col("copies") > 1
    for key_col in key_cols:
        offending_rows = offending_rows | key_col.isNull()
    offending = (
        frame.groupBy(*key_cols)
        .agg(F.count(F.lit(1)).alias("copies"))
        .where(offending_rows)
        .orderBy(*key_cols)
        .limit(2 * EXAMPLE_LIMIT)
        .collect()
    )
    nulls = [_key_text(primary_key, row) for row in offending if any(row[c] is None for c in primary_key)]
    duplicates = [
        f"{_key_text(primary_key, row)} x{row['copies']}"
        for row in offending
        if row["copies"] > 1 and all(row[c] is not None for c in primary_key)
    ]
    problems = []
    if nulls:
        problems.append(f"NULL primary key values, e.g. {'; '.join(nulls[:EXAMPLE_LIMIT])}")
    if duplicates:
        problems.append(f"duplicate primary keys, e.g. {'; '.join(duplicates[:EXAMPLE_LIMIT])}")
    return problems


def _key_text(primary_key: Sequence[str], row: object) -> str:
    return "(" + ", ".join(f"{c}={row[c]!r}" for c in primary_key) + ")"  # type: ignore[index]


def content_digest(frame: DataFrame, columns: Sequence[str]) -> str:
    """Order-independent digest of the rows; equal digests mean the same snapshot was offered twice."""
    row_hash = F.xxhash64(*[column(c).cast("string") for c in columns], F.lit("|"))
    row = frame.select(F.count(F.lit(1)).alias("rows"), F.sum(row_hash.cast("decimal(38,0)")).alias("sum")).first()
    return f"{row['rows']}:{row['sum']}"


# ---------------------------------------------------------------- the raw table


def table_exists(spark: SparkSession, table: str) -> bool:
    return spark.catalog.tableExists(table)


def table_properties(spark: SparkSession, table: str) -> dict[str, str]:
    return {row["key"]: row["value"] for row in spark.sql(f"show tblproperties {table}").collect()}


def snapshot_property(snapshot: LoadedSnapshot, rows: int) -> tuple[str, str]:
    """The table property that registers a loaded snapshot; the changelog macro reads these."""
    times = [
        value.isoformat(sep=" ", timespec="microseconds") for value in (snapshot.snapshot_time, snapshot.system_time)
    ]
    return f"{SNAPSHOT_PROPERTY_PREFIX}{snapshot.snapshot_seq:09d}", f"{times[0]}|{times[1]}|{rows}"


def parse_snapshot_properties(properties: dict[str, str]) -> list[LoadedSnapshot]:
    snapshots = []
    for key, value in properties.items():
        if key.startswith(SNAPSHOT_PROPERTY_PREFIX):
            snapshot_time, system_time, _rows = value.split("|")
            seq = int(key.removeprefix(SNAPSHOT_PROPERTY_PREFIX))
            snapshots.append(
                LoadedSnapshot(seq, datetime.fromisoformat(snapshot_time), datetime.fromisoformat(system_time))
            )
    return sorted(snapshots, key=lambda snapshot: snapshot.snapshot_seq)


def loaded_snapshots(spark: SparkSession, table: str) -> list[LoadedSnapshot]:
    return parse_snapshot_properties(table_properties(spark, table))


def recorded_primary_key(spark: SparkSession, table: str) -> list[str]:
    return parse_primary_key(table_properties(spark, table).get(PRIMARY_KEY_PROPERTY))


def data_columns_of(spark: SparkSession, table: str) -> StructType:
    return StructType([f for f in spark.table(table).schema.fields if f.name not in RAW_METADATA_COLUMNS])


def conform_to_table(frame: DataFrame, table_schema: StructType, source: str) -> DataFrame:
    """Reorder and cast an incoming snapshot to the dataset's recorded columns, refusing lossy casts."""
    difference = schema_difference([f.name for f in table_schema.fields], frame.columns)
    if difference:
        raise SnapshotRejected(
            "schema_mismatch",
            f"{source}: columns differ from the dataset's ({difference}); the first snapshot fixed the columns",
        )
    by_lower = {c.lower(): c for c in frame.columns}
    pairs = [(column(by_lower[f.name.lower()]), f) for f in table_schema.fields]
    casts = [column.cast(field.dataType).alias(field.name) for column, field in pairs]
    lossy = [
        column.isNotNull() & column.cast(field.dataType).isNull()
        for column, field in pairs
        if frame.schema[by_lower[field.name.lower()]].dataType != field.dataType
    ]
    if lossy:
        any_lossy = lossy[0]
        for condition in lossy[1:]:
            any_lossy = any_lossy | condition
        bad = frame.where(any_lossy).limit(EXAMPLE_LIMIT).collect()
        if bad:
            examples = "; ".join(str(row.asDict()) for row in bad)
            raise SnapshotRejected(
                "type_mismatch", f"{source}: values do not fit the dataset's column types, e.g. {examples}"
            )
    return frame.select(*casts)


def record_rejection(
    spark: SparkSession,
    settings: Settings,
    dataset: str,
    source: str,
    snapshot_time: datetime | None,
    rejection: SnapshotRejected,
    ingested_at: datetime,
) -> None:
    table = settings.table("audit", "snapshot_rejections")
    row = (
        dataset,
        source,
        _aware(snapshot_time),
        rejection.reason,
        str(rejection),
        rejection.rows_read,
        _aware(ingested_at),
    )
    frame = spark.createDataFrame([row], REJECTIONS_SCHEMA)
    if table_exists(spark, table):
        frame.write.insertInto(table)
    else:
        frame.write.format("parquet").saveAsTable(table)


# ---------------------------------------------------------------- the job


def ingest_snapshot(
    spark: SparkSession,
    settings: Settings,
    dataset: str,
    path: Path,
    snapshot_time: datetime,
    system_time: datetime | None = None,
    primary_key: Sequence[str] = (),
    file_format: str | None = None,
) -> SnapshotLoad:
    """Append one snapshot; raises ``SnapshotRejected`` (after auditing it) when it cannot be loaded."""
    ingested_at = datetime.now(UTC).replace(tzinfo=None)
    table = settings.table("raw", snapshot_table_name(dataset))
    if not path.exists():
        raise UserFacingError(f"snapshot file {path} does not exist")
    if path.is_dir() and detect_format(path, file_format) != "parquet":
        raise UserFacingError(f"{path} is a directory; only Parquet snapshots may be directories of part files")
    try:
        return _ingest(
            spark, table, dataset, path, snapshot_time, system_time, list(primary_key), file_format, ingested_at
        )
    except SnapshotRejected as rejection:
        record_rejection(spark, settings, dataset, str(path.resolve()), snapshot_time, rejection, ingested_at)
        raise


def _ingest(
    spark: SparkSession,
    table: str,
    dataset: str,
    path: Path,
    snapshot_time: datetime,
    system_time: datetime | None,
    primary_key: list[str],
    file_format: str | None,
    ingested_at: datetime,
) -> SnapshotLoad:
    source = str(path.resolve())
    raw = read_snapshot_file(spark, path, detect_format(path, file_format)).cache()
    rows_read, malformed_rows = count_rows(raw)
    try:
        if malformed_rows:
            examples = corrupt_examples(raw)
            raise SnapshotRejected(
                "malformed_record", f"{source}: {malformed_rows} malformed record(s), e.g. {examples}"
            )
        return _check_and_append(
            spark, table, dataset, source, raw, rows_read, snapshot_time, system_time, primary_key, ingested_at
        )
    except SnapshotRejected as rejection:
        rejection.rows_read = rows_read if rejection.rows_read is None else rejection.rows_read
        raise
    finally:
        raw.unpersist()


def _check_and_append(
    spark: SparkSession,
    table: str,
    dataset: str,
    source: str,
    raw: DataFrame,
    rows_read: int,
    snapshot_time: datetime,
    system_time: datetime | None,
    primary_key: list[str],
    ingested_at: datetime,
) -> SnapshotLoad:
    frame = raw.drop(CORRUPT_COLUMN)
    problems = column_name_problems(frame.columns)
    if problems:
        raise SnapshotRejected("reserved_or_invalid_column", f"{source}: " + "; ".join(problems), rows_read)

    exists = table_exists(spark, table)
    history = loaded_snapshots(spark, table) if exists else []
    if exists:
        frame = conform_to_table(frame, data_columns_of(spark, table), source)
        recorded = recorded_primary_key(spark, table)
        if primary_key and recorded and [c.lower() for c in primary_key] != [c.lower() for c in recorded]:
            raise SnapshotRejected(
                "primary_key_mismatch", f"{table} was loaded with primary key {recorded}, not {primary_key}", rows_read
            )
        primary_key = primary_key or recorded
    missing_key = [c for c in primary_key if c.lower() not in {x.lower() for x in frame.columns}]
    if missing_key:
        raise SnapshotRejected("primary_key_missing", f"{source}: primary key column(s) {missing_key} not in the input")
    data_columns = list(frame.columns)

    same_time = [s for s in history if s.snapshot_time == snapshot_time]
    if same_time:
        loaded = same_time[0]
        existing = spark.table(table).where(F.col("snapshot_seq") == loaded.snapshot_seq).select(*data_columns)
        if content_digest(existing, data_columns) == content_digest(frame, data_columns):
            return SnapshotLoad(
                dataset, table, loaded.snapshot_seq, snapshot_time, loaded.system_time, rows_read, already_loaded=True
            )
        raise SnapshotRejected(
            "snapshot_time_taken",
            f"{source}: a different snapshot with snapshot time {snapshot_time} is already loaded "
            f"(snapshot {loaded.snapshot_seq}); snapshots are immutable",
            rows_read,
        )
    newest = history[-1] if history else None
    if newest is not None and snapshot_time < newest.snapshot_time:
        raise SnapshotRejected(
            "snapshot_out_of_order",
            f"{source}: snapshot time {snapshot_time} is older than the newest loaded snapshot "
            f"({newest.snapshot_time}, snapshot {newest.snapshot_seq}); snapshots must be loaded in time order",
            rows_read,
        )
    effective_system_time = system_time or ingested_at
    if newest is not None and effective_system_time <= newest.system_time:
        raise SnapshotRejected(
            "system_time_not_increasing",
            f"{source}: system time {effective_system_time} is not after the newest snapshot's "
            f"({newest.system_time}); system time must increase from snapshot to snapshot",
            rows_read,
        )
    if primary_key:
        bad_keys = key_problems(frame, primary_key)
        if bad_keys:
            raise SnapshotRejected("bad_primary_key", f"{source}: " + "; ".join(bad_keys), rows_read)

    seq = newest.snapshot_seq + 1 if newest is not None else 0
    out = frame.select(
        *[column(c) for c in data_columns],
        timestamp_literal(snapshot_time).alias("snapshot_time"),
        timestamp_literal(effective_system_time).alias("system_time"),
        F.lit(source).alias("source_file"),
        timestamp_literal(ingested_at).alias("ingested_at"),
        F.lit(seq).cast("bigint").alias("snapshot_seq"),
    )
    properties = [snapshot_property(LoadedSnapshot(seq, snapshot_time, effective_system_time), rows_read)]
    if exists:
        # A partition without its property is the leftover of an interrupted load: replace it.
        spark.sql(f"alter table {table} drop if exists partition (snapshot_seq = {seq})")
        out.write.insertInto(table)
    else:
        out.write.format("parquet").partitionBy("snapshot_seq").saveAsTable(table)
        if primary_key:
            properties.append((PRIMARY_KEY_PROPERTY, ",".join(primary_key)))
    # Registering the snapshot is the commit point: readers ignore partitions without a property.
    assignments = ", ".join(f"{sql_string(key)} = {sql_string(value)}" for key, value in properties)
    spark.sql(f"alter table {table} set tblproperties ({assignments})")
    return SnapshotLoad(dataset, table, seq, snapshot_time, effective_system_time, rows_read, already_loaded=False)

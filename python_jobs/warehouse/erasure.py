"""``warehouse erase``: removes every trace of a namespace, dataset or job from the stored input.

What an event loses is decided per event by ``erasure_plan`` (dropped when it is the entity's own, rewritten
without the references when it only mentions it). This module applies it to the three tables that hold
lineage input: ``raw.lineage_events`` (one ingest block at a time, only blocks with a changed row:
``table_rewrite``), the quarantine ``audit.lineage_events_rejected`` and the key table
``raw.lineage_entity_keys``. Everything else is derived from those and is rebuilt from them afterwards
(``dbt build --full-refresh`` of the lineage models, which the command runs): incremental models remember
how far they read (``lineage.input_through``, the build tails), and a rewritten event keeps its
``ingest_seq``, so an ordinary incremental build would neither see the change nor forget what it derived.

A rewritten event is parsed again exactly as ingest parses it: its columns, ``event_id`` and size follow
its new text; it keeps its ``ingest_seq``, file and line. One that no longer validates, or whose new id
another stored event has (it became a copy), is dropped instead.

Each block is one step; a stopped run is finished by running the same command again (the steps it did find
nothing left to change). The counts of all runs of one erasure are kept in a small file under
``LINEAGE_HOME/ops`` (named by the key hash) until the audit row is written. The audit table
``audit.lineage_erasures`` gets one row per erasure: who, when, the kind, the key's sha256 and the counts;
never a name.
"""

from __future__ import annotations

import getpass
import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import reduce
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from python_jobs.ingest.entity_keys import ENTITY_KEYS_TABLE
from python_jobs.ingest.lineage import (
    RAW_LINEAGE_EVENTS,
    RAW_TABLE,
    REJECTED_TABLE,
    HadoopFiles,
    ensure_lineage_tables,
    highest_block,
    parse_records,
)
from python_jobs.ingest.lineage_contract import RAW_PARTITION_COLUMN
from python_jobs.keys import name_uuid
from python_jobs.settings import Settings
from python_jobs.warehouse.erasure_plan import ErasureTarget, scrub_text, spellings
from python_jobs.warehouse.table_rewrite import (
    finish_open_block,
    partition_location,
    reopen_block,
    replace_block,
    replace_table,
)

AUDIT_TABLE = ("audit", "lineage_erasures")
AUDIT_SCHEMA = StructType([
    StructField("erasure_id", StringType(), nullable=False),
    StructField("erased_at", TimestampType(), nullable=False),
    StructField("erased_by", StringType(), nullable=False),
    StructField("entity_kind", StringType(), nullable=False),
    StructField("key_hash", StringType(), nullable=False),  # sha256 of the entity key, never the name
    StructField("counts", StringType(), nullable=False),  # JSON: per table, rows before / removed / rewritten
])
ERASED_BY_ENV = "LINEAGE_ERASED_BY"

# The raw columns a rewritten event keeps from its stored row; the rest come from parsing its new text.
KEPT_RAW_COLUMNS = ["ingest_seq", "source_file", "source_line", "ingest_batch_id", "ingested_at"]


@dataclass
class TableChange:
    table: str
    rows_before: int = 0
    removed: int = 0
    rewritten: int = 0
    bytes_freed: int = 0


@dataclass
class ErasureReport:
    target: ErasureTarget
    dry_run: bool
    tables: list[TableChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(t.removed or t.rewritten for t in self.tables)

    def rows(self) -> list[tuple[str, int, int, int, int]]:
        return [(t.table, t.rows_before, t.removed, t.rewritten, t.bytes_freed) for t in self.tables]


def _eq(column: str, value: str) -> Column:
    return F.col(column) == F.lit(value)


def _ref_matches(ref: Column, target: ErasureTarget) -> Column:
    matched = ref["namespace"] == F.lit(target.namespace)
    return matched if target.name is None else matched & (ref["name"] == F.lit(target.name))


def candidate_events(target: ErasureTarget) -> Column:
    """Rows that may hold the target: its name in the JSON text in any usual spelling, or in a parsed
    column (which also catches a name the sender escaped otherwise). ``scrub_text`` decides."""
    text = reduce(lambda a, b: a | b, [F.instr("event_json", s) > 0 for s in spellings(target.telltale)])
    parts = [text]
    if target.kind != "dataset":
        job = _eq("job_namespace", target.namespace) if target.name is None else (
            _eq("job_namespace", target.namespace) & _eq("job_name", target.name))
        parent = _eq("parent_job_namespace", target.namespace) if target.name is None else (
            _eq("parent_job_namespace", target.namespace) & _eq("parent_job_name", target.name))
        parts += [job, parent]
    if target.kind != "job":
        for column in ("inputs", "outputs"):
            parts.append(F.exists(F.coalesce(F.col(column), F.array()), lambda r: _ref_matches(r, target)))
        parts.append(F.coalesce(_ref_matches(F.col("dataset"), target), F.lit(False)))
    return reduce(lambda a, b: a | F.coalesce(b, F.lit(False)), parts)


def reparsed_events(spark: SparkSession, rewritten: list[tuple]) -> DataFrame:
    """Rewritten events (``KEPT_RAW_COLUMNS`` values, then the new text) as raw rows, parsed as ingest
    parses them; without ``ingest_block``; only those that still validate."""
    schema = ("ingest_seq bigint, source_file string, source_line bigint, ingest_batch_id string, "
              "ingested_at timestamp, record_text string")
    frame = spark.createDataFrame(rewritten, schema).withColumn("is_blank", F.lit(False))
    parsed = parse_records(frame, keep=KEPT_RAW_COLUMNS).where(F.col("reason").isNull())
    return parsed.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in RAW_LINEAGE_EVENTS.fields
                           if f.name != RAW_PARTITION_COLUMN])


def erase_raw_events(spark: SparkSession, hadoop: HadoopFiles, table: str, target: ErasureTarget,
                     dry_run: bool, notes: list[str]) -> TableChange:
    change = TableChange("raw.lineage_events", rows_before=spark.table(table).count())
    highest = highest_block(spark, table)
    open_block = highest[0] if highest else None
    if open_block is not None and not dry_run:
        finish_open_block(hadoop, partition_location(spark, hadoop, table, open_block))
    candidates = spark.table(table).where(candidate_events(target))
    blocks = sorted(row[0] for row in candidates.select(RAW_PARTITION_COLUMN).distinct().collect())
    for block in blocks:
        rows = candidates.where(F.col(RAW_PARTITION_COLUMN) == block).select(
            *KEPT_RAW_COLUMNS, "event_json", "event_id").collect()
        dropped: list[int] = []
        rewritten: list[tuple] = []
        for row in rows:
            action, text = scrub_text(row["event_json"], target)
            if action == "drop":
                dropped.append(row["ingest_seq"])
            elif action == "rewrite":
                rewritten.append((*[row[c] for c in KEPT_RAW_COLUMNS], text))
        if not dropped and not rewritten:
            continue
        if dry_run:
            change.removed += len(dropped)
            change.rewritten += len(rewritten)
            continue
        new_rows = reparsed_events(spark, rewritten).cache()
        others = spark.table(table).join(F.broadcast(new_rows.select("ingest_seq")), "ingest_seq", "left_anti")
        copies = {r["ingest_seq"] for r in new_rows.join(others.select("event_id"), "event_id").collect()}
        # Two rewritten events may become one: the first in ingest order stays, as ingest would keep it.
        firsts = new_rows.groupBy("event_id").agg(F.min("ingest_seq").alias("ingest_seq"))
        copies |= {r[0] for r in new_rows.select("ingest_seq").subtract(firsts.select("ingest_seq")).collect()}
        valid = {r["ingest_seq"] for r in new_rows.select("ingest_seq").collect()}
        unusable = {r[0] for r in rewritten} - valid | copies
        if unusable:
            notes.append(f"{len(unusable)} rewritten events in block {block} were dropped: without the erased "
                         "parts they are invalid or copies of a stored event")
        changed = spark.createDataFrame([(s,) for s in dropped + [r[0] for r in rewritten]], "ingest_seq bigint")
        kept = (spark.table(table).where(F.col(RAW_PARTITION_COLUMN) == block).drop(RAW_PARTITION_COLUMN)
                .join(F.broadcast(changed), "ingest_seq", "left_anti"))
        usable = new_rows.where(~F.col("ingest_seq").isin(sorted(unusable))) if unusable else new_rows
        result = replace_block(spark, hadoop, table, block, kept.unionByName(usable), target.key_hash,
                               is_open=block == open_block)
        new_rows.unpersist()
        change.removed += len(dropped) + len(unusable)
        change.rewritten += len(rewritten) - len(unusable)
        change.bytes_freed += result.bytes_freed
    if not dry_run and open_block is not None:
        now_highest = highest_block(spark, table)
        if now_highest is not None and now_highest[0] < open_block:
            reopen_block(spark, hadoop, table, _table_location(spark, hadoop, table), now_highest[0])
    return change


def _table_location(spark: SparkSession, hadoop: HadoopFiles, table: str) -> str:
    details = {row["col_name"]: row["data_type"] for row in spark.sql(f"describe formatted {table}").collect()}
    return hadoop.path_of_uri(details["Location"])


def erase_rejected(spark: SparkSession, hadoop: HadoopFiles, table: str, target: ErasureTarget,
                   dry_run: bool) -> TableChange:
    change = TableChange("audit.lineage_events_rejected", rows_before=spark.table(table).count())
    text = reduce(lambda a, b: a | b, [F.instr("raw_text", s) > 0 for s in spellings(target.telltale)])
    rows = spark.table(table).where(text).collect()
    dropped: list[int] = []
    rewritten: list[dict] = []
    for row in rows:
        action, new_text = scrub_text(row["raw_text"], target)
        if action == "drop":
            dropped.append(row["rejection_id"])
        elif action == "rewrite":
            rewritten.append({**row.asDict(), "raw_text": new_text, "old_id": row["rejection_id"]})
    change.removed, change.rewritten = len(dropped), len(rewritten)
    if dry_run or not (dropped or rewritten):
        return change
    columns = spark.table(table).columns
    changed = spark.createDataFrame([(i,) for i in dropped + [r["old_id"] for r in rewritten]], "rejection_id bigint")
    kept = spark.table(table).join(F.broadcast(changed), "rejection_id", "left_anti").select(*columns)
    if rewritten:
        schema = spark.table(table).schema
        new = spark.createDataFrame([tuple(r[c] for c in columns) for r in rewritten], schema).withColumn(
            "rejection_id", F.xxhash64("source_file", "source_line", "raw_text"))
        kept = kept.unionByName(new.select(*columns))
    change.bytes_freed = replace_table(spark, hadoop, table, kept, target.key_hash).bytes_freed
    return change


def erase_entity_keys(spark: SparkSession, hadoop: HadoopFiles, table: str, target: ErasureTarget,
                      dry_run: bool) -> TableChange:
    keys = spark.table(table)
    change = TableChange("raw.lineage_entity_keys", rows_before=keys.count())
    matched = _eq("namespace_name", target.namespace)
    if target.name is not None:
        matched = matched & _eq("name", target.name) & _eq("entity_kind", target.kind)
    change.removed = keys.where(matched).count()
    if change.removed and not dry_run:
        change.bytes_freed = replace_table(spark, hadoop, table, keys.where(~matched), target.key_hash).bytes_freed
    return change


def known_entities(spark: SparkSession, settings: Settings, kind: str) -> list[tuple[str, str]]:
    """(namespace, name) of the stored jobs or datasets: ``NS/NAME`` is resolved against them."""
    keys = spark.table(settings.table(*ENTITY_KEYS_TABLE)).where(_eq("entity_kind", kind))
    return [(r[0], r[1]) for r in keys.select("namespace_name", "name").collect()]


def ensure_audit_table(spark: SparkSession, settings: Settings) -> str:
    table = settings.table(*AUDIT_TABLE)
    if not spark.catalog.tableExists(table):
        spark.createDataFrame([], AUDIT_SCHEMA).write.format("parquet").saveAsTable(table)
    return table


def _progress_file(settings: Settings, target: ErasureTarget) -> Path:
    return Path(settings.lineage_home) / "ops" / f"erasure-{target.key_hash}.json"


def _record_progress(path: Path, change: TableChange) -> None:
    """Adds one table's counts to those of earlier (stopped) runs of the same erasure."""
    counts = json.loads(path.read_text()) if path.exists() else {}
    earlier = counts.get(change.table, {})
    counts[change.table] = {
        "before": earlier.get("before", change.rows_before),
        "removed": earlier.get("removed", 0) + change.removed,
        "rewritten": earlier.get("rewritten", 0) + change.rewritten,
        "bytes_freed": earlier.get("bytes_freed", 0) + change.bytes_freed,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(counts, sort_keys=True))


def write_audit_row(spark: SparkSession, settings: Settings, target: ErasureTarget, counts: dict) -> str:
    table = ensure_audit_table(spark, settings)
    earlier = spark.table(table).where(_eq("key_hash", target.key_hash)).count()
    erasure_id = name_uuid(f"erasure:{target.key_hash}:{earlier + 1}")
    erased_by = os.environ.get(ERASED_BY_ENV) or getpass.getuser()
    row = (erasure_id, datetime.now(UTC), erased_by, target.kind, target.key_hash,
           json.dumps(counts, sort_keys=True))
    spark.createDataFrame([row], AUDIT_SCHEMA).coalesce(1).write.insertInto(table)
    return erasure_id


def erase(spark: SparkSession, settings: Settings, target: ErasureTarget, dry_run: bool = False) -> ErasureReport:
    """Erases ``target`` from the stored input (see the module). The derived tables still hold it until
    the lineage models are rebuilt with a full refresh; the caller runs that build."""
    ensure_lineage_tables(spark, settings)
    hadoop = HadoopFiles(spark)
    report = ErasureReport(target, dry_run)
    progress = _progress_file(settings, target)
    steps = [
        lambda: erase_raw_events(spark, hadoop, settings.table(*RAW_TABLE), target, dry_run, report.notes),
        lambda: erase_rejected(spark, hadoop, settings.table(*REJECTED_TABLE), target, dry_run),
        lambda: erase_entity_keys(spark, hadoop, settings.table(*ENTITY_KEYS_TABLE), target, dry_run),
    ]
    for step in steps:
        change = step()
        report.tables.append(change)
        if not dry_run and (change.removed or change.rewritten):
            _record_progress(progress, change)
    if not dry_run and progress.exists():
        write_audit_row(spark, settings, target, json.loads(progress.read_text()))
        progress.unlink()
    return report

"""``warehouse fingerprint``: an order-independent digest of every table, to compare two warehouses.
``warehouse compact``: rewrites tables that appends have split into many files (``python_jobs.compaction``).

Columns that record wall-clock processing time (see ``VOLATILE_COLUMNS``) are left out: they are
the only values allowed to differ between two runs over the same input.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from functools import reduce
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from python_jobs.compaction import DEFAULT_MIN_FILES, compact_warehouse
from python_jobs.ops.cli_lock import mark_writer
from python_jobs.settings import LAYERS, Settings, load_settings
from python_jobs.spark import get_spark

VOLATILE_COLUMNS = frozenset({"ingested_at", "derived_at", "loaded_at"})


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    parser = groups[""].add_parser("warehouse", help="inspect the warehouse as a whole")
    sub = parser.add_subparsers(dest="warehouse_command", required=True, metavar="ACTION")
    fingerprint = sub.add_parser("fingerprint", help="row count and content digest of every table")
    fingerprint.add_argument("--out", type=Path, help="write JSON here instead of printing it")
    fingerprint.set_defaults(handler=run_fingerprint)
    compact = sub.add_parser(
        "compact", help="rewrite tables holding many small files into few (run while no ingest or build runs)"
    )
    compact.add_argument("--min-files", type=int, default=DEFAULT_MIN_FILES,
                         help=f"rewrite a table once it holds this many files (default {DEFAULT_MIN_FILES})")
    compact.add_argument("--dry-run", action="store_true", help="only list the tables that would be rewritten")
    compact.set_defaults(handler=run_compact)
    mark_writer(compact, "warehouse compact")


def _row_hash(columns: list[str]) -> Column:
    return F.xxhash64(*[F.col(f"`{c}`").cast("string") for c in columns]) if columns else F.lit(0)


def table_fingerprint(spark: SparkSession, table: str) -> dict[str, object]:
    frame = spark.table(table)
    columns = [c for c in frame.columns if c not in VOLATILE_COLUMNS]
    row_hash = _row_hash(columns)
    # Summing per-row hashes makes the digest independent of row order and partitioning.
    row = frame.select(
        F.count(F.lit(1)).alias("rows"), F.sum(row_hash.cast("decimal(38,0)")).alias("digest")
    ).first()
    return {"rows": int(row["rows"]), "digest": str(row["digest"]), "columns": columns}


def warehouse_tables(spark: SparkSession, settings: Settings) -> dict[str, str]:
    """``layer.table`` (prefix-free, comparable across warehouses) to the qualified table name."""
    tables: dict[str, str] = {}
    existing = {row.namespace for row in spark.sql("show databases").collect()}
    for layer in LAYERS:
        schema = settings.schema(layer)
        if schema not in existing:
            continue
        for row in spark.sql(f"show tables in {schema}").collect():
            if not row.isTemporary:
                tables[f"{layer}.{row.tableName}"] = f"{schema}.{row.tableName}"
    return tables


def warehouse_fingerprint(spark: SparkSession, settings: Settings) -> dict[str, dict[str, object]]:
    return {name: table_fingerprint(spark, table) for name, table in warehouse_tables(spark, settings).items()}


def row_hashes(spark: SparkSession, settings: Settings, only: Sequence[str] | None = None) -> DataFrame:
    """``(table, key, hash)`` per row of every table (or of ``only``): the key is the first column as text,
    the hash the fingerprint's row hash, so two warehouses' rows can be compared to find the first that differs."""
    frames = []
    for name, table in warehouse_tables(spark, settings).items():
        if only is not None and name not in only:
            continue
        frame = spark.table(table)
        columns = [c for c in frame.columns if c not in VOLATILE_COLUMNS]
        key = F.col(f"`{columns[0]}`").cast("string") if columns else F.lit(None).cast("string")
        frames.append(frame.select(F.lit(name).alias("table"), key.alias("key"), _row_hash(columns).alias("hash")))
    if not frames:
        return spark.createDataFrame([], "table string, key string, hash bigint")
    return reduce(DataFrame.unionByName, frames)


def run_fingerprint(args: argparse.Namespace) -> int:
    settings = load_settings()
    digest = warehouse_fingerprint(get_spark(settings), settings)
    text = json.dumps(digest, indent=2, sort_keys=True)
    if args.out:
        args.out.write_text(text)
    else:
        print(text)
    return 0


def run_compact(args: argparse.Namespace) -> int:
    settings = load_settings()
    results = compact_warehouse(get_spark(settings), settings, min_files=args.min_files, dry_run=args.dry_run)
    for result in results:
        after = "(dry run)" if args.dry_run else f"-> {result.files_after} in {result.seconds:.1f}s"
        print(f"{result.table}: {result.files_before} files {after}")
    verb = "would rewrite" if args.dry_run else "rewrote"
    print(f"{verb} {len(results)} tables with at least {args.min_files} files")
    return 0

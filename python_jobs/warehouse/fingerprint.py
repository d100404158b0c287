"""An order-independent digest of every table, to compare two warehouses (``warehouse fingerprint``).

Columns that record wall-clock processing time (see ``VOLATILE_COLUMNS``) are left out: they are
the only values allowed to differ between two runs over the same input.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from python_jobs.ops.retired_folders import STAGING_TABLE_SUFFIX
from python_jobs.settings import LAYERS, Settings

VOLATILE_COLUMNS = frozenset({"ingested_at", "derived_at", "loaded_at", "erased_at"})


def _row_hash(columns: list[str]) -> Column:
    return F.xxhash64(*[F.col(f"`{c}`").cast("string") for c in columns]) if columns else F.lit(0)


def table_fingerprint(spark: SparkSession, table: str, volatile: bool = False) -> dict[str, object]:
    """Rows and the sum of their hashes; ``volatile`` includes the ``VOLATILE_COLUMNS`` too (to compare a
    table with itself at another moment, where every value must be the same)."""
    frame = spark.table(table)
    columns = [c for c in frame.columns if volatile or c not in VOLATILE_COLUMNS]
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
            # A published append's staging table holds no rows between writes, and exists only where some
            # append happened: comparing two warehouses built by different runs, it is not data.
            if not row.isTemporary and not row.tableName.endswith(STAGING_TABLE_SUFFIX):
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

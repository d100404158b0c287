"""The changelog benchmark's item catalog: one full snapshot per round, built by Spark arithmetic on the
item id (no Python rows), so every run writes the same snapshots at any size."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


@dataclass(frozen=True)
class ItemChurn:
    rows: int = 1_000_000
    changed: float = 0.01  # share of rows whose amount changes per round
    added: float = 0.005  # share of rows added per round
    removed: float = 0.005  # share of rows removed per round


def items_snapshot_frame(spark: SparkSession, churn: ItemChurn, round_no: int) -> DataFrame:
    """Round r holds ids [r*removed*rows, rows + r*added*rows); each round a 1/period slice changes amount."""
    removed = int(churn.rows * churn.removed)
    added = int(churn.rows * churn.added)
    period = max(1, round(1 / churn.changed)) if churn.changed > 0 else 0
    first = round_no * removed
    last = churn.rows + round_no * added
    frame = spark.range(first, last).withColumnRenamed("id", "item_id")
    # version = how many times the row changed so far: it steps up when (round + id % period) hits a multiple.
    version = F.floor((F.lit(round_no) + F.col("item_id") % period) / period) if period else F.lit(0)
    return frame.select(
        F.col("item_id"),
        F.concat(F.lit("item-"), F.col("item_id").cast("string")).alias("name"),
        F.concat(F.lit("category-"), (F.col("item_id") % 17).cast("string")).alias("category"),
        (F.col("item_id") * 7 + version * 13).cast("bigint").alias("amount"),
        F.when(F.col("item_id") % 50 == 0, F.lit(None).cast("string")).otherwise(F.lit("in stock")).alias("note"),
    )

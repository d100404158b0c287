"""``python_jobs.warehouse.table_rewrite`` on a small block-partitioned table: a sealed block switches to a new
folder (the old one retired), the open block is rewritten in its own folder, an emptied sealed block is
dropped, and a recorded open-block rewrite can be finished again."""

from __future__ import annotations

from pyspark.sql import functions as F

from python_jobs.ingest.lineage import HadoopFiles
from python_jobs.ops import retired_folders
from python_jobs.warehouse.table_rewrite import (
    OPEN_BLOCK_INTENT,
    OPEN_BLOCK_STAGING,
    blocks_of,
    finish_open_block,
    partition_location,
    replace_block,
    replace_table,
)


def test_blocks_are_rewritten_in_place_or_switched(isolated_settings, spark):
    table = isolated_settings.table("raw", "blocks")
    rows = [(seq, f"event {seq}", seq // 10) for seq in range(30)]
    spark.createDataFrame(rows, "ingest_seq bigint, payload string, ingest_block bigint").write.partitionBy(
        "ingest_block").format("parquet").saveAsTable(table)
    hadoop = HadoopFiles(spark)

    def block_rows(block: int, without: set[int]):
        return (spark.table(table).where(F.col("ingest_block") == block).drop("ingest_block")
                .where(~F.col("ingest_seq").isin(sorted(without))) if without else
                spark.table(table).where(F.col("ingest_block") == block).drop("ingest_block"))

    sealed_before = partition_location(spark, hadoop, table, 0)
    result = replace_block(spark, hadoop, table, 0, block_rows(0, {3, 4}), "t1", is_open=False)
    sealed_after = partition_location(spark, hadoop, table, 0)
    assert sealed_after != sealed_before and "_compacted-ingest_block=0__compacted-" in sealed_after
    assert retired_folders.read_retired(hadoop, sealed_before) is not None
    assert result.bytes_before > 0 and result.bytes_after > 0

    open_before = partition_location(spark, hadoop, table, 2)
    replace_block(spark, hadoop, table, 2, block_rows(2, {25}), "t1", is_open=True)
    assert partition_location(spark, hadoop, table, 2) == open_before
    names = {name for name, _, _ in hadoop.children(open_before)}
    assert OPEN_BLOCK_INTENT not in names and OPEN_BLOCK_STAGING not in names

    replace_block(spark, hadoop, table, 1, block_rows(1, set(range(10, 20))), "t1", is_open=False)
    assert blocks_of(spark, table) == [0, 2]

    stored = sorted(r[0] for r in spark.table(table).select("ingest_seq").collect())
    assert stored == [s for s in range(30) if s not in {3, 4, 25} and not 10 <= s < 20]
    # Finishing a rewrite that is complete changes nothing.
    hadoop.write_text(f"{open_before}/{OPEN_BLOCK_INTENT}", '{"old": ["gone.parquet"], "new": []}')
    assert finish_open_block(hadoop, open_before)
    spark.sql(f"refresh table {table}")
    assert sorted(r[0] for r in spark.table(table).select("ingest_seq").collect()) == stored


def test_a_plain_table_is_switched_whole(isolated_settings, spark):
    table = isolated_settings.table("audit", "plain")
    spark.createDataFrame([(i, str(i)) for i in range(10)], "id bigint, text string").write.format(
        "parquet").saveAsTable(table)
    hadoop = HadoopFiles(spark)
    replace_table(spark, hadoop, table, spark.table(table).where("id % 2 = 0"), "t1")
    assert sorted(r[0] for r in spark.table(table).collect()) == [0, 2, 4, 6, 8]

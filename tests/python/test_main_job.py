"""The main job end to end on the samples: real tables, a second build changes nothing, and neither does
compacting the tables."""

from __future__ import annotations

from python_jobs.commands.warehouse import warehouse_fingerprint
from python_jobs.compaction import compact_warehouse
from python_jobs.dbt import run_dbt
from python_jobs.settings import LAYERS


def test_every_layer_is_a_spark_database(sample_warehouse, spark):
    databases = {row.namespace for row in spark.sql("show databases").collect()}
    assert {sample_warehouse.schema(layer) for layer in LAYERS} <= databases


def test_main_job_leaves_parquet_tables_in_the_metastore(sample_warehouse, spark):
    fingerprint = warehouse_fingerprint(spark, sample_warehouse)
    assert fingerprint, "the main job built no tables"
    for table in fingerprint:
        rows = spark.sql(
            f"describe table extended {sample_warehouse.schema(table.split('.')[0])}.{table.split('.', 1)[1]}"
        ).collect()
        details = {r.col_name: r.data_type for r in rows}
        if details.get("Type") == "VIEW":
            continue
        assert details.get("Provider", "").lower() == "parquet", (table, details.get("Provider"))


def test_second_build_with_no_new_input_changes_no_table(sample_warehouse, spark):
    before = warehouse_fingerprint(spark, sample_warehouse)
    run_dbt(sample_warehouse, ["build"])
    after = warehouse_fingerprint(spark, sample_warehouse)
    assert after == before


def test_compacting_the_warehouse_keeps_every_row_and_the_next_build_changes_nothing(sample_warehouse, spark):
    before = warehouse_fingerprint(spark, sample_warehouse)
    done = compact_warehouse(spark, sample_warehouse, min_files=2)
    assert done, "a built warehouse holds tables of several files"
    assert warehouse_fingerprint(spark, sample_warehouse) == before
    assert compact_warehouse(spark, sample_warehouse, min_files=2) == []
    # Incremental models read their properties and newest rows from the compacted tables; the dedup
    # tests run on them too.
    run_dbt(sample_warehouse, ["build"])
    assert warehouse_fingerprint(spark, sample_warehouse) == before

"""The main job end to end on the samples: real tables, and a second build changes nothing."""

from __future__ import annotations

from python_jobs.commands.warehouse import warehouse_fingerprint
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

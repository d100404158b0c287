from pyspark.sql import functions as F


def model(dbt, session):
    dbt.config(materialized="incremental", incremental_strategy="append")
    source = dbt.ref("numbers")
    if dbt.is_incremental:
        seen = session.table(str(dbt.this)).select("id")
        source = source.join(seen, on="id", how="left_anti")
    return source.withColumn("loaded_incrementally", F.lit(bool(dbt.is_incremental)))

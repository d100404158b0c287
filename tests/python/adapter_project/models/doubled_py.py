from pyspark.sql import functions as F


def model(dbt, session):
    dbt.config(materialized="table")
    return dbt.ref("numbers").withColumn("doubled", F.col("amount") * 2)

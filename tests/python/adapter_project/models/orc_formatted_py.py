def model(dbt, session):
    dbt.config(materialized="table", file_format="orc")
    return dbt.ref("numbers")

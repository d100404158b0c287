"""One row per registry column: the column order of every typed table, computed by python_jobs.registry."""

from python_jobs.registry.catalog import COLUMN_FIELDS, RegisteredSchema, column_rows, model_plans


def model(dbt, session):
    dbt.config(materialized="table")
    registered = dbt.ref("stg_registry_schemas").select("vendor", "name", "format", "version", "schema_json")
    schemas = [RegisteredSchema(*row) for row in registered.collect()]  # a registry is metadata: small
    return session.createDataFrame(column_rows(model_plans(schemas)), COLUMN_FIELDS)

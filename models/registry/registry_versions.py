"""One row per registry schema version: its place in the model's order and where its rows load."""

from python_jobs.registry.catalog import VERSION_FIELDS, RegisteredSchema, model_plans, version_rows


def model(dbt, session):
    dbt.config(materialized="table")
    registered = dbt.ref("stg_registry_schemas").select("vendor", "name", "format", "version", "schema_json")
    schemas = [RegisteredSchema(*row) for row in registered.collect()]  # a registry is metadata: small
    return session.createDataFrame(version_rows(model_plans(schemas)), VERSION_FIELDS)

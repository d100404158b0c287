"""PySpark jobs around the dbt project: ingest, sample generation, benchmarks and tools."""

"""PySpark jobs around the dbt project: the product (ingest, serve, read API, operations), the tools that
measure and exercise it (``tools/``) and the CLI (``cli.py``, ``commands/``). docs/ARCHITECTURE.md has the map."""

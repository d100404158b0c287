"""Ingest jobs: read input files with Spark, validate, quarantine bad records, append to raw.*."""

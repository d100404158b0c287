"""Snapshot-to-changelog support code: scratch dbt projects and the benchmark."""

"""Snapshot-to-changelog support code: scratch dbt projects holding changelog models of your own."""

"""Iglu-style schema registry: SchemaVer, column order and Spark types, DDL. Pure functions, no Spark."""

"""Facet tables: raw rows straight from event dicts (tests, benchmark) and the backfill driver."""

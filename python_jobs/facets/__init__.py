"""Facet tables: helpers for tests, the backfill driver and the facet benchmark."""

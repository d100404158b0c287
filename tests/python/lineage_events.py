"""A valid OpenLineage RunEvent that the ingest tests vary field by field (synthetic)."""

from __future__ import annotations

RUN_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
# Digits and dashes only: not a JSON number's text, so the text parse does not flag it.
RUN_ID = "00000001-0000-4000-8000-000000000000"


def run_event(**changes: object) -> dict:
    """The event with top-level fields replaced by ``changes``."""
    event = {
        "eventType": "START",
        "eventTime": "2026-01-01T00:00:00Z",
        "run": {"runId": RUN_ID, "facets": {"parent": {"run": {"runId": RUN_ID}, "job": {"namespace": "n"}}}},
        "job": {"namespace": "tests", "name": "job"},
        "inputs": [{"namespace": "db", "name": "a"}],
        "outputs": [{"namespace": "db", "name": "b", "facets": {"schema": {"fields": []}}}],
        "producer": "https://example.com/tests",
        "schemaURL": RUN_URL,
    }
    event.update(changes)
    return event

"""Marquez's legacy write calls become OpenLineage events that pass the collector's own validation."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from python_jobs.lineage.event_validation import first_problem
from python_jobs.marquez_api.legacy_writes import (
    RUN_ARGS_FACET,
    JobRef,
    LegacyWriteError,
    dataset_event,
    event_bytes,
    job_event,
    new_run_event,
    run_state_event,
)

AT = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
RUN = "8d0a1b7c-1f6e-4d4e-9a35-0a1b2c3d4e5f"


def valid(event: dict) -> dict:
    assert first_problem(event_bytes(event).decode("utf-8")) is None
    return event


def test_create_dataset_is_a_dataset_event_with_marquez_s_metadata_as_facets():
    body = {"type": "DB_TABLE", "physicalName": "public.room_bookings", "sourceName": "analytics_db",
            "description": "Bookings", "tags": ["PII"],
            "fields": [{"name": "id", "type": "INTEGER", "tags": ["KEY"]}, {"name": "guest", "type": "VARCHAR"}]}
    event = valid(dataset_event("food", "public.room_bookings", body, AT))
    assert event["eventTime"] == "2026-11-27T12:00:00Z" and "run" not in event and "job" not in event
    facets = event["dataset"]["facets"]
    assert facets["schema"]["fields"] == [{"name": "id", "type": "INTEGER"}, {"name": "guest", "type": "VARCHAR"}]
    assert facets["dataSource"]["name"] == "analytics_db"
    assert facets["documentation"]["description"] == "Bookings"
    assert facets["datasetType"]["datasetType"] == "TABLE"
    assert [(t["key"], t.get("field")) for t in facets["tags"]["tags"]] == [("KEY", "id"), ("PII", None)]


def test_create_dataset_with_a_run_is_that_run_s_output():
    body = {"type": "STREAM", "physicalName": "clicks", "sourceName": "kafka", "runId": RUN.upper()}
    event = valid(dataset_event("web", "clicks", body, AT, JobRef("web", "clickstream")))
    assert (event["eventType"], event["run"]["runId"], event["job"]["name"]) == ("OTHER", RUN, "clickstream")
    assert event["outputs"][0]["name"] == "clicks"
    assert event["outputs"][0]["facets"]["datasetType"]["datasetType"] == "STREAM"
    with pytest.raises(LegacyWriteError, match="is not known"):
        dataset_event("web", "clicks", body, AT, None)


def test_create_job_is_a_job_event_and_with_a_run_a_run_event():
    body = {"type": "BATCH", "inputs": [{"namespace": "food", "name": "public.orders"}],
            "outputs": [{"namespace": "food", "name": "public.orders_7_days"}],
            "location": "https://github.com/example/jobs/blob/main/orders.py", "description": "Weekly orders",
            "context": {"sql": "select * from orders"}}
    event = valid(job_event("food", "orders_7_days", body, AT))
    assert "run" not in event and event["schemaURL"].endswith("#/$defs/JobEvent")
    assert event["inputs"] == [{"namespace": "food", "name": "public.orders"}]
    facets = event["job"]["facets"]
    assert facets["sourceCodeLocation"]["url"] == body["location"] and facets["sourceCodeLocation"]["type"] == "https"
    assert facets["jobType"]["processingType"] == "BATCH" and facets["sql"]["query"] == "select * from orders"
    with_run = valid(job_event("food", "orders_7_days", {**body, "runId": RUN}, AT))
    assert with_run["eventType"] == "OTHER" and with_run["run"]["runId"] == RUN
    assert with_run["outputs"] == body["outputs"] and with_run["job"]["facets"] == facets


def test_a_new_run_has_a_deterministic_id_nominal_times_and_its_args():
    body = {"nominalStartTime": "2026-11-27T00:00:00Z", "nominalEndTime": "2026-11-28T00:00:00+00:00",
            "args": {"email": "me@example.com", "retries": 3}}
    first = valid(new_run_event("food", "orders_7_days", body, AT))
    again = new_run_event("food", "orders_7_days", body, AT)
    other = new_run_event("food", "orders_7_days", body, AT.replace(minute=1))
    assert first["run"]["runId"] == again["run"]["runId"] != other["run"]["runId"]
    assert first["eventType"] == "OTHER"
    facets = first["run"]["facets"]
    assert facets["nominalTime"]["nominalEndTime"] == "2026-11-28T00:00:00Z"
    assert facets[RUN_ARGS_FACET]["args"] == {"email": "me@example.com", "retries": "3"}
    given = new_run_event("food", "orders_7_days", {"id": RUN}, AT)
    assert given["run"] == {"runId": RUN}


def test_run_transitions_are_the_matching_event_types():
    job = JobRef("food", "orders_7_days")
    types = [valid(run_state_event(RUN, action, job, AT))["eventType"]
             for action in ("start", "complete", "fail", "abort")]
    assert types == ["START", "COMPLETE", "FAIL", "ABORT"]
    with pytest.raises(LegacyWriteError, match="unknown run transition"):
        run_state_event(RUN, "pause", job, AT)


@pytest.mark.parametrize(("body", "message"), [
    ({"type": "VIEW", "sourceName": "db"}, "type must be one of DB_TABLE, STREAM"),
    ({"type": "DB_TABLE"}, "sourceName is required"),
    ({"type": "DB_TABLE", "sourceName": "db", "fields": [{"type": "INT"}]}, "each field needs a name"),
    ({"type": "DB_TABLE", "sourceName": "db", "runId": "not-a-uuid"}, "runId must be a UUID"),
    ([], "must be a JSON object"),
])
def test_bodies_marquez_refuses_are_refused_with_the_reason(body, message):
    with pytest.raises(LegacyWriteError, match=message):
        dataset_event("food", "orders", body, AT, JobRef("food", "job"))


def test_job_and_run_bodies_are_checked():
    with pytest.raises(LegacyWriteError, match="type must be one of BATCH, STREAM, SERVICE"):
        job_event("food", "job", {"type": "CRON"}, AT)
    with pytest.raises(LegacyWriteError, match="each of inputs needs a namespace and a name"):
        job_event("food", "job", {"type": "BATCH", "inputs": [{"name": "x"}]}, AT)
    with pytest.raises(LegacyWriteError, match="nominalStartTime is not an ISO-8601 timestamp"):
        new_run_event("food", "job", {"nominalStartTime": "yesterday"}, AT)

"""Hand-written OpenLineage events for the facet tests (synthetic; shared by the facet test modules)."""

from __future__ import annotations

from typing import Any

PRODUCER = "https://example.com/facet-tests"
ORDERS = {"namespace": "warehouse", "name": "sales.orders"}
CUSTOMERS = {"namespace": "warehouse", "name": "sales.customers"}
REPORT = {"namespace": "warehouse", "name": "reports.daily"}
JOB = {"namespace": "etl", "name": "daily_report"}
RUN_1 = "0176a8c2-fe01-7c5a-9b1e-000000000001"
RUN_2 = "0176a8c2-fe01-7c5a-9b1e-000000000002"
RUN_3 = "0176a8c2-fe01-7c5a-9b1e-000000000003"


def schema_facet(*fields: str) -> dict[str, Any]:
    return {"_producer": PRODUCER, "fields": [{"name": f, "type": "string"} for f in fields]}


def run_event(
    event_type: str,
    time: str,
    run_id: str,
    inputs: list[dict[str, Any]] | None = None,
    outputs: list[dict[str, Any]] | None = None,
    run_facets: dict[str, Any] | None = None,
    job_facets: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "eventType": event_type,
        "eventTime": time,
        "producer": PRODUCER,
        "run": {"runId": run_id, "facets": run_facets or {}},
        "job": {**JOB, "facets": job_facets or {}},
        "inputs": inputs or [],
        "outputs": outputs or [],
    }


def first_batch() -> list[dict[str, Any]]:
    sql = {"_producer": PRODUCER, "query": "select * from sales.orders join sales.customers using (id)"}
    return [
        run_event(
            "START",
            "2026-03-01T10:00:00Z",
            RUN_1,
            inputs=[
                {
                    **ORDERS,
                    "facets": {
                        "schema": schema_facet("id", "amount"),
                        "dataQualityMetrics": {"rowCount": 10},
                        "Documentation": {"description": "orders"},
                    },
                    "inputFacets": {"inputStatistics": {"rowCount": 10}},
                },
                {**CUSTOMERS, "facets": {"schema": schema_facet("id", "name")}},
            ],
            outputs=[
                {
                    **REPORT,
                    "facets": {
                        "schema": schema_facet("day", "total"),
                        "outputStatistics": {"rowCount": 1},
                        "custom_quality": {"score": 1},
                    },
                    "outputFacets": {"outputStatistics": {"rowCount": 1, "size": 64}},
                }
            ],
            run_facets={"nominalTime": {"nominalStartTime": "2026-03-01T10:00:00Z"}, "spark_unknown": {"x": 1}},
            job_facets={"sql": sql},
        ),
        run_event(
            "COMPLETE",
            "2026-03-01T10:05:00Z",
            RUN_1,
            # same schema, keys in another order: the same canonical body
            outputs=[
                {
                    **REPORT,
                    "facets": {
                        "schema": {
                            "fields": [{"type": "string", "name": "day"}, {"type": "string", "name": "total"}],
                            "_producer": PRODUCER,
                        }
                    },
                }
            ],
            job_facets={"sql": sql},
        ),
        # A DatasetEvent: facets with no run and no event type.
        {
            "eventTime": "2026-03-01T11:00:00Z",
            "producer": PRODUCER,
            "dataset": {**REPORT, "facets": {"documentation": {"description": "daily totals"}}},
        },
        # A JobEvent: job facets with no run.
        {
            "eventTime": "2026-03-01T11:30:00Z",
            "producer": PRODUCER,
            "job": {**JOB, "facets": {"ownership": {"owners": [{"name": "team-sales"}]}}},
            "inputs": [],
            "outputs": [],
        },
        # Malformed facets: a body that is not an object, and one with a repeated key.
        run_event(
            "RUNNING",
            "2026-03-01T10:01:00Z",
            RUN_1,
            run_facets={"broken": "not an object", "SPARK_UNKNOWN": {"y": 2}},
        ),
    ]


def second_batch() -> list[dict[str, Any]]:
    """Ingested later. The first event is *older* than the latest schema: it must not win."""
    return [
        run_event(
            "COMPLETE",
            "2026-03-01T09:00:00Z",
            RUN_2,
            outputs=[{**REPORT, "facets": {"schema": schema_facet("stale")}}],
        ),
        run_event(
            "COMPLETE",
            "2026-03-02T10:00:00Z",
            RUN_3,
            outputs=[
                {
                    **REPORT,
                    "facets": {"schema": schema_facet("day", "total", "currency"), "custom_quality": {"score": 3}},
                }
            ],
        ),
        # Same event time as the previous one, ingested after it: ingest order breaks the tie.
        run_event(
            "COMPLETE",
            "2026-03-02T10:00:00Z",
            RUN_3,
            outputs=[{**REPORT, "facets": {"custom_quality": {"score": 2}}}],
            job_facets={"sql": {"_producer": PRODUCER, "query": "select 2"}},
        ),
    ]


def large_plan_event(target_bytes: int) -> dict[str, Any]:
    """A run event whose Spark logical plan facet alone is over ``target_bytes`` of JSON."""
    node_text = "Project [id#1L, amount#2, customer#3] +- Filter isnotnull(id#1L) " * 3
    node_count = target_bytes // (len(node_text) + 60) + 1
    plan = {
        "_producer": PRODUCER,
        "plan": [
            {"class": "org.apache.spark.sql.catalyst.plans.logical.Project", "num": i, "text": node_text}
            for i in range(node_count)
        ],
    }
    return run_event(
        "COMPLETE",
        "2026-03-01T12:00:00Z",
        "0176a8c2-fe01-7c5a-9b1e-0000000000ff",
        outputs=[{**ORDERS, "facets": {"schema": schema_facet("id", "amount")}}],
        run_facets={"spark.logicalPlan": plan},
    )

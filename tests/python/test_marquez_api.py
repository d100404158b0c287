"""The Marquez-compatible read API, called through Marquez's own Python client over real HTTP.

One warehouse is built from the shared corpus (Marquez's apples pipeline, its demo seed
`metadata.template.json`, Spark column-lineage events and the spec's columnLineage example; see
marquez_corpus.py) on a schema prefix of its own, served in-process by uvicorn on a loopback port.
`marquez_client` has no call for GET /lineage and GET /search: those two go through httpx.
The server is the app `python -m python_jobs serve --read-api` runs: the collector with the read routes.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pyarrow as pa
import pytest
from lineage_events import run_event  # tests/python is on sys.path
from marquez_client import MarquezClient
from marquez_client.errors import APIError
from marquez_client.models import DatasetId, DatasetType, JobType
from marquez_corpus import (  # tests/python is on sys.path
    API_BUILD,
    SEED_START,
    SPARK_RUN_ID,
    corpus_warehouse,
    prepare_corpus,
)
from openlineage.client.transport.http import HttpConfig, HttpTransport
from pyspark.sql import functions as F
from starlette.applications import Starlette

from python_jobs import keys
from python_jobs.dbt import run_dbt
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.landing import LandingLayout
from python_jobs.marquez_api import MarquezReadApi, read_routes
from python_jobs.marquez_api.api import job_type, tag_names
from python_jobs.marquez_api.dataset_versions import new_pointer_rows
from python_jobs.marquez_api.graph import render_text
from python_jobs.marquez_api.job_versions import job_version_id
from python_jobs.marquez_api.latest_run_facets import json_string
from python_jobs.marquez_api.legacy_routes import legacy_write_routes
from python_jobs.marquez_api.run_details import LOCATION, BodyValues, publication_mark, read_past
from python_jobs.marquez_api.server import serve_app_in_thread
from python_jobs.marquez_api.snapshot import RUN_ORDER, describe_laps, load_snapshot, slices_by
from python_jobs.marquez_api.sources import redacted, source_type
from python_jobs.marquez_api.stats import intervals
from python_jobs.marquez_api.tails import TimelineChanges, timeline_changes
from python_jobs.serve.app import CollectorConfig, create_app
from python_jobs.serve.build_loop import run_round

KITCHEN = "grandmas.kitchen"
FOOD = "food_delivery"


@pytest.fixture(scope="module")
def warehouse(settings, spark, shared_corpus, tmp_path_factory):
    events = prepare_corpus(shared_corpus, tmp_path_factory.mktemp("marquez-corpus"))
    return corpus_warehouse(spark, settings, "t_marquez_api_", [events], 37)


@pytest.fixture(scope="module")
def api(warehouse, spark) -> MarquezReadApi:
    return MarquezReadApi(spark, warehouse)


@pytest.fixture(scope="module")
def landing(tmp_path_factory) -> LandingLayout:
    return LandingLayout(tmp_path_factory.mktemp("serve") / "landing")


@pytest.fixture(scope="module")
def app(api, landing) -> Starlette:
    """What ``serve --read-api`` runs: the collector, its accepted events laid over the read API."""
    return create_app(CollectorConfig(landing), extra_routes=read_routes(api) + legacy_write_routes(api),
                      on_accepted=api.live.accept)


@pytest.fixture(scope="module")
def base_url(app) -> Iterator[str]:
    with serve_app_in_thread(app) as url:
        yield url


@pytest.fixture(scope="module")
def client(base_url) -> MarquezClient:
    return MarquezClient(base_url)


def status_of(error: pytest.ExceptionInfo[APIError]) -> tuple[int, dict]:
    response = error.value.__cause__.response  # marquez_client raises APIError from requests' HTTPError
    return response.status_code, response.json()


def test_column_lineage_table_is_keyed_and_a_second_build_changes_nothing(warehouse, spark):
    table = warehouse.table("lineage", "column_lineage")
    before = sorted(map(tuple, spark.table(table).collect()))
    # A second build of the model, with its data tests (unique and not_null key).
    run_dbt(warehouse, ["build", "--select", "column_lineage"])
    assert sorted(map(tuple, spark.table(table).collect())) == before
    rows = {(r.output_dataset, r.output_field, r.input_dataset, r.input_field): r for r in spark.table(table).collect()}
    # metadata.template.json (1-0-1, inputFields only): no transformation recorded.
    seed = rows[("public.orders_7_days", "order_id", "public.orders", "id")]
    assert seed.transformation_type is None and list(seed.transformations) == []
    assert seed.output_dataset_version_uuid is not None
    # Spark's transformations list: START and COMPLETE of one run give one row.
    spark_row = rows[("/tmp/cll_test/tbl1", "agg", "/tmp/cll_test/cll_source2", "c")]
    assert (spark_row.run_uuid, spark_row.transformation_type, spark_row.transformation_subtype,
            spark_row.transformation_description) == (SPARK_RUN_ID, "DIRECT", "AGGREGATION", "sum(t2.c) AS agg")
    ident = rows[("/tmp/cll_test/tbl1", "ident", "/tmp/cll_test/cll_source1", "a")]
    assert [t.subtype for t in ident.transformations] == ["IDENTITY", "GROUP_BY", "JOIN", "FILTER"]
    # The spec example carries both shapes: the input field's own list wins, the 1-0-x pair fills in.
    spec_row = rows[("CUSTOMER_DISCOUNTS", "NAME", "CUSTOMERS", "NAME")]
    assert (spec_row.transformation_type, spec_row.transformation_subtype) == ("DIRECT", "IDENTITY")
    assert spec_row.transformation_description == "SELECT NAME"


def test_namespaces_paging_and_404(client):
    names = [n["name"] for n in client.list_namespaces()["namespaces"]]
    assert {KITCHEN, FOOD, "cupboard", "laurents-orchard", "backyard"} <= set(names)
    assert names == sorted(names)
    page = client.list_namespaces(limit=2, offset=1)
    assert [n["name"] for n in page["namespaces"]] == names[1:3] and page["totalCount"] == len(names)
    namespace = client.get_namespace(KITCHEN)
    assert namespace["name"] == KITCHEN and namespace["createdAt"].startswith("2020-08-29T23:00:00")
    with pytest.raises(APIError) as missing:
        client.get_namespace("no.such.namespace")
    assert status_of(missing) == (404, {"code": 404, "message": "Namespace 'no.such.namespace' not found."})


def test_datasets_fields_and_versions(client):
    listed = client.list_datasets(FOOD, limit=3, offset=0)
    assert listed["totalCount"] == 13 and len(listed["datasets"]) == 3
    dataset = client.get_dataset(FOOD, "public.delivery_7_days")
    assert dataset["id"] == {"namespace": FOOD, "name": "public.delivery_7_days"}
    assert len(dataset["fields"]) == 14
    assert {"name": "customer_email", "type": "VARCHAR"}.items() <= next(
        f for f in dataset["fields"] if f["name"] == "customer_email").items()
    assert dataset["facets"]["schema"]["fields"][0]["name"] == "order_id"
    versions = client.list_dataset_versions(FOOD, "public.delivery_7_days")
    assert versions["totalCount"] == 1
    version = versions["versions"][0]
    assert version["version"] == dataset["currentVersion"] and len(version["fields"]) == 14
    assert version["createdByRun"]["state"] == "COMPLETED"
    assert version["createdByRun"]["outputVersions"] == [
        {"namespace": FOOD, "name": "public.delivery_7_days", "version": version["version"]}]
    assert client.get_dataset_version(FOOD, "public.delivery_7_days", version["version"]) == version
    with pytest.raises(APIError) as missing:
        client.get_dataset(FOOD, "public.nothing")
    assert status_of(missing)[0] == 404
    with pytest.raises(APIError) as wrong_version:
        client.get_dataset_version(FOOD, "public.orders", version["version"])
    assert status_of(wrong_version)[0] == 404


def test_jobs_and_runs(client):
    jobs = client.list_jobs(KITCHEN)
    # Newest update first, as Marquez lists jobs (updatedAt = the job's latest run update).
    assert [j["name"] for j in jobs["jobs"]] == [
        "prepare_vinegar", "prepare_apple_pie", "prepare_apple_filling", "gather_apples", "prepare_apple_cider"]
    assert jobs["jobs"][0]["updatedAt"] == "2020-10-28T09:52:00.001000Z"  # a fraction sorts as a time, not text
    assert all(j["type"] == "BATCH" and j["tags"] == [] for j in jobs["jobs"])
    filling = client.get_job(KITCHEN, "prepare_apple_filling")
    assert filling["inputs"] == [{"namespace": "cupboard", "name": "sugar"},
                                 {"namespace": KITCHEN, "name": "apples"},
                                 {"namespace": KITCHEN, "name": "cinnamon"}]
    assert filling["outputs"] == [{"namespace": KITCHEN, "name": "apple.filling"}]
    runs = client.list_job_runs(KITCHEN, "gather_apples")
    assert [(r["id"][:8], r["state"]) for r in runs["runs"]] == [("155dbf08", "COMPLETED"), ("fc57cd10", "COMPLETED")]
    assert runs["runs"][0]["endedAt"] == "2020-10-15T03:00:00Z" and runs["runs"][0]["startedAt"] is None
    assert runs["runs"][0]["inputVersions"][0]["name"] == "crab.apples"
    assert [r["id"] for r in client.list_job_runs(KITCHEN, "gather_apples", limit=1, offset=1)["runs"]] == [
        runs["runs"][1]["id"]]
    spark_runs = client.list_job_runs("testColumnLevelLineage", "pyspark_cll_test")["runs"]
    assert [(r["id"], r["state"], r["durationMs"]) for r in spark_runs] == [(SPARK_RUN_ID, "COMPLETED", 60000)]
    run = client.get_job_run(SPARK_RUN_ID)
    assert run["startedAt"] == "2026-01-05T12:00:00Z" and run["endedAt"] == "2026-01-05T12:01:00Z"
    with pytest.raises(APIError) as missing:
        client.get_job_run("00000000-0000-4000-8000-000000000000")
    assert status_of(missing)[0] == 404


def test_every_job_across_namespaces(client, base_url):
    """GET /api/v1/jobs (the UI's dashboard and job list): every namespace, paged, newest update first,
    filtered by the state of each job's latest run."""
    every = httpx.get(f"{base_url}/api/v1/jobs", params={"limit": 100}).json()
    namespaces = [n["name"] for n in client.list_namespaces()["namespaces"]]
    per_namespace = {name: client.list_jobs(name)["totalCount"] for name in namespaces}
    assert every["totalCount"] == sum(per_namespace.values()) == len(every["jobs"])
    moments = [datetime.fromisoformat(j["updatedAt"].replace("Z", "+00:00")) for j in every["jobs"]]
    assert moments == sorted(moments, reverse=True)
    page = httpx.get(f"{base_url}/api/v1/jobs", params={"limit": 3, "offset": 2}).json()
    assert [j["id"] for j in page["jobs"]] == [j["id"] for j in every["jobs"][2:5]]
    completed = httpx.get(f"{base_url}/api/v1/jobs", params={"lastRunStates": "COMPLETED", "limit": 100}).json()
    latest_states = [j["latestRun"]["state"] for j in every["jobs"] if j["latestRun"]]
    assert completed["totalCount"] == latest_states.count("COMPLETED") > 0
    assert {j["latestRun"]["state"] for j in completed["jobs"]} == {"COMPLETED"}
    failed = httpx.get(f"{base_url}/api/v1/jobs",
                       params=[("lastRunStates", "FAILED"), ("lastRunStates", "ABORTED")])
    assert failed.json()["totalCount"] == 0
    kitchen = httpx.get(f"{base_url}/api/v1/namespaces/{KITCHEN}/jobs", params={"lastRunStates": "COMPLETED,RUNNING"})
    assert kitchen.json()["totalCount"] == 5
    bad = httpx.get(f"{base_url}/api/v1/jobs", params={"lastRunStates": "DONE"})
    assert bad.status_code == 400 and "DONE" in bad.json()["message"]


def test_job_latest_runs_and_run_facets(client, base_url):
    job = client.get_job(FOOD, "etl_delivery_7_days")
    assert job["type"] == "BATCH" and job["tags"] == []
    assert [r["id"] for r in job["latestRuns"]] == [r["id"] for r in client.list_job_runs(FOOD, job["name"])["runs"]]
    latest = job["latestRun"]
    assert latest["id"] == job["latestRuns"][0]["id"] and latest["state"] == "COMPLETED"
    assert set(latest["facets"]) == {"nominalTime"}  # the latest run's current facets
    assert client.get_job_run(latest["id"])["facets"] == latest["facets"]
    url = f"{base_url}/api/v1/jobs/runs/{latest['id']}/facets"
    assert httpx.get(url, params={"type": "run"}).json() == {"runId": latest["id"], "facets": latest["facets"]}
    job_facets = httpx.get(url, params={"type": "job"}).json()
    assert job_facets["runId"] == latest["id"] and set(job_facets["facets"]) == {"documentation", "sql"}
    assert job_facets["facets"]["sql"]["query"].startswith("INSERT INTO delivery_7_days")
    assert httpx.get(url, params={"type": "dataset"}).status_code == 400
    missing = httpx.get(f"{base_url}/api/v1/jobs/runs/00000000-0000-4000-8000-000000000000/facets?type=run")
    assert missing.status_code == 404 and missing.json()["code"] == 404


def test_dataset_column_lineage_and_tags(client):
    dataset = client.get_dataset(FOOD, "public.delivery_7_days")
    lineage = {c["name"]: c for c in dataset["columnLineage"]}
    assert sorted((f["dataset"], f["field"]) for f in lineage["order_id"]["inputFields"]) == [
        ("public.order_status", "order_id"), ("public.orders_7_days", "order_id")]
    assert set(lineage["order_id"]) == {"name", "inputFields", "transformationDescription", "transformationType"}
    assert dataset["tags"] == []
    assert client.get_dataset(KITCHEN, "apples")["columnLineage"] is None  # none recorded
    assert client.list_tags() == {"tags": []}  # the corpus has no tags facet (see test_tags_from_facets)


def test_a_refresh_says_where_its_time_went(api, monkeypatch):
    """Every part of the load is timed (serve prints the slowest after each build round), the API's writes last."""
    monkeypatch.setattr(api, "settle_seconds", math.inf)  # never keep the snapshot: this test times a load
    lines: list[str] = []
    api.refresh_after_round(False, log=lines.append)
    parts = api.refresh_seconds
    assert lines == [f"[read API] refreshed in {describe_laps(parts)}"]
    assert list(parts) == [
        "warehouse listing", "namespaces and schemas", "runs", "runs' inputs and outputs", "dataset versions",
        "datasets and their facets", "latest runs' facets", "jobs and their facets", "run details", "job versions",
        "graph and symlinks", "column lineage", "events", "the API's writes laid over it",
    ]
    assert all(seconds >= 0 for seconds in parts.values()) and sum(parts.values()) > 0
    assert describe_laps({"a": 1.0, "b": 3.0, "c": 0.5, "d": 2.0, "e": 0.2}, parts=3) == "6.7 s (b 3.0, d 2.0, a 1.0)"


def test_a_refresh_keeps_the_snapshot_while_no_file_changed(api, spark, monkeypatch):
    """A refresh that lists the same files as the previous load keeps its snapshot (the API's writes are laid
    over it again); a table written in any layer the snapshot reads makes the next refresh load again."""
    monkeypatch.setattr(api, "settle_seconds", 0.0)  # no write is in flight in this test
    api.refresh()
    loaded = api._base
    api.refresh()
    assert list(api.refresh_seconds) == ["unchanged warehouse", "the API's writes laid over it"]
    assert api._base.runs is loaded.runs and api._base.inputs == loaded.inputs
    probe = api.settings.table("staging", "listing_probe")
    spark.sql(f"create table {probe} using parquet as select 1 as one")
    try:
        api.refresh()
        assert next(iter(api.refresh_seconds)) == "warehouse listing"
        assert api._base.inputs is not None and api._base.inputs != loaded.inputs
        assert api._base.runs is not loaded.runs and api._base.runs.table.to_pylist() == loaded.runs.table.to_pylist()
    finally:
        spark.sql(f"drop table {probe}")


def test_stats_in_marquezs_shape(api, base_url):
    for asset in ("lineage-events", "jobs", "datasets", "sources"):
        day = httpx.get(f"{base_url}/api/v1/stats/{asset}", params={"period": "DAY", "timezone": "UTC"})
        week = httpx.get(f"{base_url}/api/v1/stats/{asset}", params={"period": "WEEK", "timezone": "Europe/Paris"})
        assert day.status_code == week.status_code == 200
        assert len(day.json()) == 24 and len(week.json()) == 7
        first = day.json()[0]
        assert set(first) == ({"startInterval", "endInterval", "fail", "start", "complete", "abort"}
                              if asset == "lineage-events" else {"startInterval", "endInterval", "count"})
    # Every job was created long before the last day: the running total is all of them in every hour.
    jobs = httpx.get(f"{base_url}/api/v1/stats/jobs", params={"period": "DAY"}).json()
    assert {hour["count"] for hour in jobs} == {len(api.snapshot.jobs)}
    # Paris days start at 23:00 UTC in winter.
    week = httpx.get(f"{base_url}/api/v1/stats/datasets", params={"period": "WEEK", "timezone": "Europe/Paris"}).json()
    assert all(d["startInterval"].endswith(("T23:00:00Z", "T22:00:00Z")) for d in week)
    # On the day of Marquez's demo seed: its START and COMPLETE events, hour by hour.
    seeded = api.stats("lineage-events", "DAY", "UTC", now=SEED_START + timedelta(hours=1))
    assert sum(h["start"] for h in seeded) >= 13 and sum(h["complete"] for h in seeded) >= 13
    sources = api.stats("sources", "DAY", None, now=SEED_START + timedelta(days=1))
    assert sources[-1]["count"] >= 1  # the seed's dataSource facets name its sources
    for params in ({"period": "MONTH"}, {"period": "WEEK"}, {"period": "WEEK", "timezone": "Nowhere/City"}):
        refused = httpx.get(f"{base_url}/api/v1/stats/lineage-events", params=params)
        assert refused.status_code == 400 and refused.json()["code"] == 400


def test_lineage_graph_of_the_apples(base_url):
    body = httpx.get(f"{base_url}/api/v1/lineage",
                     params={"nodeId": f"dataset:{KITCHEN}:apple.pie", "depth": 20}).json()
    nodes = {n["id"]: n for n in body["graph"]}
    assert set(nodes) == {
        "dataset:backyard:crab.apples", "dataset:cupboard:apple.vinegar", "dataset:cupboard:sugar",
        "dataset:grandmas.kitchen:apple.cider", "dataset:grandmas.kitchen:apple.filling",
        "dataset:grandmas.kitchen:apple.pie", "dataset:grandmas.kitchen:apples",
        "dataset:grandmas.kitchen:cinnamon", "job:grandmas.kitchen:gather_apples",
        "job:grandmas.kitchen:prepare_apple_cider",
        "job:grandmas.kitchen:prepare_apple_filling", "job:grandmas.kitchen:prepare_apple_pie",
        "job:grandmas.kitchen:prepare_vinegar",
    }
    pie = nodes["job:grandmas.kitchen:prepare_apple_pie"]
    assert pie["type"] == "JOB" and pie["data"]["name"] == "prepare_apple_pie"
    assert pie["inEdges"] == [{"origin": "dataset:grandmas.kitchen:apple.filling",
                               "destination": "job:grandmas.kitchen:prepare_apple_pie"}]
    assert pie["outEdges"] == [{"origin": "job:grandmas.kitchen:prepare_apple_pie",
                                "destination": "dataset:grandmas.kitchen:apple.pie"}]
    assert [e["origin"] for e in nodes["dataset:grandmas.kitchen:apples"]["inEdges"]] == [
        "job:grandmas.kitchen:gather_apples"]
    # laurents-orchard:red.delicious is out: only gather_apples' older run read it, and the graph has each
    # job's current version (its latest run's inputs and outputs), as Marquez's.
    old_input = {"namespace": "laurents-orchard", "name": "red.delicious"}
    gathers = httpx.get(f"{base_url}/api/v1/namespaces/{KITCHEN}/jobs/gather_apples/versions").json()["versions"]
    assert old_input not in gathers[0]["inputs"] and old_input in gathers[1]["inputs"]
    # From a dataset the walk starts at its writer; depth counts jobs from there, as Marquez's.
    near = httpx.get(f"{base_url}/api/v1/lineage", params={"nodeId": f"dataset:{KITCHEN}:apple.pie", "depth": 0})
    assert {n["id"] for n in near.json()["graph"]} == {
        "dataset:grandmas.kitchen:apple.filling", "dataset:grandmas.kitchen:apple.pie",
        "job:grandmas.kitchen:prepare_apple_pie"}
    one = httpx.get(f"{base_url}/api/v1/lineage", params={"nodeId": f"dataset:{KITCHEN}:apple.pie", "depth": 1})
    assert {n["id"] for n in one.json()["graph"]} == {
        "dataset:grandmas.kitchen:apple.filling", "dataset:grandmas.kitchen:apple.pie",
        "job:grandmas.kitchen:prepare_apple_pie", "job:grandmas.kitchen:prepare_apple_filling",
        "dataset:cupboard:sugar", "dataset:grandmas.kitchen:apples", "dataset:grandmas.kitchen:cinnamon"}
    missing = httpx.get(f"{base_url}/api/v1/lineage", params={"nodeId": "dataset:nowhere:nothing"})
    assert missing.status_code == 404 and missing.json()["code"] == 404


def test_column_lineage_endpoint(client):
    body = client.get_column_lineage_by_dataset_field(FOOD, "public.delivery_7_days", "order_id", depth=1)
    nodes = {n["id"]: n for n in body["graph"]}
    assert set(nodes) == {f"datasetField:{FOOD}:public.delivery_7_days:order_id",
                          f"datasetField:{FOOD}:public.orders_7_days:order_id",
                          f"datasetField:{FOOD}:public.order_status:order_id"}
    start = nodes[f"datasetField:{FOOD}:public.delivery_7_days:order_id"]
    assert start["type"] == "DATASET_FIELD" and start["data"]["fieldType"] == "INTEGER"
    assert sorted(f["dataset"] for f in start["data"]["inputFields"]) == ["public.order_status", "public.orders_7_days"]
    deeper = client.get_column_lineage_by_dataset_field(FOOD, "public.delivery_7_days", "order_id", depth=2)
    assert f"datasetField:{FOOD}:public.orders:id" in {n["id"] for n in deeper["graph"]}
    down = client.get_column_lineage_by_dataset_field(FOOD, "public.orders", "id", depth=2, with_downstream=True)
    assert f"datasetField:{FOOD}:public.delivery_7_days:order_id" in {n["id"] for n in down["graph"]}
    spark_table = client.get_column_lineage_by_dataset("file", "/tmp/cll_test/tbl1", depth=1)
    agg = next(n for n in spark_table["graph"] if n["id"] == "datasetField:file:/tmp/cll_test/tbl1:agg")
    sources = {(f["dataset"], f["field"]): f for f in agg["data"]["inputFields"]}
    assert sources[("/tmp/cll_test/cll_source2", "c")]["transformations"][0]["subtype"] == "AGGREGATION"


def test_events_and_search(client, base_url):
    events = client.list_events(limit=5)
    assert events["totalCount"] == 37 and len(events["events"]) == 5
    assert events["events"][0]["eventTime"] >= events["events"][-1]["eventTime"]
    kitchen = client.list_events(namespace=KITCHEN, limit=100)
    assert kitchen["totalCount"] == 8
    assert {e["job"]["name"] for e in kitchen["events"]} >= {"gather_apples", "prepare_apple_pie"}
    # Marquez's window: `after` inclusive, `before` exclusive.
    first = min(kitchen["events"], key=lambda e: datetime.fromisoformat(e["eventTime"]))["eventTime"]
    window = {"after": first, "limit": 100, "sortDirection": "asc"}
    from_first = httpx.get(f"{base_url}/api/v1/events/lineage", params=window).json()["events"]
    assert min(datetime.fromisoformat(e["eventTime"]) for e in from_first) == datetime.fromisoformat(first)
    earlier = httpx.get(f"{base_url}/api/v1/events/lineage", params={"before": first, "limit": 100}).json()["events"]
    assert all(datetime.fromisoformat(e["eventTime"]) < datetime.fromisoformat(first) for e in earlier)
    found = httpx.get(f"{base_url}/api/v1/search", params={"q": "apple", "filter": "JOB"}).json()
    assert [r["nodeId"] for r in found["results"]] == [
        "job:grandmas.kitchen:gather_apples", "job:grandmas.kitchen:prepare_apple_cider",
        "job:grandmas.kitchen:prepare_apple_filling", "job:grandmas.kitchen:prepare_apple_pie"]
    any_kind = httpx.get(f"{base_url}/api/v1/search", params={"q": "apple%pie"}).json()
    assert {r["nodeId"] for r in any_kind["results"]} == {
        "dataset:grandmas.kitchen:apple.pie", "job:grandmas.kitchen:prepare_apple_pie"}


def test_lineage_show_text(api, warehouse, monkeypatch, capsys):
    text = render_text(api.graph, f"dataset:{KITCHEN}:apple.pie", 1, "upstream")
    assert text.splitlines() == [
        "dataset:grandmas.kitchen:apple.pie",
        "upstream:",
        "  <- job:grandmas.kitchen:prepare_apple_pie",
        "     <- dataset:grandmas.kitchen:apple.filling",
    ]
    import python_jobs.marquez_api.api as api_module
    from python_jobs.cli import main

    # The command's own snapshot load is what the `api` fixture already did on this warehouse.
    monkeypatch.setenv("LINEAGE_SCHEMA_PREFIX", warehouse.schema_prefix)
    monkeypatch.setattr(api_module, "MarquezReadApi", lambda spark, settings: api)
    assert main(["lineage", "show", KITCHEN, "apples", "--downstream", "--depth", "2"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[:2] == ["dataset:grandmas.kitchen:apples", "downstream:"]
    assert "  -> job:grandmas.kitchen:prepare_apple_cider" in printed
    assert "           -> dataset:cupboard:apple.vinegar" in printed


def test_page_route_answers(base_url):
    response = httpx.get(base_url + "/")
    try:
        import python_jobs.lineage_page.render  # noqa: F401
    except ImportError:
        assert response.status_code == 501 and response.json()["code"] == 501
    else:
        assert response.status_code == 200 and "apple.pie" in response.text


def test_the_same_server_collects_events(base_url, landing, client):
    """Producers and readers share one address, as with Marquez: POST lands, GET reads the warehouse."""
    transport = HttpTransport(HttpConfig.from_dict({"type": "http", "url": base_url}))
    event = run_event(run={"runId": "0000000c-0000-4000-8000-000000000000"}, eventType="COMPLETE")
    assert transport.emit(event).status_code == 201
    assert httpx.get(base_url + "/health").json()["accepted"] == 1
    assert client.get_namespace(KITCHEN)["name"] == KITCHEN  # reads answer beside the collector
    # The open landing file is preallocated with zeros after its last line.
    chunks = [chunk for path in landing.open_dir.iterdir() for chunk in path.read_bytes().split(b"\n")]
    lines = [line for line in chunks if line.strip(b"\0")]
    assert [json.loads(line)["run"]["runId"] for line in lines] == [event["run"]["runId"]]


FRESH_RUN = "0000000d-0000-4000-8000-000000000000"
FRESH_JOB = {"namespace": "fresh.jobs", "name": "fresh.loader"}
FRESH_OUTPUT = {"namespace": "fresh.store", "name": "fresh.table"}


def _fresh_answers(client: MarquezClient, base_url: str) -> dict:
    """What the read API says of the fresh run: run, job, its runs, namespaces, datasets, lineage."""
    job_node = f"job:{FRESH_JOB['namespace']}:{FRESH_JOB['name']}"
    return {
        "run": client.get_job_run(FRESH_RUN),
        "job": client.get_job(FRESH_JOB["namespace"], FRESH_JOB["name"]),
        "runs": client.list_job_runs(FRESH_JOB["namespace"], FRESH_JOB["name"]),
        "namespaces": [client.get_namespace(n) for n in ("fresh.jobs", "fresh.store")],
        "output": client.get_dataset(FRESH_OUTPUT["namespace"], FRESH_OUTPUT["name"]),
        "versions": client.list_dataset_versions(FRESH_OUTPUT["namespace"], FRESH_OUTPUT["name"]),
        "input": client.get_dataset(FOOD, "public.delivery_7_days"),
        "lineage": httpx.get(f"{base_url}/api/v1/lineage", params={"nodeId": job_node, "depth": 1}).json(),
    }


def test_tags_from_facets_and_job_types():
    facet = {"tags": {"tags": [{"key": "pii", "value": "true", "source": "USER"}, {"key": "team"},
                               {"key": "email_tag", "field": "email"}, "not-a-tag"]}}
    assert tag_names(facet) == ["pii", "team"]  # a tag naming a field belongs to the field
    assert tag_names({}) == [] and tag_names({"tags": {"tags": "x"}}) == []
    assert job_type({"jobType": {"processingType": "STREAMING"}}) == "STREAM"
    assert job_type({"jobType": {"processingType": "BATCH"}}) == job_type({}) == "BATCH"


def _hour(hour: int | None) -> datetime | None:
    return None if hour is None else datetime(2026, 1, 1, hour, tzinfo=UTC)


def test_runs_sort_newest_start_first_nulls_last():
    t = _hour
    runs = pa.table({"job_uuid": ["j"] * 4, "uuid": ["a", "b", "c", "d"],
                     "started_at": [t(1), None, t(3), None], "created_at": [t(1), t(5), t(3), t(6)]})
    assert [r["uuid"] for r in slices_by(runs, "job_uuid", RUN_ORDER).rows("j")] == ["c", "a", "d", "b"]


def test_stats_intervals():
    now = datetime(2026, 3, 29, 12, 30, tzinfo=UTC)  # the day Paris moves to summer time
    day = intervals("DAY", None, now)
    assert len(day) == 24 and day[-1].start == datetime(2026, 3, 29, 12, tzinfo=UTC)
    week = intervals("week", "Europe/Paris", now)
    assert [i.start.hour for i in week] == [23] * 7 and week[-1].end == datetime(2026, 3, 29, 22, tzinfo=UTC)


def test_sources_from_data_source_facets(client):
    listed = client.list_sources()
    assert [s["name"] for s in listed["sources"]] == ["file", "food_delivery_db"] and listed["totalCount"] == 2
    food = client.get_source("food_delivery_db")
    # The seed's URI carries a password: the answer masks it.
    assert food["connectionUrl"] == "postgres://food_delivery:****@postgres:5432/food_delivery"
    assert food["type"] == "POSTGRES" and food["createdAt"].startswith("2026-01-0") and food["updatedAt"]
    assert client.get_source("file")["type"] == "UNKNOWN"
    with pytest.raises(APIError) as missing:
        client.get_source("nowhere")
    assert status_of(missing) == (404, {"code": 404, "message": "Source 'nowhere' not found."})


def test_source_uris_lose_their_password_and_keep_the_rest():
    assert redacted("postgres://me:secret@db:5432/x?ssl=1") == "postgres://me:****@db:5432/x?ssl=1"
    assert redacted("postgres://me@db/x") == "postgres://me@db/x"
    assert redacted("s3://bucket/a:b@c") == "s3://bucket/a:b@c"
    assert redacted("file") == "file" and source_type("file") == "UNKNOWN"
    assert source_type("postgresql+psycopg://h/db") == "POSTGRESQL+PSYCOPG"


# -- job versions and point-in-time lineage -----------------------------------------------------
# These tests add events to the shared warehouse (a namespace of their own) and rebuild it: they
# come last, after the tests that count the corpus's events, jobs and runs.

VERSIONS_NS = "versions.test"
VERSIONS_DB = "versions.db"
MIX_RUNS = ("0000000a-0000-4000-8000-000000000001", "0000000a-0000-4000-8000-000000000002")
REPORT_RUN = "0000000a-0000-4000-8000-000000000003"
SYMLINK_RUNS = ("0000000a-0000-4000-8000-000000000004", "0000000a-0000-4000-8000-000000000005")
MIX_LOCATION = "https://git.example.com/pipelines/mix.py"
BEFORE_CHANGE, AFTER_CHANGE = "2026-02-01T12:00:00Z", "2026-02-02T12:00:00Z"
FACET = {"_producer": "https://example.com/tests", "_schemaURL": "https://openlineage.io/spec/facets/1-0-0/x.json"}


def _versioned_run(run_id: str, job: str, start: str, inputs: list[str], outputs: list[str]) -> list[dict]:
    """START at ``start`` (``2026-02-01T00``) and COMPLETE ten minutes later, with a nominal time, a
    parent and a source code location."""
    run = {"runId": run_id, "facets": {
        "nominalTime": {**FACET, "nominalStartTime": f"{start}:00:00Z", "nominalEndTime": f"{start}:30:00Z"},
        "parent": {**FACET, "run": {"runId": "0000000a-0000-4000-8000-0000000000ff"},
                   "job": {"namespace": VERSIONS_NS, "name": "orchestrator"}},
    }}
    job_body = {"namespace": VERSIONS_NS, "name": job,
                "facets": {"sourceCodeLocation": {**FACET, "type": "git", "url": MIX_LOCATION}}}
    datasets = {
        "inputs": [{"namespace": VERSIONS_DB, "name": name} for name in inputs],
        "outputs": [{"namespace": VERSIONS_DB, "name": name,
                     "facets": {"schema": {**FACET, "fields": [{"name": "x", "type": "INT"}]}}} for name in outputs],
    }
    return [run_event(eventType=kind, eventTime=f"{start}:{minute}:00Z", run=run, job=job_body, **datasets)
            for kind, minute in (("START", "00"), ("COMPLETE", "10"))]


HDFS, HIVE = "hdfs://namenode:8020", "hive://metastore:9083"
TABLE_FILES, TABLE = "/warehouse/sales.db/orders", "sales.orders"


def _symlinked_runs() -> list[dict]:
    """``spark_write_orders`` writes the table's files, with the table as their symlink; then
    ``hive_report`` reads the table by its name."""
    written = {"namespace": HDFS, "name": TABLE_FILES, "facets": {"symlinks": {**FACET, "identifiers": [
        {"namespace": HIVE, "name": TABLE, "type": "TABLE"}]}}}
    return [
        run_event(eventType="COMPLETE", eventTime="2026-02-03T01:00:00Z", run={"runId": SYMLINK_RUNS[0]},
                  job={"namespace": VERSIONS_NS, "name": "spark_write_orders"}, inputs=[], outputs=[written]),
        run_event(eventType="COMPLETE", eventTime="2026-02-03T02:00:00Z", run={"runId": SYMLINK_RUNS[1]},
                  job={"namespace": VERSIONS_NS, "name": "hive_report"},
                  inputs=[{"namespace": HIVE, "name": TABLE}], outputs=[]),
    ]


@pytest.fixture(scope="module")
def versioned(warehouse, spark, api, tmp_path_factory) -> MarquezReadApi:
    """Job ``mix`` read ``a`` on Feb 1st and ``b`` on Feb 2nd (writing ``out`` both times); ``report``
    read ``out`` on Feb 1st. And a Spark job writing a table's files, named by a symlink that another
    job reads (test_symlinks_join_the_table_and_its_files)."""
    events = (_versioned_run(MIX_RUNS[0], "mix", "2026-02-01T00", ["a"], ["out"])
              + _versioned_run(REPORT_RUN, "report", "2026-02-01T06", ["out"], ["report"])
              + _versioned_run(MIX_RUNS[1], "mix", "2026-02-02T00", ["b"], ["out"])
              + _symlinked_runs())
    folder = tmp_path_factory.mktemp("versioned-events")
    (folder / "versioned.json").write_text(json.dumps(events))
    report = ingest_lineage(spark, warehouse, [folder])
    assert report.rejected == 0 and report.accepted == len(events)
    run_dbt(warehouse, API_BUILD)
    api.refresh()
    return api


def _versions_url(base_url: str, job: str) -> str:
    return f"{base_url}/api/v1/namespaces/{VERSIONS_NS}/jobs/{job}/versions"


def test_a_refresh_extends_the_kept_run_details(versioned, spark):
    """``versioned``'s refresh read only the facet rows published since the previous snapshot (run_details.py)
    and merged them into its kept details: the same as reading every row again."""
    extended = versioned._base.run_details
    full = load_snapshot(spark, versioned.settings).run_details
    assert extended is not None and full is not None and extended.watermark.through == full.watermark.through
    assert 0 < extended.rows_read < full.rows_read  # the new runs' values only, not all of them again
    assert extended.run_uuids.equals(full.run_uuids)
    assert extended.location.equals(full.location) and extended.nominal.equals(full.nominal)
    nominal = full.nominal.to_pylist()[full.run_uuids.to_pylist().index(MIX_RUNS[1])]
    assert (nominal["v0"], nominal["v1"]) == ("2026-02-02T00:00:00Z", "2026-02-02T00:30:00Z")


def test_a_refresh_reads_only_the_new_files_of_the_stored_events(versioned, spark):
    """``versioned``'s refresh read the raw rows of the files its ingest added, not every stored event
    (stored_events.py): the same index, newest first, as a fresh load."""
    extended = versioned._base.stored_events
    full = load_snapshot(spark, versioned.settings).stored_events
    assert extended is not None and full is not None and extended.files == full.files
    assert 0 < extended.rows_read < full.rows_read == full.table.num_rows
    assert extended.table.to_pylist() == full.table.to_pylist()


def test_a_refresh_reads_only_the_schema_versions_built_since(versioned, spark):
    """``versioned``'s refresh read the schema versions and field mappings built past the previous snapshot's
    mark (schema_versions.py): the same versions and fields as a fresh load."""
    extended, full = versioned._base, load_snapshot(spark, versioned.settings)
    assert extended.kept_schemas is not None and full.kept_schemas is not None
    assert extended.kept_schemas.watermark.through == full.kept_schemas.watermark.through is not None
    assert 0 < extended.kept_schemas.rows_read < full.kept_schemas.rows_read
    assert not full.kept_schemas.incomplete and not extended.kept_schemas.incomplete
    assert extended.schema_fields == full.schema_fields and extended.schema_versions == full.schema_versions
    out = full.datasets[(VERSIONS_DB, "out")]
    assert [f["name"] for f in full.schema_fields[out["schemaVersion"]]] == ["x"]


def test_run_details_look_up_only_the_bodies_they_lack(versioned, spark):
    """Past a mark, each winning row takes its body's values from the bodies kept, else from those stored since
    the mark, else by hash in the store (run_details.py). ``mix`` and ``report`` share one location body,
    stored with the first of their events: read past that event, the later rows' body is none of the new ones."""
    settings = versioned.settings
    lineage = settings.schema("lineage")
    through = publication_mark(spark, lineage)
    first = spark.sql(f"""
        select min(ingest_seq) as seq from {lineage}.facet_refs
        where name = 'sourceCodeLocation' and run_id = '{MIX_RUNS[0]}'
    """).first().seq
    assert through is not None and first is not None

    rows, kept, looked_up = read_past(spark, settings, LOCATION, first, through, BodyValues())
    runs = {row["run_id"] for row in rows.to_pylist()}
    assert {MIX_RUNS[1], REPORT_RUN} <= runs and MIX_RUNS[0] in runs  # its COMPLETE is past its START
    assert looked_up == 1 and {row["v0"] for row in rows.to_pylist()} == {MIX_LOCATION}
    [body_hash] = kept.values
    assert kept.values[body_hash] == (MIX_LOCATION,)

    # A kept body is not looked up: its kept values are used as they are.
    rows, _, looked_up = read_past(spark, settings, LOCATION, first, through, BodyValues({body_hash: ("kept",)}))
    assert looked_up == 0 and {row["v0"] for row in rows.to_pylist()} == {"kept"}


def test_a_refresh_reads_again_only_the_latest_runs_whose_facets_changed(versioned, spark):
    """``versioned``'s refresh kept the latest runs' facets and read only the runs with winner rows published
    since, or new to it (latest_run_facets.py): the same facets as a fresh load."""
    extended = versioned._base.latest_facets
    full = load_snapshot(spark, versioned.settings).latest_facets
    assert extended.watermark.through == full.watermark.through
    assert 0 < extended.runs_read < full.runs_read == len(full.text)
    assert extended.text == full.text and extended.members == full.members and extended.bodies == full.bodies
    assert json.loads(extended.text[MIX_RUNS[1]])["nominalTime"]["nominalStartTime"] == "2026-02-02T00:00:00Z"
    # Only the bodies neither kept nor held before were looked up in the store.
    assert 0 < extended.bodies_read < full.bodies_read == len(full.bodies)
    # The text is the current_run_facets view's, to the byte, for every latest run (none without facets).
    view = {row.run_id: row.facets for row in spark.table(versioned.settings.table("lineage", "current_run_facets"))
            .where(F.col("run_id").isin(list(full.text))).select("run_id", "facets").collect()}
    assert {run: text for run, text in full.text.items() if text} == view


def test_facet_names_are_escaped_as_spark_escapes_them(spark):
    """The latest runs' facets put their object together in Python (latest_run_facets.py): a name is written
    as the view's ``to_json`` writes it."""
    names = ["plain", 'quo"te', "back\\slash", "tab\tnew\nline", "bell\x07 del\x7f", "ünï €", "\x1f"]
    rows = spark.createDataFrame([(name,) for name in names], "name string").selectExpr(
        "name", "to_json(array(name)) as written").collect()
    assert {row.name: "[" + json_string(row.name) + "]" for row in rows} == {row.name: row.written for row in rows}


def test_a_refresh_extends_the_kept_runs(versioned, spark):
    """``versioned``'s refresh aggregated only the run events past the previous snapshot's mark
    (run_summaries.py) and combined them with its kept runs: the same runs as a fresh load, and as the
    ``runs`` view (whose rule the summaries repeat)."""
    extended = versioned._base
    full = load_snapshot(spark, versioned.settings)
    assert extended.run_summaries is not None and full.run_summaries is not None
    assert extended.run_summaries.watermark.through == full.run_summaries.watermark.through is not None
    assert 0 < extended.run_summaries.rows_read < full.run_summaries.rows_read  # the new runs, not all again
    assert extended.runs is not None and full.runs is not None
    assert extended.runs.table.to_pylist() == full.runs.table.to_pylist()
    assert extended.run_summaries.state_keys.equals(full.run_summaries.state_keys)
    columns = ["uuid", "job_uuid", "created_at", "updated_at", "current_run_state", "started_at", "ended_at"]
    view = spark.table(versioned.settings.table("lineage", "runs")).select(*columns).toArrow()
    assert sorted(full.runs.table.select(columns).to_pylist(), key=lambda run: run["uuid"]) == sorted(
        view.cast(full.runs.table.select(columns).schema).to_pylist(), key=lambda run: run["uuid"])


def test_a_refresh_extends_the_kept_inputs_and_outputs(versioned, spark):
    """``versioned``'s refresh read only the rows of the builds past the previous snapshot's mark (run_io.py)
    and replaced the changed tails of its kept rows: the same rows as a fresh load, which has the rows of the
    ``runs_input_mapping`` and ``runs_output_mapping`` views."""
    extended = versioned._base
    full = load_snapshot(spark, versioned.settings)
    assert extended.kept_run_io is not None and full.kept_run_io is not None
    assert extended.timeline_watermark is not None and full.timeline_watermark is not None
    assert extended.timeline_watermark.through == full.timeline_watermark.through is not None
    assert 0 < extended.kept_run_io.rows_read < full.kept_run_io.rows_read  # the changed tails, not all again
    assert extended.run_io is not None and full.run_io is not None
    assert extended.run_io.table.to_pylist() == full.run_io.table.to_pylist()
    assert extended.kept_run_io.table.to_pylist() == full.kept_run_io.table.to_pylist()
    lineage = versioned.settings.schema("lineage")
    view = spark.sql(f"""
        select m.run_uuid, 'input' as io_type, d.namespace_name, d.name, m.dataset_version_uuid
        from {lineage}.runs_input_mapping as m join {lineage}.datasets as d on m.dataset_uuid = d.uuid
        union all
        select m.run_uuid, 'output' as io_type, d.namespace_name, d.name, m.dataset_version_uuid
        from {lineage}.runs_output_mapping as m join {lineage}.datasets as d on m.dataset_uuid = d.uuid
    """).collect()
    served = ["run_uuid", "io_type", "namespace_name", "name", "dataset_version_uuid"]
    assert sorted(tuple(row[c] for c in served) for row in full.run_io.table.to_pylist()) == sorted(
        tuple(row) for row in view)


def test_a_refresh_extends_the_kept_dataset_versions(versioned, spark):
    """``versioned``'s refresh read only the versions of the builds past the previous snapshot's mark and the
    pointers of those and the carried versions (dataset_versions.py): the same versions as a fresh load, which
    has the rows of the ``dataset_versions`` view."""
    extended = versioned._base
    full = load_snapshot(spark, versioned.settings)
    assert extended.kept_versions is not None and full.kept_versions is not None
    assert 0 < extended.kept_versions.rows_read < full.kept_versions.rows_read  # the changed tails only
    assert extended.versions is not None and full.versions is not None
    assert extended.versions.table.to_pylist() == full.versions.table.to_pylist()
    assert extended.kept_versions.table.equals(full.kept_versions.table)
    # The new pointers are read without ranking every pointer of the view, and only past the mark.
    changes = timeline_changes(spark, versioned.settings, None)
    after = (changes.watermark.through or 1) - 1
    newer = TimelineChanges(changes.watermark, after, changes.tails)
    plan = new_pointer_rows(spark, versioned.settings, newer)._jdf.queryExecution().optimizedPlan().toString()
    assert "row_number" not in plan
    scan = r"\n[\s:]*\+- Relation \S+int_lineage_version_schema_revisions"
    assert re.search(rf"Filter .*build_seq#\d+L > {after}\).*{scan}", plan)
    served = ["dataset_uuid", "version", "created_at", "dataset_schema_version_uuid", "run_uuid",
              "is_current_version"]
    view = spark.table(versioned.settings.table("lineage", "dataset_versions")).selectExpr(
        "dataset_uuid", "uuid as version", "created_at", "dataset_schema_version_uuid", "run_uuid",
        "is_current_version").toArrow()
    loaded = full.versions.table.select(served)
    assert sorted(tuple(row.values()) for row in loaded.to_pylist()) == sorted(
        tuple(row.values()) for row in view.cast(view.schema.set(2, loaded.schema.field(2))).to_pylist())


def test_job_versions_follow_the_changed_inputs(versioned, base_url, client):
    """``mix`` read ``a`` then ``b``: two versions, newest first; the job's inputs are the new ones."""
    listed = httpx.get(_versions_url(base_url, "mix")).json()
    assert listed["totalCount"] == 2
    new, old = listed["versions"]
    assert [v["inputs"] for v in (new, old)] == [[{"namespace": VERSIONS_DB, "name": "b"}],
                                                 [{"namespace": VERSIONS_DB, "name": "a"}]]
    assert new["outputs"] == old["outputs"] == [{"namespace": VERSIONS_DB, "name": "out"}]
    assert new["id"] == {"namespace": VERSIONS_NS, "name": "mix", "version": new["version"]}
    assert (new["name"], new["namespace"], new["location"]) == ("mix", VERSIONS_NS, MIX_LOCATION)
    assert new["createdAt"] == "2026-02-02T00:00:00Z" and old["createdAt"] == "2026-02-01T00:00:00Z"
    assert new["latestRun"]["id"] == MIX_RUNS[1] and old["latestRun"]["id"] == MIX_RUNS[0]
    assert new["version"] == job_version_id(VERSIONS_NS, "mix", [(VERSIONS_DB, "b")], [(VERSIONS_DB, "out")],
                                            MIX_LOCATION)
    paged = httpx.get(_versions_url(base_url, "mix"), params={"limit": 1, "offset": 1}).json()
    assert paged == {"versions": [old], "totalCount": 2}
    assert httpx.get(f"{_versions_url(base_url, 'mix')}/{old['version']}").json() == old
    missing = httpx.get(f"{_versions_url(base_url, 'mix')}/00000000-0000-3000-8000-000000000000")
    assert missing.status_code == 404 and missing.json()["code"] == 404
    job = client.get_job(VERSIONS_NS, "mix")
    assert job["currentVersion"] == new["version"]
    assert job["inputs"] == [{"namespace": VERSIONS_DB, "name": "b"}]  # not a: the current version's only
    assert job["outputs"] == [{"namespace": VERSIONS_DB, "name": "out"}]
    assert (job["parentJobName"], job["parentJobUuid"]) == ("orchestrator", keys.job_uuid(VERSIONS_NS, "orchestrator"))
    kitchen = client.get_job(KITCHEN, "prepare_apple_filling")  # the corpus: one version, no parent facet
    assert kitchen["currentVersion"] == httpx.get(
        _versions_url(base_url, "prepare_apple_filling").replace(VERSIONS_NS, KITCHEN)).json()["versions"][0]["version"]
    assert kitchen["parentJobName"] is None and kitchen["parentJobUuid"] is None


def test_runs_carry_their_job_version_dataset_versions_and_nominal_times(versioned, base_url, client):
    runs = {r["id"]: r for r in client.list_job_runs(VERSIONS_NS, "mix")["runs"]}
    listed = httpx.get(_versions_url(base_url, "mix")).json()["versions"]
    versions = {v["latestRun"]["id"]: v["version"] for v in listed}
    for run_id in MIX_RUNS:
        run = runs[run_id]
        assert run["jobVersion"] == {"namespace": VERSIONS_NS, "name": "mix", "version": versions[run_id]}
        [written] = run["outputDatasetVersions"]
        assert written["datasetVersionId"] == {"namespace": VERSIONS_DB, "name": "out",
                                               "version": keys.dataset_version_uuid(VERSIONS_DB, "out", run_id)}
        assert written["facets"] == {}
        resolved = client.get_dataset_version(VERSIONS_DB, "out", written["datasetVersionId"]["version"])
        assert resolved["version"] == written["datasetVersionId"]["version"]
        assert resolved["createdByRun"]["id"] == run_id
        assert resolved["createdByRun"]["jobVersion"] == run["jobVersion"]
    assert (runs[MIX_RUNS[0]]["nominalStartTime"], runs[MIX_RUNS[0]]["nominalEndTime"]) == (
        "2026-02-01T00:00:00Z", "2026-02-01T00:30:00Z")
    # ``report`` read the version of ``out`` that mix's first run wrote.
    [read] = client.get_job_run(REPORT_RUN)["inputDatasetVersions"]
    assert read["datasetVersionId"]["name"] == "out"
    assert client.get_dataset_version(VERSIONS_DB, "out", read["datasetVersionId"]["version"])["createdByRun"][
        "id"] == MIX_RUNS[0]
    assert client.get_job_run(SPARK_RUN_ID)["nominalStartTime"] is None  # no nominalTime facet


def _graph(base_url: str, node_id: str, **params: object) -> dict[str, dict]:
    response = httpx.get(f"{base_url}/api/v1/lineage", params={"nodeId": node_id, **params})
    assert response.status_code == 200, response.text
    return {n["id"]: n for n in response.json()["graph"]}


def test_lineage_as_of_a_moment(versioned, base_url):
    mix, a, b, out = (f"job:{VERSIONS_NS}:mix", f"dataset:{VERSIONS_DB}:a", f"dataset:{VERSIONS_DB}:b",
                      f"dataset:{VERSIONS_DB}:out")
    now = _graph(base_url, mix)
    assert [e["origin"] for e in now[mix]["inEdges"]] == [b] and a not in now
    before = _graph(base_url, mix, asOf=BEFORE_CHANGE)
    assert [e["origin"] for e in before[mix]["inEdges"]] == [a]
    assert b not in before  # b did not exist yet
    assert before[mix]["data"]["latestRun"]["id"] == MIX_RUNS[0]
    assert before[mix]["data"]["inputs"] == [{"namespace": VERSIONS_DB, "name": "a"}]
    old_version = httpx.get(_versions_url(base_url, "mix")).json()["versions"][1]["version"]
    assert before[mix]["data"]["currentVersion"] == old_version
    assert before[out]["data"]["currentVersion"] == keys.dataset_version_uuid(VERSIONS_DB, "out", MIX_RUNS[0])
    assert now[out]["data"]["currentVersion"] == keys.dataset_version_uuid(VERSIONS_DB, "out", MIX_RUNS[1])
    after = _graph(base_url, mix, asOf=AFTER_CHANGE)
    assert [e["origin"] for e in after[mix]["inEdges"]] == [b] and set(after) == set(now)
    # From a dataset, the graph starts at its newest writer (or reader) of any version, as Marquez's:
    # ``a`` was read by mix's old version only, so it shows alone beside mix's current graph.
    from_a = _graph(base_url, a)
    assert mix in from_a and from_a[a]["inEdges"] == from_a[a]["outEdges"] == []
    assert set(_graph(base_url, a, asOf=BEFORE_CHANGE)) >= {a, mix, out}
    for bad in ("yesterday", "2026-13-01T00:00:00Z"):
        refused = httpx.get(f"{base_url}/api/v1/lineage", params={"nodeId": mix, "asOf": bad})
        assert refused.status_code == 400 and refused.json()["code"] == 400
    too_early = httpx.get(f"{base_url}/api/v1/lineage", params={"nodeId": mix, "asOf": "2020-01-01T00:00:00Z"})
    assert too_early.status_code == 404


def test_symlinks_join_the_table_and_its_files(versioned, base_url, client):
    """The reader names the table, the writer its files: one graph, whichever name it starts from."""
    files, table = f"dataset:{HDFS}:{TABLE_FILES}", f"dataset:{HIVE}:{TABLE}"
    writer, reader = f"job:{VERSIONS_NS}:spark_write_orders", f"job:{VERSIONS_NS}:hive_report"
    from_reader = _graph(base_url, reader)
    assert set(from_reader) == {writer, files, reader} and table not in from_reader
    assert [e["origin"] for e in from_reader[reader]["inEdges"]] == [files]
    assert [e["destination"] for e in from_reader[files]["outEdges"]] == [reader]
    assert set(_graph(base_url, table)) == set(_graph(base_url, files)) == set(from_reader)
    assert set(_graph(base_url, table, asOf="2026-02-03T03:00:00Z")) == set(from_reader)  # asOf resolves it too
    too_early = httpx.get(f"{base_url}/api/v1/lineage", params={"nodeId": table, "asOf": BEFORE_CHANGE})
    assert too_early.status_code == 404 and "as of" in too_early.json()["message"]
    # The reader's events name the table, so it keeps its own entry; the job's inputs, from the graph, name
    # the main dataset.
    assert client.get_dataset(HIVE, TABLE)["id"] == {"namespace": HIVE, "name": TABLE}
    assert client.get_job(VERSIONS_NS, "hive_report")["inputs"] == [{"namespace": HDFS, "name": TABLE_FILES}]


def test_lineage_page_as_of(versioned, base_url):
    page = httpx.get(base_url + "/", params={"nodeId": f"job:{VERSIONS_NS}:mix", "asOf": BEFORE_CHANGE})
    assert page.status_code == 200 and 'id="as-of"' in page.text
    assert f'"asOf":"{BEFORE_CHANGE}"' in page.text
    assert f"dataset:{VERSIONS_DB}:a" in page.text and f"dataset:{VERSIONS_DB}:b" not in page.text
    refused = httpx.get(base_url + "/", params={"asOf": "not a time"})
    assert refused.status_code == 400


# -- every marquez_client method ---------------------------------------------------------------
# Last, as the versions tests: its writes add a namespace, a source and events to the shared warehouse.

CLIENT_NS = "client.calls"


MORE_MIX_RUNS = ("0000000a-0000-4000-8000-000000000006", "0000000a-0000-4000-8000-000000000007")
LATER_REPORT_RUN = "0000000a-0000-4000-8000-000000000008"


def _versions_answers(client: MarquezClient, base_url: str) -> dict:
    """What the read API says of ``mix`` and ``report``'s versions and runs, the parts the live overlay derives
    (facets and schemas are known only after the build)."""
    def run(run_id: str) -> dict:
        body = client.get_job_run(run_id)
        return {"state": body["state"], "jobVersion": body["jobVersion"],
                "nominal": (body["nominalStartTime"], body["nominalEndTime"]),
                "read": [v["datasetVersionId"] for v in body["inputDatasetVersions"]],
                "wrote": [v["datasetVersionId"] for v in body["outputDatasetVersions"]]}

    answers: dict = {run_id: run(run_id) for run_id in (*MIX_RUNS, *MORE_MIX_RUNS, REPORT_RUN, LATER_REPORT_RUN)}
    for job in ("mix", "report"):
        answers[job] = {key: value for key, value in client.get_job(VERSIONS_NS, job).items()
                        if key in ("currentVersion", "inputs", "outputs", "latestRun")}
        answers[job]["latestRun"] = answers[job]["latestRun"]["id"]
        answers[f"{job} versions"] = [
            (v["version"], v["createdAt"], v["latestRun"]["id"], v["inputs"], v["outputs"])
            for v in httpx.get(_versions_url(base_url, job)).json()["versions"]]
        answers[f"{job} runs"] = [r["id"] for r in client.list_job_runs(VERSIONS_NS, job)["runs"]]
    answers["lineage"] = _graph(base_url, f"job:{VERSIONS_NS}:mix", depth=2)
    for node in answers["lineage"].values():  # a job's parent and its latest run's facets come from facets
        for key in ("parentJobName", "parentJobUuid"):
            node["data"].pop(key, None)
        if node["data"].get("latestRun"):
            node["data"]["latestRun"].pop("facets")
    return answers


def _emit_fresh_run(transport: HttpTransport) -> None:
    """A run of a job and datasets the warehouse has never seen: START and COMPLETE."""
    delivery = {"namespace": FOOD, "name": "public.delivery_7_days"}
    start = run_event(eventType="START", eventTime="2026-02-01T10:00:00.123456Z", run={"runId": FRESH_RUN},
                      job=FRESH_JOB, inputs=[delivery], outputs=[FRESH_OUTPUT])
    complete = run_event(eventType="COMPLETE", eventTime="2026-02-01T10:02:00Z", run={"runId": FRESH_RUN},
                         job=FRESH_JOB, inputs=[], outputs=[FRESH_OUTPUT])
    for event in (start, complete):
        assert transport.emit(event).status_code == 201


def _check_fresh_run(client: MarquezClient, before: dict) -> None:
    delivery = {"namespace": FOOD, "name": "public.delivery_7_days"}
    run = before["run"]
    assert (run["state"], run["startedAt"], run["endedAt"], run["durationMs"]) == (
        "COMPLETED", "2026-02-01T10:00:00.123456Z", "2026-02-01T10:02:00Z", 119876)
    current = client.get_dataset(FOOD, "public.delivery_7_days")["currentVersion"]
    assert run["inputVersions"] == [{**delivery, "version": current}]
    assert run["outputVersions"] == [{**FRESH_OUTPUT, "version": before["output"]["currentVersion"]}]
    job = before["job"]
    assert job["inputs"] == [delivery] and job["outputs"] == [FRESH_OUTPUT]
    assert job["latestRun"]["id"] == FRESH_RUN and before["runs"]["totalCount"] == 1
    assert before["versions"]["versions"][0]["createdByRun"]["id"] == FRESH_RUN
    job_node = f"job:{FRESH_JOB['namespace']}:{FRESH_JOB['name']}"
    edges = {(e["origin"], e["destination"]) for node in before["lineage"]["graph"] for e in node["outEdges"]
             if job_node in (e["origin"], e["destination"])}
    assert edges == {(f"dataset:{FOOD}:public.delivery_7_days", job_node),
                     (job_node, f"dataset:{FRESH_OUTPUT['namespace']}:{FRESH_OUTPUT['name']}")}


def _check_spliced_runs(before: dict) -> None:
    old, new = (job_version_id(VERSIONS_NS, "mix", [(VERSIONS_DB, name)], [(VERSIONS_DB, "out")], MIX_LOCATION)
                for name in ("a", "b"))
    unfinished = job_version_id(VERSIONS_NS, "mix", [(VERSIONS_DB, "b"), (VERSIONS_DB, "c")],
                                [(VERSIONS_DB, "out")], MIX_LOCATION)
    assert before["mix runs"] == [MORE_MIX_RUNS[0], MORE_MIX_RUNS[1], MIX_RUNS[1], MIX_RUNS[0]]
    assert [(v[0], v[2]) for v in before["mix versions"]] == [
        (unfinished, MORE_MIX_RUNS[1]), (new, MIX_RUNS[1]), (old, MORE_MIX_RUNS[0])]
    assert before["mix"] == {"currentVersion": old, "inputs": [{"namespace": VERSIONS_DB, "name": "a"}],
                             "outputs": [{"namespace": VERSIONS_DB, "name": "out"}], "latestRun": MORE_MIX_RUNS[0]}
    assert before[MIX_RUNS[0]]["jobVersion"]["version"] == before[MORE_MIX_RUNS[0]]["jobVersion"]["version"] == old
    assert (before[MORE_MIX_RUNS[1]]["state"], before[MORE_MIX_RUNS[1]]["jobVersion"]["version"]) == (
        "RUNNING", unfinished)
    assert before[MORE_MIX_RUNS[0]]["nominal"] == ("2026-02-03T00:00:00Z", "2026-02-03T00:30:00Z")
    assert before[LATER_REPORT_RUN]["read"] == [{"namespace": VERSIONS_DB, "name": "out", "version":
                                                 keys.dataset_version_uuid(VERSIONS_DB, "out", MORE_MIX_RUNS[0])}]


def test_accepted_events_read_at_once_and_the_same_after_the_build(
        versioned, app, api, base_url, client, landing, spark, warehouse):
    """A 201 is readable at once (the live overlay); the build round then absorbs it and the answers do not
    change. A run of a new job; and runs of jobs the snapshot has histories of, which the overlay splices into
    them (job_versions.spliced_history): ``mix`` reads ``a`` again on Feb 3rd (its first version again, now
    current) and, between its two built runs, starts a run reading ``b`` and ``c`` (a third version, never
    finished); ``report`` reads ``out`` after that."""
    transport = HttpTransport(HttpConfig.from_dict({"type": "http", "url": base_url}))
    _emit_fresh_run(transport)
    events = (_versioned_run(MORE_MIX_RUNS[0], "mix", "2026-02-03T00", ["a"], ["out"])
              + _versioned_run(MORE_MIX_RUNS[1], "mix", "2026-02-02T12", ["b", "c"], ["out"])[:1]
              + _versioned_run(LATER_REPORT_RUN, "report", "2026-02-03T06", ["out"], ["report"]))
    for event in events:
        assert transport.emit(event).status_code == 201
    before = {"fresh": _fresh_answers(client, base_url), "spliced": _versions_answers(client, base_url)}
    _check_fresh_run(client, before["fresh"])
    _check_spliced_runs(before["spliced"])

    # One build round as serve runs it: mark, seal, ingest + build, refresh.
    api.live.begin_round()
    app.state.collector.seal_now()
    report = run_round(spark, warehouse, landing, dbt_command=API_BUILD)
    assert report.built and report.ingest.accepted >= 2 + len(events)
    # The overlay still answers during the round.
    assert {"fresh": _fresh_answers(client, base_url), "spliced": _versions_answers(client, base_url)} == before
    api.refresh(absorbed=report.ok)
    assert api.live.pending_count() == 0
    after = {"fresh": _fresh_answers(client, base_url), "spliced": _versions_answers(client, base_url)}
    # The new version's schema version comes from the build (empty and merged schemas are keyed
    # there): null until then, as the README's freshness paragraph says. Everything else is the same.
    assert before["fresh"]["versions"]["versions"][0].pop("schemaVersion") is None
    assert after["fresh"]["versions"]["versions"][0].pop("schemaVersion") is not None
    assert after == before


def _names(rows: list[dict]) -> set[str]:
    return {row["name"] for row in rows}


def test_every_marquez_client_method(client, api):
    """Each method marquez-python has, as its users call it: the writes answer at once (the legacy
    writes through the live overlay) and the reads see them."""
    methods = {name for name in dir(MarquezClient) if not name.startswith("_")}
    called: set[str] = set()

    def call(name: str, *args, **kwargs):
        called.add(name)
        return getattr(client, name)(*args, **kwargs)

    namespace = call("create_namespace", CLIENT_NS, "data-team", "made by marquez_client")
    assert (namespace["name"], namespace["ownerName"], namespace["description"]) == (
        CLIENT_NS, "data-team", "made by marquez_client")
    assert call("get_namespace", CLIENT_NS) == namespace
    assert CLIENT_NS in _names(call("list_namespaces", limit=1000)["namespaces"])
    kitchen = call("create_namespace", KITCHEN, "grandma")  # an existing namespace keeps its creation time
    assert kitchen["ownerName"] == "grandma" and kitchen["createdAt"] < kitchen["updatedAt"]

    source = call("create_source", "client_pg", "postgresql", "postgresql://etl:hunter2@db:5432/wh", "the warehouse")
    assert (source["type"], source["connectionUrl"], source["description"]) == (
        "POSTGRESQL", "postgresql://etl:****@db:5432/wh", "the warehouse")
    assert call("get_source", "client_pg") == source
    assert "client_pg" in _names(call("list_sources")["sources"])

    orders, loaded = DatasetId(FOOD, "public.orders"), DatasetId(CLIENT_NS, "loaded")
    job = call("create_job", CLIENT_NS, "load", JobType.BATCH, location="https://git.example.com/load.py",
               inputs=[orders], outputs=[loaded], description="loads the orders")
    assert job["id"] == {"namespace": CLIENT_NS, "name": "load"} and job["type"] == "BATCH"
    run = call("create_job_run", CLIENT_NS, "load", nominal_start_time="2026-03-01T00:00:00Z",
               run_args={"full": "true"})
    assert run["state"] == "NEW" and run["nominalStartTime"] == "2026-03-01T00:00:00Z"
    assert call("mark_job_run_as_started", run["id"])["state"] == "RUNNING"
    dataset = call("create_dataset", CLIENT_NS, "loaded", DatasetType.DB_TABLE, "loaded", "client_pg",
                   description="the loaded orders", run_id=run["id"],
                   fields=[{"name": "order_id", "type": "INTEGER"}])
    assert dataset["id"] == {"namespace": loaded.namespace, "name": loaded.name}
    assert call("mark_job_run_as_completed", run["id"])["state"] == "COMPLETED"
    for name, state in (("mark_job_run_as_failed", "FAILED"), ("mark_job_run_as_aborted", "ABORTED")):
        other = call("create_job_run", CLIENT_NS, "load", run_id=str(uuid.uuid5(uuid.NAMESPACE_URL, name)))
        assert call(name, other["id"])["state"] == state

    assert call("get_job", CLIENT_NS, "load")["latestRun"]["id"] in {r["id"] for r in call(
        "list_job_runs", CLIENT_NS, "load")["runs"]}
    assert "load" in _names(call("list_jobs", CLIENT_NS)["jobs"])
    assert call("get_job_run", run["id"])["outputDatasetVersions"][0]["datasetVersionId"]["name"] == "loaded"
    assert call("get_dataset", CLIENT_NS, "loaded")["id"]["name"] == "loaded"
    assert "loaded" in _names(call("list_datasets", CLIENT_NS)["datasets"])
    # Two versions: the job's definition named it first (a version without a run), then the run wrote it.
    versions = call("list_dataset_versions", CLIENT_NS, "loaded")["versions"]
    [written] = [v for v in versions if v["createdByRun"] and v["createdByRun"]["id"] == run["id"]]
    assert len(versions) == 2 and versions[0] == written
    assert call("get_dataset_version", CLIENT_NS, "loaded", written["version"])["createdByRun"]["id"] == run["id"]

    assert call("create_tag", "client-made", "a tag from the client") == {
        "name": "client-made", "description": "a tag from the client"}
    assert "client-made" in call("tag_dataset", FOOD, "public.orders", "client-made")["tags"]
    tagged = call("tag_dataset_field", FOOD, "public.orders", "id", "client-made")
    assert {f["name"]: f["tags"] for f in tagged["fields"]}["id"] == ["CLIENT-MADE"]
    assert {"name": "client-made", "description": "a tag from the client"} in call("list_tags")["tags"]

    assert call("list_events")["events"] and call("list_events", FOOD)["events"]
    assert call("get_column_lineage_by_dataset", FOOD, "public.orders_7_days")["graph"]
    assert call("get_column_lineage_by_dataset_field", FOOD, "public.orders_7_days", "order_id")["graph"]
    assert call("get_column_lineage_by_job", FOOD, "etl_orders_7_days")["graph"]
    assert called == methods

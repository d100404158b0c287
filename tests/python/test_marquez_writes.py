"""The web UI's writes on the Marquez-compatible API: tags, tag descriptions and soft deletes.

The fold of the write log is tested alone (no Spark); then the shared corpus is built into a
warehouse of its own (these tests change what it shows, so they do not share test_marquez_api's),
served with LINEAGE_API_KEY set, written through Marquez's Python client where it has the call and
httpx otherwise, rebuilt, and read again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from marquez_client import MarquezClient
from marquez_corpus import (  # tests/python is on sys.path
    API_BUILD,
    PRODUCER,
    RUN_EVENT_URL,
    corpus_warehouse,
    prepare_corpus,
)

from python_jobs.dbt import run_dbt
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.landing import LandingLayout
from python_jobs.marquez_api import MarquezReadApi, read_routes
from python_jobs.marquez_api.curated import with_put_namespaces, without_nodes
from python_jobs.marquez_api.curation import (
    ADD_TAG,
    DELETE,
    PUT_NAMESPACE,
    PUT_SOURCE,
    PUT_TAG,
    REMOVE_TAG,
    CurationWrite,
    actor,
    fold,
    is_hidden,
)
from python_jobs.marquez_api.curation_store import writes_table
from python_jobs.marquez_api.graph import LineageGraph
from python_jobs.marquez_api.server import serve_app_in_thread
from python_jobs.marquez_api.sources import with_put_sources
from python_jobs.serve.app import CollectorConfig, create_app

KITCHEN = "grandmas.kitchen"
FOOD = "food_delivery"
KEY = "writes-test-key"
KEY_ACTOR = "key:" + hashlib.sha256(KEY.encode()).hexdigest()[:12]
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def write(seq: int, action: str, kind: str, namespace: str | None = None, name: str | None = None,
          field: str | None = None, tag: str | None = None, description: str | None = None,
          at: datetime = T0, attributes: str | None = None) -> CurationWrite:
    return CurationWrite(seq, action, kind, namespace, name, field, tag, description, "tester", "127.0.0.1",
                         at + timedelta(minutes=seq), attributes)


# -- the fold, alone ---------------------------------------------------------------------------

def test_fold_tags_in_write_order():
    writes = [
        write(3, REMOVE_TAG, "dataset", "ns", "d", tag="pii"),
        write(1, PUT_TAG, "tag", tag="pii", description="personal"),
        write(2, ADD_TAG, "dataset", "ns", "d", tag="pii"),
        write(4, ADD_TAG, "job", "ns", "j", tag="nightly"),  # never put: created without a description
        write(5, ADD_TAG, "dataset_field", "ns", "d", "email", "PII"),
        write(6, PUT_TAG, "tag", tag="pii", description="personal data"),
    ]
    state = fold(writes)
    assert state.tags_of("dataset", "ns", "d") == frozenset()  # added at 2, removed at 3
    assert state.tags_of("job", "ns", "j") == {"nightly"}
    assert state.field_tags("ns", "d") == {"email": {"PII"}}
    assert dict(state.tags) == {"pii": "personal data", "nightly": None, "PII": None}
    assert state.next_seq == 7
    assert fold(reversed(writes)) == state  # the order is write_seq's, not the rows'


def test_deletes_hide_until_a_later_event_names_the_entity():
    state = fold([write(1, DELETE, "dataset", "ns", "d"), write(2, DELETE, "namespace", "other"),
                  write(3, DELETE, "job", "ns", "j")])
    deleted = T0 + timedelta(minutes=1)
    assert is_hidden(state, {}, "dataset", "ns", "d")
    assert not is_hidden(state, {}, "dataset", "ns", "e") and not is_hidden(state, {}, "namespace", "ns")
    # An event at the delete time or before does not bring it back; one after does.
    assert is_hidden(state, {("dataset", "ns", "d"): deleted}, "dataset", "ns", "d")
    assert not is_hidden(state, {("dataset", "ns", "d"): deleted + timedelta(seconds=1)}, "dataset", "ns", "d")
    # A deleted namespace hides its datasets and jobs, and itself, each until an event names it.
    assert is_hidden(state, {}, "namespace", "other") and is_hidden(state, {}, "job", "other", "x")
    later = T0 + timedelta(hours=1)
    seen = {("dataset", "other", "y"): later, ("namespace", "other", ""): later}
    assert not is_hidden(state, seen, "dataset", "other", "y") and not is_hidden(state, seen, "namespace", "other")
    assert is_hidden(state, seen, "job", "other", "x")
    # Deleted again after the event: hidden again.
    again = fold([write(9, DELETE, "dataset", "other", "y", at=later)], state)
    assert is_hidden(again, seen, "dataset", "other", "y")


def test_namespace_and_source_puts_keep_their_first_time_and_last_values():
    owner = json.dumps({"ownerName": "team-a"})
    state = fold([
        write(1, PUT_NAMESPACE, "namespace", "ns", description="first", attributes=owner),
        write(2, DELETE, "namespace", "other"),
        write(3, PUT_NAMESPACE, "namespace", "ns", attributes=json.dumps({"ownerName": "team-b"})),
        write(4, PUT_SOURCE, "source", name="pg", description="db",
              attributes=json.dumps({"type": "POSTGRESQL", "connectionUrl": "postgresql://u:****@h/db"})),
        write(5, PUT_NAMESPACE, "namespace", "other", attributes=owner),
    ])
    assert state.namespaces["ns"] == {"ownerName": "team-b", "description": None,
                                      "createdAt": T0 + timedelta(minutes=1), "updatedAt": T0 + timedelta(minutes=3)}
    assert state.sources["pg"]["type"] == "POSTGRESQL" and state.sources["pg"]["description"] == "db"
    # A put after the delete shows the namespace again; its datasets and jobs stay hidden.
    assert not is_hidden(state, {}, "namespace", "other") and is_hidden(state, {}, "dataset", "other", "d")
    rows = with_put_namespaces([{"name": "ns", "createdAt": "2025-01-01T00:00:00Z"}], state)
    assert rows == [
        {"name": "ns", "createdAt": "2025-01-01T00:00:00Z", "ownerName": "team-b", "description": None,
         "updatedAt": "2026-01-01T00:03:00Z"},
        {"name": "other", "createdAt": "2026-01-01T00:05:00Z", "ownerName": "team-a", "description": None,
         "updatedAt": "2026-01-01T00:05:00Z"},
    ]
    facet_source = {"type": "POSTGRES", "name": "pg", "createdAt": "2025-06-01T00:00:00Z",
                    "updatedAt": "2027-01-01T00:00:00Z", "connectionUrl": "postgres://old", "description": None}
    assert with_put_sources([facet_source], state.sources) == [{
        "type": "POSTGRESQL", "name": "pg", "createdAt": "2025-06-01T00:00:00Z", "updatedAt": "2027-01-01T00:00:00Z",
        "connectionUrl": "postgresql://u:****@h/db", "description": "db"}]


def test_actor_never_holds_the_key():
    assert actor("alice", "secret") == "alice"
    assert actor(None, "secret") == "key:" + hashlib.sha256(b"secret").hexdigest()[:12]
    assert "secret" not in actor(None, "secret") and actor(None, None) == "anonymous"


def test_graph_without_nodes():
    graph = LineageGraph()
    graph.add_edge("job:n:j", "dataset:n:a", "input")
    graph.add_edge("job:n:j", "dataset:n:b", "output")
    graph.add_edge("job:n:k", "dataset:n:b", "input")
    kept = without_nodes(graph, {"dataset:n:b"})
    assert kept.nodes == {"job:n:j", "job:n:k", "dataset:n:a"}
    assert kept.outputs.get("job:n:j", set()) == set() and kept.readers.get("dataset:n:b") is None
    assert kept.inputs == {"job:n:j": {"dataset:n:a"}}


# -- through the API ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def warehouse(settings, spark, shared_corpus, tmp_path_factory):
    events = prepare_corpus(shared_corpus, tmp_path_factory.mktemp("marquez-corpus"))
    return corpus_warehouse(spark, settings, "t_marquez_writes_", [events], 37)


@pytest.fixture(scope="module")
def api(warehouse, spark) -> MarquezReadApi:
    return MarquezReadApi(spark, warehouse)


@pytest.fixture(scope="module")
def base_url(api, tmp_path_factory) -> Iterator[str]:
    landing = LandingLayout(tmp_path_factory.mktemp("serve") / "landing")
    app = create_app(CollectorConfig(landing, api_key=KEY), extra_routes=read_routes(api))
    with serve_app_in_thread(app) as url:
        yield url


@pytest.fixture(scope="module")
def client(base_url) -> MarquezClient:
    return MarquezClient(base_url, api_key=KEY)


@pytest.fixture(scope="module")
def http(base_url) -> Iterator[httpx.Client]:
    """As the user alice (HTTP Basic, the API key as password: what a browser sends)."""
    with httpx.Client(base_url=base_url + "/api/v1", auth=("alice", KEY)) as session:
        yield session


def names(listed: list[dict]) -> set[str]:
    return {item["name"] for item in listed}


def test_writes_need_the_key(base_url, api):
    before = api.snapshot.curation.state
    for method, path in (("PUT", "/tags/pii"), ("POST", f"/namespaces/{FOOD}/datasets/public.orders/tags/pii"),
                         ("DELETE", f"/namespaces/{KITCHEN}/jobs/gather_apples"), ("PUT", f"/namespaces/{FOOD}"),
                         ("PUT", "/sources/food_delivery_db")):
        refused = httpx.request(method, f"{base_url}/api/v1{path}", json={"description": "x"})
        assert refused.status_code == 401 and refused.json()["code"] == 401
        wrong = httpx.request(method, f"{base_url}/api/v1{path}", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
    assert api.snapshot.curation.state == before  # nothing written


def node_tags(http: httpx.Client, node: str) -> list[str]:
    """The tags of ``node`` in its lineage graph (a dataset's graph starts at its producing job)."""
    graph = http.get("/lineage", params={"nodeId": node, "depth": 0}).json()["graph"]
    return next(n["data"]["tags"] for n in graph if n["id"] == node)


def test_tags_on_datasets_fields_and_jobs(client, http):
    assert client.create_tag("pii", "personal data") == {"name": "pii", "description": "personal data"}
    dataset = "public.delivery_7_days"
    # The lineage answer is cached per snapshot: a write must show in it at once too.
    node = f"dataset:{FOOD}:{dataset}"
    assert node_tags(http, node) == []

    tagged = client.tag_dataset(FOOD, dataset, "pii")
    assert tagged["tags"] == ["pii"] and tagged["id"] == {"namespace": FOOD, "name": dataset}
    assert client.get_dataset(FOOD, dataset)["tags"] == ["pii"]
    assert node_tags(http, node) == ["pii"]

    field_tagged = client.tag_dataset_field(FOOD, dataset, "customer_email", "pii")
    fields = {f["name"]: f["tags"] for f in field_tagged["fields"]}
    assert fields["customer_email"] == ["PII"] and fields["order_id"] == []  # Marquez upper-cases field tags

    job = http.post(f"/namespaces/{FOOD}/jobs/etl_delivery_7_days/tags/nightly")
    assert job.status_code == 200 and job.json()["tags"] == ["nightly"]
    assert client.get_job(FOOD, "etl_delivery_7_days")["tags"] == ["nightly"]
    assert client.list_tags()["tags"] == [{"name": "PII", "description": None},
                                          {"name": "nightly", "description": None},
                                          {"name": "pii", "description": "personal data"}]
    described = http.put("/tags/nightly", json={"description": "runs at night"})
    assert described.json() == {"name": "nightly", "description": "runs at night"}

    # Untag: the field's tag is named as the UI shows it; Marquez upper-cases it again.
    untagged = http.delete(f"/namespaces/{FOOD}/datasets/{dataset}/fields/customer_email/tags/pii")
    assert {f["name"]: f["tags"] for f in untagged.json()["fields"]}["customer_email"] == []
    assert http.delete(f"/namespaces/{FOOD}/jobs/etl_delivery_7_days/tags/nightly").json()["tags"] == []
    assert client.get_dataset(FOOD, dataset)["tags"] == ["pii"]  # the dataset keeps its tag

    assert http.post(f"/namespaces/{FOOD}/datasets/public.nothing/tags/pii").status_code == 404
    missing_field = http.post(f"/namespaces/{FOOD}/datasets/{dataset}/fields/nothing/tags/pii")
    assert missing_field.status_code == 404 and missing_field.json() == {"code": 404,
                                                                         "message": "Field 'nothing' not found."}
    assert http.post(f"/namespaces/{FOOD}/jobs/no_such_job/tags/pii").status_code == 404
    assert http.put("/tags/bad", content=b"{not json").status_code == 400


def test_writes_at_once_each_take_the_next_sequence(base_url):
    """Six clients tag one job at the same moment: every tag is kept (none lost to a swap in between)."""
    tags = [f"batch-{n}" for n in range(6)]

    def tag(name: str) -> int:
        url = f"{base_url}/api/v1/namespaces/{FOOD}/jobs/etl_orders_7_days/tags/{name}"
        return httpx.post(url, auth=("alice", KEY), timeout=120).status_code

    with ThreadPoolExecutor(len(tags)) as pool:
        assert list(pool.map(tag, tags)) == [200] * len(tags)
    job = httpx.get(f"{base_url}/api/v1/namespaces/{FOOD}/jobs/etl_orders_7_days", auth=("alice", KEY)).json()
    assert job["tags"] == tags


def test_soft_deletes(client, http):
    deleted = http.delete(f"/namespaces/{KITCHEN}/datasets/apple.cider")
    assert deleted.status_code == 200 and deleted.json()["name"] == "apple.cider"
    assert deleted.json()["deleted"] is False  # the dataset as it was, as Marquez answers
    job = http.delete(f"/namespaces/{KITCHEN}/jobs/prepare_apple_pie")
    assert job.status_code == 200 and job.json()["name"] == "prepare_apple_pie"
    namespace = http.delete("/namespaces/laurents-orchard")
    assert namespace.status_code == 200 and namespace.json()["name"] == "laurents-orchard"
    assert_deletes_shown(client, http)
    assert http.delete(f"/namespaces/{KITCHEN}/jobs/prepare_apple_pie").status_code == 404
    assert http.delete(f"/namespaces/{KITCHEN}/datasets/no.such.thing").status_code == 404


def assert_deletes_shown(client: MarquezClient, http: httpx.Client) -> None:
    """What the three deletes of test_soft_deletes show, in lists, search, lineage and GET."""
    assert "apple.cider" not in names(client.list_datasets(KITCHEN)["datasets"])
    assert "prepare_apple_pie" not in names(client.list_jobs(KITCHEN)["jobs"])
    assert "prepare_apple_pie" not in names(http.get("/jobs", params={"limit": 100}).json()["jobs"])
    found = {r["nodeId"] for r in http.get("/search", params={"q": "apple", "limit": 100}).json()["results"]}
    assert f"job:{KITCHEN}:prepare_apple_pie" not in found and f"dataset:{KITCHEN}:apple.cider" not in found
    assert f"job:{KITCHEN}:prepare_apple_filling" in found
    graph = http.get("/lineage", params={"nodeId": f"dataset:{KITCHEN}:apples", "depth": 20}).json()["graph"]
    nodes = {n["id"] for n in graph}
    assert f"job:{KITCHEN}:prepare_apple_pie" not in nodes and f"dataset:{KITCHEN}:apple.cider" not in nodes
    assert "dataset:laurents-orchard:red.delicious" not in nodes
    assert f"job:{KITCHEN}:prepare_apple_filling" in nodes
    # A deleted dataset still answers its GET, marked deleted (Marquez); a deleted job does not.
    assert client.get_dataset(KITCHEN, "apple.cider")["deleted"] is True
    assert http.get(f"/namespaces/{KITCHEN}/jobs/prepare_apple_pie").status_code == 404
    assert "laurents-orchard" not in names(client.list_namespaces()["namespaces"])
    assert client.get_namespace("laurents-orchard")["isHidden"] is True


def test_namespace_and_source_puts_check_their_bodies(http):
    for path, sent, message in (
        (f"/namespaces/{FOOD}", {"description": "no owner"}, "ownerName must be a non-empty string"),
        ("/sources/pg", {"type": "POSTGRESQL"}, "connectionUrl must be a non-empty string"),
        ("/sources/pg", {"type": "POSTGRESQL", "connectionUrl": "not a uri"}, "connectionUrl must be a URI"),
        ("/sources/pg", ["a list"], "the body must be a JSON object"),
    ):
        refused = http.put(path, json=sent)
        assert refused.status_code == 400 and message in refused.json()["message"], refused.text
    owned = http.put(f"/namespaces/{FOOD}", json={"ownerName": "delivery-team", "description": "food"}).json()
    assert (owned["ownerName"], owned["description"]) == ("delivery-team", "food")


def test_writes_survive_a_rebuild(api, warehouse, client, http):
    run_dbt(warehouse, API_BUILD)
    api.refresh()
    assert client.get_dataset(FOOD, "public.delivery_7_days")["tags"] == ["pii"]
    assert {"name": "pii", "description": "personal data"} in client.list_tags()["tags"]
    assert {"name": "nightly", "description": "runs at night"} in client.list_tags()["tags"]
    assert client.get_namespace(FOOD)["ownerName"] == "delivery-team"
    assert_deletes_shown(client, http)


def test_a_later_event_brings_a_deleted_dataset_back(api, warehouse, spark, client, http, tmp_path):
    """A new event naming apple.cider, after its delete: it is back; the deleted job stays hidden."""
    event = {
        "eventType": "COMPLETE", "eventTime": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "run": {"runId": "0000000d-0000-4000-8000-000000000000"},
        "job": {"namespace": KITCHEN, "name": "prepare_apple_cider"},
        "inputs": [{"namespace": KITCHEN, "name": "apples"}],
        "outputs": [{"namespace": KITCHEN, "name": "apple.cider"}],
        "producer": PRODUCER, "schemaURL": RUN_EVENT_URL,
    }
    (tmp_path / "later.json").write_text(json.dumps(event))
    assert ingest_lineage(spark, warehouse, [tmp_path]).accepted == 1
    run_dbt(warehouse, API_BUILD)
    api.refresh()
    assert "apple.cider" in names(client.list_datasets(KITCHEN)["datasets"])
    assert client.get_dataset(KITCHEN, "apple.cider")["deleted"] is False
    assert "prepare_apple_pie" not in names(client.list_jobs(KITCHEN)["jobs"])
    assert "laurents-orchard" not in names(client.list_namespaces()["namespaces"])


def test_the_log_says_who_and_when(spark, warehouse):
    rows = spark.table(writes_table(warehouse)).orderBy("write_seq").collect()
    assert [r.write_seq for r in rows] == list(range(1, len(rows) + 1))
    assert {r.actor for r in rows} == {KEY_ACTOR, "alice"}  # marquez_client sends the key as Bearer
    assert all(KEY not in (r.actor or "") for r in rows)
    assert {r.remote_address for r in rows} == {"127.0.0.1"}
    first = rows[0]
    assert (first.action, first.entity_kind, first.tag, first.description, first.actor) == (
        "put_tag", "tag", "pii", "personal data", KEY_ACTOR)
    deletes = [(r.entity_kind, r.namespace, r.name) for r in rows if r.action == "delete"]
    assert deletes == [("dataset", KITCHEN, "apple.cider"), ("job", KITCHEN, "prepare_apple_pie"),
                       ("namespace", "laurents-orchard", None)]
    times = [r.written_at for r in rows]  # naive UTC, as the session's time zone is UTC
    assert times == sorted(times) and datetime.now(UTC).replace(tzinfo=None) - times[0] < timedelta(hours=1)

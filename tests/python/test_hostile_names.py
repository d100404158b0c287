"""Names from data are data (issue 22): hostile names through every path, stored and answered verbatim.

Namespaces, job and dataset names, schema field names and facet names carry quotes, backticks,
semicolons, ``--``, ``{{ }}``, ``${}``, ``</script>``, CJK, emoji, combining marks, slashes, ``#``, a
name of over 1,000 characters, and names that differ only in case. Half of the events go through
``ingest lineage`` of an NDJSON file, half through the collector (the real openlineage-python HTTP
transport, then ``ingest_sealed`` as ``serve`` does); one ``dbt build`` (with its data tests) of the
lineage and facet models follows. Every table, every read API answer (through marquez-python where
it has a call and accepts the name, httpx otherwise), ``lineage show`` and the lineage page must
hold each name exactly as sent.

Names that must become identifiers (a snapshot dataset's raw table, a registry family's typed
table) are refused with a clear error instead, and nothing is created.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from marquez_client import MarquezClient
from openlineage.client.transport.http import HttpConfig, HttpTransport
from pyspark.sql.types import StructType

from python_jobs.dbt import run_dbt
from python_jobs.ingest.lineage import IngestReport, ingest_lineage
from python_jobs.landing import LandingIngest, LandingLayout, ingest_sealed
from python_jobs.marquez_api import MarquezReadApi, read_routes
from python_jobs.marquez_api.graph import dataset_node_id, job_node_id
from python_jobs.marquez_api.server import serve_app_in_thread
from python_jobs.serve.app import CollectorConfig, create_app
from python_jobs.settings import LAYERS, Settings
from python_jobs.spark import ensure_schemas

SPEC = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/"
PRODUCER = "https://example.com/hostile-names"
FACET_SCHEMA = "https://example.com/facets/1-0-0.json"

# The hostile pieces.
SQLISH = "it's \"quoted\" `tick`; drop table x; -- comment"
TEMPLATE = "{{ x }} ${x} {% if 1 %}"
UNICODE = "数据集 🚀 naïve e\u0301 Ωμέγα"
SCRIPT = "</script><script>alert('x')</script><!--"
LONG = "L" * 1000 + " 長い名前; --'\""
assert len(LONG) > 1000

# Namespaces: a colon, slashes, quotes, a comment; unicode and a backtick; two differing only in case.
NS_FILE = "postgres://db.example:5432/it's; --"
NS_HTTP = "s3://bucket/数据 🚀 `x`"
NS_UPPER, NS_LOWER = "Warehouse", "warehouse"

# Jobs (`{{ }}` is data in a name; only json-unit's `${json-unit.…}` marks a test fixture there).
JOB_FILE = (NS_FILE, "job " + SQLISH + " " + TEMPLATE)
JOB_HTTP = (NS_HTTP, LONG)
JOB_CASE_UPPER = (NS_FILE, "Load " + UNICODE)  # file
JOB_CASE_LOWER = (NS_FILE, "load " + UNICODE)  # collector
JOB_EVENT_JOB = (NS_FILE, "job-event " + SCRIPT)  # a JobEvent, collector

# Datasets.
DS_TEMPLATE = (NS_FILE, "tbl " + TEMPLATE + " " + SQLISH)
DS_ORDERS = (NS_UPPER, "Orders" + SCRIPT)
DS_ORDERS_LOWER = (NS_UPPER, "orders" + SCRIPT)
DS_ORDERS_OTHER_NS = (NS_LOWER, "orders" + SCRIPT)
DS_UNICODE = (NS_HTTP, UNICODE + " #1")
DS_LONG = (NS_HTTP, LONG + "/tail")
DS_EVENT = (NS_HTTP, "ds-event " + TEMPLATE + " " + SQLISH)  # a DatasetEvent, file

# Schema fields (two differ only in case) and facet names.
FIELDS = [SQLISH, TEMPLATE, UNICODE, SCRIPT, "Amount", "amount", "f" + LONG]
DATASET_FACETS = ["my'facet\"; -- {{ x }} ${x}", "数据 facet 🚀", "Quality", "quality", SCRIPT]
JOB_FACETS = ["job'facet; --", "job {{ x }}"]
RUN_FACETS = ["run`facet` ${x}", "run " + UNICODE]

R_FILE, R_HTTP = "11111111-0000-4000-8000-000000000001", "11111111-0000-4000-8000-000000000002"
R_CASE_UPPER, R_CASE_LOWER = "11111111-0000-4000-8000-000000000003", "11111111-0000-4000-8000-000000000004"
R_PLACEHOLDER = "11111111-0000-4000-8000-000000000005"

ALL_NAMESPACES = {NS_FILE, NS_HTTP, NS_UPPER, NS_LOWER}
ALL_JOBS = {JOB_FILE, JOB_HTTP, JOB_CASE_UPPER, JOB_CASE_LOWER, JOB_EVENT_JOB}
ALL_DATASETS = {DS_TEMPLATE, DS_ORDERS, DS_ORDERS_LOWER, DS_ORDERS_OTHER_NS, DS_UNICODE, DS_LONG, DS_EVENT}
PLACEHOLDER_JOB = "${json-unit.any-string}"

# The lineage and facet models with their data tests; the graph model (pure lineage, no names of its
# own) is left out to save its time.
BUILD = ["build", "--select", "stg_lineage_events+", "changelog_streams", "facet_classification",
         "--exclude", "dataset_lineage_graph"]


def facet(**body: object) -> dict:
    return {"_producer": PRODUCER, "_schemaURL": FACET_SCHEMA, **body}


def dataset(ref: tuple[str, str], facets: dict | None = None) -> dict:
    return {"namespace": ref[0], "name": ref[1], **({"facets": facets} if facets else {})}


def run_event(event_type: str, time: str, run_id: str, job: tuple[str, str], inputs: list[dict],
              outputs: list[dict], run_facets: dict | None = None, job_facets: dict | None = None) -> dict:
    return {
        "eventType": event_type, "eventTime": time, "producer": PRODUCER, "schemaURL": SPEC + "RunEvent",
        "run": {"runId": run_id, **({"facets": run_facets} if run_facets else {})},
        "job": {"namespace": job[0], "name": job[1], **({"facets": job_facets} if job_facets else {})},
        "inputs": inputs, "outputs": outputs,
    }


def schema_facet(names: list[str]) -> dict:
    return facet(fields=[{"name": name, "type": "string", "description": f"about {name}"} for name in names])


def orders_facets() -> dict:
    facets = {name: facet(value=SQLISH, name=name) for name in DATASET_FACETS}
    facets["schema"] = schema_facet(FIELDS)
    facets["columnLineage"] = facet(fields={
        "Amount": {"inputFields": [{"namespace": DS_TEMPLATE[0], "name": DS_TEMPLATE[1], "field": TEMPLATE}]},
        SQLISH: {"inputFields": [{"namespace": DS_TEMPLATE[0], "name": DS_TEMPLATE[1], "field": SQLISH}]},
    })
    return facets


def file_events() -> list[dict]:
    run_facets = {name: facet(value=name) for name in RUN_FACETS}
    job_facets = {name: facet(value=name) for name in JOB_FACETS}
    inputs = [dataset(DS_TEMPLATE, {"schema": schema_facet([TEMPLATE, SQLISH])})]
    outputs = [dataset(DS_ORDERS, orders_facets())]
    return [
        run_event("START", "2026-03-01T10:00:00Z", R_FILE, JOB_FILE, inputs, outputs, run_facets, job_facets),
        run_event("COMPLETE", "2026-03-01T10:05:00Z", R_FILE, JOB_FILE, inputs, outputs, run_facets, job_facets),
        run_event("COMPLETE", "2026-03-01T11:00:00Z", R_CASE_UPPER, JOB_CASE_UPPER, [dataset(DS_ORDERS)],
                  [dataset(DS_ORDERS_LOWER, {"schema": schema_facet(["Amount"])})]),
        {"eventTime": "2026-03-01T12:00:00Z", "producer": PRODUCER, "schemaURL": SPEC + "DatasetEvent",
         "dataset": dataset(DS_EVENT, {SCRIPT: facet(value=SCRIPT)})},
        # Refused: a job name that is a json-unit fixture placeholder (see the test below).
        run_event("START", "2026-03-01T13:00:00Z", R_PLACEHOLDER, (NS_FILE, PLACEHOLDER_JOB), [], []),
    ]


def collector_events() -> list[dict]:
    return [
        run_event("START", "2026-03-02T10:00:00Z", R_HTTP, JOB_HTTP, [dataset(DS_UNICODE), dataset(DS_ORDERS)],
                  [dataset(DS_LONG, {"schema": schema_facet(FIELDS)})], {RUN_FACETS[0]: facet(value=LONG)}),
        run_event("COMPLETE", "2026-03-02T10:01:00Z", R_HTTP, JOB_HTTP, [dataset(DS_UNICODE), dataset(DS_ORDERS)],
                  [dataset(DS_LONG, {"schema": schema_facet(FIELDS)})]),
        run_event("COMPLETE", "2026-03-02T11:00:00Z", R_CASE_LOWER, JOB_CASE_LOWER, [dataset(DS_ORDERS_LOWER)],
                  [dataset(DS_ORDERS_OTHER_NS, {"schema": schema_facet(["amount"])})]),
        {"eventTime": "2026-03-02T12:00:00Z", "producer": PRODUCER, "schemaURL": SPEC + "JobEvent",
         "job": {"namespace": JOB_EVENT_JOB[0], "name": JOB_EVENT_JOB[1],
                 "facets": {JOB_FACETS[0]: facet(value=SCRIPT)}},
         "inputs": [dataset(DS_ORDERS)], "outputs": []},
        run_event("START", "2026-03-02T13:00:00Z", R_PLACEHOLDER, (NS_HTTP, PLACEHOLDER_JOB), [], []),
    ]


@dataclass
class Built:
    settings: Settings
    api: MarquezReadApi
    url: str
    file_report: IngestReport
    landed: LandingIngest
    answers: list[tuple[int, dict | None]]


def emit(transport: HttpTransport, event: dict) -> tuple[int, dict | None]:
    import requests

    try:
        return transport.emit(event).status_code, None
    except requests.HTTPError as error:
        return error.response.status_code, error.response.json()


@pytest.fixture(scope="module")
def built(settings, spark, tmp_path_factory) -> Iterator[Built]:
    """One warehouse (its own schema prefix) built from both paths, served with the read API."""
    scoped = settings.with_prefix("t_hostile_names_")
    for layer in LAYERS:
        spark.sql(f"drop database if exists {scoped.schema(layer)} cascade")
    ensure_schemas(spark, scoped, LAYERS)
    work = tmp_path_factory.mktemp("hostile")
    landing = LandingLayout(work / "landing")
    api = MarquezReadApi(spark, scoped, load=False)
    app = create_app(CollectorConfig(landing), extra_routes=read_routes(api))
    with serve_app_in_thread(app) as url:
        transport = HttpTransport(HttpConfig.from_dict(
            {"type": "http", "url": url, "retry": {"total": 0, "read": 0, "connect": 0}}))
        answers = [emit(transport, event) for event in collector_events()]
        events_file = work / "events.ndjson"
        events_file.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in file_events()),
                               encoding="utf-8")
        file_report = ingest_lineage(spark, scoped, [events_file])
        app.state.collector.seal_now()  # what the serve loop does before a round
        landed = ingest_sealed(spark, scoped, landing)
        run_dbt(scoped, BUILD)
        api.refresh()
        yield Built(scoped, api, url, file_report, landed, answers)


def canonical(event: dict) -> str:
    return json.dumps(event, sort_keys=True, ensure_ascii=False)


def rows(spark, built: Built, layer: str, table: str, *columns: str) -> list[tuple]:
    return [tuple(row) for row in spark.table(built.settings.table(layer, table)).select(*columns).collect()]


def test_both_paths_accept_the_events_and_refuse_only_the_placeholder(built, spark):
    """The contract (lineage/event_rules.py) takes json-unit's ``${json-unit.…}`` in a namespace or name
    for a test-fixture placeholder, on both paths alike; ``{{ }}`` and ``${x}`` in a job's, a DatasetEvent's,
    a dataset's, a field's or a facet's name are data (the tests below)."""
    assert built.answers[:-1] == [(201, None)] * 4
    reason = f"job.name is a template placeholder: {PLACEHOLDER_JOB}"
    assert built.answers[-1] == (400, {"error": reason})
    assert (built.file_report.read, built.file_report.accepted, built.file_report.rejected) == (5, 4, 1)
    assert built.landed.report is not None and built.landed.report.reconciles()
    assert (built.landed.report.read, built.landed.report.accepted) == (4, 4)
    rejected = rows(spark, built, "audit", "lineage_events_rejected", "reason", "raw_text")
    assert [r[0] for r in rejected] == [reason] and json.loads(rejected[0][1]) == file_events()[-1]
    # The raw table holds every accepted event as sent.
    stored = [json.loads(text) for (text,) in rows(spark, built, "raw", "lineage_events", "event_json")]
    sent = file_events()[:-1] + collector_events()[:-1]
    assert sorted(map(canonical, stored)) == sorted(map(canonical, sent))


def test_lineage_tables_hold_every_name_verbatim(built, spark):
    assert {name for (name,) in rows(spark, built, "lineage", "namespaces", "name")} == ALL_NAMESPACES
    assert set(rows(spark, built, "lineage", "jobs", "namespace_name", "name")) == ALL_JOBS
    assert set(rows(spark, built, "lineage", "datasets", "namespace_name", "name")) == ALL_DATASETS
    assert len(rows(spark, built, "lineage", "datasets", "uuid")) == len(ALL_DATASETS)
    runs = set(rows(spark, built, "lineage", "runs", "uuid", "namespace_name", "job_name", "current_run_state"))
    assert runs == {(R_FILE, *JOB_FILE, "COMPLETE"), (R_HTTP, *JOB_HTTP, "COMPLETE"),
                    (R_CASE_UPPER, *JOB_CASE_UPPER, "COMPLETE"), (R_CASE_LOWER, *JOB_CASE_LOWER, "COMPLETE")}
    fields = spark.sql(f"""
        select d.namespace_name, d.name, f.name as field
        from {built.settings.table("lineage", "dataset_fields")} as f
        join {built.settings.table("lineage", "datasets")} as d on f.dataset_uuid = d.uuid
    """).collect()
    by_dataset: dict[tuple[str, str], set[str]] = {}
    for row in fields:
        by_dataset.setdefault((row.namespace_name, row.name), set()).add(row.field)
    assert by_dataset == {DS_ORDERS: set(FIELDS), DS_LONG: set(FIELDS), DS_TEMPLATE: {TEMPLATE, SQLISH},
                          DS_ORDERS_LOWER: {"Amount"}, DS_ORDERS_OTHER_NS: {"amount"}}
    lineage = set(rows(spark, built, "lineage", "column_lineage", "output_namespace", "output_dataset",
                       "output_field", "input_namespace", "input_dataset", "input_field"))
    assert lineage == {(*DS_ORDERS, "Amount", *DS_TEMPLATE, TEMPLATE), (*DS_ORDERS, SQLISH, *DS_TEMPLATE, SQLISH)}


def test_facet_tables_hold_every_facet_name_verbatim(built, spark):
    dataset_facets = set(rows(spark, built, "lineage", "dataset_facets", "dataset_namespace", "dataset_name", "name"))
    assert {(*DS_ORDERS, name) for name in DATASET_FACETS} <= dataset_facets
    assert (*DS_EVENT, SCRIPT) in dataset_facets
    assert set(rows(spark, built, "lineage", "job_facets", "job_namespace", "job_name", "name")) == {
        (*JOB_FILE, name) for name in JOB_FACETS} | {(*JOB_EVENT_JOB, JOB_FACETS[0])}
    assert set(rows(spark, built, "lineage", "run_facets", "run_id", "name")) == {
        (R_FILE, name) for name in RUN_FACETS} | {(R_HTTP, RUN_FACETS[0])}
    assert rows(spark, built, "audit", "facet_quarantine", "facet_name") == []
    current = {(r[0], r[1]): json.loads(r[2]) for r in rows(
        spark, built, "lineage", "current_dataset_facets", "dataset_namespace", "dataset_name", "facets")}
    orders = current[DS_ORDERS]
    assert {name: orders[name]["value"] for name in DATASET_FACETS} == dict.fromkeys(DATASET_FACETS, SQLISH)
    assert [f["name"] for f in orders["schema"]["fields"]] == FIELDS
    (job_facets,) = [json.loads(r[2]) for r in rows(spark, built, "lineage", "current_job_facets", "job_namespace",
                                                      "job_name", "facets") if (r[0], r[1]) == JOB_FILE]
    assert sorted(job_facets) == sorted(JOB_FACETS)


def test_schema_events_quote_the_field_names(built, spark):
    ddl = [r[1] for r in rows(spark, built, "lineage", "dataset_schema_events", "dataset_name", "ddl")
           if r[0] == DS_ORDERS[1]]
    assert len(ddl) == 1
    # The DDL lists the fields by name; each one parses back exactly.
    assert [field.name for field in StructType.fromDDL(ddl[0]).fields] == sorted(FIELDS)


def api_get(built: Built, *segments: str, **params: object) -> httpx.Response:
    """A read API GET with every path segment percent-encoded, as marquez-python does."""
    path = "/".join(quote(segment, safe="") for segment in segments)
    return httpx.get(f"{built.url}/api/v1/{path}", params=params, timeout=30)


def test_read_api_answers_every_name_verbatim(built):
    client = MarquezClient(built.url)
    assert {n["name"] for n in client.list_namespaces()["namespaces"]} == ALL_NAMESPACES
    for namespace in ALL_NAMESPACES:
        assert client.get_namespace(namespace)["name"] == namespace
    # marquez-python refuses dataset and job names over 255 characters before sending: httpx for LONG.
    for ref in ALL_DATASETS - {DS_LONG}:
        body = client.get_dataset(*ref)
        assert (body["id"], body["name"], body["namespace"]) == ({"namespace": ref[0], "name": ref[1]}, ref[1], ref[0])
    orders = client.get_dataset(*DS_ORDERS)
    assert sorted(f["name"] for f in orders["fields"]) == sorted(FIELDS)
    assert set(DATASET_FACETS) <= set(orders["facets"])
    long_dataset = api_get(built, "namespaces", DS_LONG[0], "datasets", DS_LONG[1]).json()
    assert long_dataset["id"] == {"namespace": DS_LONG[0], "name": DS_LONG[1]}
    assert sorted(f["name"] for f in long_dataset["fields"]) == sorted(FIELDS)
    assert sorted(d["name"] for d in client.list_datasets(NS_UPPER)["datasets"]) == sorted(
        [DS_ORDERS[1], DS_ORDERS_LOWER[1]])

    job = client.get_job(*JOB_FILE)
    assert job["id"] == {"namespace": JOB_FILE[0], "name": JOB_FILE[1]}
    assert job["inputs"] == [{"namespace": DS_TEMPLATE[0], "name": DS_TEMPLATE[1]}]
    assert job["outputs"] == [{"namespace": DS_ORDERS[0], "name": DS_ORDERS[1]}]
    assert sorted(job["facets"]) == sorted(JOB_FACETS)
    assert [r["id"] for r in client.list_job_runs(*JOB_FILE)["runs"]] == [R_FILE]
    assert set(RUN_FACETS) <= set(client.get_job_run(R_FILE)["facets"])
    # Job names that differ only in case are two jobs, each with its own run.
    assert [r["id"] for r in client.list_job_runs(*JOB_CASE_UPPER)["runs"]] == [R_CASE_UPPER]
    assert [r["id"] for r in client.list_job_runs(*JOB_CASE_LOWER)["runs"]] == [R_CASE_LOWER]
    long_job = api_get(built, "namespaces", JOB_HTTP[0], "jobs", JOB_HTTP[1]).json()
    assert long_job["name"] == LONG
    assert long_job["inputs"] == sorted([{"namespace": ns, "name": n} for ns, n in (DS_UNICODE, DS_ORDERS)],
                                        key=lambda ref: (ref["namespace"], ref["name"]))
    assert long_job["outputs"] == [{"namespace": DS_LONG[0], "name": DS_LONG[1]}]
    runs = api_get(built, "namespaces", JOB_HTTP[0], "jobs", JOB_HTTP[1], "runs").json()["runs"]
    assert [(r["id"], r["outputVersions"][0]["name"]) for r in runs] == [(R_HTTP, DS_LONG[1])]

    cll = client.get_column_lineage_by_dataset_field(*DS_ORDERS, "Amount", depth=1)
    assert {n["id"] for n in cll["graph"]} == {f"datasetField:{DS_ORDERS[0]}:{DS_ORDERS[1]}:Amount",
                                               f"datasetField:{DS_TEMPLATE[0]}:{DS_TEMPLATE[1]}:{TEMPLATE}"}

    events = api_get(built, "events", "lineage", limit=50).json()
    assert sorted(map(canonical, events["events"])) == sorted(
        map(canonical, file_events()[:-1] + collector_events()[:-1]))


def test_lineage_graph_and_search_answer_every_name_verbatim(built):
    start = dataset_node_id(*DS_ORDERS)
    graph = api_get(built, "lineage", nodeId=start, depth=5).json()["graph"]
    expected = {dataset_node_id(*ref) for ref in ALL_DATASETS - {DS_EVENT}} | {
        job_node_id(*ref) for ref in ALL_JOBS - {JOB_EVENT_JOB}}
    assert {node["id"] for node in graph} == expected
    data = {node["id"]: node["data"] for node in graph}
    for ref in ALL_DATASETS - {DS_EVENT}:
        assert (data[dataset_node_id(*ref)]["namespace"], data[dataset_node_id(*ref)]["name"]) == ref
    for ref in ALL_JOBS - {JOB_EVENT_JOB}:
        assert (data[job_node_id(*ref)]["namespace"], data[job_node_id(*ref)]["name"]) == ref
    # A name holding '#' (not a version id) is a node of its own.
    around_unicode = api_get(built, "lineage", nodeId=dataset_node_id(*DS_UNICODE), depth=1).json()["graph"]
    assert dataset_node_id(*DS_UNICODE) in {node["id"] for node in around_unicode}

    def found(q: str, kind: str | None = None) -> set[tuple[str, str, str]]:
        body = api_get(built, "search", q=q, limit=50, **({"filter": kind} if kind else {})).json()
        return {(r["type"], r["namespace"], r["name"]) for r in body["results"]}

    assert found("{{ x }}", "DATASET") == {("DATASET", *DS_TEMPLATE), ("DATASET", *DS_EVENT)}
    assert found("{{ x }}", "JOB") == {("JOB", *JOB_FILE)}
    assert found("orders</script>") == {("DATASET", *ref) for ref in (DS_ORDERS, DS_ORDERS_LOWER, DS_ORDERS_OTHER_NS)}
    assert found("`tick`; drop table x; --", "JOB") == {("JOB", *JOB_FILE)}
    assert found("長い名前") == {("JOB", *JOB_HTTP), ("DATASET", *DS_LONG)}
    assert found("e\u0301 Ωμέγα", "JOB") == {("JOB", *JOB_CASE_UPPER), ("JOB", *JOB_CASE_LOWER)}


def test_lineage_show_and_the_page_keep_names_as_data(built, monkeypatch, capsys, tmp_path):
    import python_jobs.marquez_api.api as api_module
    from python_jobs.cli import main

    monkeypatch.setenv("LINEAGE_SCHEMA_PREFIX", built.settings.schema_prefix)
    monkeypatch.setattr(api_module, "MarquezReadApi", lambda spark, settings: built.api)
    page_file = tmp_path / "page.html"
    assert main(["lineage", "show", *DS_ORDERS, "--depth", "1", "--html", str(page_file)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[:2] == [dataset_node_id(*DS_ORDERS), "upstream:"]
    assert f"  <- {job_node_id(*JOB_FILE)}" in printed
    assert f"     <- {dataset_node_id(*DS_TEMPLATE)}" in printed
    assert f"  -> {job_node_id(*JOB_HTTP)}" in printed
    assert f"     -> {dataset_node_id(*DS_LONG)}" in printed
    served = httpx.get(built.url + "/", params={"nodeId": dataset_node_id(*DS_ORDERS), "depth": 1}, timeout=60)
    assert served.status_code == 200
    for page in (page_file.read_text(encoding="utf-8"), served.text):
        # Three script elements (data, layout library, page script) and nothing else opens or closes one.
        assert len(re.findall(r"<script\b", page)) == 3 and page.count("</script>") == 3
        assert "<!--" not in page  # SCRIPT's comment opener is escaped too
        data_text = page.split('<script type="application/json" id="lineage-data">', 1)[1].split("</script>", 1)[0]
        payload = json.loads(data_text)
        ids = {node["id"] for node in payload["nodes"]}
        assert {dataset_node_id(*DS_ORDERS), job_node_id(*JOB_FILE), dataset_node_id(*DS_LONG)} <= ids
        details = payload["details"][dataset_node_id(*DS_ORDERS)]
        assert sorted(f["name"] for f in details["fields"]) == sorted(FIELDS)
        assert set(DATASET_FACETS) <= set(details["facets"])
    title = page_file.read_text(encoding="utf-8").split("<title>", 1)[1].split("</title>", 1)[0]
    assert title == "Lineage of Warehouse:Orders&lt;/script&gt;&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;&lt;!--"


# --- names that become identifiers ---------------------------------------------------------------


def cli(monkeypatch, settings: Settings, argv: list[str], capsys) -> tuple[int, str, str]:
    from python_jobs.cli import main

    monkeypatch.setenv("LINEAGE_SCHEMA_PREFIX", settings.schema_prefix)
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def tables_in(spark, settings: Settings, *layers: str) -> list[str]:
    # Session temporary views (dbt's `__dbt_tmp` of other tests) are listed with every database. SQL rather than
    # spark.catalog.listTables, which fails to decode its rows with expressions interpreted (see conftest.py).
    return [f"{layer}.{row.tableName}" for layer in layers
            for row in spark.sql(f"show tables in {settings.schema(layer)}").collect() if not row.isTemporary]


def test_snapshot_dataset_names_that_cannot_name_a_table_are_refused(
    spark, isolated_settings, monkeypatch, capsys, tmp_path
):
    export = tmp_path / "export.csv"
    export.write_text("id,name\n1,a\n", encoding="utf-8")
    for name in ("accounts; drop table x; --", "Accounts", "数据", "a" * 101, "x{{ y }}", "a`b", "it's"):
        code, _, err = cli(monkeypatch, isolated_settings, [
            "ingest", "snapshot", "--dataset", name, "--snapshot-time", "2026-01-01T00:00:00Z",
            "--primary-key", "id", str(export)], capsys)
        assert code == 2
        assert err.strip() == (f"error: dataset name {name!r} must be lower-case letters, digits and underscores, "
                               "starting with a letter")
    assert tables_in(spark, isolated_settings, "raw", "audit") == []
    # Column names are data: a valid dataset keeps hostile column names and its primary key verbatim.
    columns = ["it's id", "a`b; --", "数据 🚀 {{ x }}"]
    export.write_text(",".join(f'"{c}"' for c in columns) + "\n1,x,y\n2,x,z\n", encoding="utf-8")
    code, out, err = cli(monkeypatch, isolated_settings, [
        "ingest", "snapshot", "--dataset", "accounts", "--snapshot-time", "2026-01-01T00:00:00Z",
        "--primary-key", columns[0], str(export)], capsys)
    assert (code, err) == (0, "") and "loaded snapshot 0" in out, err
    table = isolated_settings.table("raw", "accounts_snapshots")
    assert spark.table(table).columns[:3] == columns
    properties = {r["key"]: r["value"] for r in spark.sql(f"show tblproperties {table}").collect()}
    assert properties["changelog.primary_key"] == columns[0]
    assert sorted(k for k in properties if k.startswith("changelog.snapshot.")) == ["changelog.snapshot.000000000"]


def write_schema(root: Path, vendor: str, name: str) -> None:
    folder = root / "schemas" / vendor / name / "jsonschema"
    folder.mkdir(parents=True)
    (folder / "1-0-0").write_text(json.dumps({
        "$schema": "http://iglucentral.com/schemas/com.snowplowanalytics.self-desc/schema/jsonschema/1-0-0#",
        "self": {"vendor": vendor, "name": name, "format": "jsonschema", "version": "1-0-0"},
        "type": "object", "properties": {"id": {"type": "string"}}, "additionalProperties": False,
    }), encoding="utf-8")


def test_registry_vendors_that_cannot_name_a_table_are_refused_and_kept_as_data(
    spark, isolated_settings, monkeypatch, capsys, tmp_path
):
    hostile = "com.acme; drop table"
    first, second = tmp_path / "registry-1", tmp_path / "registry-2"
    write_schema(first, "com.acme", "x")
    code, out, _ = cli(monkeypatch, isolated_settings, ["ingest", "registry", str(first)], capsys)
    assert code == 0 and "registry: 1 file(s) read, 1 schema(s) added" in out
    for vendor in ("com.acme", hostile, "com.Acme"):
        write_schema(second, vendor, "x")
    code, out, _ = cli(monkeypatch, isolated_settings, ["ingest", "registry", str(second)], capsys)
    assert code == 0
    assert "registry: 3 file(s) read, 0 schema(s) added, 1 already registered, 2 rejected" in out
    assert rows_of(spark, isolated_settings, "raw", "registry_schemas", "schema_uri") == [
        ("iglu:com.acme/x/jsonschema/1-0-0",)]
    rejected = sorted(rows_of(spark, isolated_settings, "audit", "registry_rejected", "source_file", "reason"))
    assert rejected == [
        ("schemas/com.Acme/x/jsonschema/1-0-0",
         "com.Acme/x model 1 would load into the typed table com_acme_x_1, which belongs to com.acme/x; "
         "rename the vendor or the name"),
        (f"schemas/{hostile}/x/jsonschema/1-0-0",
         f"vendor {hostile!r} is not a valid Iglu vendor: use only letters, digits, '.', '-' and '_' "
         "(the folder names the schema)"),
    ]
    code, _, err = cli(monkeypatch, isolated_settings, ["registry", "ddl", f"{hostile}/x"], capsys)
    assert (code, err.strip()) == (2, f"error: the registry has no jsonschema versions of {hostile}/x")

    lines = [
        {"schema": "iglu:com.acme/x/jsonschema/1-0-0", "data": {"id": SQLISH}},
        {"schema": f"iglu:{hostile}/x/jsonschema/1-0-0", "data": {"id": "1"}},
        {"schema": "iglu:com.Acme/x/jsonschema/1-0-0", "data": {"id": "2"}},
    ]
    events = tmp_path / "events.ndjson"
    events.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    code, out, _ = cli(monkeypatch, isolated_settings, ["ingest", "events", str(events)], capsys)
    assert code == 0 and "events: 3 read = 1 accepted (1 new, 0 repeated or already loaded) + 2 rejected" in out
    assert rows_of(spark, isolated_settings, "raw", "sd_events", "data_json") == [(json.dumps({"id": SQLISH},
                                                                                            separators=(",", ":")),)]
    quarantined = sorted(rows_of(spark, isolated_settings, "audit", "sd_events_rejected", "source_line",
                                 "schema_uri", "reason", "raw_text"))
    assert quarantined == [
        (2, f"iglu:{hostile}/x/jsonschema/1-0-0",
         f"invalid schema URI: 'iglu:{hostile}/x/jsonschema/1-0-0' is not an Iglu URI: "
         "expected iglu:<vendor>/<name>/<format>/<M-R-A>", json.dumps(lines[1])),
        (3, "iglu:com.Acme/x/jsonschema/1-0-0",
         "unknown schema: iglu:com.Acme/x/jsonschema/1-0-0 is not in the registry (registry has no com.Acme/x)",
         json.dumps(lines[2])),
    ]
    # Nothing was created from the hostile vendor: the catalog knows one family and its one table name.
    from python_jobs.registry.catalog import RegisteredSchema, column_rows, model_plans

    registered = [RegisteredSchema(*r) for r in rows_of(spark, isolated_settings, "raw", "registry_schemas", "vendor",
                                                          "name", "format", "version", "schema_json")]
    assert {r[3] for r in column_rows(model_plans(registered))} == {"com_acme_x_1"}
    assert tables_in(spark, isolated_settings, "registry") == []


def rows_of(spark, settings: Settings, layer: str, table: str, *columns: str) -> list[tuple]:
    return [tuple(row) for row in spark.table(settings.table(layer, table)).select(*columns).collect()]

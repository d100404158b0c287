"""The lineage page in a real headless Chromium: Marquez's apples pipeline drawn from a warehouse built
from its events, a click on a dataset shows its fields, a click on a job its runs; one browser start.

The screenshot is kept in target/lineage_page.png (CI keeps target/)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from browser import DevTools  # tests/python is on sys.path

from python_jobs.dbt import run_dbt
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.lineage.models import core_selection
from python_jobs.lineage_page.render import embed_json, render_lineage_page
from python_jobs.settings import PROJECT_DIR

SCREENSHOT = PROJECT_DIR / "target" / "lineage_page.png"
WINDOW = (1600, 1000)
KITCHEN = "grandmas.kitchen"
PIE = f"dataset:{KITCHEN}:apple.pie"
BAKER = f"job:{KITCHEN}:prepare_apple_pie"
# A name from outside: as long as names get, and written to break out of the page's script.
HOSTILE_NAME = "</script><script>window.pwned = true</script><!-- \u2028 " + "crumbs/" * 145
HOSTILE = f"dataset:{KITCHEN}:{HOSTILE_NAME}"


def test_embedded_json_cannot_end_the_script_element():
    text = embed_json({"name": "</script><!-- a\u2028b\u2029 & <b>"})
    assert "<" not in text and ">" not in text and "\u2028" not in text and "\u2029" not in text
    assert json.loads(text) == {"name": "</script><!-- a\u2028b\u2029 & <b>"}


LABELS_JS = (PROJECT_DIR / "python_jobs" / "lineage_page" / "labels.js").read_text(encoding="utf-8")
DBT_NAMES = ["DEMO_DB.public.customers", "DEMO_DB.public.stg_customers", "DEMO_DB.public.orders",
             "DEMO_DB.public.stg_orders", "DEMO_DB.analytics.customer_lifetime_value_by_region_x.daily",
             "DEMO_DB.analytics.customer_lifetime_value_by_region_y.daily", "dbt-run-demo.stg_customers"]


def test_node_labels_keep_the_last_segment_and_never_repeat(tmp_path):
    """labels.js, the page's label rules, run in Chromium on names that used to collide."""
    entries = [{"name": n, "sublabel": "snowflake://demo"} for n in DBT_NAMES]
    entries += [{"name": "apple.pie", "sublabel": KITCHEN}, {"name": "apple.pie", "sublabel": KITCHEN}]
    with DevTools(tmp_path / "chromium-profile", 400, 300) as browser:
        browser.open("about:blank", "true")
        result = browser.evaluate(LABELS_JS + f"""; (() => {{
            const entries = {json.dumps(entries)};
            const shortened = entries.map(e => LineageLabels.shorten(e.name, 20));
            const labels = LineageLabels.distinct(entries.map((e, i) => ({{...e, label: shortened[i]}})), 20);
            return {{shortened, labels, long: LineageLabels.shorten("x".repeat(40), 20)}}; }})()""")
    shortened, labels = result["shortened"], result["labels"]
    assert shortened[0] == "DEMO_DB.pu\u2026customers" and shortened[1] == "DEMO_D\u2026stg_customers"
    assert all(len(label) <= 20 for label in shortened)
    for name, label in zip(DBT_NAMES, shortened[:len(DBT_NAMES)], strict=True):
        last = name.rsplit(".", 1)[-1]
        assert label == name or label.endswith("\u2026" + last)  # the last segment whole
    assert result["long"] == "x" * 9 + "\u2026" + "x" * 10  # no segment to keep: cut in the middle
    shown = [(label, entry["sublabel"]) for label, entry in zip(labels, entries, strict=True)]
    assert len(set(shown)) == len(shown)  # no two nodes show the same text
    assert labels[:4] == shortened[:4]  # distinct already: unchanged
    assert labels[4] != shortened[4] and "_x" in labels[4] and "_y" in labels[5]  # where the names differ
    assert labels[-2:] == ["apple.pie", "apple.pie (2)"]


# ---- the test's own graph builder ------------------------------------------------------------------
# Until python_jobs.marquez_api.lineage_page_inputs is merged, the graph and details come from this
# small query of the lineage core. The lead switches the test to that function.

_RUN_STATES = {"START": "RUNNING", "RUNNING": "RUNNING", "COMPLETE": "COMPLETED", "FAIL": "FAILED", "ABORT": "ABORTED"}


def _rows(spark, sql: str) -> list[dict]:
    return [row.asDict() for row in spark.sql(sql).collect()]


def _iso(value) -> str | None:
    return value.isoformat() + "Z" if value is not None else None


def warehouse_page_inputs(spark, settings) -> tuple[dict, dict]:
    """``graph`` (Marquez's GET /api/v1/lineage body) and ``details`` for every job and dataset."""
    lineage = settings.schema("lineage")
    jobs = {r["uuid"]: r for r in _rows(spark, f"select uuid, namespace_name, name from {lineage}.jobs")}
    datasets = {r["uuid"]: r for r in _rows(spark, f"select uuid, namespace_name, name from {lineage}.datasets")}
    runs = _rows(
        spark,
        f"select uuid, job_uuid, current_run_state, started_at, ended_at, created_at from {lineage}.runs "
        "order by created_at desc, uuid",
    )
    edges = _rows(
        spark,
        f"select distinct r.job_uuid, m.dataset_uuid, 'in' as direction from {lineage}.runs_input_mapping m "
        f"join {lineage}.runs r on r.uuid = m.run_uuid union "
        f"select distinct r.job_uuid, m.dataset_uuid, 'out' from {lineage}.runs_output_mapping m "
        f"join {lineage}.runs r on r.uuid = m.run_uuid",
    )
    schema_fields = _rows(
        spark,
        f"select v.uuid, v.dataset_uuid, v.created_at, f.name, f.type, f.description "
        f"from {lineage}.dataset_schema_versions v "
        f"join {lineage}.dataset_schema_versions_field_mapping m on m.dataset_schema_version_uuid = v.uuid "
        f"join {lineage}.dataset_fields f on f.uuid = m.dataset_field_uuid order by v.created_at desc, f.name",
    )
    job_id = {uuid: f"job:{j['namespace_name']}:{j['name']}" for uuid, j in jobs.items()}
    dataset_id = {uuid: f"dataset:{d['namespace_name']}:{d['name']}" for uuid, d in datasets.items()}
    nodes: dict[str, dict] = {}
    for uuid, job in jobs.items():
        data = {"id": {"namespace": job["namespace_name"], "name": job["name"]}, "type": "BATCH",
                "name": job["name"], "namespace": job["namespace_name"], "inputs": [], "outputs": []}
        nodes[job_id[uuid]] = {"id": job_id[uuid], "type": "JOB", "data": data, "inEdges": [], "outEdges": []}
    for uuid, dataset in datasets.items():
        data = {"id": {"namespace": dataset["namespace_name"], "name": dataset["name"]}, "type": "DB_TABLE",
                "name": dataset["name"], "namespace": dataset["namespace_name"]}
        nodes[dataset_id[uuid]] = {"id": dataset_id[uuid], "type": "DATASET", "data": data,
                                   "inEdges": [], "outEdges": []}
    for edge in edges:
        job, dataset = job_id[edge["job_uuid"]], dataset_id[edge["dataset_uuid"]]
        origin, destination = (dataset, job) if edge["direction"] == "in" else (job, dataset)
        nodes[origin]["outEdges"].append({"origin": origin, "destination": destination})
        nodes[destination]["inEdges"].append({"origin": origin, "destination": destination})
        side = "inputs" if edge["direction"] == "in" else "outputs"
        nodes[job]["data"][side].append(nodes[dataset]["data"]["id"])

    details: dict[str, dict] = {node_id: {"fields": [], "schemaVersions": [], "facets": {}}
                                for node_id in dataset_id.values()}
    versions: dict[str, dict] = {}
    for row in schema_fields:
        version = versions.setdefault(row["uuid"], {"id": row["uuid"], "createdAt": _iso(row["created_at"]),
                                                    "fields": [], "dataset": dataset_id[row["dataset_uuid"]]})
        version["fields"].append({"name": row["name"], "type": row["type"], "description": row["description"]})
    for version in versions.values():
        details[version.pop("dataset")]["schemaVersions"].append(version)
    for body in details.values():
        body["fields"] = list(body["schemaVersions"][0]["fields"]) if body["schemaVersions"] else []
    latest_runs: dict[str, list] = defaultdict(list)
    for run in runs:
        duration = None
        if run["started_at"] is not None and run["ended_at"] is not None:
            duration = int((run["ended_at"] - run["started_at"]).total_seconds() * 1000)
        latest_runs[job_id[run["job_uuid"]]].append({
            "id": run["uuid"], "state": _RUN_STATES.get(run["current_run_state"], run["current_run_state"]),
            "startedAt": _iso(run["started_at"]), "endedAt": _iso(run["ended_at"]), "durationMs": duration,
        })
    details.update({node_id: {"latestRuns": latest_runs[node_id][:10]} for node_id in job_id.values()})
    return {"graph": sorted(nodes.values(), key=lambda node: node["id"])}, details


# ---- the page --------------------------------------------------------------------------------------

def _pie_runs(path: Path) -> Path:
    """Our own events: the pie recipe gets a schema, then a new column, then a run fails."""
    def event(event_type: str, run: str, day: int, fields: list[tuple[str, str, str]]) -> dict:
        outputs = [] if not fields else [{"namespace": KITCHEN, "name": "apple.pie", "facets": {"schema": {
            "_producer": "https://example.com/tests", "_schemaURL": "https://example.com/schema",
            "fields": [{"name": n, "type": t, "description": d} for n, t, d in fields]}}}]
        return {"eventType": event_type, "eventTime": f"2020-09-0{day}T10:00:00Z",
                "run": {"runId": f"00000000-0000-4000-8000-00000000000{run}"},
                "job": {"namespace": KITCHEN, "name": "prepare_apple_pie"},
                "inputs": [{"namespace": KITCHEN, "name": "apple.filling"}], "outputs": outputs,
                "producer": "https://example.com/tests"}
    pie = [("slices", "INTEGER", "Slices cut from the pie"), ("filling_batch", "STRING", None)]
    events = [
        event("START", "1", 1, []),
        event("COMPLETE", "1", 1, pie),
        event("COMPLETE", "2", 2, [*pie, ("sugar_grams", "INTEGER", "Extra sugar for crab apples")]),
        event("FAIL", "3", 3, []),
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


def _apples_edges(apples: Path) -> set[tuple[str, str]]:
    edges = set()
    for file in apples.glob("*.json"):
        event = json.loads(file.read_text(encoding="utf-8"))
        job = f"job:{event['job']['namespace']}:{event['job']['name']}"
        edges |= {(f"dataset:{d['namespace']}:{d['name']}", job) for d in event.get("inputs", [])}
        edges |= {(job, f"dataset:{d['namespace']}:{d['name']}") for d in event.get("outputs", [])}
    return edges


NODES_JS = """Array.from(document.querySelectorAll('g.node')).map(g => ({
  id: g.dataset.nodeId, kind: g.classList.contains('job') ? 'JOB' : 'DATASET',
  label: g.querySelector('.label').textContent, title: g.querySelector('title').textContent,
  width: g.querySelector('.shape').getBBox().width, labelWidth: g.querySelector('.label').getBBox().width}))"""
EDGES_JS = "Array.from(document.querySelectorAll('path.edge')).map(p => [p.dataset.origin, p.dataset.destination])"
PANEL_JS = """(() => { const panel = document.getElementById('panel'); return {
  hidden: panel.hidden, node: panel.dataset.nodeId,
  fields: Array.from(panel.querySelectorAll('.schema tr[data-field]')).map(r => r.dataset.field),
  versions: panel.querySelectorAll('.schema-versions details').length,
  facets: Array.from(panel.querySelectorAll('.facets summary')).map(s => s.textContent),
  runs: Array.from(panel.querySelectorAll('tr[data-run-state]')).map(r => r.dataset.runState)}; })()"""


def _center_of(browser: DevTools, selector_js: str) -> tuple[float, float]:
    box = browser.evaluate(f"(() => {{ const r = ({selector_js}).getBoundingClientRect(); "
                           "return [r.left + r.width / 2, r.top + r.height / 2, r.right]; })()")
    assert 0 < box[0] < WINDOW[0] and 0 < box[1] < WINDOW[1], f"not on screen: {box}"
    return box[0], box[1]


def _node(node_id: str) -> str:
    return f"Array.from(document.querySelectorAll('g.node')).find(g => g.dataset.nodeId === {json.dumps(node_id)})"


@pytest.mark.corpus
def test_apples_lineage_page_in_chromium(spark, isolated_settings, shared_corpus, tmp_path, dbt_manifest):
    apples = shared_corpus / "openlineage" / "marquez" / "apples"
    report = ingest_lineage(spark, isolated_settings, [apples, _pie_runs(tmp_path / "pie.ndjson")])
    assert report.rejected == 0 and report.reconciles()
    run_dbt(isolated_settings, ["run", *core_selection(isolated_settings)])
    graph, details = warehouse_page_inputs(spark, isolated_settings)
    # A hostile, 1,000-character name downstream of the pie.
    graph["graph"].append({"id": HOSTILE, "type": "DATASET", "data": {"name": HOSTILE_NAME, "namespace": KITCHEN},
                           "inEdges": [{"origin": BAKER, "destination": HOSTILE}], "outEdges": []})
    details[PIE]["facets"] = {"documentation": {"description": "Grandma's apple pie"}}
    page = PROJECT_DIR / "target" / "lineage_page.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(render_lineage_page(graph, details, "Grandma's kitchen"), encoding="utf-8")

    with DevTools(tmp_path / "chromium-profile", *WINDOW) as browser:
        browser.open(page.as_uri(), "document.body.dataset.ready === 'true'")
        assert browser.evaluate("document.body.dataset.error || null") is None
        assert browser.evaluate("window.pwned === undefined")

        drawn = {node["id"]: node for node in browser.evaluate(NODES_JS)}
        expected_edges = _apples_edges(apples) | {(BAKER, HOSTILE)}
        assert {n for edge in expected_edges for n in edge} == set(drawn)
        assert {tuple(edge) for edge in browser.evaluate(EDGES_JS)} == expected_edges
        assert drawn[BAKER]["kind"] == "JOB" and drawn[PIE]["kind"] == "DATASET"
        assert drawn[PIE]["label"] == "apple.pie"
        hostile = drawn[HOSTILE]
        assert hostile["title"].endswith(HOSTILE_NAME) and "\u2026" in hostile["label"]
        assert hostile["labelWidth"] < hostile["width"]  # truncated to fit its box, full name in the tooltip

        browser.click(*_center_of(browser, _node(BAKER)))
        panel = browser.evaluate(PANEL_JS)
        assert panel["node"] == BAKER and not panel["hidden"]
        assert panel["runs"] == [run["state"] for run in details[BAKER]["latestRuns"]]  # in the given order
        assert sorted(panel["runs"]) == ["COMPLETED"] * 4 + ["FAILED"]  # 2 apples runs, then our 3

        browser.click(*_center_of(browser, "document.getElementById('fit')"))  # the panel now takes room
        browser.click(*_center_of(browser, _node(PIE)))
        panel = browser.evaluate(PANEL_JS)
        assert panel["node"] == PIE and not panel["hidden"]
        assert panel["fields"] == ["filling_batch", "slices", "sugar_grams"]
        assert panel["versions"] == 2
        assert panel["facets"] == ["documentation"]
        shot = browser.screenshot(SCREENSHOT)
    assert shot.stat().st_size > 30_000  # a drawn page, not a blank one

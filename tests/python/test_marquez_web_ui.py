"""Marquez's own web UI (../shared/marquez-web/dist, release 0.51) against the read API, in headless Chromium.

One warehouse is built from the shared corpus as in test_marquez_api.py, plus one event of our own sent just
now: a streaming job with a tags facet whose output dataset is tagged too (the dashboard and the events page
show the last day only). The UI and the read API are served on one loopback origin, as ``serve --web-ui``
does. Every page is opened the way a user gets there; for each, no exception reached the page's top level
(``Runtime.exceptionThrown``: an uncaught throw blanks the React app), no request to ``/api/`` answered 4xx
or 5xx, and the names the warehouse holds are on the screen. The job panel's screenshot is kept in
target/marquez_web_ui_job_panel.png (docs/ has the README's copy).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser import DevTools  # tests/python is on sys.path
from marquez_corpus import corpus_warehouse, prepare_corpus  # tests/python is on sys.path

from python_jobs.cli import main
from python_jobs.landing import LandingLayout
from python_jobs.marquez_api import MarquezReadApi, read_routes
from python_jobs.marquez_api.server import serve_app_in_thread
from python_jobs.marquez_api.web_ui import PAGE_PATH_BESIDE_UI, WEB_UI_ENV, check_web_ui, web_ui_dir, web_ui_routes
from python_jobs.serve.app import CollectorConfig, create_app
from python_jobs.settings import PROJECT_DIR

WEB_UI = PROJECT_DIR.parent / "shared" / "marquez-web" / "dist"
SCREENSHOT = PROJECT_DIR / "target" / "marquez_web_ui_job_panel.png"
WINDOW = (1400, 900)
FOOD = "food_delivery"
STREAM_JOB = "orders_stream"
PRODUCER = "https://github.com/example/lineage-warehouse/tests"


def _facet(schema: str, **body: Any) -> dict[str, Any]:
    return {"_producer": PRODUCER, "_schemaURL": f"https://openlineage.io/spec/facets/{schema}", **body}


def streaming_event(now: datetime) -> dict[str, Any]:
    """A START of a streaming job, sent now: its job and output carry OpenLineage tags facets."""
    return {
        "eventType": "START", "eventTime": now.isoformat().replace("+00:00", "Z"),
        "run": {"runId": "0d1e2f30-0000-4000-8000-000000000027"},
        "job": {"namespace": "streaming", "name": STREAM_JOB, "facets": {
            "jobType": _facet("2-0-3/JobTypeJobFacet.json", processingType="STREAMING", integration="FLINK",
                              jobType="JOB"),
            "tags": _facet("1-0-0/TagsJobFacet.json", tags=[{"key": "team-orders", "value": "true",
                                                             "source": "USER"}]),
        }},
        "inputs": [{"namespace": FOOD, "name": "public.orders"}],
        "outputs": [{"namespace": "streaming", "name": "orders_topic", "facets": {
            "tags": _facet("1-0-0/TagsDatasetFacet.json", tags=[{"key": "PII", "value": "true", "source": "USER"}]),
        }}],
        "producer": PRODUCER, "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
    }


def today_for_a_while(margin: timedelta = timedelta(minutes=20)) -> datetime:
    """Now, once the UTC day has at least ``margin`` left: the dashboard and the events page show today's
    events, so an event sent just before midnight would be gone from them by the time the pages open."""
    now = datetime.now(UTC)
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    if midnight - now < margin:
        time.sleep((midnight - now).total_seconds() + 1)
        now = datetime.now(UTC)
    return now.replace(microsecond=0)


@pytest.fixture(scope="module")
def web_ui() -> Path:
    if not (WEB_UI / "index.html").is_file():
        pytest.skip(f"Marquez's built web UI not found at {WEB_UI} (it lives beside the project in ../shared)")
    return WEB_UI


@pytest.fixture(scope="module")
def warehouse(web_ui, settings, spark, shared_corpus, tmp_path_factory):
    folder = tmp_path_factory.mktemp("marquez-web-ui")
    ours = folder / "streaming.ndjson"
    ours.write_text(json.dumps(streaming_event(today_for_a_while())) + "\n", encoding="utf-8")
    corpus = prepare_corpus(shared_corpus, folder / "corpus")
    return corpus_warehouse(spark, settings, "t_marquez_web_ui_", [corpus, ours], 38)


@pytest.fixture(scope="module")
def base_url(warehouse, spark, web_ui, tmp_path_factory) -> Iterator[str]:
    """The app ``serve --web-ui`` runs: collector, read API, the UI at / and the lineage page beside it."""
    api = MarquezReadApi(spark, warehouse)
    routes = read_routes(api, PAGE_PATH_BESIDE_UI) + web_ui_routes(web_ui)
    app = create_app(CollectorConfig(LandingLayout(tmp_path_factory.mktemp("landing"))), extra_routes=routes)
    with serve_app_in_thread(app) as url:
        yield url


@pytest.fixture(scope="module")
def browser(base_url, tmp_path_factory) -> Iterator[DevTools]:
    with DevTools(tmp_path_factory.mktemp("chromium-profile"), *WINDOW) as devtools:
        devtools.call("Network.enable")
        devtools.call("Runtime.enable")
        yield devtools


# ---- what a page did -----------------------------------------------------------------------------

def _showing(names: list[str]) -> str:
    return f"{json.dumps(names)}.every(name => document.body.innerText.includes(name))"


def api_answers(browser: DevTools) -> list[tuple[int, str]]:
    """(status, path) of every /api/ response since the events were last cleared."""
    answers = []
    for event in browser.events:
        if event["method"] == "Network.responseReceived":
            response = event["params"]["response"]
            path = "/" + response["url"].split("/", 3)[-1]
            if path.startswith("/api/"):
                answers.append((response["status"], path))
    return answers


def assert_healthy(browser: DevTools) -> list[str]:
    """No uncaught exception, no failed /api/ call; returns the /api/ paths asked."""
    thrown = [e["params"]["exceptionDetails"] for e in browser.events if e["method"] == "Runtime.exceptionThrown"]
    assert not thrown, json.dumps(thrown)[:2000]
    answers = api_answers(browser)
    assert [a for a in answers if a[0] >= 400] == []
    return [path for _, path in answers]


def visit(browser: DevTools, url: str, names: list[str]) -> list[str]:
    """Opens ``url`` until the names are on the screen, lets the page settle; the /api/ paths it asked."""
    browser.events.clear()
    try:
        browser.open(url, _showing(names), timeout=45)
    except TimeoutError:
        text = browser.evaluate("document.body.innerText")
        raise AssertionError(f"{url}: not all of {names} on the screen; it shows: {text[:1500]}") from None
    browser.settle()
    return assert_healthy(browser)


def click_node(browser: DevTools, label_start: str) -> None:
    """Clicks the graph node whose drawn label starts with ``label_start`` (the UI cuts long names at 16
    characters); the main graph's label is larger than the minimap's."""
    box = browser.evaluate(f"""(() => {{
        const labels = Array.from(document.querySelectorAll('svg text'))
            .filter(t => t.textContent.trim().startsWith({json.dumps(label_start)}))
            .map(t => t.getBoundingClientRect()).sort((a, b) => b.height - a.height);
        return labels.length ? [labels[0].left + labels[0].width / 2, labels[0].top + labels[0].height / 2] : null;
    }})()""")
    assert box is not None, f"no node labelled {label_start!r}"
    browser.events.clear()
    browser.click(*box)


def wait_for(browser: DevTools, names: list[str], timeout: float = 30) -> list[str]:
    try:
        browser.wait_until(_showing(names), timeout)
    except TimeoutError:
        text = browser.evaluate("document.body.innerText")
        raise AssertionError(f"not all of {names} on the screen; it shows: {text[:2000]}") from None
    browser.settle()
    return assert_healthy(browser)


# ---- the pages -----------------------------------------------------------------------------------

def test_dashboard(browser, base_url):
    asked = visit(browser, base_url + "/", [STREAM_JOB, "team-orders", "STREAM", "discounts_report", "BATCH"])
    assert {"/api/v1/tags", "/api/v1/namespaces"} <= set(asked)
    assert {p.split("?")[0] for p in asked} >= {
        "/api/v1/stats/lineage-events", "/api/v1/stats/jobs", "/api/v1/stats/datasets", "/api/v1/stats/sources",
        "/api/v1/jobs"}
    # The week view asks for the stats by day in the browser's time zone.
    week = browser.evaluate("""(() => {
        const b = Array.from(document.querySelectorAll('button'))
            .find(e => e.textContent.trim().toUpperCase() === '7 DAYS');
        if (!b) return null;
        const r = b.getBoundingClientRect();
        return [r.left + r.width / 2, r.top + r.height / 2]; })()""")
    assert week is not None
    browser.events.clear()
    browser.click(*week)
    browser.settle()
    asked = assert_healthy(browser)
    assert any(p.startswith("/api/v1/stats/lineage-events?period=WEEK&timezone=") for p in asked)


def test_jobs_list(browser, base_url):
    # The list opens on the first namespace by name.
    visit(browser, base_url + "/jobs", ["SnowflakeOpenLineage", "discounts_report", "COMPLETED"])


def test_datasets_list(browser, base_url):
    visit(browser, base_url + "/datasets", ["CUSTOMERS", "CUSTOMER_DISCOUNTS", "DISCOUNTS"])
    # CUSTOMER_DISCOUNTS has column lineage (the spec's example): its row links to it instead of N/A.
    row = browser.evaluate("""Array.from(document.querySelectorAll('tr'))
        .map(r => r.innerText).find(t => t.startsWith('CUSTOMER_DISCOUNTS'))""")
    assert row is not None and "VIEW" in row.upper()


def test_events_page(browser, base_url):
    asked = visit(browser, base_url + "/events", [STREAM_JOB, "START", "streaming"])
    assert any(p.startswith("/api/v1/events/lineage?") for p in asked)


def test_job_lineage_with_the_job_panel(browser, base_url):
    job = "etl_delivery_7_days"
    visit(browser, f"{base_url}/lineage/job/{FOOD}/{job}", ["public.delivery", "etl_orders_7_day"])
    click_node(browser, job[:16])
    asked = wait_for(browser, [job, "BATCH", "COMPLETED", "JOB FACETS", "RUN FACETS", '"sql"', '"nominalTime"'])
    assert f"/api/v1/namespaces/{FOOD}/jobs/{job}" in asked
    assert any(p.startswith("/api/v1/jobs/runs/") and p.endswith("/facets?type=job") for p in asked)
    text = browser.evaluate("document.body.innerText")
    assert "LAST FINISHED\nN/A" not in text and "TYPE\nBATCH" in text
    browser.screenshot(SCREENSHOT)
    assert SCREENSHOT.stat().st_size > 30_000


def test_streaming_job_panel_shows_its_type_and_tag(browser, base_url):
    visit(browser, f"{base_url}/lineage/job/streaming/{STREAM_JOB}", ["orders_topic", "public.orders"])
    click_node(browser, STREAM_JOB)
    wait_for(browser, ["TYPE\nSTREAM", "team-orders", '"jobType"', "RUNNING"])


def test_dataset_lineage_with_the_dataset_panel(browser, base_url):
    visit(browser, f"{base_url}/lineage/dataset/{FOOD}/public.delivery_7_days", ["public.delivery", "etl_drivers"])
    click_node(browser, "public.delivery")
    asked = wait_for(browser, ["A table for weekly deliveries.", "14 columns", "customer_email", "order_dispatched_on"])
    assert f"/api/v1/namespaces/{FOOD}/datasets/public.delivery_7_days" in asked


def test_column_level_lineage(browser, base_url):
    asked = visit(browser, f"{base_url}/datasets/column-level/{FOOD}/public.delivery_7_days",
                  ["public.orders_7_days", "public.order_status", "order_id", "customer_email"])
    assert any(p.startswith("/api/v1/column-lineage?nodeId=dataset:food_delivery:public.delivery_7_days")
               for p in asked)


def test_the_lineage_page_moves_beside_the_ui(base_url):
    page = httpx.get(base_url + PAGE_PATH_BESIDE_UI)
    assert page.status_code == 200 and "apple.pie" in page.text
    index = httpx.get(base_url + "/")
    assert index.status_code == 200 and "bundle.js" in index.text
    assert httpx.get(base_url + "/bundle.js").status_code == 200
    assert httpx.get(base_url + "/lineage/job/a%2Fb/c").text == index.text  # names with slashes, encoded
    assert httpx.get(base_url + "/api/v1/namespaces").json()["namespaces"]


def test_serve_web_ui_option_checks_the_folder_before_spark(tmp_path, monkeypatch, capsys):
    """``serve --web-ui DIR`` / ``LINEAGE_WEB_UI``: a folder without index.html stops serve at once, with
    the folder named, and the web UI cannot go without the read API."""
    monkeypatch.delenv(WEB_UI_ENV, raising=False)
    assert web_ui_dir(None) is None
    monkeypatch.setenv(WEB_UI_ENV, str(tmp_path))
    assert web_ui_dir(None) == tmp_path and web_ui_dir(Path("/elsewhere")) == Path("/elsewhere")
    with pytest.raises(ValueError, match=r"holds no index\.html"):
        check_web_ui(tmp_path)
    landing = ["--landing", str(tmp_path / "landing")]
    assert main(["serve", *landing]) == 2  # from the environment
    assert f"{tmp_path} holds no index.html" in capsys.readouterr().err
    (tmp_path / "index.html").write_text("<html></html>", encoding="utf-8")
    assert check_web_ui(tmp_path) == tmp_path.resolve()
    assert main(["serve", "--web-ui", str(tmp_path), "--no-read-api", *landing]) == 2
    assert "--web-ui needs the read API" in capsys.readouterr().err

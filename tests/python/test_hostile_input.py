"""Hostile input against the collector, ``ingest lineage`` and the read API: what a probe found.

Each test here failed before its fix: acknowledged events lost behind a NUL, a second event in one
body or line dropped unseen, validation errors escaping as 500s that never reconcile, reads open
with a key set, and a search pattern that backtracks for minutes.
"""

from __future__ import annotations

import base64
import json
import signal
import threading
import uuid
from pathlib import Path

import httpx
from lineage_events import run_event  # tests/python is on sys.path
from marquez_client import MarquezClient

from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.landing import LandingLayout
from python_jobs.lineage.event_rules import TRAILING_MESSAGE
from python_jobs.marquez_api.api import LikeMatcher, MarquezReadApi, stored_event
from python_jobs.marquez_api.routes import read_routes
from python_jobs.marquez_api.server import serve_app_in_thread
from python_jobs.ports import free_port
from python_jobs.serve.app import LINEAGE_PATH, CollectorConfig, create_app
from python_jobs.serve.process import health, start_collector, stop_collector

HEADERS = {"Content-Type": "application/json"}


def numbered_event(number: int) -> bytes:
    event = run_event(run={"runId": str(uuid.UUID(int=number + 1)), "facets": {}})
    return json.dumps(event, separators=(",", ":")).encode()


def landed_lines(landing: Path) -> list[bytes]:
    return [line for folder in ("open", "sealed") for path in sorted((landing / folder).glob("*"))
            for line in path.read_bytes().split(b"\n") if line and b"\0" not in line]


def rejected(landing: Path) -> list[dict]:
    return [json.loads(line) for path in sorted((landing / "rejected").glob("*.ndjson"))
            for line in path.read_text().splitlines()]


def test_a_nul_after_the_json_is_refused_and_a_kill_keeps_every_acknowledged_event(tmp_path):
    landing, port = tmp_path / "landing", free_port()
    server = start_collector(landing, port, log=tmp_path / "collector.log")
    url = f"http://127.0.0.1:{port}{LINEAGE_PATH}"
    try:
        with httpx.Client(timeout=10) as client:
            first = [client.post(url, content=numbered_event(n), headers=HEADERS).status_code for n in range(3)]
            nul = client.post(url, content=numbered_event(3) + b"\x00", headers=HEADERS)
            two = client.post(url, content=numbered_event(4) + b"\n" + numbered_event(5), headers=HEADERS)
            after = [client.post(url, content=numbered_event(n), headers=HEADERS).status_code for n in range(6, 11)]
        assert first == [201] * 3 and after == [201] * 5
        assert (nul.status_code, nul.json()) == (400, {"error": TRAILING_MESSAGE})
        assert (two.status_code, two.json()) == (400, {"error": TRAILING_MESSAGE})
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
    # The restart seals the file the kill left open: every acknowledged line survives it.
    server = start_collector(landing, port, log=tmp_path / "collector.log")
    assert stop_collector(server) in (0, -signal.SIGTERM)
    acknowledged = [numbered_event(n) for n in (0, 1, 2, 6, 7, 8, 9, 10)]
    assert sorted(landed_lines(landing)) == sorted(acknowledged)
    kept = rejected(landing)
    assert [record["reason"] for record in kept] == [TRAILING_MESSAGE] * 2
    assert kept[0]["body"] == (numbered_event(3) + b"\x00").decode()


def test_validation_failures_are_400s_kept_and_counted(tmp_path):
    landing, port = tmp_path / "landing", free_port()
    server = start_collector(landing, port, log=tmp_path / "collector.log")
    url = f"http://127.0.0.1:{port}{LINEAGE_PATH}"
    event = json.dumps(run_event())
    time_text = json.dumps(run_event()["eventTime"])
    bodies = {
        "digits": event.replace(time_text, "9" * 5000, 1),
        "nested": event.replace(time_text, "[" * 600 + "]" * 600, 1),
        "deeper than Jackson reads": event.replace(time_text, "[" * 1200 + "]" * 1200, 1),
        "big number elsewhere": event[:-1] + ', "x": ' + "1" * 1001 + "}",
    }
    try:
        with httpx.Client(timeout=10) as client:
            answers = {name: client.post(url, content=body, headers=HEADERS) for name, body in bodies.items()}
        counts = health(port)
    finally:
        assert stop_collector(server) in (0, -signal.SIGTERM)
    assert {name: (a.status_code, a.json()["error"]) for name, a in answers.items()} == {
        "digits": (400, "not valid JSON or not a JSON object"),
        "nested": (400, "eventTime must be a string, got " + "array<" * 600 + "void" + ">" * 600),
        "deeper than Jackson reads": (400, "not valid JSON or not a JSON object"),
        "big number elsewhere": (400, "not valid JSON or not a JSON object"),
    }
    assert (counts["received"], counts["rejected"], counts["in_flight"], counts["reconciles"]) == (4, 4, 0, True)
    assert len(rejected(landing)) == 4


def test_ingest_refuses_a_line_with_two_events_or_a_trailing_nul(spark, isolated_settings, tmp_path):
    good, second = numbered_event(20).decode(), numbered_event(21).decode()
    lines = tmp_path / "events.ndjson"
    lines.write_text("\n".join([good, second + " " + good, second + "\x00", second + "}" + good]) + "\n")
    document = tmp_path / "array.json"
    document.write_text("[" + good + "] " + second)
    report = ingest_lineage(spark, isolated_settings, [lines, document])
    assert (report.read, report.accepted, report.rejected, report.duplicates) == (5, 1, 4, 0)
    reasons = spark.table(isolated_settings.table("audit", "lineage_events_rejected")).select(
        "source_file", "source_line", "reason").orderBy("source_file", "source_line").collect()
    assert [(Path(row["source_file"]).name, row["source_line"], row["reason"]) for row in reasons] == [
        ("array.json", 1, "not valid JSON or not a JSON object"),  # an array and then more: kept whole
        ("events.ndjson", 2, TRAILING_MESSAGE), ("events.ndjson", 3, TRAILING_MESSAGE),
        ("events.ndjson", 4, TRAILING_MESSAGE),
    ]
    stored = spark.table(isolated_settings.table("raw", "lineage_events")).select("event_json").collect()
    assert [row["event_json"] for row in stored] == [good]
    again = ingest_lineage(spark, isolated_settings, [lines, document])
    assert (again.read, again.accepted, again.rejected, again.duplicates) == (5, 0, 4, 1)
    assert spark.table(isolated_settings.table("audit", "lineage_events_rejected")).count() == 4


def test_every_route_needs_the_key_and_a_read_key_only_reads(spark, isolated_settings, tmp_path):
    write_key, read_key = "write-secret", "read-secret"
    config = CollectorConfig(landing=LandingLayout(tmp_path / "landing"), api_key=write_key, read_api_key=read_key)
    api = MarquezReadApi(spark, isolated_settings, load=False)
    app = create_app(config, extra_routes=read_routes(api))
    reads = ["/health", "/api/v1/namespaces", "/api/v1/events/lineage", "/api/v1/search?q=a", "/", "/api/v1/jobs",
             "/api/v1/tags", "/api/v1/stats/jobs?period=DAY"]
    with serve_app_in_thread(app) as base, httpx.Client(base_url=base, timeout=30) as client:
        for path in reads:
            refused = client.get(path)
            assert refused.status_code == 401, path
            assert 'Basic realm="lineage warehouse"' in refused.headers.get_list("www-authenticate")[-1]
            assert client.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401, path
            for key in (write_key, read_key):
                assert client.get(path, headers={"Authorization": f"Bearer {key}"}).status_code == 200, path
            basic = base64.b64encode(f"anyone:{read_key}".encode()).decode()
            assert client.get(path, headers={"Authorization": f"Basic {basic}"}).status_code == 200, path
        event = numbered_event(30)
        assert client.post(LINEAGE_PATH, content=event, headers=HEADERS).status_code == 401
        posted = {key: client.post(LINEAGE_PATH, content=event, headers={**HEADERS, "Authorization": f"Bearer {key}"})
                  for key in (read_key, write_key)}
        assert {key: answer.status_code for key, answer in posted.items()} == {read_key: 401, write_key: 201}
        # Marquez's own client sends its api_key as a Bearer token. (It keeps the header in a module-level
        # dict, so a second client without a key would still send it: the refusals are checked above.)
        assert MarquezClient(base, api_key=read_key).list_namespaces() == {"namespaces": [], "totalCount": 0}


def test_like_search_runs_in_linear_time_and_matches_as_sql_like():
    name = "a" * 40
    finished: list[bool] = []
    worker = threading.Thread(target=lambda: finished.append(LikeMatcher("%a" * 10 + "%b").search(name)))
    worker.start()
    worker.join(10)  # the backtracking regex took minutes here; the pieces take microseconds
    assert finished == [False]
    cases = {
        ("orders", "ord"): True, ("orders", "ORD%S"): True, ("orders", "o_d"): True, ("orders", "o__d"): False,
        ("orders", "%"): True, ("orders", "s%o"): False, ("orders", "r%r"): True, ("orders", "%%%rs"): True,
        ("a.b", "a_b"): True, ("a.b", "a.b"): True, ("axb", "a.b"): False, ("line\nbreak", "e_b"): True,
    }
    assert {case: LikeMatcher(case[1]).search(case[0]) for case in cases} == cases


def test_events_stored_whole_before_the_fix_are_served_as_the_event_their_row_holds():
    first, second = numbered_event(50).decode(), numbered_event(51).decode()
    assert stored_event(first + "\n" + second) == json.loads(first)
    assert stored_event(first + "\x00") == json.loads(first)
    assert stored_event(" " + first) == json.loads(first)

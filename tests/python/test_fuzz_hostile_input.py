"""Property-based fuzzing (Hypothesis) of the validator, the collector and ``ingest lineage``.

Valid events are mutated the ways hostile or broken senders mutate them: truncation, bytes inserted
or appended (NUL, a second event, garbage), deep nesting, numbers past every limit, invalid UTF-8,
duplicate keys. The properties: the validator never raises; the collector never answers 5xx and
counts every request; after a SIGKILL every acknowledged event is stored once; ``ingest lineage``
decides each record as the collector does, and its counts reconcile.

CI runs a short pass (the ``ci`` profile). A longer one: ``HYPOTHESIS_PROFILE=long bin/test
tests/python/test_fuzz_hostile_input.py``.
"""

from __future__ import annotations

import json
import os
import signal
import uuid
from pathlib import Path

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lineage_events import run_event  # tests/python is on sys.path

from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.lineage.event_validation import first_problem
from python_jobs.ports import free_port
from python_jobs.serve.app import LINEAGE_PATH
from python_jobs.serve.process import health, start_collector, stop_collector

settings.register_profile("ci", max_examples=150, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("long", max_examples=5000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
# Tests that start a server or a Spark job per example run fewer of them.
FEW = {"ci": 2, "long": 40}[PROFILE]

TAILS = [b"\x00", b" \x00", b"\n", b"\r\n", b"  ", b"x", b"]", b"}", b",0]", b" 5", b'"s"', b"\xff", b"\xc3\x28"]


@st.composite
def valid_events(draw: st.DrawFn) -> bytes:
    run_id = str(uuid.UUID(int=draw(st.integers(min_value=1, max_value=2**64))))
    name = draw(st.text(min_size=1, max_size=12).filter(lambda text: text.strip() != ""))
    event = run_event(
        run={"runId": run_id, "facets": {}},
        job={"namespace": "fuzz", "name": name},
        eventType=draw(st.sampled_from(["START", "COMPLETE", "FAIL"])),
    )
    return json.dumps(event, ensure_ascii=draw(st.booleans())).encode()


@st.composite
def mutated_bodies(draw: st.DrawFn) -> bytes:
    body = draw(valid_events())
    kind = draw(st.sampled_from(["valid", "truncate", "insert", "append", "second", "nest", "number",
                                 "utf8", "duplicate", "wrap"]))
    if kind == "truncate":
        return body[: draw(st.integers(min_value=0, max_value=len(body) - 1))]
    if kind == "insert":
        at = draw(st.integers(min_value=0, max_value=len(body)))
        return body[:at] + draw(st.binary(min_size=1, max_size=8)) + body[at:]
    if kind == "append":
        return body + draw(st.sampled_from(TAILS))
    if kind == "second":
        return body + draw(st.sampled_from([b"", b" ", b"\n", b"]", b"}"])) + draw(valid_events())
    if kind == "nest":
        depth = draw(st.sampled_from([10, 500, 998, 999, 1000, 1500]))
        return body[:-1] + b', "deep": ' + b"[" * depth + b"]" * depth + b"}"
    if kind == "number":
        digits = draw(st.sampled_from([19, 20, 39, 1000, 1001, 5000]))
        value = draw(st.sampled_from([b"9" * digits, b"-" + b"9" * digits, b"1." + b"9" * digits]))
        return body.replace(b'"2026-01-01T00:00:00Z"', value, 1)
    if kind == "utf8":
        at = draw(st.integers(min_value=0, max_value=len(body)))
        return body[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"])) + body[at:]
    if kind == "duplicate":
        return body.replace(b'"eventType"', b'"eventType": 7, "eventType"', 1)
    if kind == "wrap":
        return draw(st.sampled_from([b"[", b"{\"e\":", b"\"", b""])) + body
    return body


def decision(body: bytes) -> str | None:
    return first_problem(body.decode("utf-8"))


@settings(settings.get_profile(PROFILE))
@given(mutated_bodies())
def test_the_validator_never_raises_and_accepts_only_one_json_object(body):
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return  # the collector refuses it before validation (tested below)
    reason = first_problem(text)
    assert reason is None or (isinstance(reason, str) and reason)
    if reason is None:
        assert isinstance(json.loads(text), dict)  # strict: one value, no trailing text, no raw NUL
        assert "\x00" not in text


def post_all(port: int, bodies: list[bytes]) -> list[int]:
    statuses: list[int] = []
    with httpx.Client(timeout=30) as client:
        for body in bodies:
            answer = client.post(f"http://127.0.0.1:{port}{LINEAGE_PATH}", content=body,
                                 headers={"Content-Type": "application/json"})
            statuses.append(answer.status_code)
            if answer.status_code != 201:
                assert set(answer.json()) == {"error"}
    return statuses


def landed(landing: Path) -> list[bytes]:
    return sorted(line for folder in ("open", "sealed") for path in (landing / folder).glob("*")
                  for line in path.read_bytes().split(b"\n") if line and b"\0" not in line)


@settings(settings.get_profile(PROFILE), max_examples=FEW)
@given(st.lists(mutated_bodies(), min_size=30, max_size=60))
def test_the_collector_answers_counts_and_keeps_every_acknowledged_body_through_a_kill(tmp_path_factory, bodies):
    work = tmp_path_factory.mktemp("fuzz-collector")
    landing, port = work / "landing", free_port()
    server = start_collector(landing, port, log=work / "collector.log")
    try:
        statuses = post_all(port, bodies)
        counts = health(port)
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
    assert set(statuses) <= {201, 400}
    utf8 = [body for body in bodies if _is_utf8(body)]
    assert [status == 201 for status in statuses] == [
        _is_utf8(body) and decision(body) is None for body in bodies]
    assert counts["received"] == len(bodies) and counts["in_flight"] == 0 and counts["reconciles"]
    assert counts["accepted"] == statuses.count(201) and counts["rejected"] == statuses.count(400)
    server = start_collector(landing, port, log=work / "collector.log")
    assert stop_collector(server) in (0, -signal.SIGTERM)
    acknowledged = [body.replace(b"\r", b" ").replace(b"\n", b" ")
                    for body, status in zip(bodies, statuses, strict=True) if status == 201]
    assert landed(landing) == sorted(acknowledged)
    assert len(utf8) >= statuses.count(201)


def _is_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# One warehouse for all examples (isolated_settings is per test): counts are compared as differences.
@settings(settings.get_profile(PROFILE), max_examples=FEW,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(mutated_bodies(), min_size=40, max_size=80))
def test_ingest_decides_each_line_as_the_collector_does_and_reconciles(spark, isolated_settings, tmp_path_factory,
                                                                        bodies):
    # A line of NDJSON cannot hold a raw line break; the collector turns them into spaces the same way.
    lines = [body.replace(b"\r", b" ").replace(b"\n", b" ") for body in bodies]
    lines = [line for line in lines if _is_utf8(line) and line.strip()]
    path = tmp_path_factory.mktemp("fuzz-ingest") / "fuzzed.ndjson"
    path.write_bytes(b"\n".join(lines) + b"\n")
    table = isolated_settings.table("raw", "lineage_events")
    stored_before = spark.table(table).count() if spark.catalog.tableExists(table) else 0
    report = ingest_lineage(spark, isolated_settings, [path])
    assert report.reconciles() and report.read == len(lines)
    accepted_texts = {line for line in lines if decision(line) is None}
    assert report.rejected == sum(decision(line) is not None for line in lines)
    assert spark.table(table).count() - stored_before == report.accepted <= len(accepted_texts)
    again = ingest_lineage(spark, isolated_settings, [path])
    assert (again.read, again.accepted, again.rejected) == (report.read, 0, report.rejected)

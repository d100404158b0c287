"""The HTTP collector (``python -m python_jobs serve``) with the real openlineage-python client.

The collector runs as a child process on a free loopback port (it never starts Spark); the landed
files are ingested here, in the test session's SparkSession, into an isolated warehouse prefix."""

from __future__ import annotations

import base64
import gzip
import json
import shutil
import signal
import socket
import threading
import time
import urllib.error
from pathlib import Path

import pytest
import requests
from lineage_events import RUN_ID, run_event  # tests/python is on sys.path
from openlineage.client.serde import Serde
from openlineage.client.transport.http import HttpConfig, HttpTransport
from pyspark.sql import functions as F

from python_jobs.landing import LandingLayout, ingest_sealed
from python_jobs.lineage.event_validation import first_problem
from python_jobs.ports import free_port
from python_jobs.serve.process import health, start_collector, stop_collector
from python_jobs.tools.generate.lineage import SyntheticSpec, events

NO_RETRY = {"total": 0, "read": 0, "connect": 0}


def transport(port: int, **options: object) -> HttpTransport:
    return HttpTransport(HttpConfig.from_dict({"type": "http", "url": f"http://127.0.0.1:{port}", "retry": NO_RETRY,
                                               **options}))


def emit(client: HttpTransport, event: dict) -> tuple[int, dict | None]:
    """The status (and JSON error body) the collector answered the real client."""
    try:
        response = client.emit(event)
        return response.status_code, None
    except requests.HTTPError as error:
        return error.response.status_code, error.response.json()


def landed_texts(landing: Path, folders: tuple[str, ...] = ("open", "sealed", "ingested")) -> list[str]:
    """Every complete line of the landing files (an open file's zero-filled tail excluded)."""
    lines: list[str] = []
    for folder in folders:
        for path in sorted((landing / folder).glob("*")):
            data = path.read_bytes()
            lines += [line.decode() for line in data[: data.rfind(b"\n") + 1].split(b"\n")[:-1] if b"\0" not in line]
    return lines


def rejected_records(landing: Path) -> list[dict]:
    return [json.loads(line) for path in sorted((landing / "rejected").glob("*.ndjson"))
            for line in path.read_text().splitlines()]


def corpus_events(shared_corpus: Path) -> list[dict]:
    found: list[dict] = []
    for path in sorted((shared_corpus / "openlineage").rglob("*.json")):
        try:
            document = json.loads(path.read_text())
        except ValueError:
            continue
        found += [item for item in (document if isinstance(document, list) else [document]) if isinstance(item, dict)]
    return found


@pytest.fixture()
def landing(tmp_path) -> Path:
    return tmp_path / "landing"


@pytest.mark.corpus
def test_the_openlineage_client_sends_the_corpus_and_ingest_stores_each_event_once(
    spark, isolated_settings, shared_corpus, landing, tmp_path
):
    port = free_port()
    server = start_collector(landing, port, log=tmp_path / "collector.log")
    plain, gzipped = transport(port), transport(port, compression="gzip")
    sent = corpus_events(shared_corpus)
    outcomes = []
    try:
        for number, event in enumerate(sent):
            status, body = emit(gzipped if number % 2 else plain, event)
            outcomes.append((Serde.to_json(event), status, body))
    finally:
        assert stop_collector(server) in (0, -signal.SIGTERM)
    # The client's own serialisation (nulls dropped, keys sorted) is what the collector judged.
    for text, status, body in outcomes:
        reason = first_problem(text)
        assert (status, body) == ((201, None) if reason is None else (400, {"error": reason})), text[:200]
    accepted = [text for text, status, _ in outcomes if status == 201]
    refused = [text for text, status, _ in outcomes if status == 400]
    assert len(accepted) > 30 and len(refused) > 100
    # Nothing is lost: every refused body is kept with its reason, byte for byte.
    kept = rejected_records(landing)
    assert sorted((r["body"], r["reason"], r["status"]) for r in kept) == sorted(
        (text, first_problem(text), 400) for text in refused)
    assert all(r["size"] > 0 and r["remote"].startswith("127.0.0.1:") and r["received_at"] for r in kept)
    # The sealed files hold the accepted events as sent; nothing is left open.
    layout = LandingLayout(landing)
    assert list(layout.open_dir.iterdir()) == []
    assert sorted(landed_texts(landing)) == sorted(accepted)

    first = ingest_sealed(spark, isolated_settings, layout)
    assert first.report is not None and first.report.reconciles()
    assert (first.report.read, first.report.rejected) == (len(accepted), 0)
    raw = spark.table(isolated_settings.table("raw", "lineage_events"))
    stored = [row["event_json"] for row in raw.select("event_json").collect()]
    assert len(stored) == first.report.accepted == len(set(stored))
    assert set(stored) <= set(accepted) and first.report.accepted + first.report.duplicates == len(accepted)
    assert layout.sealed_files() == [] and len(list(layout.ingested_dir.iterdir())) == len(first.files)

    # Exactly once: another run finds nothing; a crash between the commit and the move (the files
    # back in sealed/) only yields duplicates.
    assert ingest_sealed(spark, isolated_settings, layout).report is None
    for path in layout.ingested_dir.iterdir():
        shutil.copy(path, layout.sealed_dir / path.name)
    again = ingest_sealed(spark, isolated_settings, layout)
    assert again.report is not None and (again.report.accepted, again.report.duplicates) == (0, len(accepted))
    assert raw.count() == len(stored) and layout.sealed_files() == []


def test_auth_gzip_size_limits_and_a_slow_client(landing, tmp_path):
    port = free_port()
    server = start_collector(landing, port, ["--max-body", "64KiB"], env={"LINEAGE_API_KEY": "s3cret"},
                             log=tmp_path / "collector.log")
    try:
        event = run_event()
        assert emit(transport(port), event)[0] == 401
        assert emit(transport(port, auth={"type": "api_key", "apiKey": "wrong"}), event)[0] == 401
        keyed = transport(port, auth={"type": "api_key", "apiKey": "s3cret"})
        assert emit(keyed, event) == (201, None)
        assert emit(transport(port, compression="gzip", auth={"type": "api_key", "apiKey": "s3cret"}),
                    run_event(eventType="COMPLETE")) == (201, None)
        big = run_event(job={"namespace": "tests", "name": "job", "facets": {"doc": {"text": "x" * 70_000}}})
        assert emit(keyed, big)[0] == 413
        headers = {"Authorization": "Bearer s3cret", "Content-Encoding": "gzip", "Content-Type": "application/json"}
        url = f"http://127.0.0.1:{port}/api/v1/lineage"
        bomb = gzip.compress(json.dumps(big).encode())  # small on the wire, over the limit inflated
        assert len(bomb) < 64 * 1024
        assert requests.post(url, data=bomb, headers=headers, timeout=10).status_code == 413
        assert requests.post(url, data=b"\x1f\x8bnot gzip", headers=headers, timeout=10).status_code == 400

        # A client that sends half its body and stalls does not hold the others up.
        body = json.dumps(run_event(eventType="RUNNING")).encode()
        slow = socket.create_connection(("127.0.0.1", port))
        slow.sendall(b"POST /api/v1/lineage HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\n"
                     b"Content-Type: application/json\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n"
                     + body[:100])
        for number in range(5):
            assert emit(keyed, run_event(eventType="OTHER", eventTime=f"2026-01-0{number + 1}T00:00:00Z"))[0] == 201
        slow.sendall(body[100:])
        assert slow.recv(100).startswith(b"HTTP/1.1 201")
        slow.close()
        with pytest.raises(urllib.error.HTTPError, match="401"):
            health(port)  # with a key set, every route needs it
        counts = health(port, api_key="s3cret")
        assert counts["reconciles"] and counts["unauthorized"] == 2 and counts["too_large"] == 2
        assert (counts["accepted"], counts["rejected"]) == (8, 1)
    finally:
        assert stop_collector(server) in (0, -signal.SIGTERM)
    assert len(landed_texts(landing)) == 8
    kept = rejected_records(landing)
    assert sorted(r["status"] for r in kept) == [400, 413, 413]


def test_sigkill_mid_load_loses_no_acknowledged_event_and_ingest_stores_each_once(
    spark, isolated_settings, landing, tmp_path
):
    sent = [json.dumps(event, separators=(",", ":")) for event in events(SyntheticSpec(events=300, seed=23))]
    port = free_port()
    log = tmp_path / "collector.log"
    server = start_collector(landing, port, log=log)
    acknowledged: set[int] = set()
    lock = threading.Lock()
    killed = threading.Event()
    restarted = threading.Event()

    def client(numbers: list[int]) -> None:
        session = requests.Session()  # keep-alive, like HttpTransport's session
        for number in numbers:
            while True:
                try:
                    response = session.post(f"http://127.0.0.1:{port}/api/v1/lineage", data=sent[number],
                                            headers={"Content-Type": "application/json"}, timeout=10)
                    if response.status_code == 201:
                        with lock:
                            acknowledged.add(number)
                        break
                except requests.RequestException:
                    session = requests.Session()
                    restarted.wait(60)  # an at-least-once producer resends what was not acknowledged

    workers = [threading.Thread(target=client, args=(list(range(n, len(sent), 4)),)) for n in range(4)]
    for worker in workers:
        worker.start()
    while len(acknowledged) < 100:
        time.sleep(0.005)
    server.send_signal(signal.SIGKILL)
    server.wait()
    killed.set()
    with lock:
        acknowledged_before_kill = set(acknowledged)
    landed_at_kill = landed_texts(landing)
    assert {sent[n] for n in acknowledged_before_kill} <= set(landed_at_kill)
    assert list(LandingLayout(landing).open_dir.iterdir())  # the kill left the open file unsealed

    server = start_collector(landing, port, log=log)  # seals the left-over file first
    restarted.set()
    for worker in workers:
        worker.join(120)
    assert stop_collector(server) in (0, -signal.SIGTERM)
    assert acknowledged == set(range(len(sent)))
    landed = landed_texts(landing)
    assert set(landed) == set(sent)  # some may be there twice: landed, then killed before the 201

    report = ingest_sealed(spark, isolated_settings, LandingLayout(landing)).report
    assert report is not None and report.reconciles()
    assert (report.read, report.accepted, report.rejected, report.duplicates) == (
        len(landed), len(sent), 0, len(landed) - len(sent))
    raw = spark.table(isolated_settings.table("raw", "lineage_events"))
    per_event = raw.groupBy("event_json").count()
    assert per_event.count() == len(sent) and per_event.where(F.col("count") != 1).count() == 0
    print(f"kill test: acknowledged before kill {len(acknowledged_before_kill)}, landed at kill "
          f"{len(landed_at_kill)}, acknowledged {len(acknowledged)}, landed {len(landed)}, ingested {report.accepted}")


def wait_idle(port: int, timeout: float = 10.0) -> dict:
    """The counts once no request is in flight (a client that hung up is counted when the server notices)."""
    deadline = time.monotonic() + timeout
    while (counts := health(port))["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.05)
    return counts


def test_oversized_and_truncated_bodies_are_refused_kept_and_counted(landing, tmp_path):
    """Each refused body is answered 4xx with its reason, kept in rejected/ and counted once; a 10 MB
    event under the default limit (16 MiB) lands whole. The real client sends what it can produce;
    requests and a raw socket send what no OpenLineage client sends (cut or streamed bodies)."""
    limit = 16 * 1024 * 1024
    port = free_port()
    server = start_collector(landing, port, ["--body-timeout", "3s"], log=tmp_path / "collector.log")
    url = f"http://127.0.0.1:{port}/api/v1/lineage"
    client, gzipped = transport(port), transport(port, compression="gzip")
    ten_mb = run_event(run={"runId": RUN_ID, "facets": {"big": {"rows": ["x" * 1000] * 10_500}}})
    over = run_event(job={"namespace": "tests", "name": "job", "facets": {"doc": {"text": "x" * limit}}})
    over_bytes = len(Serde.to_json(over).encode())
    body = Serde.to_json(run_event(eventType="COMPLETE")).encode()
    packed = gzip.compress(body)
    try:
        assert emit(client, ten_mb) == (201, None)
        # Over the limit as sent (Content-Length), and as inflated (small on the wire).
        assert emit(client, over) == (413, {"error": f"the body has {over_bytes} bytes; the limit is {limit}"})
        assert emit(gzipped, over) == (413, {"error": f"the decompressed body has more than {limit} bytes"})
        # Streamed without a Content-Length (chunked): refused once past the limit.
        chunks = (b"x" * 1024 * 1024 for _ in range(17))
        streamed = requests.post(url, data=chunks, timeout=30)
        assert (streamed.status_code, streamed.json()) == (413, {"error": f"the body has more than {limit} bytes"})
        # JSON cut mid-way, and a gzip stream cut short (Content-Length right for what is sent).
        cut = requests.post(url, data=body[:100], headers={"Content-Type": "application/json"}, timeout=10)
        assert (cut.status_code, cut.json()) == (400, {"error": "not valid JSON or not a JSON object"})
        short_gzip = requests.post(url, data=packed[:-10], headers={"Content-Encoding": "gzip"}, timeout=10)
        assert (short_gzip.status_code, short_gzip.json()) == (400, {"error": "the gzip body is truncated"})
        # A Content-Length larger than what is sent, then the client hangs up: nobody is left to
        # answer, so it is counted as abandoned and what did arrive is kept.
        left = socket.create_connection(("127.0.0.1", port))
        left.sendall(b"POST /api/v1/lineage HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body[:100])
        time.sleep(0.2)
        left.close()
        # The same start, and then the client stays but sends nothing more: 408 after --body-timeout,
        # and the connection is closed, so a stalled client cannot hold it for ever.
        stalled = socket.create_connection(("127.0.0.1", port))
        stalled.sendall(b"POST /api/v1/lineage HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body[:50])
        stalled.settimeout(30)
        started = time.monotonic()
        answer = b""
        while chunk := stalled.recv(4096):
            answer += chunk
        waited = time.monotonic() - started
        stalled.close()
        assert answer.startswith(b"HTTP/1.1 408") and 3 <= waited < 25, (answer[:200], waited)
        assert json.loads(answer.partition(b"\r\n\r\n")[2]) == {
            "error": f"the client sent nothing for 3 s after 50 of {len(body)} bytes of its body"}
        counts = wait_idle(port)
        assert {key: counts[key] for key in ("received", "accepted", "rejected", "too_large", "unauthorized",
                                              "abandoned", "timed_out", "in_flight")} == {
            "received": 8, "accepted": 1, "rejected": 2, "too_large": 3, "unauthorized": 0, "abandoned": 1,
            "timed_out": 1, "in_flight": 0}
        assert counts["reconciles"]
    finally:
        assert stop_collector(server) in (0, -signal.SIGTERM)
    assert landed_texts(landing) == [Serde.to_json(ten_mb)]
    kept = {r["reason"]: r for r in rejected_records(landing)}
    assert sorted((r["status"], reason, r.get("body"), r.get("body_base64")) for reason, r in kept.items()) == sorted([
        (413, f"the body has {over_bytes} bytes; the limit is {limit}", None, None),
        (413, f"the decompressed body has more than {limit} bytes", None, None),
        (413, f"the body has more than {limit} bytes", None, None),
        (400, "not valid JSON or not a JSON object", body[:100].decode(), None),
        (400, "the gzip body is truncated", None, base64.b64encode(packed[:-10]).decode()),
        (400, f"the client went away after sending 100 of {len(body)} bytes of its body", body[:100].decode(), None),
        (408, f"the client sent nothing for 3 s after 50 of {len(body)} bytes of its body", body[:50].decode(), None),
    ])
    sizes = {reason: r["size"] for reason, r in kept.items()}
    assert sizes[f"the body has {over_bytes} bytes; the limit is {limit}"] == over_bytes  # as declared
    assert 0 < sizes[f"the decompressed body has more than {limit} bytes"] < 1024 * 1024  # as sent
    assert limit < sizes[f"the body has more than {limit} bytes"] <= limit + 1024 * 1024  # read until refused
    assert sizes["the gzip body is truncated"] == len(packed) - 10

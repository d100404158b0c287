"""Hostile connections and bodies against the collector (``python -m python_jobs serve`` as a child
process on a free loopback port, as in test_collector.py): request heads too big or too slow, idle
kept-alive connections, too many connections, gzip bodies with data after their end, and the mode
of the landing files. Raw sockets send what no HTTP client sends; every wait is bounded."""

from __future__ import annotations

import base64
import gzip
import json
import os
import signal
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest
import requests
from lineage_events import run_event  # tests/python is on sys.path
from openlineage.client.serde import Serde
from openlineage.client.transport.http import HttpConfig, HttpTransport

from python_jobs.ports import free_port
from python_jobs.serve.process import health, start_collector, stop_collector

NO_RETRY = {"total": 0, "read": 0, "connect": 0}


@pytest.fixture()
def landing(tmp_path) -> Path:
    return tmp_path / "landing"


def transport(port: int, **options: object) -> HttpTransport:
    return HttpTransport(HttpConfig.from_dict({"type": "http", "url": f"http://127.0.0.1:{port}", "retry": NO_RETRY,
                                               **options}))


def rejected_records(landing: Path) -> list[dict]:
    return [json.loads(line) for path in sorted((landing / "rejected").glob("*.ndjson"))
            for line in path.read_text().splitlines()]


def read_until_closed(conn: socket.socket, timeout: float = 10.0) -> tuple[bytes, float]:
    """What the server sent until it closed the connection, and the seconds that took."""
    started = time.monotonic()
    deadline = started + timeout
    received = b""
    while True:
        conn.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = conn.recv(65536)
        except ConnectionResetError:
            break
        except TimeoutError:
            raise AssertionError(f"still open after {timeout} s; got {received[:200]!r}") from None
        if not chunk:
            break
        received += chunk
    return received, time.monotonic() - started


def post_request(port: int, body: bytes, extra_headers: bytes = b"") -> bytes:
    return (b"POST /api/v1/lineage HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n" % (port, len(body)) + extra_headers + b"\r\n" + body)


def test_a_header_over_the_size_limit_is_answered_431_and_closed(landing, tmp_path):
    port = free_port()
    server = start_collector(landing, port, log=tmp_path / "collector.log")  # default --max-header-size 64KiB
    body = Serde.to_json(run_event()).encode()
    try:
        # 80 KiB of header: 431 and the connection closed, whatever the client still sends.
        big = socket.create_connection(("127.0.0.1", port), timeout=10)
        big.sendall(post_request(port, body, b"X-Padding: " + b"p" * 80 * 1024 + b"\r\n"))
        answer, _ = read_until_closed(big)
        big.close()
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
        assert answer.endswith(b"the request line and headers exceed 65536 bytes")
        # A header that never ends: refused once past the limit, not buffered (the probe's 5 MiB).
        endless = socket.create_connection(("127.0.0.1", port), timeout=10)
        endless.sendall(b"POST /api/v1/lineage HTTP/1.1\r\nHost: x\r\nX-Endless: ")
        sent = 0
        try:
            while sent < 5 * 1024 * 1024:
                endless.sendall(b"e" * 65536)
                sent += 65536
        except OSError:  # closed by the server after its linger
            pass
        answer, _ = read_until_closed(endless)
        endless.close()
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
        # 10 KiB of headers is normal: the event is accepted, on a connection that stays usable.
        normal = socket.create_connection(("127.0.0.1", port), timeout=10)
        padded = post_request(port, body, b"X-Padding: " + b"p" * 10 * 1024 + b"\r\n")
        for _ in range(2):
            normal.sendall(padded)
            assert normal.recv(65536).startswith(b"HTTP/1.1 201 ")
        normal.close()
        counts = health(port)
        assert (counts["received"], counts["accepted"]) == (2, 2)  # the refused heads never reached the app
    finally:
        assert stop_collector(server) in (0, -signal.SIGTERM)


def test_a_client_trickling_its_headers_is_cut_off_at_the_header_timeout(landing, tmp_path):
    port = free_port()
    server = start_collector(landing, port, ["--header-timeout", "1s", "--keep-alive-timeout", "1s"],
                             log=tmp_path / "collector.log")
    request = post_request(port, Serde.to_json(run_event()).encode())
    outcome: dict[str, object] = {}

    def slowloris() -> None:
        conn = socket.create_connection(("127.0.0.1", port), timeout=10)
        started = time.monotonic()
        conn.settimeout(0.5)  # one header byte per 0.5 s, reading what the server answers meanwhile
        received = b""
        for byte in request[:40]:  # 20 s worth of bytes, far past the deadline
            try:
                conn.sendall(bytes([byte]))
                chunk = conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            received += chunk
            if not chunk:
                break
        outcome["answer"], outcome["seconds"] = received, time.monotonic() - started
        conn.close()

    worker = threading.Thread(target=slowloris)
    worker.start()
    try:
        # The others are answered meanwhile.
        client = transport(port)
        for number in range(3):
            time.sleep(0.2)
            assert client.emit(run_event(eventType="OTHER", eventTime=f"2026-01-0{number + 1}T00:00:00Z"))
        worker.join(15)
        assert not worker.is_alive()
        answer, seconds = outcome["answer"], outcome["seconds"]
        assert isinstance(answer, bytes) and isinstance(seconds, float)
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
        assert answer.endswith(b"the request headers did not arrive within 1 s")
        assert 0.9 <= seconds < 3.0, seconds  # at the deadline, not one timeout per byte
        # A connection that opens and sends nothing is closed at the deadline too, without an answer.
        silent = socket.create_connection(("127.0.0.1", port), timeout=10)
        answer, seconds = read_until_closed(silent)
        silent.close()
        assert answer == b"" and 0.9 <= seconds < 3.0, (answer, seconds)
        assert health(port)["accepted"] == 3
    finally:
        assert stop_collector(server) in (0, -signal.SIGTERM)


def test_an_idle_keep_alive_connection_is_closed_after_the_keep_alive_timeout(landing, tmp_path):
    port = free_port()
    server = start_collector(landing, port, ["--keep-alive-timeout", "1s"], log=tmp_path / "collector.log")
    request = post_request(port, Serde.to_json(run_event()).encode())
    try:
        conn = socket.create_connection(("127.0.0.1", port), timeout=10)
        for _ in range(3):  # kept alive while it is used within the timeout
            conn.sendall(request)
            assert conn.recv(65536).startswith(b"HTTP/1.1 201 ")
            time.sleep(0.5)
        answer, seconds = read_until_closed(conn)
        conn.close()
        assert answer == b"" and 0.3 <= seconds < 3.0, (answer, seconds)  # 1 s after the last answer
    finally:
        assert stop_collector(server) in (0, -signal.SIGTERM)


def test_a_connection_over_the_limit_is_answered_503_at_once(landing, tmp_path):
    port = free_port()
    server = start_collector(landing, port, ["--max-connections", "5"], log=tmp_path / "collector.log")
    request = post_request(port, Serde.to_json(run_event()).encode())
    held: list[socket.socket] = []
    try:
        held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(5)]
        time.sleep(0.3)  # the server has accepted them
        extra = socket.create_connection(("127.0.0.1", port), timeout=10)
        answer, seconds = read_until_closed(extra)  # answered without sending anything
        extra.close()
        assert answer.startswith(b"HTTP/1.1 503 ") and b"connection: close" in answer, answer[:200]
        assert seconds < 3.0  # at once: not after the 10 s header timeout
        for conn in held:  # the five held are served
            conn.sendall(request)
            assert conn.recv(65536).startswith(b"HTTP/1.1 201 ")
        for conn in held:
            conn.close()
        held = []
        deadline = time.monotonic() + 10
        while True:  # once the server has seen them close, new connections work
            try:
                if health(port)["accepted"] == 5:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "new connections still refused"
            time.sleep(0.1)
        assert transport(port).emit(run_event(eventType="COMPLETE"))
    finally:
        for conn in held:
            conn.close()
        assert stop_collector(server) in (0, -signal.SIGTERM)


def test_gzip_bodies_with_data_after_their_end_are_refused_kept_and_counted(landing, tmp_path):
    port = free_port()
    server = start_collector(landing, port, log=tmp_path / "collector.log")
    url = f"http://127.0.0.1:{port}/api/v1/lineage"
    first = Serde.to_json(run_event()).encode()
    second = Serde.to_json(run_event(eventType="COMPLETE")).encode()
    two_members = gzip.compress(first) + gzip.compress(second)
    trailing = gzip.compress(first) + b"\x00garbage\xff"
    headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
    try:
        assert transport(port, compression="gzip").emit(run_event(eventType="RUNNING"))  # one stream: 201
        with httpx.Client(timeout=10) as client:
            answers = [client.post(url, content=body, headers=headers) for body in (two_members, trailing)]
        assert [(a.status_code, a.json()) for a in answers] == [
            (400, {"error": f"the gzip body has {len(gzip.compress(second))} bytes after its end (a second member "
                            "or trailing data); send one gzip stream"}),
            (400, {"error": "the gzip body has 9 bytes after its end (a second member or trailing data); "
                            "send one gzip stream"}),
        ]
        counts = health(port)
        assert (counts["accepted"], counts["rejected"], counts["reconciles"]) == (1, 2, True)
    finally:
        assert stop_collector(server) in (0, -signal.SIGTERM)
    kept = rejected_records(landing)
    assert sorted(r.get("body_base64", "") for r in kept) == sorted(
        base64.b64encode(body).decode() for body in (two_members, trailing))
    assert all(r["status"] == 400 and "after its end" in r["reason"] for r in kept)


def test_landing_files_are_not_world_readable(landing, tmp_path):
    umask = os.umask(0)
    os.umask(umask)
    port = free_port()
    server = start_collector(landing, port, log=tmp_path / "collector.log")
    try:
        assert transport(port).emit(run_event())
        refused = requests.post(f"http://127.0.0.1:{port}/api/v1/lineage", data=b"{not json", timeout=10)
        assert refused.status_code == 400
        open_files = list((landing / "open").iterdir()) + list((landing / "rejected" / "open").iterdir())
        open_modes = {oct(path.stat().st_mode & 0o777) for path in open_files}
    finally:
        assert stop_collector(server) in (0, -signal.SIGTERM)
    sealed = list((landing / "sealed").iterdir()) + list((landing / "rejected").glob("*.ndjson"))
    assert len(open_files) == 2 and len(sealed) == 2  # events and rejected, open then sealed
    assert open_modes == {oct(path.stat().st_mode & 0o777) for path in sealed} == {oct(0o640 & ~umask)}

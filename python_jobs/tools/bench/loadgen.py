"""A load generator for the collector: N keep-alive HTTP/1.1 connections on raw asyncio streams.

``python -m python_jobs.tools.bench.loadgen --port P --clients N --seconds S --events-file F`` posts the
events of F (one per line, reused round-robin) as fast as each connection gets its answers and prints
one JSON line: acknowledged events (201), other answers, seconds, events/s, p50 and p99 latency (ms).
Raw streams rather than an HTTP client library: the generator shares the machine with the server
and must cost as little CPU per request as possible.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

from python_jobs.serve.app import LINEAGE_PATH


def request_bytes(host: str, port: int, body: bytes, api_key: str | None = None) -> bytes:
    headers = [
        f"POST {LINEAGE_PATH} HTTP/1.1",
        f"Host: {host}:{port}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
    ]
    if api_key:
        headers.append(f"Authorization: Bearer {api_key}")
    return ("\r\n".join(headers) + "\r\n\r\n").encode() + body


async def read_response(reader: asyncio.StreamReader) -> int:
    """The status of one response; its body is read and dropped."""
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("the server closed the connection")
    status = int(status_line.split(b" ", 2)[1])
    length = 0
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if length:
        await reader.readexactly(length)
    return status


async def _client(host: str, port: int, requests: list[bytes], offset: int, deadline: float,
                  latencies: list[float], statuses: dict[int, int]) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    index = offset
    try:
        while time.monotonic() < deadline:
            payload = requests[index % len(requests)]
            index += 1
            sent = time.perf_counter()
            writer.write(payload)
            status = await read_response(reader)
            latencies.append(time.perf_counter() - sent)
            statuses[status] = statuses.get(status, 0) + 1
    finally:
        writer.close()


async def run_load(host: str, port: int, bodies: list[bytes], clients: int, seconds: float,
                   api_key: str | None = None) -> dict[str, float | int | dict[str, int]]:
    requests = [request_bytes(host, port, body, api_key) for body in bodies]
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    started = time.monotonic()
    deadline = started + seconds
    share = max(1, len(requests) // clients)
    await asyncio.gather(*[
        _client(host, port, requests, n * share, deadline, latencies, statuses) for n in range(clients)
    ])
    elapsed = time.monotonic() - started
    ordered = sorted(latencies)
    acked = statuses.get(201, 0)
    return {
        "clients": clients,
        "acked": acked,
        "other": sum(count for status, count in statuses.items() if status != 201),
        "statuses": {str(status): count for status, count in statuses.items()},
        "seconds": round(elapsed, 3),
        "events_per_s": round(acked / elapsed, 1) if elapsed else 0.0,
        "p50_ms": round(statistics.median(ordered) * 1000, 2) if ordered else 0.0,
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2) if ordered else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--events-file", type=Path, required=True)
    args = parser.parse_args()
    bodies = [line.encode() for line in args.events_file.read_text().splitlines() if line.strip()]
    try:  # optional: uvloop's faster event loop when it is installed (uvicorn[standard] brings it)
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    result = asyncio.run(run_load(args.host, args.port, bodies, args.clients, args.seconds))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

"""The fault suite's ``collector`` scenario: SIGKILL the HTTP collector during a load, restart it, and check
that ingest stores every event once.

A point is ``collector:<acks>:<delay_ms>``: four concurrent clients send the batch's events (an
at-least-once producer: a request that got no 201 is sent again once the collector is back), and the
collector is killed ``delay_ms`` after the ``acks``-th 201. The restarted collector seals what the dead one
left open; the clients finish; SIGTERM seals the rest; ``ingest lineage`` of the landing folder runs in a
fault child, which writes the digest of ``raw.lineage_events`` by event (``event_id`` and body: the
arrival order, the landing file names and the ``ingest_seq`` differ from run to run by design).

It converges when: every event acknowledged before the kill is in the landing files, every event ends up
acknowledged, the ingest report reconciles (read = accepted + rejected + duplicates), and the stored events
equal the uninterrupted reference's, each once.
"""

from __future__ import annotations

import json
import shutil
import signal
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from python_jobs.landing import LandingLayout
from python_jobs.lineage.event_validation import first_problem
from python_jobs.ports import free_port
from python_jobs.serve.process import start_collector, stop_collector

CLIENTS = 4
REQUEST_TIMEOUT_S = 10.0


@dataclass
class LoadOutcome:
    sent: int
    acknowledged: set[int] = field(default_factory=set)
    acknowledged_before_kill: set[int] = field(default_factory=set)
    killed: bool = False


def post(url: str, body: bytes) -> int:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def landed_lines(landing: Path) -> list[str]:
    """Every complete line in the landing folder (sealed, ingested and open files; zeros cut off)."""
    lines: list[str] = []
    for folder in ("sealed", "ingested", "open"):
        for path in sorted((landing / folder).glob("*")):
            if path.is_file():
                text = path.read_bytes().split(b"\0", 1)[0].decode("utf-8", errors="replace")
                lines += [line for line in text.split("\n") if line.strip()]
    return lines


def run_load(landing: Path, bodies: list[bytes], kill_after_acks: int | None, delay_ms: int,
             log: Path) -> LoadOutcome:
    """Loads ``bodies`` with ``CLIENTS`` clients; with ``kill_after_acks``, SIGKILLs the collector once that
    many were acknowledged (plus ``delay_ms``) and starts it again on the same port and folder."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/api/v1/lineage"
    outcome = LoadOutcome(sent=len(bodies))
    lock = threading.Lock()
    restarted = threading.Event()
    if kill_after_acks is None:
        restarted.set()
    server = start_collector(landing, port, log=log)

    def client(numbers: list[int]) -> None:
        for number in numbers:
            while True:
                try:
                    status = post(url, bodies[number])
                except OSError:
                    restarted.wait(120)
                    continue
                if status == 201:
                    with lock:
                        outcome.acknowledged.add(number)
                    break
                if status >= 500:
                    restarted.wait(120)
                    continue
                raise RuntimeError(f"the collector answered {status} to a valid event")

    workers = [threading.Thread(target=client, args=(list(range(n, len(bodies), CLIENTS)),), daemon=True)
               for n in range(CLIENTS)]
    for worker in workers:
        worker.start()
    if kill_after_acks is not None:
        while len(outcome.acknowledged) < kill_after_acks and any(w.is_alive() for w in workers):
            time.sleep(0.002)
        time.sleep(delay_ms / 1000)
        server.send_signal(signal.SIGKILL)
        server.wait()
        outcome.killed = True
        with lock:
            outcome.acknowledged_before_kill = set(outcome.acknowledged)
        server = start_collector(landing, port, log=log)  # seals what the killed one left open
        restarted.set()
    for worker in workers:
        worker.join(300)
    stop_collector(server)
    return outcome


def event_bodies(batch: Path) -> list[bytes]:
    """The valid events of a fault-suite batch, once each (the collector answers 400 to the bad lines)."""
    seen: dict[str, bytes] = {}
    for path in sorted(batch.glob("*.ndjson")):
        for line in path.read_text().splitlines():
            if line.strip() and first_problem(line) is None:
                seen.setdefault(line, line.encode())
    return list(seen.values())


def check_landing(outcome: LoadOutcome, bodies: list[bytes], landed: list[str]) -> list[str]:
    """What the load broke, in words (empty when nothing)."""
    problems = []
    landed_set = set(landed)
    lost = [n for n in outcome.acknowledged_before_kill if bodies[n].decode() not in landed_set]
    if lost:
        problems.append(f"{len(lost)} events acknowledged before the kill are not in the landing files")
    if outcome.acknowledged != set(range(len(bodies))):
        problems.append(f"{len(bodies) - len(outcome.acknowledged)} events never acknowledged")
    return problems


def prepare_landing(root: Path) -> Path:
    shutil.rmtree(root, ignore_errors=True)
    return LandingLayout(root).ensure().root


def compare_event_digests(reference: dict, got: dict) -> dict[str, dict]:
    """The fault suite's difference record for ``raw.lineage_events`` (empty when they match)."""
    keys = ("rows", "distinct_events", "digest")
    same = all(reference.get(k) == got.get(k) for k in keys)
    if same and got.get("rows") == got.get("distinct_events") and got.get("reconciles"):
        return {}
    return {"raw.lineage_events (by event)": {
        "rows_reference": reference.get("rows"), "rows_after": got.get("rows"),
        "first_key": json.dumps({k: got.get(k) for k in ("distinct_events", "reconciles", "report")}),
        "side": "after the crash",
    }}

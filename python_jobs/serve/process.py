"""Running the collector as a child process (tests, the benchmark, the fault suite): start, wait, stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from python_jobs.serve.auth import API_KEY_ENV
from python_jobs.settings import PROJECT_DIR


def health(port: int, timeout: float = 2.0, api_key: str | None = None) -> dict:
    """The collector's counts; with a key set, ``/health`` needs it like every route."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/health")
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def start_collector(
    landing: Path,
    port: int,
    extra_args: Sequence[str] = (),
    env: dict[str, str] | None = None,
    log: Path | None = None,
    ready_timeout: float = 60.0,
) -> subprocess.Popen:
    """``python -m python_jobs serve`` on 127.0.0.1:``port``, returned once /health answers."""
    command = [sys.executable, "-m", "python_jobs", "serve", "--port", str(port), "--landing", str(landing),
               *extra_args]
    output = log.open("ab") if log else subprocess.DEVNULL
    process = subprocess.Popen(
        command, cwd=PROJECT_DIR, env={**os.environ, **(env or {})}, stdout=output, stderr=subprocess.STDOUT
    )
    api_key = {**os.environ, **(env or {})}.get(API_KEY_ENV) or None
    deadline = time.monotonic() + ready_timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the collector exited with {process.returncode} before it answered")
        try:
            health(port, timeout=1.0, api_key=api_key)
            return process
        except OSError:
            if time.monotonic() > deadline:
                process.kill()
                raise RuntimeError("the collector did not answer /health in time") from None
            time.sleep(0.1)


def stop_collector(process: subprocess.Popen, timeout: float = 30.0) -> int:
    """SIGTERM (a clean shutdown that seals the open file), then the exit code."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()

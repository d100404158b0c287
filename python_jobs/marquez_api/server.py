"""Serve a Starlette app with uvicorn in a background thread of this process (tests, benchmark).

The SparkSession stays in this process, so the app's sync endpoints use it from Starlette's
thread pool; no second process opens the metastore.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.applications import Starlette
from starlette.routing import BaseRoute
from uvicorn._types import ASGIApplication

from python_jobs.ports import free_port
from python_jobs.serve.http_limits import HttpLimits


@contextmanager
def serve_in_thread(routes: list[BaseRoute], timeout_s: float = 30.0) -> Iterator[str]:
    """Yield the base URL of a loopback server answering ``routes``; stop it on exit."""
    with serve_app_in_thread(Starlette(routes=routes), timeout_s, lifespan="off") as url:
        yield url


@contextmanager
def serve_app_in_thread(app: ASGIApplication, timeout_s: float = 30.0, lifespan: str = "on") -> Iterator[str]:
    """Yield the base URL of a loopback server running ``app`` (its lifespan too, by default)."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan=lifespan,
                            **HttpLimits().uvicorn_options())
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"uvicorn did not start on port {port}")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout_s)

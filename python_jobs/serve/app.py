"""The collector's ASGI app: ``POST /api/v1/lineage`` (Marquez's and OpenLineage's endpoint) and health.

Answers: 201 once the event is durable in the landing folder; 400 with ``{"error": reason}`` for
a body that is not JSON or not a valid event (the same rules as ``ingest lineage``:
``event_validation.first_problem`` interprets ``event_rules.RULES``), kept with its reason in
``rejected/``; 413 over ``max_body_bytes`` (checked on the decompressed size too); 401 when an API
key is configured and the request does not carry it as ``Authorization: Bearer <key>``.

Other servers mount their routes beside these (``extra_routes``) and a ``BuildLoop`` runs beside
the HTTP path in the same process (``build_loop``); the HTTP path itself never touches Spark.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
import json
import os
import zlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from python_jobs.lineage.event_validation import first_problem
from python_jobs.serve.landing import GroupCommitWriter, LandingLayout

if TYPE_CHECKING:
    from python_jobs.serve.build_loop import BuildLoop

API_KEY_ENV = "LINEAGE_API_KEY"
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
LINEAGE_PATH = "/api/v1/lineage"


@dataclass(frozen=True)
class CollectorConfig:
    landing: LandingLayout
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    fsync: bool = True
    rotate_bytes: int = 64 * 1024 * 1024
    rotate_seconds: float = 60.0
    api_key: str | None = None

    @staticmethod
    def api_key_from_env() -> str | None:
        return os.environ.get(API_KEY_ENV) or None


@dataclass
class CollectorCounts:
    """Every request to the lineage endpoint is counted once:
    received = accepted + rejected + too_large + unauthorized."""

    received: int = 0
    accepted: int = 0
    rejected: int = 0
    too_large: int = 0
    unauthorized: int = 0
    sealed_files: int = 0
    sealed_events: int = 0
    extra: dict[str, int] = field(default_factory=dict)

    def reconciles(self) -> bool:
        return self.received == self.accepted + self.rejected + self.too_large + self.unauthorized

    def as_dict(self) -> dict[str, int | bool]:
        return {
            "received": self.received,
            "accepted": self.accepted,
            "rejected": self.rejected,
            "too_large": self.too_large,
            "unauthorized": self.unauthorized,
            "sealed_files": self.sealed_files,
            "sealed_events": self.sealed_events,
            "reconciles": self.reconciles(),
        }


class BodyTooLarge(Exception):
    pass


class Collector:
    """The state behind the routes: the two landing writers and the counts."""

    def __init__(self, config: CollectorConfig):
        self.config = config
        self.counts = CollectorCounts()
        layout = config.landing
        self.events = GroupCommitWriter(
            layout.open_dir,
            layout.sealed_dir,
            "events",
            fsync=config.fsync,
            rotate_bytes=config.rotate_bytes,
            rotate_seconds=config.rotate_seconds,
            on_seal=self._sealed,
        )
        self.rejections = GroupCommitWriter(
            layout.rejected_dir / "open",
            layout.rejected_dir,
            "rejected",
            fsync=config.fsync,
            rotate_bytes=config.rotate_bytes,
            rotate_seconds=config.rotate_seconds,
        )
        self.loop: asyncio.AbstractEventLoop | None = None

    def _sealed(self, path: Path, lines: int) -> None:
        self.counts.sealed_files += 1
        self.counts.sealed_events += lines

    async def start(self) -> None:
        self.config.landing.ensure()
        self.loop = asyncio.get_running_loop()
        await self.events.start()
        await self.rejections.start()

    async def stop(self) -> None:
        await self.events.close()
        await self.rejections.close()

    def seal_now(self, timeout: float = 60.0) -> None:
        """Seals the open events file, from another thread (the build loop's, before a round)."""
        if self.loop is None or self.loop.is_closed():
            return
        asyncio.run_coroutine_threadsafe(self.events.rotate(), self.loop).result(timeout)

    def authorized(self, request: Request) -> bool:
        expected = self.config.api_key
        if not expected:
            return True
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(token.strip().encode(), expected.encode())

    async def read_body(self, request: Request) -> bytes:
        limit = self.config.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise BodyTooLarge(f"the body has {declared} bytes; the limit is {limit}")
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge(f"the body has more than {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    def decoded(self, body: bytes, encoding: str) -> bytes:
        """The body after ``Content-Encoding`` (gzip or none), within the size limit."""
        encoding = encoding.strip().lower()
        if encoding in ("", "identity"):
            return body
        if encoding not in ("gzip", "x-gzip", "deflate"):
            raise ValueError(f"unsupported Content-Encoding {encoding!r} (gzip or none)")
        limit = self.config.max_body_bytes
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header, detected
        try:
            data = inflater.decompress(body, limit + 1)
        except zlib.error as error:
            raise ValueError(f"the body is not valid {encoding}: {error}") from error
        if len(data) > limit or inflater.unconsumed_tail:
            raise BodyTooLarge(f"the decompressed body has more than {limit} bytes")
        if not inflater.eof:
            raise ValueError(f"the {encoding} body is truncated")
        return data

    async def reject(self, request: Request, status: int, reason: str, body: bytes | None, size: int) -> None:
        """Keeps a refused body with its reason (400) or the facts of a refused request (413)."""
        record: dict[str, object] = {
            "received_at": datetime.now(UTC).isoformat(timespec="microseconds"),
            "remote": _remote(request),
            "status": status,
            "reason": reason,
            "size": size,
            "content_encoding": request.headers.get("content-encoding"),
        }
        if body is not None:
            try:
                record["body"] = body.decode("utf-8")
            except UnicodeDecodeError:
                record["body_base64"] = base64.b64encode(body).decode("ascii")
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        await self.rejections.append(line)

    async def post_lineage(self, request: Request) -> Response:
        counts = self.counts
        counts.received += 1
        if not self.authorized(request):
            counts.unauthorized += 1
            return JSONResponse(
                {"error": "missing or wrong API key (Authorization: Bearer <key>)"},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        raw = b""
        try:
            raw = await self.read_body(request)
            body = self.decoded(raw, request.headers.get("content-encoding", ""))
        except BodyTooLarge as error:
            counts.too_large += 1
            await self.reject(request, 413, str(error), None, len(raw))
            return JSONResponse({"error": str(error)}, status_code=413)
        except ValueError as error:
            return await self._bad_request(request, str(error), raw)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as error:
            return await self._bad_request(request, f"the body is not UTF-8: {error}", body)
        reason = first_problem(text)
        if reason is not None:
            return await self._bad_request(request, reason, body)
        # JSON has no raw line breaks inside strings, so outside them they are whitespace: a space
        # keeps the event (and its id) the same and the NDJSON framing intact.
        line = body.replace(b"\r", b" ").replace(b"\n", b" ") + b"\n"
        await self.events.append(line)
        counts.accepted += 1
        return Response(status_code=201)

    async def _bad_request(self, request: Request, reason: str, body: bytes) -> Response:
        self.counts.rejected += 1
        await self.reject(request, 400, reason, body, len(body))
        return JSONResponse({"error": reason}, status_code=400)

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "landing": str(self.config.landing.root), **self.counts.as_dict()})


def _remote(request: Request) -> str | None:
    client = request.client
    return f"{client.host}:{client.port}" if client else None


def create_app(
    config: CollectorConfig,
    *,
    extra_routes: Sequence[BaseRoute] = (),
    build_loop: BuildLoop | None = None,
) -> Starlette:
    """The collector app. ``extra_routes`` are mounted after the collector's own; ``build_loop``
    (optional) starts with the app, seals the open landing file before each round, and stops
    (finishing its round) before the landing writers close. ``app.state.collector`` is the
    ``Collector``."""
    collector = Collector(config)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await collector.start()
        if build_loop is not None:
            build_loop.before_round.append(collector.seal_now)
            build_loop.start()
        try:
            yield
        finally:
            if build_loop is not None:
                await asyncio.get_running_loop().run_in_executor(None, build_loop.stop)
            await collector.stop()
            print(f"collector stopped, open files sealed: {collector.counts.as_dict()}", flush=True)

    routes: list[BaseRoute] = [
        Route(LINEAGE_PATH, collector.post_lineage, methods=["POST"]),
        Route("/health", collector.health, methods=["GET"]),
        Route("/healthcheck", collector.health, methods=["GET"]),
        Route("/api/v1/collector/health", collector.health, methods=["GET"]),
        *extra_routes,
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.collector = collector
    return app

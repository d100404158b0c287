"""The collector's ASGI app: ``POST /api/v1/lineage`` (Marquez's and OpenLineage's endpoint) and health.

Answers: 201 once the event is durable in the landing folder; 400 with ``{"error": reason}`` for
a body that is not JSON or not a valid event (the same rules as ``ingest lineage``:
``event_validation.first_problem`` interprets ``event_rules.RULES``), kept with its reason in
``rejected/``; 413 over ``max_body_bytes`` (checked on the decompressed size too); 401 when an API
key is configured and the request does not carry it as ``Authorization: Bearer <key>``. A client that
goes away before the end of its body (fewer bytes than its ``Content-Length``, an unfinished chunked
body) cannot be answered: it is counted ``abandoned`` and what it sent is kept in ``rejected/`` too. One
that stops sending for ``body_timeout_seconds`` gets 408, is counted ``timed_out``, and what it sent is
kept; so a stalled or trickling client holds a connection for a bounded time, not for ever.

Other servers mount their routes beside these (``extra_routes``) and a ``BuildLoop`` runs beside
the HTTP path in the same process (``build_loop``); the HTTP path itself never touches Spark.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import zlib
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from python_jobs.landing import GroupCommitWriter, LandingLayout
from python_jobs.lineage.event_validation import first_problem
from python_jobs.serve.auth import ApiKeyMiddleware, ApiKeys, key_matches, presented_key

if TYPE_CHECKING:
    from python_jobs.serve.build_loop import BuildLoop

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
DEFAULT_BODY_TIMEOUT_SECONDS = 30.0
LINEAGE_PATH = "/api/v1/lineage"


@dataclass(frozen=True)
class CollectorConfig:
    landing: LandingLayout
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    fsync: bool = True
    rotate_bytes: int = 64 * 1024 * 1024
    rotate_seconds: float = 60.0
    api_key: str | None = None
    # Reads (the read API, the page, health) also take this key; posting events does not.
    read_api_key: str | None = None
    # The longest wait for the next bytes of a request body (nginx's client_body_timeout, by read).
    body_timeout_seconds: float = DEFAULT_BODY_TIMEOUT_SECONDS

    @staticmethod
    def api_key_from_env() -> str | None:
        return ApiKeys.from_env().write

    @staticmethod
    def read_api_key_from_env() -> str | None:
        return ApiKeys.from_env().read

    @property
    def keys(self) -> ApiKeys:
        return ApiKeys(self.api_key, self.read_api_key)


@dataclass
class CollectorCounts:
    """Every request to the lineage endpoint is counted once:
    received = accepted + rejected + too_large + unauthorized + abandoned (the client left mid-body)
    + timed_out (the client stopped sending mid-body) + failed (valid, but the landing write failed: 503)."""

    received: int = 0
    accepted: int = 0
    rejected: int = 0
    too_large: int = 0
    unauthorized: int = 0
    abandoned: int = 0
    timed_out: int = 0
    failed: int = 0
    sealed_files: int = 0
    sealed_events: int = 0

    def reconciles(self) -> bool:
        return self.in_flight() == 0

    def in_flight(self) -> int:
        """Requests received and not yet answered (0 whenever the collector is idle)."""
        answered = self.accepted + self.rejected + self.too_large + self.unauthorized + self.abandoned
        return self.received - answered - self.timed_out - self.failed

    def as_dict(self) -> dict[str, int | bool]:
        return {
            "received": self.received,
            "accepted": self.accepted,
            "rejected": self.rejected,
            "too_large": self.too_large,
            "unauthorized": self.unauthorized,
            "abandoned": self.abandoned,
            "timed_out": self.timed_out,
            "failed": self.failed,
            "in_flight": self.in_flight(),
            "sealed_files": self.sealed_files,
            "sealed_events": self.sealed_events,
            "reconciles": self.reconciles(),
        }


class BodyTooLarge(Exception):
    """Over ``max_body_bytes``; ``size`` is what the request declared or sent before it was refused."""

    def __init__(self, message: str, size: int):
        super().__init__(message)
        self.size = size


class BodyCutShort(Exception):
    """The client went away before the end of its body; ``partial`` is what it sent."""

    def __init__(self, message: str, partial: bytes):
        super().__init__(message)
        self.partial = partial


class BodyStalled(BodyCutShort):
    """The client sent nothing for ``body_timeout_seconds`` before the end of its body."""


Headers = dict[bytes, bytes]
Answer = tuple[int, bytes, list[tuple[bytes, bytes]]]


@dataclass(frozen=True)
class RequestFacts:
    remote: str | None
    encoding: str


class Collector:
    """The state behind the routes: the two landing writers and the counts."""

    def __init__(self, config: CollectorConfig, on_accepted: Callable[[bytes], object] | None = None):
        self.config = config
        self.counts = CollectorCounts()
        # Called on the event loop with each acknowledged event's line (the read API's live overlay).
        self.on_accepted = on_accepted
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

    def authorized(self, headers: Headers) -> bool:
        keys = self.config.keys
        if not keys.required:
            return True
        return key_matches(presented_key(headers.get(b"authorization", b"")), keys.accepted_for("POST"))

    async def read_body(self, headers: Headers, receive: Receive) -> bytes:
        limit = self.config.max_body_bytes
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            raise BodyTooLarge(f"the body has {int(declared)} bytes; the limit is {limit}", int(declared))
        expected = f" of {int(declared)}" if declared.isdigit() else ""
        timeout = self.config.body_timeout_seconds
        chunks: list[bytes] = []
        size = 0
        loop = asyncio.get_running_loop()
        # One timer per body, pushed back after every read: no task per read on the hot path.
        try:
            async with asyncio.timeout(timeout) as deadline:
                while True:
                    message = await receive()
                    deadline.reschedule(loop.time() + timeout)
                    if message["type"] == "http.disconnect":
                        raise BodyCutShort(
                            f"the client went away after sending {size}{expected} bytes of its body",
                            b"".join(chunks),
                        )
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > limit:
                        raise BodyTooLarge(f"the body has more than {limit} bytes", size)
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        return b"".join(chunks)
        except TimeoutError:
            raise BodyStalled(
                f"the client sent nothing for {timeout:g} s after {size}{expected} bytes of its body",
                b"".join(chunks),
            ) from None

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
            raise BodyTooLarge(f"the decompressed body has more than {limit} bytes", len(body))
        if not inflater.eof:
            raise ValueError(f"the {encoding} body is truncated")
        if inflater.unused_data:  # concatenated members are valid gzip, but only the first was judged
            raise ValueError(
                f"the {encoding} body has {len(inflater.unused_data)} bytes after its end (a second member or "
                f"trailing data); send one {encoding} stream"
            )
        return data

    async def reject(self, request: RequestFacts, status: int, reason: str, body: bytes | None, size: int) -> None:
        """Keeps a refused body with its reason (400, or a body cut short) or the facts of a refused request (413)."""
        record: dict[str, object] = {
            "received_at": datetime.now(UTC).isoformat(timespec="microseconds"),
            "remote": request.remote,
            "status": status,
            "reason": reason,
            "size": size,
            "content_encoding": request.encoding or None,
        }
        if body is not None:
            try:
                record["body"] = body.decode("utf-8")
            except UnicodeDecodeError:
                record["body_base64"] = base64.b64encode(body).decode("ascii")
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        await self.rejections.append(line)

    async def post_lineage(self, headers: Headers, remote: str | None, receive: Receive) -> Answer:
        """The answer to one POST: (status, JSON error or empty body, extra headers)."""
        counts = self.counts
        counts.received += 1
        if not self.authorized(headers):
            counts.unauthorized += 1
            challenge = [(b"www-authenticate", b"Bearer")]
            return 401, _error("missing or wrong API key (Authorization: Bearer <key>)"), challenge
        facts = RequestFacts(remote, headers.get(b"content-encoding", b"").decode("latin-1"))
        raw = b""
        try:
            raw = await self.read_body(headers, receive)
            body = self.decoded(raw, facts.encoding)
        except BodyTooLarge as error:
            counts.too_large += 1
            await self.reject(facts, 413, str(error), None, error.size)
            return 413, _error(str(error)), []
        except ValueError as error:
            return await self._bad_request(facts, str(error), raw)
        except BodyStalled as error:
            counts.timed_out += 1
            await self.reject(facts, 408, str(error), error.partial, len(error.partial))
            return 408, _error(str(error)), [(b"connection", b"close")]
        except BodyCutShort as error:
            # Nobody reads the answer, but what arrived is kept with the reason like any refused body.
            counts.abandoned += 1
            await self.reject(facts, 400, str(error), error.partial, len(error.partial))
            return 400, _error(str(error)), []
        return await self._land(facts, body)

    async def submit(self, body: bytes, remote: str | None) -> Answer:
        """An event the server wrote for a client (Marquez's legacy write calls, ``legacy_writes.py``):
        counted, validated, kept or refused exactly like a posted one."""
        self.counts.received += 1
        answer = await self._land(RequestFacts(remote, ""), body)
        if answer[0] == 201 and self.on_accepted is not None:
            # One turn of the loop runs the hook _land scheduled: the caller reads the event back next.
            await asyncio.sleep(0)
        return answer

    async def _land(self, facts: RequestFacts, body: bytes) -> Answer:
        """Validates a whole decoded body and appends it to the landing file: 201, 400 or 503."""
        counts = self.counts
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as error:
            return await self._bad_request(facts, f"the body is not UTF-8: {error}", body)
        try:
            reason = first_problem(text)
        except Exception as error:  # any failure to validate is the body's problem: a 400, kept and counted
            reason = f"the event could not be validated: {type(error).__name__}: {str(error)[:200]}"
        if reason is not None:
            return await self._bad_request(facts, reason, body)
        # JSON has no raw line breaks inside strings, so outside them they are whitespace: a space
        # keeps the event (and its id) the same and the NDJSON framing intact.
        line = body.replace(b"\r", b" ").replace(b"\n", b" ") + b"\n"
        try:
            await self.events.append(line)
        except Exception as error:  # a full disk, a failed fsync: not stored, so not acknowledged
            counts.failed += 1
            return 503, _error(f"the event could not be stored: {type(error).__name__}: {error}"), []
        counts.accepted += 1
        if self.on_accepted is not None:
            # After this answer is on its way: the hook never delays a 201.
            asyncio.get_running_loop().call_soon(self.on_accepted, line)
        return 201, b"", []

    async def _bad_request(self, facts: RequestFacts, reason: str, body: bytes) -> Answer:
        self.counts.rejected += 1
        await self.reject(facts, 400, reason, body, len(body))
        return 400, _error(reason), []

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "landing": str(self.config.landing.root), **self.counts.as_dict()})


def _error(reason: str) -> bytes:
    return json.dumps({"error": reason}, ensure_ascii=False).encode("utf-8")


class LineageEndpoint:
    """``POST /api/v1/lineage`` as a bare ASGI app: the hot path skips starlette's request and
    response objects (about a third of the CPU per event at these sizes)."""

    def __init__(self, collector: Collector):
        self.collector = collector

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers: Headers = dict(scope["headers"])  # ASGI names are lower case
        client = scope.get("client")
        remote = f"{client[0]}:{client[1]}" if client else None
        status, payload, extra = await self.collector.post_lineage(headers, remote, receive)
        response_headers = [(b"content-length", str(len(payload)).encode())]
        if payload:
            response_headers.append((b"content-type", b"application/json"))
        await send({"type": "http.response.start", "status": status, "headers": response_headers + extra})
        await send({"type": "http.response.body", "body": payload})


def create_app(
    config: CollectorConfig,
    *,
    extra_routes: Sequence[BaseRoute] = (),
    build_loop: BuildLoop | None = None,
    on_shutdown: Sequence[Callable[[], object]] = (),
    on_accepted: Callable[[bytes], object] | None = None,
) -> Starlette:
    """The collector app. ``extra_routes`` are mounted after the collector's own; ``build_loop``
    (optional) starts with the app, seals the open landing file before each round, and stops
    (finishing its round) before the landing writers close; ``on_shutdown`` runs after that (the SQL
    endpoint stops there: uvicorn ends the process with the signal it caught once its shutdown is done).
    ``on_accepted`` gets each acknowledged event's line, after its durable append, on the event loop
    (it must be quick). ``app.state.collector`` is the ``Collector``."""
    collector = Collector(config, on_accepted)

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
            for hook in on_shutdown:
                await asyncio.get_running_loop().run_in_executor(None, hook)

    routes: list[BaseRoute] = [
        Route(LINEAGE_PATH, LineageEndpoint(collector), methods=["POST"]),
        Route("/health", collector.health, methods=["GET"]),
        Route("/healthcheck", collector.health, methods=["GET"]),
        Route("/api/v1/collector/health", collector.health, methods=["GET"]),
        *extra_routes,
    ]
    exempt = [("POST", LINEAGE_PATH)]  # the endpoint checks the key itself and counts refusals
    middleware = [Middleware(ApiKeyMiddleware, keys=config.keys, exempt=exempt)]
    app = Starlette(routes=routes, lifespan=lifespan, middleware=middleware)
    app.state.collector = collector
    return app

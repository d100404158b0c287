"""Starlette routes of the writes Marquez's web UI and client make (see writes.py), beside the read routes.

They are not GET, so with ``LINEAGE_API_KEY`` set the API-key middleware (serve/auth.py) lets
them through only with the write key. Handlers read the body on the event loop, then do the write
(a Spark append) in the thread pool.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from python_jobs.marquez_api.api import BadRequest, MarquezReadApi, NotFound
from python_jobs.marquez_api.curation import actor
from python_jobs.marquez_api.routes import API, EncodedPathRoute, error
from python_jobs.marquez_api.writes import MarquezWrites, Writer


def writer_of(request: Request) -> Writer:
    """The Basic-auth user name, else a fingerprint of the Bearer key or Basic password, else anonymous."""
    scheme, _, value = request.headers.get("authorization", "").strip().partition(" ")
    user, key = None, None
    if scheme.lower() == "bearer":
        key = value.strip() or None
    elif scheme.lower() == "basic":
        try:
            user, _, key = base64.b64decode(value.strip(), validate=True).decode("utf-8").partition(":")
        except (binascii.Error, ValueError):
            user, key = None, None
    return Writer(actor(user or None, key or None), request.client.host if request.client else None)


async def _json_body(request: Request) -> dict[str, Any]:
    """A PUT's JSON object body (``{}`` when empty)."""
    body = await request.body()
    if not body.strip():
        return {}
    try:
        parsed = json.loads(body)
    except ValueError as exc:
        raise BadRequest("the body must be a JSON object") from exc
    if not isinstance(parsed, dict):
        raise BadRequest("the body must be a JSON object")
    return parsed


def _description(body: dict[str, Any]) -> str | None:
    value = body.get("description")
    if value is not None and not isinstance(value, str):
        raise BadRequest("description must be a string")
    return value


def write_routes(api: MarquezReadApi) -> list[BaseRoute]:
    writes = MarquezWrites(api)

    def route(path: str, method: str, answer: Callable[[Request, Writer, dict[str, Any]], Any]) -> BaseRoute:
        async def handle(request: Request) -> Response:
            try:
                sent = await _json_body(request) if method == "PUT" else {}
                params = {**request.path_params, "body": sent, "description": _description(sent)}
                body = await run_in_threadpool(answer, request, writer_of(request), params)
            except NotFound as exc:
                return error(404, str(exc))
            except BadRequest as exc:
                return error(400, str(exc))
            return JSONResponse(body)

        return EncodedPathRoute(API + path, handle, methods=[method])

    dataset = "/namespaces/{namespace}/datasets/{dataset}"
    job = "/namespaces/{namespace}/jobs/{job}"
    return [
        route("/tags/{tag}", "PUT", lambda r, w, p: writes.put_tag(w, p["tag"], p["description"])),
        *(route(dataset + "/tags/{tag}", method,
                lambda r, w, p, add=add: writes.tag_dataset(w, p["namespace"], p["dataset"], p["tag"], add))
          for method, add in (("POST", True), ("DELETE", False))),
        *(route(dataset + "/fields/{field}/tags/{tag}", method,
                lambda r, w, p, add=add: writes.tag_field(w, p["namespace"], p["dataset"], p["field"], p["tag"], add))
          for method, add in (("POST", True), ("DELETE", False))),
        *(route(job + "/tags/{tag}", method,
                lambda r, w, p, add=add: writes.tag_job(w, p["namespace"], p["job"], p["tag"], add))
          for method, add in (("POST", True), ("DELETE", False))),
        route(dataset, "DELETE", lambda r, w, p: writes.delete_dataset(w, p["namespace"], p["dataset"])),
        route(job, "DELETE", lambda r, w, p: writes.delete_job(w, p["namespace"], p["job"])),
        route("/namespaces/{namespace}", "DELETE", lambda r, w, p: writes.delete_namespace(w, p["namespace"])),
        route("/namespaces/{namespace}", "PUT", lambda r, w, p: writes.put_namespace(w, p["namespace"], p["body"])),
        route("/sources/{source}", "PUT", lambda r, w, p: writes.put_source(w, p["source"], p["body"])),
    ]

"""Routes for Marquez's legacy write calls: each turns its request into an OpenLineage event
(``legacy_writes.py``), hands it to the collector of the app it is mounted in (validated and landed like a
POST to ``/api/v1/lineage``), and answers with the entity as the read API then shows it.

The write key guards them like every non-GET route (``serve/auth.py``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from python_jobs.marquez_api.api import MarquezReadApi, NotFound
from python_jobs.marquez_api.legacy_writes import (
    JobRef,
    LegacyWriteError,
    dataset_event,
    event_bytes,
    job_event,
    new_run_event,
    parse_time,
    run_state_event,
)
from python_jobs.marquez_api.routes import API, EncodedPathRoute, error

Handler = Callable[[Request], Awaitable[Response]]


async def _body(request: Request) -> Any:
    raw = await request.body()
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise LegacyWriteError(f"the body is not JSON: {exc}") from exc


async def _land(request: Request, event: dict[str, Any]) -> Response | None:
    """Lands ``event`` through the app's collector; an error response when it was not stored."""
    client = request.client
    remote = f"{client.host}:{client.port}" if client else None
    status, payload, _ = await request.app.state.collector.submit(event_bytes(event), remote)
    if status == 201:
        return None
    reason = json.loads(payload).get("error", "") if payload else ""
    return error(status, reason)


def _guarded(answer: Callable[[Request], Awaitable[Any]], created: int = 200) -> Handler:
    async def handle(request: Request) -> Response:
        try:
            body = await answer(request)
        except LegacyWriteError as exc:
            return error(400, str(exc))
        except NotFound as exc:
            return error(404, str(exc))
        return body if isinstance(body, Response) else JSONResponse(body, status_code=created)

    return handle


def _at(request: Request) -> datetime:
    text = request.query_params.get("at")
    return parse_time(text, "at") if text else datetime.now(UTC)


def legacy_write_routes(api: MarquezReadApi) -> list[BaseRoute]:
    """``PUT`` datasets and jobs, ``POST`` runs and run transitions, as Marquez answers them."""

    async def land(request: Request, event: dict[str, Any]) -> Response | None:
        failed = await _land(request, event)
        if failed is None:
            api.live.expedite()  # the answer below reads the write it reports
        return failed

    def job_of(run_id: str) -> JobRef:
        found = api.job_of_run(run_id)
        if found is None:
            raise NotFound(f"Run '{run_id}' not found.")
        return JobRef(*found)

    async def put_dataset(request: Request) -> Any:
        params = request.path_params
        body = await _body(request)
        run_id = body.get("runId") if isinstance(body, dict) else None
        event = dataset_event(params["namespace"], params["dataset"], body, datetime.now(UTC),
                              job_of(str(run_id)) if run_id else None)
        return await land(request, event) or api.get_dataset(params["namespace"], params["dataset"])

    async def put_job(request: Request) -> Any:
        params = request.path_params
        event = job_event(params["namespace"], params["job"], await _body(request), datetime.now(UTC))
        return await land(request, event) or api.get_job(params["namespace"], params["job"])

    async def post_run(request: Request) -> Any:
        params = request.path_params
        event = new_run_event(params["namespace"], params["job"], await _body(request), datetime.now(UTC))
        return await land(request, event) or api.get_run(event["run"]["runId"])

    async def transition(request: Request) -> Any:
        params = request.path_params
        event = run_state_event(params["id"], params["action"], job_of(params["id"]), _at(request))
        return await land(request, event) or api.get_run(event["run"]["runId"])

    routes: list[tuple[str, str, Handler]] = [
        ("/namespaces/{namespace}/datasets/{dataset}", "PUT", _guarded(put_dataset)),
        ("/namespaces/{namespace}/jobs/{job}", "PUT", _guarded(put_job)),
        ("/namespaces/{namespace}/jobs/{job}/runs", "POST", _guarded(post_run, created=201)),
        ("/jobs/runs/{id}/{action}", "POST", _guarded(transition)),
    ]
    return [EncodedPathRoute(API + path, handler, methods=[method]) for path, method, handler in routes]

"""Starlette routes for the read API (``/api/v1/...``, with the web UI's writes from write_routes.py) and the
lineage page (``/``, or ``/lineage-page`` when Marquez's web UI takes ``/``: see ``web_ui.py``).

Handlers are sync functions: Starlette runs them in its thread pool, so Spark calls (run facets,
event bodies) do not block the event loop. Errors use Marquez's body, ``{"code", "message"}``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

from python_jobs.lineage_page.render import render_lineage_page
from python_jobs.marquez_api.api import BadRequest, MarquezReadApi, NotFound, lineage_page_inputs

API = "/api/v1"


class EncodedPathRoute(Route):
    """A route matched on the path as sent (percent-encoded), its parameters decoded afterwards.

    Names come from the events: ``postgres://db:5432`` or ``/tmp/out`` hold slashes, which clients
    send as ``%2F`` (marquez-python quotes every path argument). Starlette matches the decoded
    path, where such a name spans several segments and no route matches; here each parameter is
    one encoded segment, decoded as UTF-8 once it has matched.
    """

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        raw_path = scope.get("raw_path")
        if scope["type"] != "http" or raw_path is None or scope.get("root_path"):
            return super().matches(scope)
        match, child_scope = super().matches({**scope, "path": raw_path.decode("latin-1")})
        if match is not Match.NONE:
            child_scope["path_params"] = {key: unquote(value) for key, value in child_scope["path_params"].items()}
        return match, child_scope


def error(code: int, message: str) -> JSONResponse:
    return JSONResponse({"code": code, "message": message}, status_code=code)


def _int(request: Request, name: str) -> int | None:
    value = request.query_params.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError as exc:
        raise BadRequest(f"{name} must be an integer, not '{value}'") from exc


def _bool(request: Request, name: str) -> bool:
    return (request.query_params.get(name) or "false").lower() == "true"


def endpoint(answer: Callable[[Request], Any]) -> Callable[[Request], Response]:
    def handle(request: Request) -> Response:
        try:
            body = answer(request)
            if isinstance(body, str):  # already JSON text (the lineage graph)
                return Response(body, media_type="application/json")
            return JSONResponse(body)
        except NotFound as exc:
            return error(404, str(exc))
        except BadRequest as exc:
            return error(400, str(exc))

    return handle


def read_routes(api: MarquezReadApi, page_path: str | None = "/") -> list[BaseRoute]:
    """The read API under /api/v1, and the lineage page at ``page_path`` (None: no page)."""
    p = "path_params"

    def paged(request: Request) -> dict[str, int | None]:
        return {"limit": _int(request, "limit"), "offset": _int(request, "offset")}

    def jobs(request: Request, namespace: str | None = None) -> dict[str, Any]:
        return api.list_jobs(namespace, last_run_states=request.query_params.getlist("lastRunStates"), **paged(request))

    def stats(request: Request) -> list[dict[str, Any]]:
        q = request.query_params
        return api.stats(getattr(request, p)["asset"], q.get("period"), q.get("timezone"))

    def events(request: Request, namespace: str | None = None) -> dict[str, Any]:
        return api.list_events(
            namespace, before=request.query_params.get("before"), after=request.query_params.get("after"),
            sort_direction=request.query_params.get("sortDirection", "desc"), **paged(request),
        )

    def lineage(request: Request) -> str:
        node_id = request.query_params.get("nodeId")
        if not node_id:
            raise BadRequest("nodeId is required")
        as_of = request.query_params.get("asOf")
        if as_of is not None:
            return api.lineage_as_of(node_id, _int(request, "depth"), as_of)
        return api.lineage_json(node_id, _int(request, "depth"))

    def column_lineage(request: Request) -> dict[str, Any]:
        node_id = request.query_params.get("nodeId")
        if not node_id:
            raise BadRequest("nodeId is required")
        return api.column_lineage(node_id, _int(request, "depth"), _bool(request, "withDownstream"))

    def search(request: Request) -> dict[str, Any]:
        q = request.query_params
        return api.search(q.get("q", ""), q.get("filter"), q.get("sort"), _int(request, "limit"), q.get("namespace"))

    routes: list[tuple[str, Callable[[Request], Any]]] = [
        ("/namespaces", lambda r: api.list_namespaces(**paged(r))),
        ("/namespaces/{namespace}", lambda r: api.get_namespace(getattr(r, p)["namespace"])),
        ("/namespaces/{namespace}/datasets", lambda r: api.list_datasets(getattr(r, p)["namespace"], **paged(r))),
        ("/namespaces/{namespace}/datasets/{dataset}",
         lambda r: api.get_dataset(getattr(r, p)["namespace"], getattr(r, p)["dataset"])),
        ("/namespaces/{namespace}/datasets/{dataset}/versions",
         lambda r: api.list_dataset_versions(getattr(r, p)["namespace"], getattr(r, p)["dataset"], **paged(r))),
        ("/namespaces/{namespace}/datasets/{dataset}/versions/{version}",
         lambda r: api.get_dataset_version(getattr(r, p)["namespace"], getattr(r, p)["dataset"],
                                           getattr(r, p)["version"])),
        ("/namespaces/{namespace}/jobs", lambda r: jobs(r, getattr(r, p)["namespace"])),
        ("/namespaces/{namespace}/jobs/{job}", lambda r: api.get_job(getattr(r, p)["namespace"], getattr(r, p)["job"])),
        ("/namespaces/{namespace}/jobs/{job}/versions",
         lambda r: api.list_job_versions(getattr(r, p)["namespace"], getattr(r, p)["job"], **paged(r))),
        ("/namespaces/{namespace}/jobs/{job}/versions/{version}",
         lambda r: api.get_job_version(getattr(r, p)["namespace"], getattr(r, p)["job"], getattr(r, p)["version"])),
        ("/namespaces/{namespace}/jobs/{job}/runs",
         lambda r: api.list_job_runs(getattr(r, p)["namespace"], getattr(r, p)["job"], **paged(r))),
        ("/jobs", jobs),
        ("/jobs/runs/{id}", lambda r: api.get_run(getattr(r, p)["id"])),
        ("/jobs/runs/{id}/facets", lambda r: api.run_facets(getattr(r, p)["id"], r.query_params.get("type"))),
        ("/tags", lambda r: api.list_tags(**paged(r))),
        ("/sources", lambda r: api.list_sources(**paged(r))),
        ("/sources/{source}", lambda r: api.get_source(getattr(r, p)["source"])),
        ("/stats/{asset}", stats),
        ("/events/lineage", lambda r: events(r)),
        # marquez-python's list_events calls /events and /events/{namespace}.
        ("/events", lambda r: events(r)),
        ("/events/{namespace}", lambda r: events(r, getattr(r, p)["namespace"])),
        ("/lineage", lineage),
        ("/column-lineage", column_lineage),
        ("/search", search),
    ]
    result: list[BaseRoute] = [
        EncodedPathRoute(API + path, endpoint(answer), methods=["GET"]) for path, answer in routes
    ]
    # The web UI's writes (tags, deletes): after the reads, so a path both answer keeps its GET here.
    from python_jobs.marquez_api.write_routes import write_routes  # it imports this module

    result += write_routes(api)
    if page_path is not None:
        result.append(Route(page_path, _page_handler(api), methods=["GET"]))
    return result


def _page_handler(api: MarquezReadApi) -> Callable[[Request], Response]:
    def page(request: Request) -> Response:
        try:
            node_id = request.query_params.get("nodeId")
            as_of = request.query_params.get("asOf") or None
            graph, details = lineage_page_inputs(api, node_id, _int(request, "depth") or 20, as_of=as_of)
        except NotFound as exc:
            return error(404, str(exc))
        except BadRequest as exc:
            return error(400, str(exc))
        return HTMLResponse(render_lineage_page(graph, details, "Lineage", as_of))

    return page

"""Marquez's own web UI (its production build, a ``dist/`` folder) served beside the read API.

The UI asks its own origin for ``/api/v1/...``, so it is served on the read API's origin: the paths the
UI routes in the browser (``/``, ``/jobs``, ``/datasets``, ``/events``, ``/lineage/...``,
``/datasets/column-level/...``) answer ``index.html``, and every other path not taken by a route mounted
before these is a file of ``dist/`` (``/bundle.js``, fonts, images).
"""

from __future__ import annotations

import os
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

WEB_UI_ENV = "LINEAGE_WEB_UI"
# Where the project's own lineage page moves when the web UI takes ``/``.
PAGE_PATH_BESIDE_UI = "/lineage-page"
UI_PAGES = ("/", "/jobs", "/datasets", "/events")
UI_PAGE_TREES = ("/lineage/{rest:path}", "/datasets/column-level/{rest:path}")


def web_ui_dir(option: Path | None) -> Path | None:
    """The ``--web-ui`` folder, else ``LINEAGE_WEB_UI``; None when neither is set."""
    if option is not None:
        return option
    value = os.environ.get(WEB_UI_ENV, "").strip()
    return Path(value) if value else None


def check_web_ui(dist: Path) -> Path:
    """The folder resolved, or ValueError saying what is missing."""
    resolved = dist.expanduser().resolve()
    if not (resolved / "index.html").is_file():
        raise ValueError(f"{resolved} holds no index.html: pass the web UI's built folder (its dist/)")
    return resolved


def web_ui_routes(dist: Path) -> list[BaseRoute]:
    """Routes for the UI; put them after the API routes (the static mount answers every other path)."""
    index = dist / "index.html"

    def page(request: Request) -> Response:
        return FileResponse(index, media_type="text/html")

    routes: list[BaseRoute] = [Route(path, page, methods=["GET", "HEAD"]) for path in (*UI_PAGES, *UI_PAGE_TREES)]
    routes.append(Mount("/", app=StaticFiles(directory=dist), name="web-ui"))
    return routes

"""One self-contained HTML page that draws a Marquez lineage graph (jobs, datasets and their edges).

``render_lineage_page(graph, details, title)`` takes the body of Marquez's ``GET /api/v1/lineage``
(``{"graph": [node, ...]}``) and, per node id, the details the side panel shows: a dataset's fields,
schema versions and facets, a job's latest runs. The page inlines its CSS, its scripts (``labels.js``,
how node labels are shortened, and ``page.js``) and the vendored
layout library (dagre, ``vendor/``), so it opens from disk with no network.

Names come from whoever sent the events, so the data is embedded as JSON that no text can end early:
``<``, ``>`` and ``&`` are written as ``\\u003c``-style escapes (no ``</script>`` or ``<!--`` can appear),
and so are U+2028/U+2029. The script only ever puts names into the page as text, never as markup.
"""

from __future__ import annotations

import html
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

PAGE_DIR = Path(__file__).resolve().parent
LAYOUT_LIBRARY = PAGE_DIR / "vendor" / "dagre.min.js"

_MARKER = re.compile(r"__(?:TITLE|STYLE|DATA|LAYOUT_LIBRARY|SCRIPT)__")
_JSON_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def embed_json(value: Any) -> str:
    """JSON text safe inside an HTML ``<script>`` element (and still valid JSON)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return "".join(_JSON_ESCAPES.get(char, char) for char in text)


def inline_script(source: str) -> str:
    """Script text that cannot close its ``<script>`` element early.

    ``<\\/`` means the same as ``</`` inside a JavaScript string or regular expression; neither the
    vendored library nor our script has that sequence anywhere else.
    """
    return source.replace("</", "<\\/").replace("<!--", "<\\!--")


@cache
def _asset(name: str) -> str:
    return (PAGE_DIR / name).read_text(encoding="utf-8")


def page_payload(
    graph: dict[str, Any], details: dict[str, Any], title: str, as_of: str | None = None
) -> dict[str, Any]:
    """What the script reads: the graph's nodes, the details of the nodes it has and the moment the
    graph is of (None: now)."""
    nodes = list(graph.get("graph") or [])
    ids = {node.get("id") for node in nodes}
    return {
        "title": title,
        "nodes": nodes,
        "details": {node_id: body for node_id, body in details.items() if node_id in ids},
        "asOf": as_of,
    }


def render_lineage_page(graph: dict[str, Any], details: dict[str, Any], title: str, as_of: str | None = None) -> str:
    """The whole page as one HTML document (all scripts, styles and data inline)."""
    replacements = {
        "__TITLE__": html.escape(title),
        "__STYLE__": _asset("page.css"),
        "__DATA__": embed_json(page_payload(graph, details, title, as_of)),
        "__LAYOUT_LIBRARY__": inline_script(LAYOUT_LIBRARY.read_text(encoding="utf-8")),
        "__SCRIPT__": inline_script(_asset("labels.js") + "\n" + _asset("page.js")),
    }
    # One pass over the template only: a name that spells a marker stays text.
    return _MARKER.sub(lambda match: replacements[match.group(0)], _asset("page.html"))


def write_lineage_page(path: Path, graph: dict[str, Any], details: dict[str, Any], title: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_lineage_page(graph, details, title), encoding="utf-8")
    return path

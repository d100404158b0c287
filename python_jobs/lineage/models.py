"""The dbt models of the lineage core, for selecting them alone (tests, benchmarks).

The core is every SQL model of ``models/intermediate/`` and ``models/lineage/`` and the models they are
built from (``stg_lineage_events``), read from dbt's manifest, so a new model belongs to it as soon as
dbt has parsed it. The Python models of ``models/lineage/`` stay out: the dataset graph
(``GRAPH_MODEL``) is selected on request, and ``dataset_schema_events`` reads the changelog too.

The list is read when a selection is made, never on import: every dbt command writes the manifest, so
a caller reads it after the session's first dbt command (tests: the ``dbt_manifest`` fixture parses
when none ran yet) or fails at once, before any work, with the message of ``python_jobs.dbt.load_manifest``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from python_jobs.dbt import load_manifest
from python_jobs.settings import Settings

CORE_FOLDERS = ("intermediate", "lineage")
GRAPH_MODEL = "dataset_lineage_graph"


def core_models(settings: Settings) -> tuple[str, ...]:
    """The names of the core's models, sorted."""
    models = {uid: node for uid, node in load_manifest(settings)["nodes"].items() if node["resource_type"] == "model"}
    roots = [uid for uid, node in models.items() if _in_core_folder(node) and node["language"] == "sql"]
    return tuple(sorted(models[uid]["name"] for uid in _with_ancestors(roots, models)))


def _in_core_folder(node: dict[str, Any]) -> bool:
    # fqn is [project, folder under models/, ..., model name]
    return len(node["fqn"]) > 2 and node["fqn"][1] in CORE_FOLDERS


def _with_ancestors(roots: Iterable[str], models: dict[str, dict[str, Any]]) -> set[str]:
    """``roots`` and every model they depend on, directly or not."""
    found: set[str] = set()
    pending = list(roots)
    while pending:
        uid = pending.pop()
        if uid not in found:
            found.add(uid)
            pending += [parent for parent in models[uid]["depends_on"]["nodes"] if parent in models]
    return found


def core_selection(settings: Settings, with_graph: bool = False) -> list[str]:
    """``--select`` arguments for dbt: the core models and the tests that only read them
    (cautious: a test that also reads another capability's model is left out)."""
    graph = [GRAPH_MODEL] if with_graph else []
    return ["--select", *core_models(settings), *graph, "--indirect-selection", "cautious"]

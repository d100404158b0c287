"""The read API's snapshot with the writes applied: deleted entities out of the lists, search and
lineage, written tags beside the ``tags`` facets' ones.

``curate`` makes a new snapshot from the one loaded from the warehouse (sharing its tables, which
are never changed in place), so a write or a build swaps one object and readers never see half of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from python_jobs.marquez_api.curation import CuratedView, CurationState, Deletable, is_hidden
from python_jobs.marquez_api.graph import LineageGraph, dataset_node_id, job_node_id
from python_jobs.marquez_api.snapshot import Snapshot, iso


def curate(base: Snapshot, state: CurationState, last_seen: Mapping[Deletable, datetime]) -> Snapshot:
    namespaces = with_put_namespaces(base.namespaces, state)
    if not state.deleted_at:
        return replace(base, namespaces=namespaces, node_json={}, sources=None, curation=CuratedView(state))

    def hidden(kind: str, namespace: str, name: str = "") -> bool:
        return is_hidden(state, last_seen, kind, namespace, name)

    hidden_namespaces = {row["name"]: {**row, "isHidden": True} for row in namespaces
                         if hidden("namespace", row["name"])}
    deleted_datasets = {key: {**entry, "deleted": True} for key, entry in base.datasets.items()
                        if hidden("dataset", *key)}
    hidden_jobs = {key for key in base.jobs if hidden("job", *key)}
    gone = {dataset_node_id(*key) for key in deleted_datasets} | {job_node_id(*key) for key in hidden_jobs}
    return replace(
        base,
        namespaces=[row for row in namespaces if row["name"] not in hidden_namespaces],
        datasets={key: entry for key, entry in base.datasets.items() if key not in deleted_datasets},
        jobs={key: entry for key, entry in base.jobs.items() if key not in hidden_jobs},
        graph=without_nodes(base.graph, gone) if gone else base.graph,
        node_json={},
        sources=None,
        curation=CuratedView(state, deleted_datasets, hidden_namespaces),
    )


def with_put_namespaces(rows: list[dict[str, Any]], state: CurationState) -> list[dict[str, Any]]:
    """The namespace rows with what PUT /namespaces/{ns} set (owner, description, update time), and the
    namespaces only a PUT created, by name."""
    if not state.namespaces:
        return rows
    merged = {row["name"]: row for row in rows}
    for name, put in state.namespaces.items():
        row = merged.get(name) or {"name": name, "createdAt": iso(put["createdAt"])}
        merged[name] = {**row, "ownerName": put.get("ownerName"), "description": put.get("description"),
                        "updatedAt": iso(put["updatedAt"])}
    return [merged[name] for name in sorted(merged)]


def without_nodes(graph: LineageGraph, gone: set[str]) -> LineageGraph:
    """The graph less ``gone`` and every edge touching them."""
    kept = LineageGraph()
    for node in graph.nodes - gone:
        kept.add_node(node)
    for io_type, edges in (("input", graph.inputs), ("output", graph.outputs)):
        for job, datasets in edges.items():
            if job in gone:
                continue
            for dataset in datasets - gone:
                kept.add_edge(job, dataset, io_type)
    return kept


def merged_tags(snap: Snapshot, kind: str, namespace: str, name: str, facet_tags: list[str]) -> list[str]:
    """An entity's ``tags``: those of its ``tags`` facet and those written through the API."""
    return sorted(set(facet_tags) | snap.curation.state.tags_of(kind, namespace, name))


def tagged_fields(snap: Snapshot, namespace: str, name: str, fields: list[dict[str, Any]],
                  facets: dict[str, Any]) -> list[dict[str, Any]]:
    """A dataset's fields with their ``tags``: the ``tags`` facet's tags naming the field, and those
    written through the API."""
    written = snap.curation.state.field_tags(namespace, name)
    from_facet: dict[str, set[str]] = {}
    tags = (facets.get("tags") or {}).get("tags")
    for tag in tags if isinstance(tags, list) else []:
        if isinstance(tag, dict) and tag.get("key") and tag.get("field"):
            from_facet.setdefault(str(tag["field"]), set()).add(str(tag["key"]))
    if not written and not from_facet:
        return fields
    return [{**f, "tags": sorted(set(f.get("tags") or []) | from_facet.get(f["name"], set())
                                 | written.get(f["name"], frozenset()))} for f in fields]


def tag_list(snap: Snapshot, facet_tags: set[str]) -> list[dict[str, Any]]:
    """Marquez's tags: every tag put or used through the API, with its description, and those the
    ``tags`` facets name, by name."""
    described = snap.curation.state.tags
    return [{"name": name, "description": described.get(name)} for name in sorted(set(described) | facet_tags)]

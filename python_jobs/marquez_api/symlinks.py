"""Other names of a dataset, from OpenLineage's ``symlinks`` facet (``{"identifiers": [{namespace, name, type}]}``).

Spark reports a Hive table by its files (``hdfs://nn/warehouse/db.db/orders``) with the table name as a
symlink (``hive://metastore``, ``db.orders``); another job may name the same data by the table. As Marquez
does, the read API treats each symlink as another name of the dataset that carries the facet (its main
dataset): the symlink is listed in its own namespace, reading it answers the main dataset, and every edge
to it is an edge to the main dataset, so the two jobs meet in one graph.

A name claimed as a symlink by two datasets belongs to the one updated last (then the first by namespace
and name). A symlink that events also name directly keeps its own entry (its versions and fields), but its
edges still join the main dataset's. Chains (a → b → c) resolve to their end; in a cycle (a names b, b
names a) the first id by namespace and name is the main one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from python_jobs.marquez_api.graph import LineageGraph, dataset_node_id

DatasetId = tuple[str, str]


def identifiers(facets: dict[str, Any]) -> list[DatasetId]:
    """The (namespace, name) of each well-formed identifier of a ``symlinks`` facet."""
    found = (facets.get("symlinks") or {}).get("identifiers") if isinstance(facets.get("symlinks"), dict) else None
    if not isinstance(found, list):
        return []
    return [(i["namespace"], i["name"]) for i in found
            if isinstance(i, dict) and isinstance(i.get("namespace"), str) and isinstance(i.get("name"), str)
            and i["namespace"] and i["name"]]


def symlink_targets(entries: Iterable[dict[str, Any]], facets_of: Callable[[str], dict[str, Any]],
                    updated: Callable[[dict[str, Any]], Any]) -> dict[DatasetId, DatasetId]:
    """symlink (namespace, name) → its main dataset's (namespace, name)."""
    claims: dict[DatasetId, list[tuple[Any, DatasetId]]] = {}
    for entry in entries:
        main = (entry["namespace"], entry["name"])
        for alias in identifiers(facets_of(entry["uuid"])):
            if alias != main:
                claims.setdefault(alias, []).append((updated(entry), main))
    direct = {}
    for alias, owners in claims.items():
        newest = max(stamp for stamp, _ in owners)
        direct[alias] = min(owner for stamp, owner in owners if stamp == newest)
    return {alias: _root(alias, direct) for alias in direct if _root(alias, direct) != alias}


def _root(alias: DatasetId, direct: dict[DatasetId, DatasetId]) -> DatasetId:
    """Where a chain of symlinks ends; the smallest id of a cycle when it never ends."""
    path = [alias]
    while path[-1] in direct:
        nxt = direct[path[-1]]
        if nxt in path:
            return min(path[path.index(nxt):])
        path.append(nxt)
    return path[-1]


def merged_aliases(graph: LineageGraph, targets: dict[DatasetId, DatasetId]) -> LineageGraph:
    """The graph with every edge to a symlink moved to its main dataset, and the symlink's node gone (a
    lineage call from it starts at the main dataset instead)."""
    if not targets:
        return graph
    moved = {dataset_node_id(*alias): dataset_node_id(*main) for alias, main in targets.items()}
    merged = LineageGraph()
    for node in graph.nodes:
        merged.add_node(moved.get(node, node))
    for io_type, edges in (("input", graph.inputs), ("output", graph.outputs)):
        for job, datasets in edges.items():
            for dataset in datasets:
                merged.add_edge(job, moved.get(dataset, dataset), io_type)
    return merged

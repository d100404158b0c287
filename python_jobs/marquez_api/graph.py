"""The job and dataset graph held in memory: node ids, traversal and Marquez's lineage shape.

Node ids are Marquez's: ``dataset:<namespace>:<name>`` and ``job:<namespace>:<name>``. Edges go
the way data flows: dataset → job for an input, job → dataset for an output. Pure: no Spark.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

Direction = Literal["both", "upstream", "downstream"]
# The ``#<version>`` that marquez-python appends to a column-lineage node id: a dataset version id.
_VERSION_SUFFIX = re.compile(r"#[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def dataset_node_id(namespace: str, name: str) -> str:
    return f"dataset:{namespace}:{name}"


def job_node_id(namespace: str, name: str) -> str:
    return f"job:{namespace}:{name}"


@dataclass(frozen=True)
class NodeRef:
    kind: Literal["dataset", "job", "datasetField"]
    namespace: str
    name: str
    field: str | None = None

    @property
    def node_id(self) -> str:
        base = f"{self.kind}:{self.namespace}:{self.name}"
        return base if self.field is None else f"{base}:{self.field}"


def parse_node_id(node_id: str, known_namespaces: Iterable[str] = ()) -> NodeRef:
    """``dataset:ns:name``, ``job:ns:name`` or ``datasetField:ns:name:field``. Namespaces may hold
    colons (``postgres://host:5432``), so a known namespace that prefixes the rest wins over the
    first colon. A ``#<version id>`` suffix (the client's column-lineage call) is ignored; any other
    ``#`` belongs to the name. ValueError when the id has no such shape."""
    kind, sep, rest = node_id.partition(":")
    if not sep or kind not in ("dataset", "job", "datasetField") or not rest:
        raise ValueError(f"Invalid nodeId '{node_id}': expected dataset:<namespace>:<name> or job:<namespace>:<name>")
    rest = _VERSION_SUFFIX.sub("", rest)
    namespace = next(
        (ns for ns in sorted(known_namespaces, key=len, reverse=True) if rest.startswith(ns + ":")), None
    )
    if namespace is None:
        namespace, sep, remainder = rest.partition(":")
        if not sep or not remainder:
            raise ValueError(f"Invalid nodeId '{node_id}': no name after the namespace")
    else:
        remainder = rest[len(namespace) + 1:]
    if kind == "datasetField":
        name, sep, column = remainder.rpartition(":")
        if not sep or not name or not column:
            raise ValueError(f"Invalid nodeId '{node_id}': expected datasetField:<namespace>:<dataset>:<field>")
        return NodeRef("datasetField", namespace, name, column)
    return NodeRef(kind, namespace, remainder)  # type: ignore[arg-type]


@dataclass
class LineageGraph:
    """Adjacency of the job/dataset graph. ``inputs[job]`` are the datasets a job read,
    ``outputs[job]`` those it wrote; ``readers`` and ``writers`` are the reverse maps."""

    inputs: dict[str, set[str]] = field(default_factory=dict)
    outputs: dict[str, set[str]] = field(default_factory=dict)
    readers: dict[str, set[str]] = field(default_factory=dict)
    writers: dict[str, set[str]] = field(default_factory=dict)
    nodes: set[str] = field(default_factory=set)

    def add_node(self, node_id: str) -> None:
        self.nodes.add(node_id)

    def add_edge(self, job: str, dataset: str, io_type: str) -> None:
        self.nodes.update((job, dataset))
        if io_type == "input":
            self.inputs.setdefault(job, set()).add(dataset)
            self.readers.setdefault(dataset, set()).add(job)
        else:
            self.outputs.setdefault(job, set()).add(dataset)
            self.writers.setdefault(dataset, set()).add(job)

    def in_edges(self, node: str) -> list[tuple[str, str]]:
        sources = self.writers.get(node, set()) if node.startswith("dataset:") else self.inputs.get(node, set())
        return sorted((origin, node) for origin in sources)

    def out_edges(self, node: str) -> list[tuple[str, str]]:
        targets = self.readers.get(node, set()) if node.startswith("dataset:") else self.outputs.get(node, set())
        return sorted((node, target) for target in targets)

    def upstream_of(self, node: str) -> set[str]:
        return {origin for origin, _ in self.in_edges(node)}

    def downstream_of(self, node: str) -> set[str]:
        return {target for _, target in self.out_edges(node)}


def neighbourhood(graph: LineageGraph, start: str, depth: int, direction: Direction = "both") -> set[str]:
    """Nodes reachable from ``start`` within ``depth`` job steps (a dataset and the jobs that touch
    it count as one step, as in Marquez, whose depth counts jobs). ``both`` walks edges either way,
    which is what Marquez's lineage call returns: the jobs connected to the node, then every
    dataset those jobs read or wrote."""
    if start not in graph.nodes:
        return set()

    def step(node: str) -> set[str]:
        found: set[str] = set()
        if direction in ("both", "upstream"):
            found |= graph.upstream_of(node)
        if direction in ("both", "downstream"):
            found |= graph.downstream_of(node)
        return found

    seen = {start}
    frontier = {start}
    # Each job step crosses two edges (dataset → job → dataset).
    for _ in range(max(depth, 0) * 2):
        frontier = {n for node in frontier for n in step(node)} - seen
        if not frontier:
            break
        seen |= frontier
    if direction == "both":
        # Marquez returns every dataset the reached jobs touch, not only those on the walk.
        for node in list(seen):
            if node.startswith("job:"):
                seen |= graph.inputs.get(node, set()) | graph.outputs.get(node, set())
    return seen


def lineage_response(graph: LineageGraph, nodes: Iterable[str], node_data: Callable[[str], dict]) -> dict:
    """Marquez's GET /api/v1/lineage body: ``{"graph": [node...]}``, edges kept only between the
    returned nodes, sorted by id so that responses are stable."""
    chosen = set(nodes)
    result = []
    for node in sorted(chosen):
        result.append({
            "id": node,
            "type": "DATASET" if node.startswith("dataset:") else "JOB",
            "data": node_data(node),
            "inEdges": [{"origin": o, "destination": d} for o, d in graph.in_edges(node) if o in chosen],
            "outEdges": [{"origin": o, "destination": d} for o, d in graph.out_edges(node) if d in chosen],
        })
    return {"graph": result}


def lineage_response_json(graph: LineageGraph, nodes: Iterable[str], node_json: Callable[[str], str]) -> str:
    """``lineage_response`` as JSON text, with each node's ``data`` already serialized
    (``node_json``, cached per snapshot): a deep graph repeats the same node bodies on every call."""
    chosen = set(nodes)
    parts = []
    for node in sorted(chosen):
        in_edges = [{"origin": o, "destination": d} for o, d in graph.in_edges(node) if o in chosen]
        out_edges = [{"origin": o, "destination": d} for o, d in graph.out_edges(node) if d in chosen]
        kind = "DATASET" if node.startswith("dataset:") else "JOB"
        parts.append(
            f'{{"id":{_text(node)},"type":"{kind}","data":{node_json(node)},'
            f'"inEdges":{_text(in_edges)},"outEdges":{_text(out_edges)}}}'
        )
    return '{"graph":[' + ",".join(parts) + "]}"


def _text(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def render_text(graph: LineageGraph, start: str, depth: int, direction: Direction) -> str:
    """The graph around ``start`` as indented text: one tree per direction, each line a node,
    a node already printed is marked instead of being expanded again."""
    lines = [start]

    def walk(node: str, remaining: int, indent: str, upward: bool, printed: set[str]) -> None:
        nexts = sorted(graph.upstream_of(node) if upward else graph.downstream_of(node))
        arrow = "<- " if upward else "-> "
        for child in nexts:
            seen_before = child in printed
            lines.append(f"{indent}{arrow}{child}{' (see above)' if seen_before else ''}")
            if seen_before:
                continue
            printed.add(child)
            # A job step is two edges; depth counts jobs.
            child_remaining = remaining - (1 if child.startswith("job:") else 0)
            if child.startswith("job:") and child_remaining < 0:
                continue
            if child.startswith("dataset:") and remaining <= 0:
                continue
            walk(child, child_remaining, indent + "   ", upward, printed)

    if direction in ("both", "upstream"):
        lines.append("upstream:")
        walk(start, depth, "  ", True, {start})
    if direction in ("both", "downstream"):
        lines.append("downstream:")
        walk(start, depth, "  ", False, {start})
    return "\n".join(lines) + "\n"

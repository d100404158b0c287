"""Upstream depth of every node of a directed graph, in linear time and to any depth. Pure: no Spark.

The depth of a node is 0 for a source (no upstream) and otherwise 1 + the deepest of its
upstreams: the length of its longest upstream path. A node on a cycle, or downstream of one, has
no such bound and gets ``None``.

Kahn's topological sort gives exactly that split. It emits a node once all of its upstreams are
emitted, so it emits every node whose ancestry is acyclic, each after all of its upstreams (whose
depth is then final), and never a node on a cycle (its in-degree never reaches 0) nor one below a
cycle (an upstream is never emitted). The nodes left over are the unbounded ones. One pass over
the nodes and edges, no recursion, and the result depends only on the graph, not on edge order.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Hashable, Iterable, Sequence
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc

Node = TypeVar("Node", bound=Hashable)

DEPTH_SCHEMA = pa.schema([
    pa.field("dataset_uuid", pa.string(), nullable=False),
    pa.field("upstream_depth", pa.int32()),
    pa.field("on_cycle", pa.bool_(), nullable=False),
])


def depths_by_index(node_count: int, upstream: Sequence[int], downstream: Sequence[int]) -> list[int | None]:
    """Depth of nodes ``0 .. node_count - 1`` over the edges ``upstream[i] -> downstream[i]``;
    ``None`` on or below a cycle (a self-loop is a cycle). Duplicate edges change nothing.

    O(nodes + edges) time. Memory, besides the two input sequences: the successors in one compact
    ``array('i')`` (4 bytes per edge), a few arrays over the nodes (about 20 bytes per node) and
    the result list (up to about 40 bytes per node).
    """
    if len(upstream) != len(downstream):
        raise ValueError("upstream and downstream must have the same length")
    zeros = bytes(4 * node_count)
    out_degree = array("i", zeros)
    in_degree = array("i", zeros)
    for node in upstream:
        out_degree[node] += 1
    for node in downstream:
        in_degree[node] += 1
    # Successors of node v: successors[start[v]:start[v + 1]] (compressed sparse rows).
    start = array("q", bytes(8 * (node_count + 1)))
    for node, degree in enumerate(out_degree):
        start[node + 1] = start[node] + degree
    successors = array("i", bytes(4 * len(upstream)))
    fill = start[:-1]
    for up, down in zip(upstream, downstream, strict=True):
        successors[fill[up]] = down
        fill[up] += 1
    del fill, out_degree

    depth = array("i", zeros)
    ready = deque(node for node in range(node_count) if in_degree[node] == 0)
    while ready:
        node = ready.popleft()
        below = depth[node] + 1
        for succ in successors[start[node]:start[node + 1]]:
            if depth[succ] < below:
                depth[succ] = below
            in_degree[succ] -= 1
            if in_degree[succ] == 0:
                ready.append(succ)
    # Emitted nodes end with in-degree 0; a node on or below a cycle keeps an unemitted upstream.
    return [d if in_degree[node] == 0 else None for node, d in enumerate(depth)]


def upstream_depths(edges: Iterable[tuple[Node, Node]]) -> dict[Node, int | None]:
    """Depth of every node named by an edge ``(upstream, downstream)``; ``None`` when the node is
    on a cycle or downstream of one. Nodes without edges are sources: depth 0, not listed here."""
    index: dict[Node, int] = {}
    upstream = array("i")
    downstream = array("i")
    for up, down in edges:
        upstream.append(index.setdefault(up, len(index)))
        downstream.append(index.setdefault(down, len(index)))
    depths = depths_by_index(len(index), upstream, downstream)
    return {node: depths[i] for node, i in index.items()}


def depth_table(edges: pa.Table) -> pa.Table:
    """``dataset_uuid, upstream_depth, on_cycle`` (``DEPTH_SCHEMA``) for every dataset named by an
    edge of ``edges`` (string columns ``upstream_uuid, downstream_uuid``, one row per dataset pair),
    sorted by ``dataset_uuid``. ``upstream_depth`` is null exactly when ``on_cycle``.

    Arrow turns the ids into integers, so the driver never holds a Python string per edge or per
    dataset. Driver memory, measured with 1,000,000 edges: the edge table itself (two 36-character
    uuids per edge, 80 MB) plus about 160 MB of working memory over 500,000 datasets, 235 MB over
    1,000,000 (the unique ids and their hash table, the integer edges and successors at 4 bytes
    each, the per-dataset arrays and the result): about 320 MB per million edges in all. A few
    seconds of single-core time per million edges.
    """
    up = edges.column("upstream_uuid")
    down = edges.column("downstream_uuid")
    nodes = pc.unique(pa.chunked_array(up.chunks + down.chunks, pa.string())).sort()
    upstream = _int32s(pc.index_in(up, value_set=nodes))
    downstream = _int32s(pc.index_in(down, value_set=nodes))
    depths = depths_by_index(len(nodes), upstream, downstream)
    return pa.table(
        [nodes, pa.array(depths, pa.int32()), pa.array([d is None for d in depths], pa.bool_())],
        schema=DEPTH_SCHEMA,
    )


def _int32s(values: pa.ChunkedArray) -> array[int]:
    """An int32 column without nulls as ``array('i')``, copied from its buffer (no Python ints)."""
    column = values.combine_chunks()
    if column.null_count:
        raise ValueError("unexpected null node index")
    result: array[int] = array("i")
    if len(column):
        data = column.buffers()[1]
        assert data is not None and result.itemsize == 4
        result.frombytes(memoryview(data)[column.offset * 4:(column.offset + len(column)) * 4])
    return result

"""The in-memory lineage graph: node ids, traversal by direction and depth (pure, no Spark)."""

from __future__ import annotations

import pytest

from python_jobs.marquez_api.graph import LineageGraph, NodeRef, neighbourhood, parse_node_id, render_text


def chain() -> LineageGraph:
    """raw → load → staged → model → mart, plus a side reader of staged."""
    graph = LineageGraph()
    graph.add_edge("job:ns:load", "dataset:ns:raw", "input")
    graph.add_edge("job:ns:load", "dataset:ns:staged", "output")
    graph.add_edge("job:ns:model", "dataset:ns:staged", "input")
    graph.add_edge("job:ns:model", "dataset:ns:mart", "output")
    graph.add_edge("job:ns:audit", "dataset:ns:staged", "input")
    return graph


def test_node_ids_with_colons_in_the_namespace():
    known = ["postgres://db:5432", "file"]
    assert parse_node_id("dataset:postgres://db:5432:public.orders", known) == NodeRef(
        "dataset", "postgres://db:5432", "public.orders")
    version = "#0b6f8c3e-5d0a-3c1e-9f7a-2a4b6c8d0e1f"  # marquez-python appends a dataset version id
    assert parse_node_id(f"datasetField:file:/tmp/t:col{version}", known) == NodeRef(
        "datasetField", "file", "/tmp/t", "col")
    # Any other `#` is part of the name.
    assert parse_node_id("dataset:file:/tmp/t#2", known) == NodeRef("dataset", "file", "/tmp/t#2")
    assert parse_node_id("job:etl:daily", known) == NodeRef("job", "etl", "daily")
    with pytest.raises(ValueError):
        parse_node_id("table:x:y")


def test_neighbourhood_by_direction_and_depth():
    graph = chain()
    assert neighbourhood(graph, "dataset:ns:mart", 1, "upstream") == {
        "dataset:ns:mart", "job:ns:model", "dataset:ns:staged"}
    assert neighbourhood(graph, "dataset:ns:raw", 5, "downstream") == {
        "dataset:ns:raw", "job:ns:load", "dataset:ns:staged", "job:ns:model", "dataset:ns:mart", "job:ns:audit"}
    # Both ways, as Marquez: the sibling reader of `staged` is reached through it.
    assert "job:ns:audit" in neighbourhood(graph, "dataset:ns:mart", 2, "both")
    assert neighbourhood(graph, "dataset:ns:missing", 3) == set()


def test_render_text_marks_repeats():
    graph = chain()
    graph.add_edge("job:ns:model", "dataset:ns:raw", "input")
    text = render_text(graph, "dataset:ns:mart", 5, "upstream").splitlines()
    assert text == [
        "dataset:ns:mart",
        "upstream:",
        "  <- job:ns:model",
        "     <- dataset:ns:raw",
        "     <- dataset:ns:staged",
        "        <- job:ns:load",
        "           <- dataset:ns:raw (see above)",
    ]


def test_symlinks_name_their_main_dataset_resolving_chains_and_cycles():
    from python_jobs.marquez_api.symlinks import identifiers, symlink_targets

    def entry(ns: str, name: str, stamp: int) -> dict:
        return {"uuid": f"{ns}|{name}", "namespace": ns, "name": name, "stamp": stamp}

    facets = {
        "hdfs://nn|/warehouse/orders": {"symlinks": {"identifiers": [
            {"namespace": "hive://ms", "name": "db.orders", "type": "TABLE"},
            {"namespace": "hdfs://nn", "name": "/warehouse/orders"}, {"name": "no-namespace"}, "junk"]}},
        "hive://ms|db.orders": {},
        "s3://b|a": {"symlinks": {"identifiers": [{"namespace": "s3://b", "name": "b"}]}},
        "s3://b|b": {"symlinks": {"identifiers": [{"namespace": "s3://b", "name": "a"}]}},
        "s3://b|c": {"symlinks": {"identifiers": [{"namespace": "s3://b", "name": "a"}]}},
        "x|old": {"symlinks": {"identifiers": [{"namespace": "x", "name": "shared"}]}},
        "x|new": {"symlinks": {"identifiers": [{"namespace": "x", "name": "shared"}]}},
    }
    entries = [entry("hdfs://nn", "/warehouse/orders", 1), entry("hive://ms", "db.orders", 1),
               entry("s3://b", "a", 1), entry("s3://b", "b", 1), entry("s3://b", "c", 0),
               entry("x", "old", 1), entry("x", "new", 2)]
    assert identifiers(facets["hdfs://nn|/warehouse/orders"]) == [("hive://ms", "db.orders"),
                                                                  ("hdfs://nn", "/warehouse/orders")]
    targets = symlink_targets(entries, facets.__getitem__, lambda e: e["stamp"])
    # The table named by its files' dataset joins it, even though events name the table too.
    assert targets[("hive://ms", "db.orders")] == ("hdfs://nn", "/warehouse/orders")
    # a ↔ b is a cycle: a (first id) is the main one; c's claim on a loses to b's newer one.
    assert targets[("s3://b", "b")] == ("s3://b", "a") and ("s3://b", "a") not in targets
    assert targets[("x", "shared")] == ("x", "new")
    assert ("hdfs://nn", "/warehouse/orders") not in targets


def test_edges_to_a_symlink_join_its_main_dataset():
    from python_jobs.marquez_api.symlinks import merged_aliases

    graph = LineageGraph()
    graph.add_edge("job:spark:write_orders", "dataset:hdfs://nn:/warehouse/orders", "output")
    graph.add_edge("job:trino:report", "dataset:hive://ms:db.orders", "input")
    graph.add_edge("job:trino:report", "dataset:pg:report", "output")
    merged = merged_aliases(graph, {("hive://ms", "db.orders"): ("hdfs://nn", "/warehouse/orders")})
    assert "dataset:hive://ms:db.orders" not in merged.nodes
    assert merged.readers["dataset:hdfs://nn:/warehouse/orders"] == {"job:trino:report"}
    assert neighbourhood(merged, "job:spark:write_orders", 2) == {
        "job:spark:write_orders", "dataset:hdfs://nn:/warehouse/orders", "job:trino:report", "dataset:pg:report"}
    assert merged_aliases(graph, {}) is graph

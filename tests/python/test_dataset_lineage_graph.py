"""Upstream depth of the dataset lineage graph: the pure walk (any depth, cycles, diamonds) and the
``dataset_lineage_graph`` model built by dbt on Spark over a deep chain and a cycle."""

from __future__ import annotations

import json
import time

import pyarrow as pa

from python_jobs.dbt import run_dbt
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.lineage.graph_depth import DEPTH_SCHEMA, depth_table, depths_by_index, upstream_depths

CHAIN = 200


def chain(prefix: str, length: int) -> list[tuple[str, str]]:
    return [(f"{prefix}{i}", f"{prefix}{i + 1}") for i in range(length - 1)]


def test_long_chain_gets_every_depth():
    depths = upstream_depths(chain("d", CHAIN))
    assert depths == {f"d{i}": i for i in range(CHAIN)}


def test_edge_order_does_not_matter():
    edges = chain("d", CHAIN)
    assert upstream_depths(reversed(edges)) == upstream_depths(edges)


def test_cycle_and_everything_below_it_is_unbounded():
    edges = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("s", "a"), *chain("x", 4)]
    assert upstream_depths(edges) == {
        "a": None, "b": None, "c": None, "d": None, "e": None, "s": 0,
        "x0": 0, "x1": 1, "x2": 2, "x3": 3,
    }


def test_self_loop_is_a_cycle():
    # The model's edge query drops self-loops (a run reading and writing one dataset); the walk
    # still treats one as a cycle rather than looping or ignoring it.
    assert upstream_depths([("a", "a"), ("a", "b"), ("s", "t")]) == {"a": None, "b": None, "s": 0, "t": 1}


def test_diamond_takes_the_deepest_path():
    #  s -> a -> b -> t, s -> t, s -> c -> t: t is 3 deep through a and b
    edges = [("s", "a"), ("a", "b"), ("b", "t"), ("s", "t"), ("s", "c"), ("c", "t"), ("t", "u")]
    assert upstream_depths(edges) == {"s": 0, "a": 1, "b": 2, "c": 1, "t": 3, "u": 4}


def test_duplicate_edges_change_nothing():
    assert upstream_depths([("a", "b"), ("a", "b"), ("b", "c")]) == {"a": 0, "b": 1, "c": 2}


def test_deep_graph_needs_no_recursion():
    length = 100_000
    depths = depths_by_index(length, list(range(length - 1)), list(range(1, length)))
    assert depths[-1] == length - 1 and depths[0] == 0


def test_depth_table_from_arrow():
    edges = pa.table({
        "upstream_uuid": ["b", "a", "c", "c", "x", "y"],
        "downstream_uuid": ["c", "b", "a", "d", "y", "z"],
    })
    table = depth_table(edges)
    assert table.schema == DEPTH_SCHEMA
    assert table.to_pylist() == [
        {"dataset_uuid": "a", "upstream_depth": None, "on_cycle": True},
        {"dataset_uuid": "b", "upstream_depth": None, "on_cycle": True},
        {"dataset_uuid": "c", "upstream_depth": None, "on_cycle": True},
        {"dataset_uuid": "d", "upstream_depth": None, "on_cycle": True},
        {"dataset_uuid": "x", "upstream_depth": 0, "on_cycle": False},
        {"dataset_uuid": "y", "upstream_depth": 1, "on_cycle": False},
        {"dataset_uuid": "z", "upstream_depth": 2, "on_cycle": False},
    ]
    empty = pa.table({"upstream_uuid": pa.array([], pa.string()), "downstream_uuid": pa.array([], pa.string())})
    assert depth_table(empty).num_rows == 0


def run_event(run: int, inputs: list[str], outputs: list[str]) -> dict:
    return {
        "eventType": "COMPLETE",
        "eventTime": f"2026-04-01T00:{run // 60:02d}:{run % 60:02d}Z",
        "run": {"runId": f"00000000-0000-4000-8000-{run:012d}"},
        "job": {"namespace": "deep", "name": f"job_{run}"},
        "inputs": [{"namespace": "deep", "name": name} for name in inputs],
        "outputs": [{"namespace": "deep", "name": name} for name in outputs],
        "producer": "https://example.com/tests",
    }


def test_model_walks_a_200_deep_chain_and_marks_the_cycle(spark, isolated_settings, tmp_path):
    # chain_0 -> chain_1 -> ... -> chain_199, one run per step; cycle_a -> cycle_b -> cycle_c ->
    # cycle_a with cycle_c -> below_cycle; one run reading and writing the same dataset; and a
    # dataset with no edge at all.
    events = [run_event(i, [f"chain_{i - 1}"], [f"chain_{i}"]) for i in range(1, CHAIN)]
    events += [
        run_event(1001, ["cycle_a"], ["cycle_b"]),
        run_event(1002, ["cycle_b"], ["cycle_c"]),
        run_event(1003, ["cycle_c"], ["cycle_a", "below_cycle"]),
        run_event(1004, ["chain_0", "self"], ["self"]),
        run_event(1005, [], ["lonely"]),
    ]
    path = tmp_path / "deep.ndjson"
    path.write_text("".join(json.dumps(event) + "\n" for event in events))
    ingest_lineage(spark, isolated_settings, [path])
    run_dbt(isolated_settings, ["run", "--select", "+dataset_lineage_graph", "--exclude", "dataset_lineage_graph"])
    started = time.monotonic()
    run_dbt(isolated_settings, ["build", "--select", "dataset_lineage_graph"])
    print(f"dbt build of dataset_lineage_graph: {time.monotonic() - started:.1f} s")

    graph = {
        row["dataset_name"]: row.asDict()
        for row in spark.table(isolated_settings.table("lineage", "dataset_lineage_graph")).collect()
    }
    assert len(graph) == CHAIN + 6
    assert [graph[f"chain_{i}"]["upstream_depth"] for i in range(CHAIN)] == list(range(CHAIN))
    assert not any(graph[f"chain_{i}"]["on_cycle"] for i in range(CHAIN))
    last = graph[f"chain_{CHAIN - 1}"]
    assert (last["upstream_depth"], last["direct_upstream_count"], last["direct_downstream_count"]) == (199, 1, 0)
    for name in ("cycle_a", "cycle_b", "cycle_c", "below_cycle"):
        assert graph[name]["on_cycle"] is True and graph[name]["upstream_depth"] is None, name
    assert (graph["cycle_c"]["direct_upstream_count"], graph["cycle_c"]["direct_downstream_count"]) == (1, 2)
    # The self-loop is no edge: `self` is read by no one else, so it is 1 deep below chain_0.
    assert graph["self"]["upstream_depth"] == 1 and graph["self"]["on_cycle"] is False
    assert (graph["self"]["direct_upstream_count"], graph["self"]["direct_downstream_count"]) == (1, 0)
    assert graph["chain_0"]["direct_downstream_count"] == 2
    lonely = graph["lonely"]
    assert (lonely["upstream_depth"], lonely["on_cycle"], lonely["direct_upstream_count"]) == (0, False, 0)

    schema = spark.table(isolated_settings.table("lineage", "dataset_lineage_graph")).schema.simpleString()
    assert schema == (
        "struct<dataset_uuid:string,namespace_name:string,dataset_name:string,direct_upstream_count:bigint,"
        "direct_downstream_count:bigint,upstream_depth:int,on_cycle:boolean>"
    )

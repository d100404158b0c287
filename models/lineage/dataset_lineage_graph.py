"""Dataset-to-dataset lineage with upstream depth, computed in PySpark.

A dataset feeds another when some run read the first and wrote the second. For every dataset
this table gives its direct upstream and downstream counts and its upstream depth: 0 for a
source, otherwise 1 + the deepest upstream. Depth is found by relaxing it over the edges until
nothing changes; a dataset that keeps deepening after as many rounds as there are datasets sits
on (or below) a cycle and gets a null depth with ``on_cycle`` set. The graph is small (one edge
per dataset pair), so a full rebuild each run is its natural shape.
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

MAX_ROUNDS = 64


def lineage_edges(inputs: DataFrame, outputs: DataFrame) -> DataFrame:
    read = inputs.select("run_uuid", F.col("dataset_uuid").alias("upstream_uuid"))
    written = outputs.select("run_uuid", F.col("dataset_uuid").alias("downstream_uuid"))
    return (
        read.join(written, "run_uuid")
        .where(F.col("upstream_uuid") != F.col("downstream_uuid"))
        .select("upstream_uuid", "downstream_uuid")
        .distinct()
    )


def upstream_depths(nodes: DataFrame, edges: DataFrame, max_rounds: int) -> DataFrame:
    """``dataset_uuid, upstream_depth, on_cycle`` by repeated relaxation (one join per round)."""
    depths = nodes.select("dataset_uuid", F.lit(0).alias("depth")).localCheckpoint()
    for _ in range(max_rounds):
        proposed = (
            edges.join(depths.withColumnRenamed("dataset_uuid", "upstream_uuid"), "upstream_uuid")
            .groupBy(F.col("downstream_uuid").alias("dataset_uuid"))
            .agg((F.max("depth") + 1).alias("proposed"))
        )
        relaxed = (
            depths.join(proposed, "dataset_uuid", "left")
            .select("dataset_uuid", F.greatest("depth", F.coalesce("proposed", F.lit(0))).alias("depth"))
            .localCheckpoint()
        )
        changed = relaxed.join(depths.withColumnRenamed("depth", "before"), "dataset_uuid").where(
            F.col("depth") != F.col("before")
        )
        depths = relaxed
        if changed.isEmpty():
            return depths.select("dataset_uuid", F.col("depth").alias("upstream_depth"), F.lit(False).alias("on_cycle"))
    # Still deepening: those datasets are on or below a cycle.
    return depths.select(
        "dataset_uuid",
        F.when(F.col("depth") < max_rounds, F.col("depth")).alias("upstream_depth"),
        (F.col("depth") >= max_rounds).alias("on_cycle"),
    )


def model(dbt, session):
    dbt.config(materialized="table")
    datasets = dbt.ref("datasets").select(
        F.col("uuid").alias("dataset_uuid"), "namespace_name", F.col("name").alias("dataset_name")
    )
    edges = lineage_edges(dbt.ref("runs_input_mapping"), dbt.ref("runs_output_mapping")).localCheckpoint()
    node_count = datasets.count()
    depths = upstream_depths(datasets.select("dataset_uuid"), edges, min(MAX_ROUNDS, node_count + 1))
    upstream_counts = edges.groupBy(F.col("downstream_uuid").alias("dataset_uuid")).agg(
        F.count(F.lit(1)).alias("direct_upstream_count")
    )
    downstream_counts = edges.groupBy(F.col("upstream_uuid").alias("dataset_uuid")).agg(
        F.count(F.lit(1)).alias("direct_downstream_count")
    )
    return (
        datasets.join(depths, "dataset_uuid", "left")
        .join(upstream_counts, "dataset_uuid", "left")
        .join(downstream_counts, "dataset_uuid", "left")
        .select(
            "dataset_uuid",
            "namespace_name",
            "dataset_name",
            F.coalesce("direct_upstream_count", F.lit(0)).cast("bigint").alias("direct_upstream_count"),
            F.coalesce("direct_downstream_count", F.lit(0)).cast("bigint").alias("direct_downstream_count"),
            F.col("upstream_depth").cast("int").alias("upstream_depth"),
            F.coalesce("on_cycle", F.lit(False)).alias("on_cycle"),
        )
    )

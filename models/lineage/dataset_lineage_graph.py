"""Dataset-to-dataset lineage with upstream depth, computed in PySpark.

A dataset feeds another when some run read the first and wrote the second. For every dataset
this table gives its direct upstream and downstream counts and its upstream depth: 0 for a
source, otherwise 1 + the deepest upstream. A dataset on a cycle, or downstream of one, has no
bounded depth: it gets a null depth with ``on_cycle`` set.

The graph is small (one edge per dataset pair, whatever the event volume), so its distinct edges
are collected to the driver as Arrow and walked once in topological order
(``python_jobs.lineage.graph_depth``): linear time, any depth, a few Spark jobs in all. About
320 MB of driver memory per million edges. A full rebuild each run is its natural shape.
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from python_jobs.lineage.graph_depth import depth_table


def lineage_edges(inputs: DataFrame, outputs: DataFrame) -> DataFrame:
    read = inputs.select("run_uuid", F.col("dataset_uuid").alias("upstream_uuid"))
    written = outputs.select("run_uuid", F.col("dataset_uuid").alias("downstream_uuid"))
    return (
        read.join(written, "run_uuid")
        .where(F.col("upstream_uuid") != F.col("downstream_uuid"))
        .select("upstream_uuid", "downstream_uuid")
        .distinct()
    )


def upstream_depths(session, edges: DataFrame) -> DataFrame:
    """``dataset_uuid, upstream_depth, on_cycle`` for every dataset with an edge (others are sources)."""
    depths = depth_table(edges.select("upstream_uuid", "downstream_uuid").toArrow())
    return session.createDataFrame(depths, schema="dataset_uuid string, upstream_depth int, on_cycle boolean")


def model(dbt, session):
    dbt.config(materialized="table")
    datasets = dbt.ref("datasets").select(
        F.col("uuid").alias("dataset_uuid"), "namespace_name", F.col("name").alias("dataset_name")
    )
    edges = lineage_edges(dbt.ref("runs_input_mapping"), dbt.ref("runs_output_mapping")).localCheckpoint()
    depths = upstream_depths(session, edges)
    upstream_counts = edges.groupBy(F.col("downstream_uuid").alias("dataset_uuid")).agg(
        F.count(F.lit(1)).alias("direct_upstream_count")
    )
    downstream_counts = edges.groupBy(F.col("upstream_uuid").alias("dataset_uuid")).agg(
        F.count(F.lit(1)).alias("direct_downstream_count")
    )
    on_cycle = F.coalesce("on_cycle", F.lit(False))
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
            # A dataset without edges is a source (depth 0); one on or below a cycle has none.
            F.when(on_cycle, F.lit(None)).otherwise(F.coalesce("upstream_depth", F.lit(0)))
            .cast("int").alias("upstream_depth"),
            on_cycle.alias("on_cycle"),
        )
    )

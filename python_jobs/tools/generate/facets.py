"""The facet benchmark's OpenLineage history: many small facets that repeat (schemas,
SQL, engine info), facets unique to each event (statistics, nominal times), noise facets for the
drop-list, and now and then a multi-megabyte Spark logical plan. Deterministic for a given config."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from python_jobs.keys import name_uuid

PRODUCER = "https://example.com/lineage-warehouse/bench"
NAMESPACE = "bench-warehouse"
BASE_TIME = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class SyntheticConfig:
    events: int = 100_000
    datasets: int = 500
    jobs: int = 100
    large_every: int = 2_000  # every Nth event carries a large logical plan facet
    large_bytes: int = 2 * 1024 * 1024
    distinct_large: int = 5  # how many different large plans there are
    schema_generations: int = 3  # schemas change this many times over the history


def dataset_name(index: int) -> str:
    return f"analytics.table_{index:05d}"


def field_list(dataset_index: int, generation: int) -> list[dict[str, str]]:
    width = 4 + dataset_index % 7 + generation
    return [{"name": f"col_{n}", "type": "string" if n % 3 else "bigint"} for n in range(width)]


def schema_facet(dataset_index: int, generation: int) -> dict[str, Any]:
    return {"_producer": PRODUCER, "fields": field_list(dataset_index, generation)}


@lru_cache(maxsize=16)
def large_plan(variant: int, target_bytes: int) -> dict[str, Any]:
    node = f"Project [id#{variant}L, amount#2, customer#3] +- Filter (amount#2 > {variant}) +- Relation parquet "
    count = target_bytes // (len(node) + 150) + 1
    # Expression ids differ from node to node, as in real plans, so the text does not compress to nothing.
    return {
        "_producer": PRODUCER,
        "plan": [
            {
                "class": "org.apache.spark.sql.catalyst.plans.logical.Project",
                "num": i,
                "exprId": hashlib.sha256(f"{variant}:{i}".encode()).hexdigest(),
                "node": node,
            }
            for i in range(count)
        ],
    }


def event_time(index: int) -> str:
    return (BASE_TIME + timedelta(seconds=index)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def input_index(index: int, config: SyntheticConfig) -> int:
    return (index * 7) % config.datasets


def output_index(index: int, config: SyntheticConfig) -> int:
    return (index * 13 + 1) % config.datasets


def generation(index: int, config: SyntheticConfig) -> int:
    return index * config.schema_generations // max(config.events, 1)


def synthetic_event(index: int, config: SyntheticConfig) -> dict[str, Any]:
    job_index = index % config.jobs
    run_id = name_uuid(f"bench-run:{index // 2}")
    gen = generation(index, config)
    source, target = input_index(index, config), output_index(index, config)
    run_facets: dict[str, Any] = {
        "nominalTime": {"_producer": PRODUCER, "nominalStartTime": event_time(index - index % 2)},
        "processing_engine": {"_producer": PRODUCER, "name": "spark", "version": "4.0.1"},
    }
    if index % 50 == 0:
        run_facets["spark_unknown"] = {"_producer": PRODUCER, "inputs": [{"description": f"opaque {index}"}]}
    if config.large_every and index % config.large_every == 0:
        variant = (index // config.large_every) % config.distinct_large
        run_facets["spark.logicalPlan"] = large_plan(variant, config.large_bytes)
    return {
        "eventType": "START" if index % 2 == 0 else "COMPLETE",
        "eventTime": event_time(index),
        "producer": PRODUCER,
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": run_id, "facets": run_facets},
        "job": {
            "namespace": "bench-jobs",
            "name": f"job_{job_index:04d}",
            "facets": {
                "sql": {"_producer": PRODUCER, "query": f"insert into {dataset_name(target)} select * from src"},
                "jobType": {"_producer": PRODUCER, "processingType": "BATCH", "integration": "SPARK"},
            },
        },
        "inputs": [
            {
                "namespace": NAMESPACE,
                "name": dataset_name(source),
                "facets": {
                    "schema": schema_facet(source, gen),
                    "dataSource": {"_producer": PRODUCER, "name": NAMESPACE, "uri": f"s3://bench/{source}"},
                },
            }
        ],
        "outputs": [
            {
                "namespace": NAMESPACE,
                "name": dataset_name(target),
                "facets": {
                    "schema": schema_facet(target, gen),
                    "dataSource": {"_producer": PRODUCER, "name": NAMESPACE, "uri": f"s3://bench/{target}"},
                },
                "outputFacets": {"outputStatistics": {"_producer": PRODUCER, "rowCount": index, "size": index * 64}},
            }
        ],
    }


def synthetic_events(config: SyntheticConfig, start: int = 0, stop: int | None = None) -> Iterator[dict[str, Any]]:
    for index in range(start, config.events if stop is None else min(stop, config.events)):
        yield synthetic_event(index, config)

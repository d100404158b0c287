"""Load the facet tables from a long event history in bounded chunks, resuming after a crash.

Each chunk is one ``dbt run`` of the facet storage models (``facet_refs``, ``facet_body_store``, the
``facet_winners_*`` revisions, then the ``facet_publications`` mark) with the ``facet_ingest_seq_upto`` var
set to the chunk's last ``ingest_seq``. Every model keeps its own watermark, so a run that died anywhere
(between chunks, or between the models of one chunk) is resumed by running the command again: chunks already
loaded select nothing, and the models after ``facet_refs`` catch up from it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from python_jobs.dbt import run_dbt
from python_jobs.settings import Settings

# The current-facet revisions are kept up to date chunk by chunk too, so each chunk's work stays bounded.
STORAGE_MODELS = (
    "facet_refs",
    "facet_body_store",
    "facet_winners_dataset",
    "facet_winners_dataset_version",
    "facet_winners_job",
    "facet_winners_run",
    # The commit mark the joining views read through: they show each chunk once it is complete.
    "facet_publications",
    # The body store's public face (a view through the mark), there from the first chunk on.
    "facet_bodies",
)
SETUP_NODES = ("stg_lineage_events", "facet_classification")
FINISH_COMMANDS: dict[str, list[str]] = {
    "build": ["build", "--select", "facet_classification", "path:models/facets"],
    "run": ["run", "--select", "path:models/facets"],
    "none": [],
}


@dataclass(frozen=True)
class BackfillReport:
    watermark_before: int | None
    chunk_bounds: list[int]
    chunks_run: int
    completed: bool
    extra: dict[str, Any] = field(default_factory=dict)


def chunk_upper_bounds(seqs_after_watermark: Sequence[int], chunk_events: int) -> list[int]:
    """The last ingest_seq of each chunk of ``chunk_events`` events (input sorted ascending)."""
    if chunk_events < 1:
        raise ValueError("chunk_events must be at least 1")
    bounds = list(seqs_after_watermark[chunk_events - 1 :: chunk_events])
    if seqs_after_watermark and (not bounds or bounds[-1] != seqs_after_watermark[-1]):
        bounds.append(seqs_after_watermark[-1])
    return bounds


def table_exists(spark: SparkSession, table: str) -> bool:
    return bool(spark.catalog.tableExists(table))


def facet_watermark(spark: SparkSession, settings: Settings) -> int | None:
    table = settings.table("lineage", "facet_refs")
    if not table_exists(spark, table):
        return None
    value = spark.sql(f"select max(ingest_seq) as watermark from {table}").first()["watermark"]
    return None if value is None else int(value)


def pending_chunk_bounds(spark: SparkSession, settings: Settings, after: int | None, chunk_events: int) -> list[int]:
    """Chunk bounds over the raw events not loaded yet; one driver-side pass over a long column."""
    raw = settings.table("raw", "lineage_events")
    condition = "" if after is None else f"where ingest_seq > {int(after)}"
    bounds_sql = f"""
        with numbered as (
            select ingest_seq, row_number() over (order by ingest_seq) as position
            from {raw} {condition}
        )
        select ingest_seq from numbered
        where position % {int(chunk_events)} = 0
           or position = (select count(*) from numbered)
        order by ingest_seq
    """
    return [int(row["ingest_seq"]) for row in spark.sql(bounds_sql).collect()]


def run_backfill(
    spark: SparkSession,
    settings: Settings,
    chunk_events: int,
    max_chunks: int | None = None,
    extra_vars: dict[str, Any] | None = None,
    on_chunk: Callable[[int, int, int], None] | None = None,
    finish: str = "build",
) -> BackfillReport:
    """Loads all pending events chunk by chunk, then builds the facet views and runs their tests.

    ``max_chunks`` stops early (to spread a long backfill over several sessions, or to stop at a
    known point in tests); the next call resumes from the watermark. Once every chunk is loaded,
    ``finish`` says what follows: ``build`` (views and dbt tests), ``run`` (views only) or ``none``.
    """
    if chunk_events < 1:
        raise ValueError("chunk_events must be at least 1")
    if finish not in FINISH_COMMANDS:
        raise ValueError(f"finish must be one of {sorted(FINISH_COMMANDS)}")
    dbt_vars = dict(extra_vars or {})
    run_dbt(settings, ["build", "--select", *SETUP_NODES, "--exclude-resource-type", "test"], dbt_vars)
    before = facet_watermark(spark, settings)
    bounds = pending_chunk_bounds(spark, settings, before, chunk_events)
    planned = bounds if max_chunks is None else bounds[:max_chunks]
    for index, upto in enumerate(planned, start=1):
        run_dbt(settings, ["run", "--select", *STORAGE_MODELS], {**dbt_vars, "facet_ingest_seq_upto": upto})
        if on_chunk is not None:
            on_chunk(index, len(bounds), upto)
    completed = len(planned) == len(bounds)
    final = FINISH_COMMANDS[finish]
    if completed and final:
        run_dbt(settings, final, dbt_vars)
    return BackfillReport(before, bounds, len(planned), completed)

"""The current facets of each job's latest run (Marquez shows them with the job), kept between refreshes.

They come from the ``current_run_facets`` view: per run and facet name, the winning row of
``facet_winners_run`` through the facet commit mark (``facet_publications``), with its body. There is one
latest run per job (200,000 jobs at large Marquez deployments), and a build changes only those of the jobs that
ran since: reading them all on every refresh names every job's run in the query.

A run's current facets change only when a winner row of that run is published, and every such row's
``last_ingest_seq`` is past the mark the kept facets were read through (it is the run's newest event's). So
the snapshot keeps the facets with that mark, and the next refresh reads again only the latest runs that have
a winner row published since, or that it did not hold before (a job's new latest run). The kept facets are
trusted only while the winners and the body store have grown by appends alone (watermarks.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from python_jobs.marquez_api.run_details import publication_mark
from python_jobs.marquez_api.watermarks import Watermark, can_extend, table_files
from python_jobs.settings import Settings

# What the view reads: while these only gain files, a run's facets through a mark never change.
SOURCE_TABLES = (("lineage", "facet_winners_run"), ("staging", "facet_body_store"))


@dataclass(frozen=True)
class LatestRunFacets:
    """Per run, its current facets as JSON text ("" without any); ``watermark``: the facet commit mark they
    are complete through and the files read; ``runs_read``: the runs read from the warehouse to make them."""

    text: dict[str, str] = field(default_factory=dict)
    watermark: Watermark = field(default_factory=Watermark)
    runs_read: int = 0


def runs_to_read(latest: Iterable[str], kept: dict[str, str] | None, published: set[str]) -> list[str]:
    """The latest runs whose facets must be read: all of them without kept facets, else those with facets
    published since the kept mark and those the kept facets lack."""
    if kept is None:
        return sorted(set(latest))
    return sorted(run for run in set(latest) if run in published or run not in kept)


def published_runs(spark: SparkSession, settings: Settings, after: int) -> set[str]:
    """The runs with a winner row written after ``after`` (rows not yet published too: reading a run again is
    harmless, missing one is not)."""
    return {row.run_id for row in spark.sql(f"""
        select distinct run_id from {settings.table("lineage", "facet_winners_run")}
        where last_ingest_seq > {int(after)}
    """).collect()}


def read_facets(spark: SparkSession, settings: Settings, runs: list[str]) -> dict[str, str]:
    """The current facets of ``runs`` (an IN of values, not SQL text: the winners are bucketed by run_id, so
    only the runs' buckets are read)."""
    table = settings.table("lineage", "current_run_facets")
    if not runs or not spark.catalog.tableExists(table):
        return {}
    return {row.run_id: row.facets or "" for row in
            spark.table(table).where(F.col("run_id").isin(runs)).select("run_id", "facets").collect()}


def load_latest_run_facets(spark: SparkSession, settings: Settings, latest: list[str],
                           kept: LatestRunFacets | None = None) -> LatestRunFacets:
    """The current facets of the ``latest`` runs: ``kept`` (the previous snapshot's) with the changed runs read
    again where it can be extended, else all of them read."""
    # The mark first: facets read after it are complete through it at least.
    current = Watermark(publication_mark(spark, settings.schema("lineage")),
                        table_files(spark, (settings.table(*table) for table in SOURCE_TABLES)))
    held: dict[str, str] | None = None
    published: set[str] = set()
    if kept is not None and can_extend(kept.watermark, current):
        held, published = kept.text, published_runs(spark, settings, int(kept.watermark.through or 0))
    runs = runs_to_read(latest, held, published)
    read, fresh = read_facets(spark, settings, runs), set(runs)
    return LatestRunFacets({run: read.get(run, "") if run in fresh or held is None else held[run] for run in latest},
                           current, len(runs))

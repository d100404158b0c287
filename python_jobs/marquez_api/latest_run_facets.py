"""The current facets of each job's latest run (Marquez shows them with the job), kept between refreshes.

They are the ``current_run_facets`` view's: per run and facet name, the winning row of ``facet_winners_run``
through the facet commit mark (``facet_publications``), and the run's facets as one JSON object of those
winners' bodies, members in name order (the ``current_facets`` macro). There is one latest run per job
(200,000 jobs at large Marquez deployments), and a build changes only those of the jobs that ran since.

A run's current facets change only when a winner row of that run is published, and every such row's
``last_ingest_seq`` is past the mark the kept facets were read through (it is the run's newest event's). So
the snapshot keeps the facets with that mark, and the next refresh reads again only the latest runs that have
a winner row published since, or that it did not hold before (a job's new latest run). The kept facets are
trusted only while the winners and the body store have grown by appends alone (watermarks.py).

The view joins the winners with every stored body, which reads the whole store (4.6 s at 3M events) for a
refresh that wants a few hundred bodies. So the winners are read alone (bucketed by run, only the runs'
buckets), and their bodies are looked up as facet_body_lookup.py says: those of the latest runs held before
are kept (a run facet body repeats from run to run of a job: its engine, its parent), then those first stored
since the kept mark, then the rest by hash. The object is put together here as the macro puts it together;
a Spark test compares the text with the view's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from python_jobs.marquez_api.facet_body_lookup import bodies_by_hash, bodies_stored_between, of_hashes
from python_jobs.marquez_api.run_details import publication_mark
from python_jobs.marquez_api.watermarks import Watermark, can_extend, table_files
from python_jobs.settings import Settings

# What the facets are read from: while these only gain files, a run's facets through a mark never change.
SOURCE_TABLES = (("lineage", "facet_winners_run"), ("staging", "facet_body_store"))

# A run's winners: per facet name, the hash of the winning body.
Members = tuple[tuple[str, str], ...]

# JSON's two-character escapes; other control characters are written as \\u00XX with upper-case hex digits,
# as Spark's ``to_json`` (Jackson) writes them.
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


@dataclass(frozen=True)
class LatestRunFacets:
    """Per run, its current facets as JSON text ("" without any); ``watermark``: the facet commit mark they
    are complete through and the files read; ``runs_read``: the runs read from the warehouse to make them;
    ``members``: per run, its winners (facet name, body hash); ``bodies``: those winners' bodies by hash, each
    once (bounded by the latest runs, not by history); ``bodies_read``: the bodies looked up in the store."""

    text: dict[str, str] = field(default_factory=dict)
    watermark: Watermark = field(default_factory=Watermark)
    runs_read: int = 0
    members: dict[str, Members] = field(default_factory=dict)
    bodies: dict[str, str] = field(default_factory=dict)
    bodies_read: int = 0


def runs_to_read(latest: Iterable[str], kept: Mapping[str, object] | None, published: set[str]) -> list[str]:
    """The latest runs whose facets must be read: all of them without kept facets, else those with facets
    published since the kept mark and those the kept facets lack."""
    if kept is None:
        return sorted(set(latest))
    return sorted(run for run in set(latest) if run in published or run not in kept)


def json_string(text: str) -> str:
    """``text`` as a JSON string, escaped as Spark's ``to_json`` escapes it."""
    return '"' + "".join(_SHORT_ESCAPES.get(c) or (f"\\u{ord(c):04X}" if ord(c) < 0x20 else c) for c in text) + '"'


def facets_object(members: Members, bodies: Mapping[str, str]) -> str:
    """The run's facets as the ``current_facets`` macro writes them: ``{"<name>":<body>,...}`` in the byte order
    of the names, each body as stored; a member whose body is not stored is left out, as the view's inner join
    leaves it out; "" without any member."""
    parts = [(name.encode("utf-8", "surrogatepass"), json_string(name) + ":" + bodies[body_hash])
             for name, body_hash in members if body_hash in bodies]
    if not parts:
        return ""
    return "{" + ",".join(member for _, member in sorted(parts)) + "}"


def published_runs(spark: SparkSession, settings: Settings, after: int) -> set[str]:
    """The runs with a winner row written after ``after`` (rows not yet published too: reading a run again is
    harmless, missing one is not)."""
    return {row.run_id for row in spark.sql(f"""
        select distinct run_id from {settings.table("lineage", "facet_winners_run")}
        where last_ingest_seq > {int(after)}
    """).collect()}


def read_members(spark: SparkSession, settings: Settings, runs: list[str], through: int) -> dict[str, Members]:
    """The winners of ``runs`` through ``through``: per run and facet name the body of the latest row by
    ``facet_order``, as the view's first step. An IN of values, not SQL text: the winners are bucketed by
    ``run_id``, so only the runs' buckets are read."""
    table = settings.table("lineage", "facet_winners_run")
    if not runs or not spark.catalog.tableExists(table):
        return {}
    rows = (spark.table(table).where(F.col("run_id").isin(runs)).where(F.col("last_ingest_seq") <= int(through))
            .groupBy("run_id", "name").agg(F.max_by("body_hash", "facet_order").alias("body_hash"))
            .toArrow())
    members: dict[str, list[tuple[str, str]]] = {}
    for run, name, body_hash in zip(*(rows.column(c).to_pylist() for c in ("run_id", "name", "body_hash")),
                                    strict=True):
        if body_hash is not None:
            members.setdefault(run, []).append((name, body_hash))
    return {run: tuple(sorted(pairs)) for run, pairs in members.items()}


def _texts(rows: DataFrame) -> dict[str, str]:
    """Body text by hash of store rows."""
    table = rows.select("body_hash", "body").toArrow()
    return dict(zip(table.column("body_hash").to_pylist(), table.column("body").to_pylist(), strict=True))


def read_bodies(spark: SparkSession, settings: Settings, hashes: list[str], through: int,
                since: int | None) -> dict[str, str]:
    """The text of the bodies ``hashes``: with ``since``, first among the bodies stored after it (which skips
    the store's older files), then the others by hash in their shards."""
    found: dict[str, str] = {}
    if since is not None and hashes:
        found = _texts(of_hashes(bodies_stored_between(spark, settings, since, through), hashes))
    missing = [h for h in hashes if h not in found]
    rows = bodies_by_hash(spark, settings, missing, through) if missing else None
    if rows is not None:
        found.update(_texts(rows))
    return found


def load_latest_run_facets(spark: SparkSession, settings: Settings, latest: list[str],
                           kept: LatestRunFacets | None = None) -> LatestRunFacets:
    """The current facets of the ``latest`` runs: ``kept`` (the previous snapshot's) with the changed runs read
    again where it can be extended, else all of them read."""
    # The mark first: facets read after it are complete through it at least.
    through = publication_mark(spark, settings.schema("lineage"))
    current = Watermark(through, table_files(spark, (settings.table(*table) for table in SOURCE_TABLES)))
    if through is None:
        return LatestRunFacets({run: "" for run in latest}, current)
    held: LatestRunFacets | None = None
    published: set[str] = set()
    if kept is not None and can_extend(kept.watermark, current) and kept.watermark.through is not None:
        held, published = kept, published_runs(spark, settings, int(kept.watermark.through))
    runs = runs_to_read(latest, held.members if held is not None else None, published)
    read = read_members(spark, settings, runs, through)
    fresh = set(runs)
    members = {run: read.get(run, ()) if run in fresh or held is None else held.members[run] for run in latest}
    known = held.bodies if held is not None else {}
    needed = sorted({h for run in runs for _, h in read.get(run, ())} - known.keys())
    found = read_bodies(spark, settings, needed, through, held.watermark.through if held is not None else None)
    every = {**known, **found}
    bodies = {h: every[h] for pairs in members.values() for _, h in pairs if h in every}
    text = {run: facets_object(members[run], bodies) if run in fresh or held is None else held.text[run]
            for run in latest}
    return LatestRunFacets(text, current, len(runs), members, bodies, len(needed))

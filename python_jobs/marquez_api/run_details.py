"""Per run, the two facet values job versions need, kept between refreshes and read past a watermark.

The values are the url of the ``sourceCodeLocation`` job facet a run's events carried and the two times of
its ``nominalTime`` run facet, each from the run's latest body of that facet: the later event time wins, then
the later ``ingest_seq`` (as for the current facets). Reading them means aggregating facet rows whose bodies
the facet views join back by hash, which grows with history (about 10 s of a refresh at 1M events).

So the snapshot keeps them, laid out in the order of its runs with the event time of each winning row, and
with the facet publication mark they are complete through. The next refresh reads only the rows published
after that mark and merges them by the same rule: a newer row wins unless the kept one has a later event
time, since its ``ingest_seq`` is higher than any kept row's. The kept values are trusted only while the facet
storage has grown by appends alone: every file they were read from is still there and the mark has not gone
back (watermarks.py). Compaction, erasure, retention and a full refresh rewrite files, and the refresh after
them reads everything again.

The facet views join each row's body back by hash, and a join with the whole body store reads and shuffles all
of it, however few rows are new. So a refresh reads the new rows' winners from ``facet_refs`` alone (past the
mark, which skips the older files by their statistics), then looks up only the bodies it needs: those it has
seen before are kept (``BodyValues``, bounded), and a body first stored since the mark lies in the store's new
files (``first_ingest_seq`` past the mark). Only a body neither kept nor new is looked up by hash across the
store, in its shard.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

from python_jobs.marquez_api.columns import TIMESTAMP
from python_jobs.marquez_api.facet_body_lookup import bodies_by_hash, bodies_stored_between
from python_jobs.marquez_api.watermarks import Watermark, can_extend, table_files
from python_jobs.settings import Settings


@dataclass(frozen=True)
class DetailFacet:
    """One facet's values per run: facet ``name`` of ``facet_refs`` scope ``scope``, read at the JSON ``paths``
    of its body."""

    scope: str
    name: str
    paths: tuple[str, ...]

    def columns(self) -> list[str]:
        return [f"v{i}" for i in range(len(self.paths))]


LOCATION = DetailFacet("job", "sourceCodeLocation", ("$.url",))
NOMINAL = DetailFacet("run", "nominalTime", ("$.nominalStartTime", "$.nominalEndTime"))

# The facet storage the values come from: while these only gain files, rows through a mark never change.
STORAGE_TABLES = (("lineage", "facet_refs"), ("staging", "facet_body_store"))
# The winning row's event time: present exactly where the run has the facet.
WON_AT = "won_at"
# Bodies whose values a snapshot keeps per facet, the most recently won first: a body that wins again (a
# location shared by a job's runs) needs no lookup. Nominal times are mostly one body per run, so keeping them
# all would hold every run's body key; the bound keeps the kept bodies' memory fixed (about 10 MB per facet).
KEPT_BODIES = 50_000


@dataclass(frozen=True)
class BodyValues:
    """Per body hash, the facet's values (``v0``...) in that body."""

    values: dict[str, tuple[str | None, ...]] = field(default_factory=dict)

    def kept(self, found: dict[str, tuple[str | None, ...]], recent: list[str]) -> BodyValues:
        """These and ``found``, keeping at most ``KEPT_BODIES``: ``recent`` (the hashes just won, the latest
        last) first, then the earlier ones in the order they were kept."""
        merged = {**self.values, **found}
        order = [h for h in dict.fromkeys(reversed(recent)) if h in merged]
        chosen = dict.fromkeys(order[:KEPT_BODIES])
        for body_hash in reversed(list(self.values)):
            if len(chosen) >= KEPT_BODIES:
                break
            chosen.setdefault(body_hash)
        return BodyValues({h: merged[h] for h in reversed(list(chosen))})


@dataclass(frozen=True)
class RunDetails:
    """``location`` (``v0``) and ``nominal`` (``v0`` start, ``v1`` end) with ``won_at``, one row per run of
    ``run_uuids`` in its order (null where the run has no such facet); ``watermark``: the facet publication
    mark they are complete through and the storage files read; ``bodies``: per facet name, the bodies kept."""

    run_uuids: pa.Array
    location: pa.Table
    nominal: pa.Table
    watermark: Watermark = field(default_factory=Watermark)
    rows_read: int = 0  # facet values read from the warehouse to make these (all of them, or the new ones)
    bodies: dict[str, BodyValues] = field(default_factory=dict)
    bodies_read: int = 0  # bodies looked up in the store (every winner's on a full read, the new ones after)


def empty_keyed(facet: DetailFacet) -> pa.Table:
    """The winning rows' shape: ``run_id``, the values, ``won_at``."""
    return pa.schema([pa.field("run_id", pa.string())] + [pa.field(c, pa.string()) for c in facet.columns()]
                     + [pa.field(WON_AT, TIMESTAMP)]).empty_table()


def aligned(run_uuids: pa.Array, keyed: pa.Table) -> pa.Table:
    """``keyed`` (one row per ``run_id``) laid out in the order of ``run_uuids``; null rows where a run has
    none. Rows of runs not in ``run_uuids`` are dropped."""
    where = pc.index_in(run_uuids, value_set=keyed.column("run_id").combine_chunks())
    return keyed.drop_columns(["run_id"]).combine_chunks().take(where)


def merged(kept: pa.Table, kept_uuids: pa.Array, run_uuids: pa.Array, newer: pa.Table) -> pa.Table:
    """The kept values (in the order of ``kept_uuids``) and the newer rows (keyed by ``run_id``), in the
    order of ``run_uuids``: per run the newer row unless the kept one has the later event time."""
    old = kept.take(pc.index_in(run_uuids, value_set=kept_uuids))
    new = aligned(run_uuids, newer)
    new_at = new.column(WON_AT)
    new_wins = pc.and_(new_at.is_valid(), pc.fill_null(pc.greater_equal(new_at, old.column(WON_AT)), True))
    return pa.table({name: pc.if_else(new_wins, new.column(name), old.column(name)) for name in old.column_names})


def with_values(winners: pa.Table, facet: DetailFacet, values: dict[str, tuple[str | None, ...]]) -> pa.Table:
    """``winners`` (``run_id``, ``body_hash``, ``won_at``) in ``empty_keyed``'s shape: each winner's values from
    its body. A winner whose body is not in ``values`` is dropped, as the facet views' inner join drops it."""
    hashes = winners.column("body_hash").to_pylist()
    present = pa.array([h in values for h in hashes], pa.bool_())
    rows = winners.filter(present)
    found = [values[h] for h, here in zip(hashes, present.to_pylist(), strict=True) if here]
    columns = {"run_id": rows.column("run_id")}
    for i, name in enumerate(facet.columns()):
        columns[name] = pa.array([value[i] for value in found], pa.string())
    columns[WON_AT] = rows.column(WON_AT)
    return pa.table(columns).cast(empty_keyed(facet).schema)


def _winners_sql(lineage: str, facet: DetailFacet, after: int | None, through: int) -> str:
    """Per run, the body of its latest row of the facet with ``after < ingest_seq <= through`` (the later event
    time wins, then the later ``ingest_seq``), read from the references alone."""
    after_bound = f" and ingest_seq > {int(after)}" if after is not None else ""
    order = "struct(lineage_event_time, ingest_seq)"
    return f"""
        select run_id, max_by(body_hash, {order}) as body_hash, max_by(lineage_event_time, {order}) as {WON_AT}
        from {lineage}.facet_refs
        where scope = '{facet.scope}' and disposition = 'accepted' and name = '{facet.name}'
            and run_id is not null and ingest_seq <= {int(through)}{after_bound}
        group by run_id
    """


def _value_expressions(facet: DetailFacet, body: str) -> list[str]:
    return [f"get_json_object({body}, '{path}') as v{i}" for i, path in enumerate(facet.paths)]


def _value_sql(facet: DetailFacet, body: str) -> str:
    return ", ".join(_value_expressions(facet, body))


def _values_of(table: pa.Table, facet: DetailFacet) -> dict[str, tuple[str | None, ...]]:
    columns = [table.column("body_hash").to_pylist()] + [table.column(c).to_pylist() for c in facet.columns()]
    return {row[0]: tuple(row[1:]) for row in zip(*columns, strict=True)}


def read_everything(spark: SparkSession, settings: Settings, facet: DetailFacet,
                    through: int) -> tuple[pa.Table, BodyValues]:
    """Every run's winning row (``empty_keyed``'s shape), in one join with the store, and the bodies of the
    latest ``KEPT_BODIES`` of them kept."""
    lineage, store = settings.schema("lineage"), settings.table("staging", "facet_body_store")
    table = spark.sql(f"""
        with winners as ({_winners_sql(lineage, facet, None, through)})
        select winners.run_id, winners.body_hash, {_value_sql(facet, "bodies.body")}, winners.{WON_AT}
        from winners
        inner join {store} as bodies
            on substr(winners.body_hash, 1, 1) = bodies.body_shard and winners.body_hash = bodies.body_hash
        where bodies.first_ingest_seq <= {int(through)}
    """).toArrow()
    order = pc.sort_indices(table, [(WON_AT, "ascending")])
    latest = table.take(order[max(len(order) - KEPT_BODIES, 0):])
    bodies = BodyValues().kept(_values_of(latest, facet), latest.column("body_hash").to_pylist())
    return table.drop_columns(["body_hash"]).cast(empty_keyed(facet).schema), bodies


def read_new_bodies(spark: SparkSession, settings: Settings, facet: DetailFacet, after: int,
                    through: int) -> dict[str, tuple[str | None, ...]]:
    """The values of every body first stored with ``after < first_ingest_seq <= through``
    (facet_body_lookup.py)."""
    return _values_of(bodies_stored_between(spark, settings, after, through)
                      .selectExpr("body_hash", *_value_expressions(facet, "body")).toArrow(), facet)


def read_bodies(spark: SparkSession, settings: Settings, facet: DetailFacet, hashes: list[str],
                through: int) -> dict[str, tuple[str | None, ...]]:
    """The values of the bodies ``hashes`` (SHA-256 hex keys), wherever in the store they are: only their
    shards are read."""
    rows = bodies_by_hash(spark, settings, hashes, through)
    if rows is None:
        return {}
    return _values_of(rows.selectExpr("body_hash", *_value_expressions(facet, "body")).toArrow(), facet)


def read_past(spark: SparkSession, settings: Settings, facet: DetailFacet, after: int, through: int,
              kept: BodyValues) -> tuple[pa.Table, BodyValues, int]:
    """The winning rows of the facet past ``after`` (``empty_keyed``'s shape), the bodies kept for the next
    refresh, and how many bodies were looked up in the store."""
    winners = spark.sql(_winners_sql(settings.schema("lineage"), facet, after, through)).toArrow()
    hashes = [h for h in winners.column("body_hash").to_pylist() if h is not None]
    needed = sorted(set(hashes) - kept.values.keys())
    found = read_new_bodies(spark, settings, facet, after, through) if needed else {}
    found = {h: found[h] for h in needed if h in found}
    missing = [h for h in needed if h not in found]
    found.update(read_bodies(spark, settings, facet, missing, through))
    values = {**kept.values, **found}
    order = pc.sort_indices(winners, [(WON_AT, "ascending")])
    recent = [h for h in winners.column("body_hash").take(order).to_pylist() if h is not None]
    return with_values(winners, facet, values), kept.kept(found, recent), len(needed)


def publication_mark(spark: SparkSession, lineage: str) -> int | None:
    """The facet commit mark (``facet_publications``): facet rows through it are complete."""
    table = f"{lineage}.facet_publications"
    if not spark.catalog.tableExists(table):
        return None
    value = spark.sql(f"select max(published_through) as mark from {table}").first()
    return None if value is None or value.mark is None else int(value.mark)


def _storage_exists(spark: SparkSession, settings: Settings) -> bool:
    return all(spark.catalog.tableExists(settings.table(*table)) for table in STORAGE_TABLES)


def load_run_details(spark: SparkSession, settings: Settings, run_uuids: pa.Array,
                     kept: RunDetails | None = None) -> RunDetails:
    """The details of ``run_uuids``: ``kept`` extended by the rows published since its mark where it can be
    (``can_extend``), else everything read again."""
    through = publication_mark(spark, settings.schema("lineage"))
    current = Watermark(through, table_files(spark, (settings.table(*table) for table in STORAGE_TABLES)))
    facets = (LOCATION, NOMINAL)
    if through is None or not _storage_exists(spark, settings):
        nothing = {facet: aligned(run_uuids, empty_keyed(facet)) for facet in facets}
        return RunDetails(run_uuids=run_uuids, location=nothing[LOCATION], nominal=nothing[NOMINAL],
                          watermark=current)
    newer: dict[DetailFacet, pa.Table] = {}
    bodies: dict[str, BodyValues] = {}
    looked_up = 0
    if kept is not None and can_extend(kept.watermark, current) and kept.watermark.through is not None:
        for facet in facets:
            newer[facet], bodies[facet.name], count = read_past(
                spark, settings, facet, kept.watermark.through, through, kept.bodies.get(facet.name, BodyValues()))
            looked_up += count
        location = merged(kept.location, kept.run_uuids, run_uuids, newer[LOCATION])
        nominal = merged(kept.nominal, kept.run_uuids, run_uuids, newer[NOMINAL])
    else:
        for facet in facets:
            newer[facet], bodies[facet.name] = read_everything(spark, settings, facet, through)
            looked_up += newer[facet].num_rows
        location, nominal = aligned(run_uuids, newer[LOCATION]), aligned(run_uuids, newer[NOMINAL])
    return RunDetails(run_uuids=run_uuids, location=location, nominal=nominal, watermark=current,
                      rows_read=sum(table.num_rows for table in newer.values()), bodies=bodies,
                      bodies_read=looked_up)

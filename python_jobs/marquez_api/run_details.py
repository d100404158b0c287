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
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

from python_jobs.marquez_api.columns import TIMESTAMP
from python_jobs.marquez_api.watermarks import Watermark, can_extend, table_files
from python_jobs.settings import Settings


@dataclass(frozen=True)
class DetailFacet:
    """One facet's values per run: read from ``view`` at the JSON ``paths`` of facet ``name``."""

    view: str
    name: str
    paths: tuple[str, ...]

    def columns(self) -> list[str]:
        return [f"v{i}" for i in range(len(self.paths))]


LOCATION = DetailFacet("job_facets", "sourceCodeLocation", ("$.sourceCodeLocation.url",))
NOMINAL = DetailFacet("run_facets", "nominalTime",
                      ("$.nominalTime.nominalStartTime", "$.nominalTime.nominalEndTime"))

# The facet storage the views read: while these only gain files, rows through a mark never change.
STORAGE_TABLES = (("lineage", "facet_refs"), ("staging", "facet_body_store"))
# The winning row's event time: present exactly where the run has the facet.
WON_AT = "won_at"


@dataclass(frozen=True)
class RunDetails:
    """``location`` (``v0``) and ``nominal`` (``v0`` start, ``v1`` end) with ``won_at``, one row per run of
    ``run_uuids`` in its order (null where the run has no such facet); ``watermark``: the facet publication
    mark they are complete through and the storage files read."""

    run_uuids: pa.Array
    location: pa.Table
    nominal: pa.Table
    watermark: Watermark = field(default_factory=Watermark)
    rows_read: int = 0  # facet values read from the warehouse to make these (all of them, or the new ones)


def empty_keyed(facet: DetailFacet) -> pa.Table:
    """The shape ``read_latest`` returns: ``run_id``, the values, ``won_at``."""
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


def read_latest(spark: SparkSession, lineage: str, facet: DetailFacet, after: int | None,
                through: int | None) -> pa.Table:
    """Per run, the facet's values from its winning row among those with ``after < ingest_seq <= through``
    (an open bound where None): ``run_id``, ``v0``..., ``won_at``."""
    view = f"{lineage}.{facet.view}"
    if not spark.catalog.tableExists(view):
        return empty_keyed(facet)
    bounds = "".join([
        f" and ingest_seq > {int(after)}" if after is not None else "",
        f" and ingest_seq <= {int(through)}" if through is not None else "",
    ])
    values = ", ".join(f"get_json_object(facet, '{path}') as v{i}" for i, path in enumerate(facet.paths))
    order = "struct(lineage_event_time, ingest_seq)"
    picked = ", ".join(f"max_by({c}, {order}) as {c}" for c in facet.columns())
    return spark.sql(f"""
        select run_id, {picked}, max_by(lineage_event_time, {order}) as {WON_AT}
        from (select run_id, lineage_event_time, ingest_seq, {values} from {view}
              where name = '{facet.name}' and run_id is not null{bounds})
        group by run_id
    """).toArrow().cast(empty_keyed(facet).schema)


def publication_mark(spark: SparkSession, lineage: str) -> int | None:
    """The facet commit mark (``facet_publications``): facet rows through it are complete."""
    table = f"{lineage}.facet_publications"
    if not spark.catalog.tableExists(table):
        return None
    value = spark.sql(f"select max(published_through) as mark from {table}").first()
    return None if value is None or value.mark is None else int(value.mark)


def load_run_details(spark: SparkSession, settings: Settings, run_uuids: pa.Array,
                     kept: RunDetails | None = None) -> RunDetails:
    """The details of ``run_uuids``: ``kept`` extended by the rows published since its mark where it can be
    (``can_extend``), else everything read again."""
    lineage = settings.schema("lineage")
    through = publication_mark(spark, lineage)
    current = Watermark(through, table_files(spark, (settings.table(*table) for table in STORAGE_TABLES)))
    if kept is not None and can_extend(kept.watermark, current):
        newer = {facet: read_latest(spark, lineage, facet, kept.watermark.through, through)
                 for facet in (LOCATION, NOMINAL)}
        location = merged(kept.location, kept.run_uuids, run_uuids, newer[LOCATION])
        nominal = merged(kept.nominal, kept.run_uuids, run_uuids, newer[NOMINAL])
    else:
        newer = {facet: read_latest(spark, lineage, facet, None, through) for facet in (LOCATION, NOMINAL)}
        location, nominal = aligned(run_uuids, newer[LOCATION]), aligned(run_uuids, newer[NOMINAL])
    return RunDetails(run_uuids=run_uuids, location=location, nominal=nominal, watermark=current,
                      rows_read=sum(table.num_rows for table in newer.values()))

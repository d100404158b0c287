"""``warehouse retain``: forgets the lineage input older than a cut-off, except what the current state needs.

An event is removed when its event time is before the cut-off and it is not *needed*. Needed, so that the
warehouse still answers what each entity is now:

- every event of each job's latest run (the job's current version, run state and run facets), of each
  dataset's latest writing run (its current version and the schema version it points at), of every run
  with an event after the cut-off, and of the run of every event the two rules below keep (a run is kept
  whole, never cut at its START);
- the runs those runs name as parent, up the chain (no kept run points at a removed parent);
- for each (job or dataset, facet name), the latest event carrying that facet (the current facets);
- for a dataset no run ever wrote, its first sighting (its only version).

"Latest" is by (event time, ``ingest_seq``), as the models order. The needed set is a function of the
stored events that removing unneeded events does not change (each rule keeps the row it picks), so the
run can stop anywhere and be run again: it finds the same needed set and goes on; a second run after a
complete one removes nothing.

The rows go one ingest block at a time (``table_rewrite.replace_block``: only blocks with a removed row
are written, a block emptied whole is dropped as a partition). Rejected records (quarantine) go when they
were ingested before the cut-off (they have no trusted event time). The key table is recomputed from the
remaining events (``owners_of_stored``), so no key's first event is a removed one. The derived tables are
then rebuilt from the raw table with a full refresh (the caller runs it), as for an erasure.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from python_jobs.ingest.entity_keys import ENTITY_KEYS, ENTITY_KEYS_TABLE, owners_of_stored
from python_jobs.ingest.lineage import RAW_TABLE, REJECTED_TABLE, HadoopFiles, ensure_lineage_tables, highest_block
from python_jobs.ingest.lineage_contract import RAW_PARTITION_COLUMN
from python_jobs.settings import Settings
from python_jobs.warehouse.erasure import TableChange
from python_jobs.warehouse.table_rewrite import finish_open_block, partition_location, replace_block, replace_table

_DURATION = re.compile(r"(\d+)([dhm])")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}
# What a removal makes stale: every model that reads the lineage input, rebuilt whole (see erasure.py).
REBUILD_SELECT = "stg_lineage_events+"
RETENTION_DAYS_ENV = "LINEAGE_RETENTION_DAYS"
# How far a parent chain is followed: deeper chains than any integration emits (DAG, task, Spark job).
MAX_PARENT_DEPTH = 16


def parse_age(text: str) -> timedelta:
    """``90d``, ``12h``, ``30m``."""
    found = _DURATION.fullmatch(text.strip())
    if not found:
        raise ValueError(f"not an age: {text!r} (use e.g. 90d, 12h or 30m)")
    return timedelta(**{_UNITS[found.group(2)]: int(found.group(1))})


def cut_off(now: datetime, older_than: timedelta) -> datetime:
    return now - older_than


@dataclass
class RetentionReport:
    cut_off: datetime
    dry_run: bool
    tables: list[TableChange] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(t.removed for t in self.tables)

    def rows(self) -> list[tuple[str, int, int, int, int]]:
        return [(t.table, t.rows_before, t.removed, t.rows_before - t.removed, t.bytes_freed) for t in self.tables]


def _latest(frame: DataFrame, keys: list[str]) -> DataFrame:
    order = Window.partitionBy(*keys).orderBy(F.col("event_time").desc_nulls_last(), F.col("ingest_seq").desc())
    return frame.withColumn("_rank", F.row_number().over(order)).where(F.col("_rank") == 1).drop("_rank")


def _entity(kind: str, namespace: Column, name: Column) -> Column:
    return F.concat_ws(":", F.lit(kind), namespace, name)


def _dataset_refs(events: DataFrame) -> DataFrame:
    """One row per dataset an event names: ``ingest_seq, event_time, run_id, role, dataset, facet_names``."""
    def refs(column: str, role: str) -> DataFrame:
        ref = F.explode_outer(F.coalesce(F.col(column), F.array())).alias("ref")
        return events.select("ingest_seq", "event_time", "run_id", ref).where(F.col("ref").isNotNull()).select(
            "ingest_seq", "event_time", "run_id", F.lit(role).alias("role"),
            _entity("dataset", F.col("ref.namespace"), F.col("ref.name")).alias("dataset"),
            F.concat(F.coalesce(F.map_keys("ref.facets"), F.array()),
                     F.coalesce(F.map_keys("ref.output_facets"), F.array())).alias("facet_names"))
    single = events.where(F.col("dataset").isNotNull()).select(
        "ingest_seq", "event_time", "run_id", F.lit("dataset").alias("role"),
        _entity("dataset", F.col("dataset.namespace"), F.col("dataset.name")).alias("dataset"),
        F.coalesce(F.map_keys("dataset.facets"), F.array()).alias("facet_names"))
    return refs("inputs", "input").unionByName(refs("outputs", "output")).unionByName(single)


def needed_events(raw: DataFrame, before: datetime) -> DataFrame:
    """``ingest_seq`` of every event the current state needs (the module's rules), over all stored events."""
    events = raw.select("ingest_seq", "event_time", "run_id", "parent_run_id", "job_namespace", "job_name",
                        "job_facets", "inputs", "outputs", "dataset").cache()
    datasets = _dataset_refs(events).cache()
    jobs = events.where(F.col("job_name").isNotNull()).withColumn(
        "job", _entity("job", F.col("job_namespace"), F.col("job_name")))

    job_facets = jobs.select("ingest_seq", "event_time", "job", F.explode(F.coalesce(
        F.map_keys("job_facets"), F.array())).alias("facet"))
    dataset_facets = datasets.select("ingest_seq", "event_time", F.col("dataset").alias("job"),
                                     F.explode("facet_names").alias("facet"))
    facet_carriers = _latest(job_facets.unionByName(dataset_facets), ["job", "facet"]).select("ingest_seq")

    writes = datasets.where((F.col("role") == "output") & F.col("run_id").isNotNull())
    read_only = datasets.join(writes.select("dataset").distinct(), "dataset", "left_anti")
    first_sightings = read_only.withColumn("_rank", F.row_number().over(
        Window.partitionBy("dataset").orderBy("event_time", "ingest_seq"))).where(F.col("_rank") == 1).select(
        "ingest_seq")
    single_events = facet_carriers.unionByName(first_sightings).distinct()

    # Runs kept whole: a kept event's run is kept with all its events, so no run is cut at its START.
    latest_job_runs = _latest(jobs.where(F.col("run_id").isNotNull()), ["job"]).select("run_id")
    latest_writes = _latest(writes, ["dataset"]).select("run_id")
    recent = events.where((F.col("event_time") >= F.lit(before)) & F.col("run_id").isNotNull()).select("run_id")
    runs_of_single = events.join(single_events, "ingest_seq").where(F.col("run_id").isNotNull()).select("run_id")
    runs = latest_job_runs.unionByName(latest_writes).unionByName(recent).unionByName(runs_of_single)
    runs = runs.distinct().localCheckpoint()
    for _ in range(MAX_PARENT_DEPTH):
        parents = events.join(runs, "run_id").where(F.col("parent_run_id").isNotNull()).select(
            F.col("parent_run_id").alias("run_id"))
        grown = runs.unionByName(parents).distinct().localCheckpoint()
        if grown.count() == runs.count():
            break
        runs = grown
    run_events = events.join(runs, "run_id").select("ingest_seq")
    return run_events.unionByName(single_events).distinct()


def removable_events(raw: DataFrame, before: datetime) -> DataFrame:
    """``ingest_seq, ingest_block`` of the events to remove."""
    old = raw.where(F.col("event_time") < F.lit(before)).select("ingest_seq", RAW_PARTITION_COLUMN)
    return old.join(needed_events(raw, before), "ingest_seq", "left_anti")


def retain_raw_events(spark: SparkSession, hadoop: HadoopFiles, table: str, before: datetime,
                      dry_run: bool) -> TableChange:
    raw = spark.table(table)
    change = TableChange("raw.lineage_events", rows_before=raw.count())
    highest = highest_block(spark, table)
    open_block = highest[0] if highest else None
    if open_block is not None and not dry_run:
        finish_open_block(hadoop, partition_location(spark, hadoop, table, open_block))
    removable = removable_events(raw, before).localCheckpoint()
    per_block = {r[0]: r[1] for r in removable.groupBy(RAW_PARTITION_COLUMN).count().collect()}
    change.removed = sum(per_block.values())
    if dry_run:
        return change
    for block in sorted(per_block):
        # One bounded step per block; a stopped run is taken up by the next, which finds the same set.
        seqs = removable.where(F.col(RAW_PARTITION_COLUMN) == block).select("ingest_seq")
        rows = (spark.table(table).where(F.col(RAW_PARTITION_COLUMN) == block).drop(RAW_PARTITION_COLUMN)
                .join(seqs, "ingest_seq", "left_anti"))
        result = replace_block(spark, hadoop, table, block, rows, f"retain:{before.isoformat()}",
                               is_open=block == open_block)
        change.bytes_freed += result.bytes_freed
    return change


def retain_rejected(spark: SparkSession, hadoop: HadoopFiles, table: str, before: datetime,
                    dry_run: bool) -> TableChange:
    rejected = spark.table(table)
    change = TableChange("audit.lineage_events_rejected", rows_before=rejected.count())
    old = F.col("ingested_at") < F.lit(before)
    change.removed = rejected.where(old).count()
    if change.removed and not dry_run:
        change.bytes_freed = replace_table(spark, hadoop, table, rejected.where(~old),
                                           f"retain:{before.isoformat()}").bytes_freed
    return change


def recompute_entity_keys(spark: SparkSession, hadoop: HadoopFiles, settings: Settings, before: datetime,
                          dry_run: bool) -> TableChange:
    """The key table as the remaining events give it: owners whose every event is gone lose their key, and
    a key's first event is one that is still stored. A dry run works out the remaining events."""
    table = settings.table(*ENTITY_KEYS_TABLE)
    keys = spark.table(table)
    change = TableChange("raw.lineage_entity_keys", rows_before=keys.count())
    raw = spark.table(settings.table(*RAW_TABLE))
    if dry_run:
        raw = raw.join(removable_events(raw, before).select("ingest_seq"), "ingest_seq", "left_anti")
    owners = owners_of_stored(raw).select(
        *[F.col(f.name).cast(f.dataType) for f in ENTITY_KEYS.fields]).localCheckpoint()
    stale = keys.exceptAll(owners).count()
    change.removed = keys.count() - keys.join(owners.select("entity_kind", "entity_key"),
                                              ["entity_kind", "entity_key"]).count()
    if stale and not dry_run:
        change.bytes_freed = replace_table(spark, hadoop, table, owners, f"retain:{before.isoformat()}").bytes_freed
    return change


def retain(spark: SparkSession, settings: Settings, before: datetime, dry_run: bool = False) -> RetentionReport:
    """Removes what is older than ``before`` (naive UTC, or aware) and not needed (see the module). The
    derived tables change only with the rebuild that the caller runs."""
    ensure_lineage_tables(spark, settings)
    hadoop = HadoopFiles(spark)
    report = RetentionReport(before, dry_run)
    report.tables.append(retain_raw_events(spark, hadoop, settings.table(*RAW_TABLE), before, dry_run))
    report.tables.append(retain_rejected(spark, hadoop, settings.table(*REJECTED_TABLE), before, dry_run))
    report.tables.append(recompute_entity_keys(spark, hadoop, settings, before, dry_run))
    return report


# The derived tables whose rows a retention removes, counted before and after the rebuild.
DERIVED_TABLES = (("lineage", "run_states"), ("lineage", "dataset_versions"), ("lineage", "column_lineage"),
                  ("lineage", "dataset_facets"), ("lineage", "job_facets"), ("lineage", "run_facets"))


def derived_counts(spark: SparkSession, settings: Settings) -> dict[str, int]:
    counts: dict[str, int] = {}
    for layer, name in DERIVED_TABLES:
        table = settings.table(layer, name)
        if spark.catalog.tableExists(table):
            counts[f"{layer}.{name}"] = spark.table(table).count()
    return counts


def configured_retention_days(value: int | None) -> int | None:
    """``serve --retention-days``, else ``LINEAGE_RETENTION_DAYS``; None (keep everything) when neither."""
    if value is not None:
        return value if value > 0 else None
    configured = os.environ.get(RETENTION_DAYS_ENV, "").strip()
    return int(configured) if configured and int(configured) > 0 else None


@dataclass
class RetentionSchedule:
    """``serve --build-every`` applies retention after a round at most once per ``every_seconds``: each
    run rebuilds the lineage models whole, so it runs far less often than the rounds."""

    days: int
    every_seconds: float = 24 * 3600
    last_run: float | None = None

    def due(self, now: float) -> bool:
        return self.last_run is None or now - self.last_run >= self.every_seconds

    def run(self, spark: SparkSession, settings: Settings, now: float) -> str:
        """Retains, then rebuilds when anything was removed; the caller holds the writer lock."""
        from python_jobs.dbt import run_dbt  # dbt imports in 4 s: only when a retention runs

        self.last_run = now
        report = retain(spark, settings, datetime.now(UTC) - timedelta(days=self.days))
        if report.changed:
            run_dbt(settings, ["build", "--full-refresh", "--select", REBUILD_SELECT])
        removed = sum(t.removed for t in report.tables)
        return f"retention ({self.days}d): removed {removed} rows" + (", rebuilt" if report.changed else "")

"""``warehouse retain`` on the generated sample (issue 31): the tables equal a build from only the events
it keeps, the current state is unchanged, and a second run removes nothing.

The reference warehouse ingests the same files from the same paths with each removed event's lines replaced by
a line that is not JSON: every other event keeps its line and ``ingest_seq`` (a blank line would too, but not at
the end of a file, where blank lines are not counted), and the fillers land in the quarantine, which the test
leaves out of the comparison (no model reads it). The sample's duplicate deliveries are identical lines,
replaced with their first copy. Only the batch ids differ (they hash the files' sizes and times).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import pytest
from pyspark.sql import functions as F
from test_erasure import PLAIN_BUILD, fingerprint, fresh  # tests/python is on sys.path
from test_hostile_names import BUILD

from python_jobs.dbt import run_dbt
from python_jobs.ingest.lineage import RAW_TABLE, ingest_lineage
from python_jobs.tools.bench.retention import cut_off_at_share, warehouse_bytes
from python_jobs.tools.generate.pipelines import EPOCH
from python_jobs.tools.generate.sample import SampleSpec, write_lineage
from python_jobs.warehouse.retention import RetentionReport, removable_events, retain

REBUILD = ["build", "--full-refresh", *BUILD[1:]]
FILLER = "not an event: a line the retention test put in place of a removed one"
REJECTED = "audit.lineage_events_rejected"
CUT_OFF = EPOCH + timedelta(days=6)  # the sample spans 12 days


@dataclass
class Retained:
    settings: object
    reference: object
    report: RetentionReport
    dry_run: RetentionReport
    current_before: dict[str, set]
    after: dict


def current_state(spark, settings) -> dict[str, set]:
    """What retention must keep: the entities, each dataset's current version and facets, each job's
    latest run."""
    def rows(layer: str, table: str, *columns: str, where: str = "true") -> set:
        return {tuple(r) for r in spark.table(settings.table(layer, table)).where(where).select(*columns).collect()}
    return {
        "jobs": rows("lineage", "jobs", "uuid", "namespace_name", "name"),
        "datasets": rows("lineage", "datasets", "uuid", "namespace_name", "name"),
        "current versions": rows("lineage", "dataset_versions", "dataset_uuid", "uuid", "dataset_schema_version_uuid",
                                 where="is_current_version"),
        "dataset facets": rows("lineage", "current_dataset_facets", "dataset_uuid", "facets"),
        "job facets": rows("lineage", "current_job_facets", "job_uuid", "facets"),
        "latest runs": rows("lineage", "runs", "job_uuid", "uuid", where="""
            (job_uuid, created_at) in (select job_uuid, max(created_at) from {} group by job_uuid)""".format(
            settings.table("lineage", "runs"))),
        "runs with a parent not stored": {(dangling_parents(spark, settings),)},
    }


def dangling_parents(spark, settings) -> int:
    runs = spark.table(settings.table("lineage", "runs"))
    return runs.where(F.col("parent_run_uuid").isNotNull()).join(
        runs.select(F.col("uuid").alias("parent_run_uuid")), "parent_run_uuid", "left_anti").count()


@pytest.fixture(scope="module")
def retained(settings, spark, tmp_path_factory) -> Iterator[Retained]:
    folder = tmp_path_factory.mktemp("retention")
    files, _ = write_lineage(SampleSpec(size=600, seed=11), folder)
    subject = fresh(spark, settings, "t_retain_subject_")
    ingest_lineage(spark, subject, list(files))
    run_dbt(subject, PLAIN_BUILD)
    current_before = current_state(spark, subject)
    raw = spark.table(subject.table(*RAW_TABLE))
    removed_texts = {r[0] for r in removable_events(raw, CUT_OFF).join(raw, "ingest_seq")
                     .select("event_json").collect()}
    dry_run = retain(spark, subject, CUT_OFF, dry_run=True)
    report = retain(spark, subject, CUT_OFF)
    run_dbt(subject, REBUILD)
    after = fingerprint(spark, subject)

    for path in files:
        lines = path.read_text(encoding="utf-8").split("\n")
        path.write_text("\n".join(FILLER if line in removed_texts else line for line in lines), encoding="utf-8")
    reference = fresh(spark, settings, "t_retain_reference_")
    ingest_lineage(spark, reference, list(files))
    run_dbt(reference, PLAIN_BUILD)
    yield Retained(subject, reference, report, dry_run, current_before, after)


def test_it_removes_old_events_and_the_dry_run_says_how_many(retained):
    raw = retained.report.tables[0]
    assert raw.table == "raw.lineage_events"
    assert 0 < raw.removed < raw.rows_before
    assert raw.bytes_freed > 0
    assert [t.removed for t in retained.dry_run.tables] == [t.removed for t in retained.report.tables]


def test_the_tables_equal_a_build_from_the_kept_events(retained, spark):
    reference = fingerprint(spark, retained.reference)
    assert sorted(retained.after) == sorted(reference)
    assert {n: v for n, v in retained.after.items() if reference[n] != v and n != REJECTED} == {}
    quarantine = spark.table(retained.reference.table("audit", "lineage_events_rejected"))
    fillers = quarantine.where(F.col("raw_text") == FILLER).count()
    assert fillers > 0
    assert reference[REJECTED][0] - fillers == retained.after[REJECTED][0]
    kept = {tuple(r) for r in quarantine.where(F.col("raw_text") != FILLER).select(
        "source_file", "source_line", "raw_text").collect()}
    subject = spark.table(retained.settings.table("audit", "lineage_events_rejected"))
    assert kept == {tuple(r) for r in subject.select("source_file", "source_line", "raw_text").collect()}


def test_the_current_state_is_kept(retained, spark):
    assert current_state(spark, retained.settings) == retained.current_before


def test_what_is_kept_before_the_cut_off_is_only_the_current_state(retained, spark):
    raw = spark.table(retained.settings.table(*RAW_TABLE))
    old = raw.where(F.col("event_time") < F.lit(CUT_OFF)).count()
    assert 0 < old < retained.report.tables[0].rows_before - retained.report.tables[0].removed
    # No dataset version points at a run that is gone.
    versions = spark.table(retained.settings.table("lineage", "dataset_versions")).where("run_uuid is not null")
    runs = spark.table(retained.settings.table("lineage", "runs")).select(F.col("uuid").alias("run_uuid"))
    assert versions.join(runs, "run_uuid", "left_anti").count() == 0


def test_a_second_run_and_a_build_change_nothing(retained, spark):
    again = retain(spark, retained.settings, CUT_OFF)
    assert not again.changed
    run_dbt(retained.settings, PLAIN_BUILD)
    assert fingerprint(spark, retained.settings) == retained.after


def test_the_bench_reads_its_cut_off_and_the_bytes_on_disk(retained, spark):
    """``bench retention``'s two readings of a warehouse, on this one."""
    raw = spark.table(retained.reference.table(*RAW_TABLE)).where(F.col("event_time").isNotNull())
    half = cut_off_at_share(spark, retained.reference, 0.5)
    below = raw.where(F.col("event_time") < F.lit(half)).count()
    assert abs(below / raw.count() - 0.5) < 0.05
    assert warehouse_bytes(spark, retained.settings) > sum(t.bytes_freed for t in retained.report.tables) > 0

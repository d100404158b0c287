"""``warehouse erase`` on the hostile-name sample (issue 31): no trace of the erased namespace anywhere, and
the same tables as a warehouse built from the input with the erased parts taken out beforehand.

Both warehouses ingest one NDJSON file from one path (tables record the path): the first its events as
sent, then erases the namespace ``Warehouse`` (two datasets, read and written by jobs of other namespaces,
so most events are rewritten rather than dropped) and rebuilds; the second ingests the same file with each
event replaced by what ``erasure_plan.scrub_text`` makes of it, a dropped one by a blank line (it keeps its
line and ``ingest_seq``). Only the batch ids differ (they hash the input file's size and time).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, StringType, StructType
from test_hostile_names import (  # tests/python is on sys.path
    BUILD,
    DS_ORDERS_OTHER_NS,
    NS_LOWER,
    NS_UPPER,
    collector_events,
    file_events,
)

from python_jobs.dbt import run_dbt
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.marquez_api import MarquezReadApi
from python_jobs.settings import LAYERS, Settings
from python_jobs.spark import ensure_schemas
from python_jobs.warehouse.erasure import AUDIT_TABLE, ErasureReport, erase
from python_jobs.warehouse.erasure_plan import ErasureTarget, scrub_text
from python_jobs.warehouse.fingerprint import VOLATILE_COLUMNS, warehouse_tables
from python_jobs.warehouse.main_job import WITHOUT_DATA_TESTS

TARGET = ErasureTarget("namespace", NS_UPPER)
REBUILD = ["build", "--full-refresh", *BUILD[1:]]
# The builds before the erasure and the reference's leave the data tests out (they only read, and other tests run
# them on these inputs); the rebuild after it runs them: no dangling reference may be left.
PLAIN_BUILD = [*BUILD, *WITHOUT_DATA_TESTS]
# Hash the input file's size and time, which differ between the two files by construction.
BATCH_COLUMNS = {"ingest_batch_id", "first_batch_id"}


@dataclass
class Erased:
    settings: Settings
    reference: Settings
    dry_run: ErasureReport
    report: ErasureReport
    before_dry_run: dict
    after_dry_run: dict
    after_rebuild: dict


def fresh(spark, settings: Settings, prefix: str) -> Settings:
    scoped = settings.with_prefix(prefix)
    for layer in LAYERS:
        spark.sql(f"drop database if exists {scoped.schema(layer)} cascade")
    ensure_schemas(spark, scoped, LAYERS)
    return scoped


def fingerprint(spark, settings: Settings, leave_out: set[str] = frozenset()) -> dict[str, tuple[int, str]]:
    prints = {}
    for name, table in warehouse_tables(spark, settings).items():
        if name in leave_out:
            continue
        frame = spark.table(table)
        columns = [c for c in frame.columns if c not in VOLATILE_COLUMNS | BATCH_COLUMNS]
        row_hash = F.xxhash64(*[F.col(f"`{c}`").cast("string") for c in columns]) if columns else F.lit(0)
        row = frame.select(F.count(F.lit(1)), F.sum(row_hash.cast("decimal(38,0)"))).first()
        prints[name] = (int(row[0]), str(row[1]))
    return prints


def text_columns(frame) -> list:
    """Every column that can hold a name, as text (maps, arrays and structs as Spark prints them)."""
    kinds = (StringType, MapType, ArrayType, StructType)
    return [F.col(f"`{f.name}`").cast("string") for f in frame.schema.fields if isinstance(f.dataType, kinds)]


@pytest.fixture(scope="module")
def erased(settings, spark, tmp_path_factory) -> Iterator[Erased]:
    events = file_events() + collector_events()
    work = tmp_path_factory.mktemp("erasure")
    events_file = work / "events.ndjson"
    lines = [json.dumps(event, ensure_ascii=False) for event in events]
    events_file.write_text("".join(line + "\n" for line in lines), encoding="utf-8")

    subject = fresh(spark, settings, "t_erase_subject_")
    ingest_lineage(spark, subject, [events_file])
    run_dbt(subject, PLAIN_BUILD)
    before = fingerprint(spark, subject)
    dry_run = erase(spark, subject, TARGET, dry_run=True)
    after_dry_run = fingerprint(spark, subject)
    report = erase(spark, subject, TARGET)
    run_dbt(subject, REBUILD)
    after_rebuild = fingerprint(spark, subject)

    scrubbed = [scrub_text(line, TARGET) for line in lines]
    events_file.write_text("".join((text or "") + "\n" for _, text in scrubbed), encoding="utf-8")
    reference = fresh(spark, settings, "t_erase_reference_")
    ingest_lineage(spark, reference, [events_file])
    run_dbt(reference, PLAIN_BUILD)
    yield Erased(subject, reference, dry_run, report, before, after_dry_run, after_rebuild)


def test_a_dry_run_changes_nothing_and_counts_what_the_run_does(erased):
    assert erased.after_dry_run == erased.before_dry_run
    assert erased.dry_run.rows() != []
    planned = {t.table: (t.removed, t.rewritten) for t in erased.dry_run.tables}
    done = {t.table: (t.removed, t.rewritten) for t in erased.report.tables}
    assert planned == done
    # Every event naming the two erased datasets is another job's: rewritten, none dropped.
    assert done["raw.lineage_events"] == (0, 7)
    assert done["raw.lineage_entity_keys"] == (2, 0)


def test_no_row_anywhere_holds_the_erased_namespace(erased, spark):
    found = {}
    for name, table in warehouse_tables(spark, erased.settings).items():
        frame = spark.table(table)
        columns = text_columns(frame)
        if not columns:
            continue
        hits = frame.where(F.exists(F.array(*columns), lambda c: F.instr(c, NS_UPPER) > 0)).count()
        if hits:
            found[name] = hits
    assert found == {}
    # The namespace that differs only in case is another namespace, and stays.
    namespaces = {r[0] for r in spark.table(erased.settings.table("lineage", "namespaces")).select("name").collect()}
    assert NS_LOWER in namespaces and NS_UPPER not in namespaces
    datasets = spark.table(erased.settings.table("lineage", "datasets")).select("namespace_name", "name").collect()
    assert DS_ORDERS_OTHER_NS in {tuple(r) for r in datasets}


def test_the_tables_equal_a_build_from_the_input_without_the_erased_parts(erased, spark):
    subject = fingerprint(spark, erased.settings, leave_out={f"audit.{AUDIT_TABLE[1]}"})
    reference = fingerprint(spark, erased.reference)
    assert sorted(subject) == sorted(reference)
    assert {n: v for n, v in subject.items() if reference[n] != v} == {}


def test_one_audit_row_names_no_entity(erased, spark):
    rows = spark.table(erased.settings.table(*AUDIT_TABLE)).collect()
    assert len(rows) == 1
    row = rows[0]
    assert (row["entity_kind"], row["key_hash"]) == ("namespace", TARGET.key_hash)
    assert NS_UPPER not in "".join(str(v) for v in row.asDict().values())
    counts = json.loads(row["counts"])
    assert counts["raw.lineage_events"]["rewritten"] == 7


def test_a_build_afterwards_and_a_second_erasure_change_nothing(erased, spark):
    run_dbt(erased.settings, PLAIN_BUILD)
    assert fingerprint(spark, erased.settings) == erased.after_rebuild
    again = erase(spark, erased.settings, TARGET)
    assert not again.changed
    assert spark.table(erased.settings.table(*AUDIT_TABLE)).count() == 1


def test_the_read_api_agrees(erased, spark):
    api = MarquezReadApi(spark, erased.settings)
    names = {n["name"] for n in api.list_namespaces()["namespaces"]}
    assert NS_UPPER not in names and NS_LOWER in names
    graph = json.dumps(api.lineage(None), ensure_ascii=False)
    assert NS_UPPER not in graph

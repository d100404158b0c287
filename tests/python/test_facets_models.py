"""Facet tables on real Spark and dbt: classification, last-wins merge, body dedup, the drop-list,
quarantine, 10 MB events, idempotent and incremental builds, and chunked backfill that resumes."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import facet_events as ev  # tests/python is on sys.path (rootdir-less test layout)
import pytest

from python_jobs.dbt import run_dbt
from python_jobs.facets.backfill import STORAGE_MODELS, pending_chunk_bounds, run_backfill
from python_jobs.facets.raw_events import append_raw_events, contract_row
from python_jobs.keys import dataset_uuid, job_uuid
from python_jobs.settings import LAYERS, PROJECT_DIR
from python_jobs.spark import ensure_schemas
from python_jobs.warehouse.fingerprint import table_fingerprint

FACET_SAMPLES = PROJECT_DIR / "samples" / "facets"


def setup_build(*extra: str) -> list[str]:
    """Staging view and seed (plus ``extra`` nodes), without their dbt tests."""
    return [
        "build",
        "--select",
        "stg_lineage_events",
        "facet_classification",
        *extra,
        "--exclude-resource-type",
        "test",
    ]


STORAGE_TABLES = ("facet_refs", "facet_bodies")
WINNER_TABLES = ("facet_winners_dataset", "facet_winners_dataset_version", "facet_winners_job", "facet_winners_run")
LINEAGE_ENTITIES = ("datasets", "dataset_versions", "jobs", "runs")
LARGE_FACET_BYTES = 10 * 1024 * 1024 + 1


def canonical(body: Any) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def history_rows() -> list[dict[str, Any]]:
    """Every event of the scenario as raw rows, in ingest order (seq 1..9)."""
    events = [*ev.first_batch(), ev.large_plan_event(LARGE_FACET_BYTES), *ev.second_batch()]
    rows = [contract_row(event, seq, "facet-history.ndjson", seq) for seq, event in enumerate(events, start=1)]
    # A repeated key cannot be written from a dict: patch the text as a producer would have sent it.
    rows[4]["run_facets"]["repeated_key"] = '{"a": 1, "a": 2}'
    return rows


FIRST_BATCH_SIZE = 6  # first_batch() and the large event


def scoped(settings, spark, prefix: str):
    scoped_settings = settings.with_prefix(prefix)
    ensure_schemas(spark, scoped_settings, LAYERS)
    return scoped_settings


def storage_fingerprints(spark, settings, tables=STORAGE_TABLES) -> dict[str, dict[str, object]]:
    return {name: table_fingerprint(spark, settings.table("lineage", name)) for name in tables}


@pytest.fixture(scope="module")
def facet_history(settings, spark):
    """Batch 1, run, run again (no new input), batch 2, build with the dbt tests (after the lineage
    entities they check against).

    dbt invocations cost seconds each, so the dbt tests run once, on the final state."""
    main = scoped(settings, spark, "facets_main_")
    rows = history_rows()
    append_raw_events(spark, main, rows[:FIRST_BATCH_SIZE])
    run_dbt(main, setup_build())
    run_dbt(main, ["run", "--select", "path:models/facets"])
    after_first = storage_fingerprints(spark, main, STORAGE_TABLES + WINNER_TABLES)
    run_dbt(main, ["run", "--select", *STORAGE_MODELS])
    after_rebuild = storage_fingerprints(spark, main, STORAGE_TABLES + WINNER_TABLES)
    append_raw_events(spark, main, rows[FIRST_BATCH_SIZE:])
    # The lineage entities, so that the "every facet row's entity exists" tests have their parents.
    run_dbt(main, ["run", "--select", *(f"+{entity}" for entity in LINEAGE_ENTITIES)])
    run_dbt(main, ["build", "--select", "facet_classification", "path:models/facets"])
    return {"settings": main, "after_first": after_first, "after_rebuild": after_rebuild}


def lineage_rows(spark, settings, table: str, where: str = "true") -> list[Any]:
    return spark.sql(f"select * from {settings.table('lineage', table)} where {where}").collect()


def test_dataset_facets_are_classified_by_section_and_seed(facet_history, spark):
    rows = lineage_rows(spark, facet_history["settings"], "dataset_facets", "ingest_seq = 1")
    types = {(r.dataset_name, r.dataset_role, r.name, r.type) for r in rows}
    assert types == {
        ("sales.orders", "input", "schema", "DATASET"),
        ("sales.orders", "input", "dataQualityMetrics", "INPUT"),
        ("sales.orders", "input", "Documentation", "DATASET"),  # the seed matches without regard to case
        ("sales.orders", "input", "inputStatistics", "INPUT"),  # under inputFacets
        ("sales.customers", "input", "schema", "DATASET"),
        ("reports.daily", "output", "schema", "DATASET"),
        ("reports.daily", "output", "outputStatistics", "OUTPUT"),  # by the seed, under facets
        ("reports.daily", "output", "custom_quality", "UNKNOWN"),
    }
    assert sum(1 for r in rows if r.name == "outputStatistics") == 2  # facets and outputFacets both kept
    by_name = {(r.dataset_name, r.name): r for r in rows}
    schema_row = by_name[("sales.orders", "schema")]
    assert json.loads(schema_row.facet) == {"schema": ev.schema_facet("id", "amount")}
    assert schema_row.dataset_uuid == dataset_uuid("warehouse", "sales.orders")
    assert schema_row.lineage_event_type == "START" and schema_row.run_id == ev.RUN_1
    assert schema_row.dataset_version_uuid is None  # inputs do not write a version
    assert by_name[("reports.daily", "schema")].dataset_version_uuid is not None


def test_dataset_and_job_events_have_no_event_type(facet_history, spark):
    settings = facet_history["settings"]
    dataset_event = lineage_rows(spark, settings, "dataset_facets", "ingest_seq = 3")
    assert [(r.name, r.type, r.lineage_event_type, r.run_id, r.dataset_role) for r in dataset_event] == [
        ("documentation", "DATASET", None, None, "dataset")
    ]
    job_event = lineage_rows(spark, settings, "job_facets", "ingest_seq = 4")
    assert [(r.name, r.lineage_event_type, r.run_id, r.job_uuid) for r in job_event] == [
        ("ownership", None, None, job_uuid("etl", "daily_report"))
    ]
    assert json.loads(job_event[0].facet) == {"ownership": {"owners": [{"name": "team-sales"}]}}


def test_current_facets_last_wins_by_event_time_then_ingest_order(facet_history, spark):
    settings = facet_history["settings"]
    [report] = lineage_rows(spark, settings, "current_dataset_facets", "dataset_name = 'reports.daily'")
    facets = json.loads(report.facets)
    # Ingested last but older: the stale schema of RUN_2 does not win.
    assert facets["schema"] == ev.schema_facet("day", "total", "currency")
    # Same event time: the event ingested later wins, whole (score 2, not 3).
    assert facets["custom_quality"] == {"score": 2}
    assert facets["documentation"] == {"description": "daily totals"}
    assert facets["outputStatistics"] == {"rowCount": 1, "size": 64}  # outputFacets after facets
    assert report.facet_count == len(facets) == 4
    assert report.current_version_uuid is not None

    [job] = lineage_rows(spark, settings, "current_job_facets")
    assert json.loads(job.facets) == {
        "sql": {"_producer": ev.PRODUCER, "query": "select 2"},
        "ownership": {"owners": [{"name": "team-sales"}]},
    }
    [orders] = lineage_rows(spark, settings, "current_dataset_facets", "dataset_name = 'sales.orders'")
    assert set(json.loads(orders.facets)) == {"schema", "Documentation"}  # INPUT facets describe a read


def main_tree(plan) -> list[Any]:
    """Nodes of a physical plan's main tree (the adaptive plan's initial plan; subqueries left out)."""
    if plan.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
        return main_tree(plan.initialPlan())
    found = [plan]
    children = plan.children()
    for index in range(children.size()):
        found += main_tree(children.apply(index))
    return found


def scan_nodes(plan) -> list[Any]:
    return [node for node in main_tree(plan) if node.getClass().getSimpleName() == "FileSourceScanExec"]


def scanned_tables(scans) -> list[str]:
    return sorted(scan.tableIdentifier().get().table() for scan in scans)


def test_one_entity_lookups_read_one_bucket_of_the_winner_revisions(facet_history, spark):
    """The lookup the benchmark times must not aggregate over every dataset, nor over the facet
    history: the key filter reaches the scan of the small revision table, Spark reads one of its
    buckets, and the aggregates on top run without a shuffle (the version's join may broadcast)."""
    settings = facet_history["settings"]
    dataset_key = dataset_uuid("warehouse", "reports.daily")
    lookups = [
        ("current_dataset_facets", "dataset_uuid", dataset_key, "facets", ["facet_winners_dataset"]),
        (
            "current_dataset_facets",
            "dataset_uuid",
            dataset_key,
            "facets, current_version_uuid",
            ["facet_winners_dataset", "facet_winners_dataset_version"],
        ),
        ("current_job_facets", "job_uuid", job_uuid("etl", "daily_report"), "facets", ["facet_winners_job"]),
    ]
    threshold = "spark.sql.autoBroadcastJoinThreshold"
    previous = spark.conf.get(threshold)
    for setting in (previous, "-1"):  # whatever the size of the tables
        spark.conf.set(threshold, setting)
        try:
            for view, key_column, key, columns, tables in lookups:
                frame = spark.sql(
                    f"select {columns} from {settings.table('lineage', view)} where {key_column} = '{key}'"
                )
                plan = frame._jdf.queryExecution().executedPlan()
                [row] = frame.collect()
                scans = scan_nodes(plan)
                assert scanned_tables(scans) == tables
                for scan in scans:
                    metadata = scan.metadata()
                    assert f"EqualTo({key_column},{key})" in metadata.get("PushedFilters").get()
                    assert metadata.get("SelectedBucketsCount").get() == "1 out of 4"
                kinds = {node.getClass().getSimpleName() for node in main_tree(plan)}
                assert "ShuffleExchangeExec" not in kinds, kinds
                if len(tables) == 1:  # one scan, two aggregates, nothing else: a single Spark stage
                    assert not {k for k in kinds if "Exchange" in k or "Join" in k}, kinds
                assert json.loads(row.facets)
        finally:
            spark.conf.set(threshold, previous)
    [report] = lineage_rows(spark, settings, "current_dataset_facets", f"dataset_uuid = '{dataset_key}'")
    assert json.loads(report.facets)["documentation"] == {"description": "daily totals"}


def test_identical_bodies_are_stored_once(facet_history, spark):
    settings = facet_history["settings"]
    refs = lineage_rows(spark, settings, "facet_refs", "scope = 'dataset' and name = 'schema'")
    report_schema = [r for r in refs if r.dataset_name == "reports.daily" and r.ingest_seq in (1, 2)]
    assert len(report_schema) == 2 and len({r.body_hash for r in report_schema}) == 1  # key order differs
    sql_rows = lineage_rows(spark, settings, "job_facets", "name = 'sql'")
    assert len(sql_rows) == 3 and len({r.body_hash for r in sql_rows}) == 2
    bodies = lineage_rows(spark, settings, "facet_bodies")
    assert len({b.body_hash for b in bodies}) == len(bodies)
    [dedup] = lineage_rows(spark, settings, "facet_body_dedup")
    accepted = lineage_rows(spark, settings, "facet_refs", "disposition = 'accepted'")
    assert dedup.facet_rows == len(accepted)
    assert dedup.stored_bodies == len(bodies) == len({r.body_hash for r in accepted})
    assert dedup.dedup_ratio == pytest.approx(len(accepted) / len(bodies))
    assert dedup.dedup_ratio > 1


def test_drop_list_drops_and_counts(facet_history, spark):
    settings = facet_history["settings"]
    assert not lineage_rows(spark, settings, "run_facets", "lower(name) = 'spark_unknown'")
    drops = {(r.scope, r.name): r.dropped_facets for r in lineage_rows(spark, settings, "facet_drops")}
    assert drops == {("run", "spark_unknown"): 1, ("run", "SPARK_UNKNOWN"): 1}
    bodies = {b.body for b in lineage_rows(spark, settings, "facet_bodies")}
    assert '{"x":1}' not in bodies and '{"y":2}' not in bodies


def test_malformed_facets_are_quarantined_and_counts_reconcile(facet_history, spark):
    settings = facet_history["settings"]
    quarantine = spark.table(settings.table("audit", "facet_quarantine")).collect()
    reasons = {(q.facet_name, q.reason, q.source_file, q.source_line) for q in quarantine}
    assert reasons == {
        ("broken", "facet body is not a JSON object", "facet-history.ndjson", 5),
        ("repeated_key", "facet body is not valid JSON (or repeats a key)", "facet-history.ndjson", 5),
    }
    counts = {r.scope: r for r in lineage_rows(spark, settings, "facet_load_counts")}
    expected_read = {"run": 0, "job": 0, "dataset": 0}
    for row in history_rows():
        expected_read["run"] += len(row["run_facets"] or {})
        expected_read["job"] += len(row["job_facets"] or {})
        for ref in [*(row["inputs"] or []), *(row["outputs"] or []), *([row["dataset"]] if row["dataset"] else [])]:
            expected_read["dataset"] += len(ref["facets"] or {}) + len(ref["input_facets"] or {})
            expected_read["dataset"] += len(ref["output_facets"] or {})
    assert {scope: c.facets_read for scope, c in counts.items()} == expected_read
    for c in counts.values():
        assert c.facets_read == c.facets_accepted + c.facets_dropped + c.facets_quarantined
    assert counts["run"].facets_quarantined == 2 and counts["run"].facets_dropped == 2


def test_ten_megabyte_facet_flows_through(facet_history, spark):
    settings = facet_history["settings"]
    large = ev.large_plan_event(LARGE_FACET_BYTES)
    plan = large["run"]["facets"]["spark.logicalPlan"]
    assert len(canonical(plan)) > LARGE_FACET_BYTES
    [row] = lineage_rows(spark, settings, "facet_refs", "name = 'spark.logicalPlan'")
    assert row.disposition == "accepted" and row.stores_body
    # Spark's canonical form is the sorted-keys compact JSON, byte for byte, so the hash is portable.
    assert row.body_hash == hashlib.sha256(canonical(plan).encode()).hexdigest()
    facet = spark.sql(
        f"select facet from {settings.table('lineage', 'run_facets')} where name = 'spark.logicalPlan'"
    ).first()["facet"]
    assert json.loads(facet) == {"spark.logicalPlan": plan}


def test_rebuild_without_new_input_changes_nothing(facet_history):
    assert facet_history["after_rebuild"] == facet_history["after_first"]


def test_incremental_build_appends_only_new_events(facet_history, spark):
    settings = facet_history["settings"]
    refs = lineage_rows(spark, settings, "facet_refs")
    assert len({r.facet_row_key for r in refs}) == len(refs)
    first = facet_history["after_first"]["facet_refs"]["rows"]
    assert len(refs) - first == sum(1 for r in refs if r.ingest_seq > FIRST_BATCH_SIZE)
    # The schema already seen in batch 1 was not stored a second time.
    body_seqs = [b.first_ingest_seq for b in lineage_rows(spark, settings, "facet_bodies")]
    assert sum(1 for s in body_seqs if s > FIRST_BATCH_SIZE) == 5  # stale, currency, score 3, score 2, select 2


def test_chunked_backfill_resumes_after_a_crash_and_matches_one_shot(facet_history, settings, spark):
    backfilled = scoped(settings, spark, "facets_backfill_")
    append_raw_events(spark, backfilled, history_rows())
    assert pending_chunk_bounds(spark, backfilled, None, 4) == [4, 8, 9]

    first = run_backfill(spark, backfilled, chunk_events=4, max_chunks=1, finish="none")  # stops as if killed
    assert (first.chunk_bounds, first.chunks_run, first.completed) == ([4, 8, 9], 1, False)
    assert spark.sql(f"select max(ingest_seq) from {backfilled.table('lineage', 'facet_refs')}").first()[0] == 4

    assert published_through(spark, backfilled) == 4

    # A crash between the two models of the next chunk: facet_refs loaded, facet_bodies not. The commit mark
    # the joining views read through stays at the last complete chunk.
    run_dbt(backfilled, ["run", "--select", "facet_refs"], {"facet_ingest_seq_upto": 8})
    assert published_through(spark, backfilled) == 4
    # The body store catches up too, but its new bodies stay out of the public view until the mark moves.
    run_dbt(backfilled, ["run", "--select", "facet_body_store"], {"facet_ingest_seq_upto": 8})
    store = backfilled.table("staging", "facet_body_store")
    assert spark.sql(f"select max(first_ingest_seq) from {store}").first()[0] > 4
    assert max(b.first_ingest_seq for b in lineage_rows(spark, backfilled, "facet_bodies")) <= 4

    resumed = run_backfill(spark, backfilled, chunk_events=4, finish="none")
    assert resumed.watermark_before == 8 and resumed.chunk_bounds == [9] and resumed.completed
    assert storage_fingerprints(spark, backfilled) == storage_fingerprints(spark, facet_history["settings"])
    assert published_through(spark, backfilled) == published_through(spark, facet_history["settings"]) == 9


def published_through(spark, settings) -> int:
    [row] = lineage_rows(spark, settings, "facet_publications")
    return row.published_through


def sample_facet_counts() -> dict[str, int]:
    counts = {"run": 0, "job": 0, "dataset": 0}
    for line in FACET_SAMPLES.joinpath("facet_events.ndjson").read_text().splitlines():
        event = json.loads(line)
        counts["run"] += len((event.get("run") or {}).get("facets") or {})
        counts["job"] += len((event.get("job") or {}).get("facets") or {})
        datasets = [
            *event.get("inputs", []),
            *event.get("outputs", []),
            *([event["dataset"]] if "dataset" in event else []),
        ]
        for dataset in datasets:
            for section in ("facets", "inputFacets", "outputFacets"):
                counts["dataset"] += len(dataset.get(section) or {})
    return counts


def test_samples_through_the_real_ingest_with_a_custom_drop_list(settings, spark):
    from python_jobs.ingest.lineage import ingest_lineage

    custom = scoped(settings, spark, "facets_samples_")
    report = ingest_lineage(spark, custom, [FACET_SAMPLES])
    assert report.reconciles() and report.rejected == 0
    run_dbt(custom, setup_build("facet_refs"), {"facet_drop_list": ["Processing_Engine", "inputStatistics"]})
    rows = lineage_rows(spark, custom, "facet_refs")
    assert {r.name for r in rows if r.disposition == "dropped"} == {"processing_engine", "inputStatistics"}
    assert any(r.name == "spark_unknown" and r.disposition == "accepted" for r in rows)  # not in this list
    [rejected] = [r for r in rows if r.disposition == "rejected"]
    assert (rejected.name, rejected.source_line) == ("errorMessage", 6)
    assert rejected.source_file.endswith("facet_events.ndjson")
    read = {scope: sum(1 for r in rows if r.scope == scope) for scope in ("run", "job", "dataset")}
    assert read == sample_facet_counts()

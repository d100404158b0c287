"""Job and dataset keys that collide because a namespace or name holds ``:`` (real Spark).

Keys are Marquez's ``name_uuid('dataset:<namespace>:<name>')`` (and ``job:``), so ``('a:b', 'c')`` and
``('a', 'b:c')`` share one. ``ingest lineage`` keeps the ids and refuses the second name: the first to
arrive (stored before, else the earliest of the batch by file and line) owns the key, the event naming the
other is rejected whole with the reason, and ``raw.lineage_entity_keys`` records the owner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from python_jobs.ingest import lineage as ingest_module
from python_jobs.ingest.entity_keys import collision_reason
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.keys import dataset_uuid, job_uuid
from python_jobs.settings import LAYERS
from python_jobs.spark import ensure_schemas
from python_jobs.warehouse.fingerprint import table_fingerprint

RUN_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
FIRST, SECOND = ("a:b", "c"), ("a", "b:c")
TABLES = ("raw.lineage_events", "audit.lineage_events_rejected", "raw.lineage_entity_keys")


def run_event(number: int, job: tuple[str, str] = ("tests", "job"), inputs=(), outputs=()) -> dict:
    return {
        "eventType": "COMPLETE",
        "eventTime": f"2026-01-01T00:00:{number:02d}Z",
        "run": {"runId": f"00000000-0000-4000-8000-{number:012d}"},
        "job": {"namespace": job[0], "name": job[1]},
        "inputs": [{"namespace": ns, "name": name} for ns, name in inputs],
        "outputs": [{"namespace": ns, "name": name} for ns, name in outputs],
        "producer": "https://example.com/tests",
        "schemaURL": RUN_URL,
    }


def write(path: Path, *events: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(event) + "\n" for event in events))
    return path


def counts(report) -> tuple[int, int, int, int]:
    assert report.reconciles()
    return report.read, report.accepted, report.rejected, report.duplicates


def rejections(spark, settings) -> list[tuple[str, int, str]]:
    rows = spark.table(settings.table("audit", "lineage_events_rejected")).collect()
    return sorted((Path(r["source_file"]).name, r["source_line"], r["reason"]) for r in rows)


def stored_lines(spark, settings) -> list[tuple[str, int]]:
    rows = spark.table(settings.table("raw", "lineage_events")).collect()
    return sorted((Path(r["source_file"]).name, r["source_line"]) for r in rows)


def owners(spark, settings) -> set[tuple[str, str, str, str]]:
    rows = spark.table(settings.table("raw", "lineage_entity_keys")).collect()
    return {(r["entity_kind"], r["entity_key"], r["namespace_name"], r["name"]) for r in rows}


def dataset_reason(name: tuple[str, str], owner: tuple[str, str]) -> str:
    return collision_reason("dataset", *name, dataset_uuid(*name), *owner)


def fingerprints(spark, settings) -> dict:
    return {t: table_fingerprint(spark, settings.table(*t.split("."))) for t in TABLES}


def test_two_datasets_with_one_key_in_one_batch_the_first_is_kept(spark, isolated_settings, tmp_path):
    assert dataset_uuid(*FIRST) == dataset_uuid(*SECOND)
    batch = write(
        tmp_path / "batch.ndjson",
        run_event(1, outputs=[FIRST]),
        # names the second dataset beside a new one: rejected whole, the new one not recorded
        run_event(2, inputs=[("db", "fresh")], outputs=[SECOND]),
        run_event(3, inputs=[FIRST], outputs=[("db", "other")]),
    )
    report = ingest_lineage(spark, isolated_settings, [batch])
    assert counts(report) == (3, 2, 1, 0)
    assert rejections(spark, isolated_settings) == [("batch.ndjson", 2, dataset_reason(SECOND, FIRST))]
    assert dataset_reason(SECOND, FIRST) == (
        f"dataset key collision: ('a', 'b:c') has the key {dataset_uuid(*FIRST)}, which ('a:b', 'c') already "
        "holds (keys join namespace and name with ':' as Marquez does); rename one of them"
    )
    assert stored_lines(spark, isolated_settings) == [("batch.ndjson", 1), ("batch.ndjson", 3)]
    assert owners(spark, isolated_settings) == {
        ("job", job_uuid("tests", "job"), "tests", "job"),
        ("dataset", dataset_uuid(*FIRST), *FIRST),
        ("dataset", dataset_uuid("db", "other"), "db", "other"),
    }


def test_a_stored_dataset_keeps_its_key_and_reingest_changes_nothing(spark, isolated_settings, tmp_path):
    first = write(tmp_path / "one" / "first.ndjson", run_event(1, outputs=[FIRST]))
    assert counts(ingest_lineage(spark, isolated_settings, [first])) == (1, 1, 0, 0)
    second = write(
        tmp_path / "two" / "second.ndjson",
        run_event(2, outputs=[SECOND]),
        run_event(3, inputs=[FIRST]),  # the owner named again: accepted
        run_event(2, outputs=[SECOND]),  # a second copy of the refused event: refused too
    )
    assert counts(ingest_lineage(spark, isolated_settings, [second])) == (3, 1, 2, 0)
    reason = dataset_reason(SECOND, FIRST)
    assert rejections(spark, isolated_settings) == [("second.ndjson", 1, reason), ("second.ndjson", 3, reason)]
    assert stored_lines(spark, isolated_settings) == [("first.ndjson", 1), ("second.ndjson", 2)]

    # The same files again: the stored events are duplicates, the refused ones refused again (counted,
    # quarantined once), and no table changes.
    before = fingerprints(spark, isolated_settings)
    again = ingest_lineage(spark, isolated_settings, [first.parent, second.parent])
    assert counts(again) == (4, 0, 2, 2)
    assert fingerprints(spark, isolated_settings) == before


def test_a_warehouse_without_the_key_table_gets_it_from_its_stored_events(spark, isolated_settings, tmp_path):
    first = write(tmp_path / "one" / "first.ndjson", run_event(1, outputs=[FIRST]))
    ingest_lineage(spark, isolated_settings, [first])
    keys_table = isolated_settings.table("raw", "lineage_entity_keys")
    spark.sql(f"drop table if exists {keys_table}")
    second = write(tmp_path / "two" / "second.ndjson", run_event(2, outputs=[SECOND]))
    assert counts(ingest_lineage(spark, isolated_settings, [second])) == (1, 0, 1, 0)
    assert rejections(spark, isolated_settings) == [("second.ndjson", 1, dataset_reason(SECOND, FIRST))]
    assert ("dataset", dataset_uuid(*FIRST), *FIRST) in owners(spark, isolated_settings)


def test_two_jobs_with_one_key_the_first_is_kept(spark, isolated_settings, tmp_path):
    first_job, second_job = ("ns:x", "y"), ("ns", "x:y")
    assert job_uuid(*first_job) == job_uuid(*second_job)
    batch = write(
        tmp_path / "jobs.ndjson",
        run_event(1, job=first_job),
        run_event(2, job=second_job),
        run_event(3, job=first_job),
    )
    assert counts(ingest_lineage(spark, isolated_settings, [batch])) == (3, 2, 1, 0)
    reason = collision_reason("job", *second_job, job_uuid(*second_job), *first_job)
    assert reason.startswith("job key collision: ('ns', 'x:y') has the key ")
    assert rejections(spark, isolated_settings) == [("jobs.ndjson", 2, reason)]
    assert owners(spark, isolated_settings) == {("job", job_uuid(*first_job), *first_job)}
    later = write(tmp_path / "later.ndjson", run_event(4, job=second_job))
    assert counts(ingest_lineage(spark, isolated_settings, [later])) == (1, 0, 1, 0)


def test_an_ingest_interrupted_after_recording_its_keys_decides_as_the_uninterrupted_one(
    spark, isolated_settings, tmp_path, monkeypatch
):
    """The key table is written before the events: a re-run finds the batch's keys owned by the names the
    first run chose, and ends with the rows the uninterrupted run stored (``python -m python_jobs faults``
    kills at every step; this is the step between the two writes)."""
    batch = write(
        tmp_path / "batch.ndjson",
        run_event(1, outputs=[FIRST]),
        run_event(2, outputs=[SECOND]),
        run_event(3, job=("ns:x", "y"), inputs=[FIRST]),
        run_event(4, job=("ns", "x:y")),
    )
    clean = isolated_settings
    crashed = clean.with_prefix(f"{clean.schema_prefix}crashed_")
    ensure_schemas(spark, crashed, LAYERS)
    assert counts(ingest_lineage(spark, clean, [batch])) == (4, 2, 2, 0)

    def crash(*args, **kwargs):
        raise RuntimeError("killed before the events were stored")

    monkeypatch.setattr(ingest_module, "_append_rejected", crash)
    with pytest.raises(RuntimeError, match="killed"):
        ingest_lineage(spark, crashed, [batch])
    monkeypatch.undo()
    assert spark.table(crashed.table("raw", "lineage_events")).count() == 0
    assert owners(spark, crashed) == owners(spark, clean)

    assert counts(ingest_lineage(spark, crashed, [batch])) == (4, 2, 2, 0)
    assert fingerprints(spark, crashed) == fingerprints(spark, clean)

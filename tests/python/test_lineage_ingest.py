"""``ingest lineage`` on real Spark: framing, validation, quarantine, dedup, idempotence, big events."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from python_jobs.commands.lineage import LINEAGE_SAMPLES
from python_jobs.ingest.lineage import (
    TIME_RANGE_MARGIN_MICROS,
    batch_time_range,
    ingest_lineage,
    stored_event_ids,
)
from python_jobs.lineage.event_validation import first_problem
from python_jobs.warehouse.fingerprint import table_fingerprint

RUN_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
PRODUCER = "https://example.com/tests"


def run_event(run_id: str, event_type: str = "START", event_time: str = "2026-01-01T00:00:00Z", **extra) -> dict:
    event = {
        "eventType": event_type,
        "eventTime": event_time,
        "run": {"runId": run_id},
        "job": {"namespace": "tests", "name": "job"},
        "producer": PRODUCER,
        "schemaURL": RUN_URL,
    }
    event.update(extra)
    return event


def rows(spark, settings, layer: str, name: str, order: str = "source_file, source_line") -> list[dict]:
    return [r.asDict() for r in spark.table(settings.table(layer, name)).orderBy(*order.split(", ")).collect()]


def test_samples_counts_reconcile_and_reingest_changes_nothing(spark, isolated_settings):
    report = ingest_lineage(spark, isolated_settings, [LINEAGE_SAMPLES])
    assert (report.read, report.accepted, report.rejected, report.duplicates) == (19, 16, 2, 1)
    assert report.reconciles()

    rejected = rows(spark, isolated_settings, "audit", "lineage_events_rejected")
    assert [(Path(r["source_file"]).name, r["source_line"], r["reason"]) for r in rejected] == [
        ("shop_pipeline.ndjson", 13, "not valid JSON or not a JSON object"),
        ("shop_pipeline.ndjson", 17, "missing required field job.name"),
    ]
    raw = rows(spark, isolated_settings, "raw", "lineage_events", "ingest_seq")
    kinds = sorted({(r["event_kind"], r["event_type"]) for r in raw}, key=str)
    assert ("DatasetEvent", None) in kinds and ("JobEvent", None) in kinds and ("RunEvent", "FAIL") in kinds
    # the duplicate (line 9) is stored once, as its first copy (line 8)
    lines = [(Path(r["source_file"]).name, r["source_line"]) for r in raw]
    assert ("shop_pipeline.ndjson", 8) in lines and ("shop_pipeline.ndjson", 9) not in lines
    # the JSON array's elements are numbered from 1
    assert [line for name, line in lines if name == "static_metadata.json"] == [1, 2]
    assert [r["ingest_seq"] for r in raw] == sorted(r["ingest_seq"] for r in raw)

    before = {t: table_fingerprint(spark, isolated_settings.table(*t.split("."))) for t in
              ("raw.lineage_events", "audit.lineage_events_rejected")}
    again = ingest_lineage(spark, isolated_settings, [LINEAGE_SAMPLES])
    assert (again.read, again.accepted, again.rejected, again.duplicates) == (19, 0, 2, 17)
    after = {t: table_fingerprint(spark, isolated_settings.table(*t.split("."))) for t in before}
    assert after == before


def test_bad_records_are_quarantined_with_their_reason_and_timestamps_normalised(spark, isolated_settings, tmp_path):
    """Malformed JSON, missing or mistyped required fields and template placeholders go to the audit
    table with the first failing check's reason; timestamps with nanoseconds or without a zone are
    accepted: truncated to microseconds, or read in the session zone (UTC) and flagged, as sent kept."""
    run_a, run_b, run_c = (f"0000000{i}-0000-4000-8000-000000000000" for i in (1, 2, 3))
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"  # profiles.yml sets it for every target
    good = [
        run_event(run_a, event_time="2026-01-01T10:00:00.123456789Z"),  # nanoseconds
        run_event(run_b, event_time="2026-01-01T12:00:00+02:00"),  # offset
        run_event(run_c, event_time="2026-01-01T10:00:00"),  # no timezone: UTC, flagged
    ]
    bad = [
        run_event("not-a-uuid"),
        run_event(run_a, event_time="{{ is_datetime(result) }}"),
        {**run_event(run_a), "run": {"runId": 42}},
        {**run_event(run_a), "run": "oops"},
        {**run_event(run_a), "inputs": {"not": "a list"}},
        run_event(run_a, event_type="FINISHED"),
        {"eventTime": "2026-01-01T00:00:00Z", "producer": PRODUCER},
        run_event("${json-unit.any-string}"),
    ]
    ndjson_gz = tmp_path / "events.ndjson.gz"
    with gzip.open(ndjson_gz, "wt") as handle:
        handle.write("\n".join(json.dumps(e) for e in good) + "\n\n")
        handle.write("\n".join(json.dumps(e) for e in bad) + "\n")
        handle.write("{not json\n")
        handle.write(json.dumps({**run_event(run_a), "job": {"namespace": "tests"}}) + "\n")
        handle.write(json.dumps(run_event(run_a, event_time=1767261600)) + "\n")
    report = ingest_lineage(spark, isolated_settings, [ndjson_gz])
    assert (report.read, report.accepted, report.rejected, report.duplicates) == (14, 3, 11, 0)
    assert report.reconciles()

    raw_rows = rows(spark, isolated_settings, "raw", "lineage_events")
    assert len(raw_rows) == report.accepted
    raw = {r["run_id"]: r for r in raw_rows}
    assert str(raw[run_a]["event_time"]) == "2026-01-01 10:00:00.123456"
    assert str(raw[run_b]["event_time"]) == "2026-01-01 10:00:00"
    assert str(raw[run_c]["event_time"]) == "2026-01-01 10:00:00"
    assert [raw[r]["event_time_has_offset"] for r in (run_a, run_b, run_c)] == [True, True, False]
    assert raw[run_a]["event_time_raw"] == "2026-01-01T10:00:00.123456789Z"
    assert raw[run_c]["event_time_raw"] == "2026-01-01T10:00:00"

    rejected = rows(spark, isolated_settings, "audit", "lineage_events_rejected")
    assert len(rejected) == report.rejected
    assert all(r["raw_text"] and r["source_file"] == str(ndjson_gz) for r in rejected)
    reasons = {r["source_line"]: r["reason"] for r in rejected}
    assert reasons == {
        5: "run.runId is not a UUID: not-a-uuid",
        6: "eventTime is a template placeholder: {{ is_datetime(result) }}",
        7: "run.runId must be a string, got bigint",
        8: "a field has the wrong JSON type (one of: run, inputs, outputs, dataset)",
        9: "a field has the wrong JSON type (one of: inputs, outputs, dataset)",
        10: "eventType must be one of START, RUNNING, COMPLETE, ABORT, FAIL, OTHER, got FINISHED",
        11: "not an OpenLineage event: it has no run, job or dataset",
        12: "run.runId is a template placeholder: ${json-unit.any-string}",
        13: "not valid JSON or not a JSON object",
        14: "missing required field job.name",
        15: "eventTime must be a string, got bigint",
    }
    # The HTTP collector judges a body by the same rules: 400 with the same reason, 201 for the good ones.
    assert {r["source_line"]: first_problem(r["raw_text"]) for r in rejected} == reasons
    assert [first_problem(json.dumps(e)) for e in good] == [None, None, None]


def test_ingest_seq_increases_across_runs_and_duplicates_across_runs(spark, isolated_settings, tmp_path):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.json"
    run_id = "00000000-0000-4000-8000-00000000000a"
    first.write_text(json.dumps(run_event(run_id)) + "\n")
    # the same START again (pretty-printed: whitespace does not matter) plus the COMPLETE
    second.write_text(json.dumps([run_event(run_id), run_event(run_id, "COMPLETE")], indent=2))
    one = ingest_lineage(spark, isolated_settings, [first])
    two = ingest_lineage(spark, isolated_settings, [second])
    assert (one.accepted, two.accepted, two.duplicates) == (1, 1, 1)
    raw = rows(spark, isolated_settings, "raw", "lineage_events", "ingest_seq")
    assert [r["event_type"] for r in raw] == ["START", "COMPLETE"]
    assert raw[0]["ingest_seq"] < raw[1]["ingest_seq"]
    assert raw[0]["ingest_batch_id"] != raw[1]["ingest_batch_id"]


def test_stored_ids_are_read_only_within_the_batch_event_times(spark, isolated_settings, tmp_path):
    """A later batch is checked against the stored events of its own time range only, and still finds
    an old event delivered again among new ones."""
    old_run, new_run = "00000000-0000-4000-8000-0000000000b1", "00000000-0000-4000-8000-0000000000b2"
    early = run_event(old_run, event_time="2026-01-01T00:00:00Z")
    history = tmp_path / "history.jsonl"
    history.write_text("\n".join(json.dumps(e) for e in [
        early, run_event(old_run, "COMPLETE", event_time="2026-01-01T00:05:00.123456789Z"),
    ]) + "\n")
    redelivered = tmp_path / "redelivered.jsonl"
    redelivered.write_text("\n".join(json.dumps(e) for e in [
        run_event(new_run, event_time="2026-03-01T00:00:00+02:00"), early,
    ]) + "\n")
    assert ingest_lineage(spark, isolated_settings, [history]).accepted == 2
    report = ingest_lineage(spark, isolated_settings, [redelivered])
    assert (report.accepted, report.duplicates) == (1, 1)
    assert ingest_lineage(spark, isolated_settings, [redelivered]).duplicates == 2

    table = isolated_settings.table("raw", "lineage_events")
    # 2026-01-01T00:00:01Z to 2026-01-31T00:00:00Z: only the stored COMPLETE is inside
    in_range = stored_event_ids(spark, table, (1767225601000000, 1769817600000000))
    assert in_range.count() == 1
    spark.conf.set("spark.sql.maxMetadataStringLength", "10000")  # the plan text shortens long lists
    try:
        plan = in_range._jdf.queryExecution().executedPlan().toString()
    finally:
        spark.conf.unset("spark.sql.maxMetadataStringLength")
    pushed = next(line for line in plan.splitlines() if "PushedFilters" in line)
    assert "GreaterThanOrEqual(event_time,2026-01-01 00:00:01" in pushed
    assert "LessThanOrEqual(event_time,2026-01-31 00:00:00" in pushed
    assert stored_event_ids(spark, table, None).count() == 0


def test_batch_time_range_is_widened_by_the_margin():
    day = TIME_RANGE_MARGIN_MICROS
    rows = [
        {"first_micros": 5 * day, "last_micros": 7 * day},
        {"first_micros": None, "last_micros": None},  # a staged file of rejected records only
        {"first_micros": 3 * day, "last_micros": 4 * day},
    ]
    assert batch_time_range(rows) == (2 * day, 8 * day)
    assert batch_time_range(rows[1:2]) is None


def test_a_copy_read_in_another_session_time_zone_is_still_a_duplicate(spark, isolated_settings, tmp_path):
    """``eventTime`` without an offset is read in the session's zone: a copy ingested under another zone
    has another ``event_time``, and the time-bounded check must still find the stored event."""
    event = run_event("00000000-0000-4000-8000-0000000000c1", event_time="2026-05-01T12:00:00")
    first, copy = tmp_path / "first.jsonl", tmp_path / "copy.jsonl"
    first.write_text(json.dumps(event) + "\n")
    copy.write_text(json.dumps(event) + "\n")
    zone = spark.conf.get("spark.sql.session.timeZone")
    try:
        # the two zones farthest apart: UTC+14, then UTC-12 (Etc/GMT+12 counts the other way)
        spark.conf.set("spark.sql.session.timeZone", "Pacific/Kiritimati")
        assert ingest_lineage(spark, isolated_settings, [first]).accepted == 1
        spark.conf.set("spark.sql.session.timeZone", "Etc/GMT+12")
        report = ingest_lineage(spark, isolated_settings, [copy])
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    assert (report.accepted, report.duplicates) == (0, 1)


def test_single_event_of_ten_megabytes(spark, isolated_settings, tmp_path):
    big_facet = {"_producer": PRODUCER, "_schemaURL": PRODUCER, "rows": ["x" * 1000] * 10_500}
    event = run_event("00000000-0000-4000-8000-0000000000bb", run={
        "runId": "00000000-0000-4000-8000-0000000000bb", "facets": {"big": big_facet}})
    path = tmp_path / "big.ndjson"
    text = json.dumps(event)
    cut = text[: len(text) - 100]  # the same event cut short: 10 MB of malformed JSON
    path.write_text(text + "\n" + cut + "\n")
    assert path.stat().st_size > 20_000_000
    report = ingest_lineage(spark, isolated_settings, [path])
    assert (report.read, report.accepted, report.rejected, report.duplicates) == (2, 1, 1, 0)
    assert report.reconciles()
    stored = spark.table(isolated_settings.table("raw", "lineage_events")).select(
        "event_bytes", "run_facets", "event_json"
    ).collect()
    assert len(stored) == 1 and stored[0]["event_json"] == text
    assert stored[0]["event_bytes"] > 10_000_000
    assert json.loads(stored[0]["run_facets"]["big"])["rows"][0] == "x" * 1000
    rejected = rows(spark, isolated_settings, "audit", "lineage_events_rejected")
    assert [(r["source_line"], r["reason"], r["raw_text"]) for r in rejected] == [
        (2, "not valid JSON or not a JSON object", cut)
    ]


@pytest.mark.corpus
def test_whole_openlineage_corpus(spark, isolated_settings, shared_corpus):
    report = ingest_lineage(spark, isolated_settings, [shared_corpus / "openlineage"])
    assert report.reconciles()
    assert report.accepted >= 30 and report.rejected > 0
    reasons = [r["reason"] for r in rows(spark, isolated_settings, "audit", "lineage_events_rejected")]
    assert all(reasons)
    assert any("template placeholder: {{ any(result) }}" in r for r in reasons)
    assert any("template placeholder: ${json-unit" in r for r in reasons)
    kinds = {r["event_kind"] for r in rows(spark, isolated_settings, "raw", "lineage_events")}
    assert kinds == {"RunEvent", "DatasetEvent", "JobEvent"}


def test_line_numbers_and_ingest_seq_across_file_splits(spark, isolated_settings, tmp_path):
    """Files cut into many Spark splits (blank lines at split edges too) keep their real line numbers,
    and ingest_seq continues from one file to the next."""
    first, second = tmp_path / "a.ndjson", tmp_path / "b.jsonl"
    lines_a: list[str] = []
    for i in range(40):
        lines_a.append(json.dumps(run_event(f"00000000-0000-4000-8000-{i:012d}")))
        if i % 7 == 3:
            lines_a += ["", "   "]
    lines_a += ["{broken", "", ""]
    lines_b = ["", *[json.dumps(run_event(f"00000000-0000-4000-9000-{i:012d}", "COMPLETE")) for i in range(25)]]
    first.write_text("\n".join(lines_a) + "\n")
    second.write_text("\n".join(lines_b) + "\n")
    expected_a = {json.loads(text)["run"]["runId"]: n for n, text in enumerate(lines_a, 1) if text.startswith("{\"")}
    expected_b = {json.loads(text)["run"]["runId"]: n for n, text in enumerate(lines_b, 1) if text.strip()}
    last_record_a = max(n for n, text in enumerate(lines_a, 1) if text.strip())

    previous = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "700")
    try:
        assert spark.read.text(str(first)).rdd.getNumPartitions() > 10
        report = ingest_lineage(spark, isolated_settings, [tmp_path])
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", previous)
    assert (report.read, report.accepted, report.rejected, report.duplicates) == (66, 65, 1, 0)

    raw = rows(spark, isolated_settings, "raw", "lineage_events", "ingest_seq")
    got_a = {r["run_id"]: (r["source_line"], r["ingest_seq"]) for r in raw if r["source_file"] == str(first)}
    got_b = {r["run_id"]: (r["source_line"], r["ingest_seq"]) for r in raw if r["source_file"] == str(second)}
    assert got_a == {run_id: (line, line) for run_id, line in expected_a.items()}
    assert got_b == {run_id: (line, last_record_a + line) for run_id, line in expected_b.items()}
    rejected = rows(spark, isolated_settings, "audit", "lineage_events_rejected")
    assert [(r["source_file"], r["source_line"]) for r in rejected] == [(str(first), lines_a.index("{broken") + 1)]

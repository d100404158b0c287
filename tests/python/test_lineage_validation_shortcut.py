"""``clearly_accepted`` lets valid events skip the rejection-reason CASE; it must never let a
record through that the CASE rejects, and it must fire for ordinary valid RunEvents."""

from __future__ import annotations

import json

import pytest
from lineage_events import run_event  # tests/python is on sys.path
from pyspark.sql import functions as F

from python_jobs.ingest.lineage import check_records, frame_records
from python_jobs.lineage import event_parsing as ep
from python_jobs.lineage.files import discover


def verdicts(spark, paths) -> list[tuple[str, bool, str | None]]:
    """(record text, shortcut verdict, the CASE's reason) for every non-blank record of ``paths``."""
    files, _ = discover(paths)
    checked = check_records(frame_records(spark, files), keep=[]).where(~F.col("is_blank"))
    kind = F.col("event_kind")
    return [
        (row["record_text"], row["shortcut"], row["reason"])
        for row in checked.select(
            "record_text",
            F.coalesce(ep.clearly_accepted(kind), F.lit(False)).alias("shortcut"),
            ep._first_problem(kind).alias("reason"),
        ).collect()
    ]


def test_shortcut_never_hides_a_reason_and_fires_for_valid_run_events(spark, tmp_path):
    valid = [
        run_event(),
        run_event(eventType="complete", eventTime="2026-01-01T10:00:00.123456789+02:00"),
        run_event(eventType=None, inputs=[], outputs=[]),
    ]
    rejected = [
        run_event(run={"runId": 42}),
        run_event(run={"runId": "not-a-uuid"}),
        run_event(run={"runId": " "}),
        run_event(eventTime="2026-13-01T00:00:00Z"),
        run_event(eventTime="{{ is_datetime(result) }}"),
        run_event(eventType="FINISHED"),
        run_event(eventType=7),
        run_event(schemaURL=["x"]),
        run_event(producer=""),
        run_event(job={"namespace": "tests"}),
        run_event(job={"namespace": "${json-unit.any-string}", "name": "j"}),
        run_event(inputs=[{"name": "a"}]),
        run_event(outputs=[{"namespace": "db", "name": 3}]),
        run_event(dataset={"namespace": "db", "name": "${json-unit.any-string}"}),
        run_event(inputs={"not": "a list"}),
    ]
    path = tmp_path / "events.ndjson"
    texts = [json.dumps({k: v for k, v in e.items() if v is not None}) for e in valid + rejected]
    path.write_text("\n".join([*texts, "{not json", "[]", "{}"]) + "\n")

    results = verdicts(spark, [path])
    assert len(results) == len(texts) + 3
    assert [shortcut for _, shortcut, _ in results[: len(valid)]] == [True] * len(valid)
    assert [reason for _, _, reason in results[: len(valid)]] == [None] * len(valid)
    assert all(reason is not None and not shortcut for _, shortcut, reason in results[len(valid):])


@pytest.mark.corpus
def test_shortcut_agrees_with_the_case_on_the_corpus(spark, shared_corpus):
    results = verdicts(spark, [shared_corpus / "openlineage"])
    assert results
    assert [text for text, shortcut, reason in results if shortcut and reason is not None] == []
    assert any(shortcut for _, shortcut, _ in results)

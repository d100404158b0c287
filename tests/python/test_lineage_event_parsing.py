"""The text parse stands for the variant parse: records that ``needs_typed_parse`` does not flag get
the same scalar texts and the same ``event_id`` as the variant parse alone would give, and records
whose text could hide another JSON type are flagged and checked on their JSON types."""

from __future__ import annotations

import json

from lineage_events import run_event  # tests/python is on sys.path
from pyspark.sql import functions as F

from python_jobs.ingest.lineage import check_records, frame_records, parse_records
from python_jobs.lineage import event_parsing as ep
from python_jobs.lineage.files import discover


def with_job_name(name: object) -> dict:
    return run_event(job={"namespace": "tests", "name": name})


def test_flagged_records_and_event_ids_match_the_variant_parse(spark, tmp_path):
    events = [
        (run_event(), False, None),
        # Strings that read like other JSON values: accepted as the strings they are, via the typed parse.
        (with_job_name("123"), True, None),
        (run_event(inputs=[{"namespace": "db", "name": "true"}]), True, None),
        (run_event(producer='"quoted"'), True, None),
        (run_event(producer="{not an object}"), True, None),
        (run_event(producer="é 😀 \u2028 / \\ \" \t"), False, None),
        # Other JSON types, and JSON null, which the text parse cannot tell from a string or absence.
        (with_job_name(123), True, "job.name must be a string, got bigint"),
        (with_job_name(-1.5), True, "job.name must be a string, got decimal(2,1)"),
        (with_job_name(True), True, "job.name must be a string, got boolean"),
        (run_event(producer={"a": [1]}), True, "producer must be a string, got object<a: array<bigint>>"),
        (run_event(schemaURL=None), True, "schemaURL must be a string, got void"),
        (run_event(outputs=[{"namespace": "db", "name": ["x"]}]), True, "an entry of outputs has no name string"),
        (run_event(outputs=[{"namespace": "db", "name": "b"}, None]), True,
         "an entry of outputs has no namespace string"),
    ]
    path = tmp_path / "events.ndjson"
    path.write_text("\n".join(json.dumps(event, ensure_ascii=False) for event, _, _ in events) + "\n")
    files, _ = discover([path])
    records = frame_records(spark, files)
    parsed = parse_records(records, keep=["row_id"]).orderBy("row_id")
    rows = parsed.select("reason", "event_id", "job_name", "producer", "inputs").collect()
    typed = [row["typed"] for row in check_records(records, keep=["row_id"]).orderBy("row_id").collect()]
    # The definition: sha256 of to_json of the variant parse's spec fields, for every record.
    expected_ids = [
        row[0]
        for row in records.orderBy("row_id")
        .select(F.sha2(ep.canonical_event(ep.parse_event(F.col("record_text"))), 256))
        .collect()
    ]

    assert typed == [flagged for _, flagged, _ in events]
    assert [row["reason"] for row in rows] == [reason for _, _, reason in events]
    assert [row["event_id"] for row in rows] == expected_ids
    assert rows[1]["job_name"] == "123"
    assert rows[2]["inputs"][0]["name"] == "true"
    assert rows[3]["producer"] == '"quoted"'
    assert rows[5]["producer"] == "é 😀 \u2028 / \\ \" \t"


def test_an_event_and_its_pretty_printed_copy_share_the_id_whether_flagged_or_not(spark, tmp_path):
    events = [run_event(), with_job_name("007")]
    path = tmp_path / "events.ndjson"
    compact = [json.dumps(e, separators=(",", ":")) for e in events]
    spaced = [json.dumps({"unknown": 1, **e}, indent=1).replace("\n", " ") for e in events]
    path.write_text("\n".join(compact + spaced) + "\n")
    files, _ = discover([path])
    records = frame_records(spark, files)
    ids = [row["event_id"] for row in parse_records(records, keep=["row_id"]).orderBy("row_id").collect()]
    assert ids[0] == ids[2] and ids[1] == ids[3] and ids[0] != ids[1]
    typed = [row["typed"] for row in check_records(records, keep=["row_id"]).orderBy("row_id").collect()]
    assert typed == [False, True, False, True]

"""What ``warehouse erase`` does to one event (``python_jobs.warehouse.erasure_plan``): no Spark."""

from __future__ import annotations

import argparse
import hashlib
import json

import pytest

from python_jobs.commands.warehouse import erasure_target
from python_jobs.errors import UserFacingError
from python_jobs.warehouse.erasure_plan import (
    ErasureTarget,
    event_text,
    format_counts,
    scrub_event,
    scrub_text,
    split_qualified,
)

NS, OTHER = "s3://bucket/数据 🚀", "warehouse"


def run_event(job: tuple[str, str], inputs: list[dict], outputs: list[dict], run_facets: dict | None = None) -> dict:
    return {"eventType": "COMPLETE", "eventTime": "2026-03-01T10:00:00Z", "producer": "p", "schemaURL": "s",
            "run": {"runId": "r1", "facets": run_facets or {}},
            "job": {"namespace": job[0], "name": job[1]}, "inputs": inputs, "outputs": outputs}


def ds(namespace: str, name: str, **facets: object) -> dict:
    return {"namespace": namespace, "name": name, **({"facets": facets} if facets else {})}


def test_an_event_of_the_erased_job_is_dropped_whole():
    event = run_event((NS, "load"), [ds(OTHER, "a")], [ds(OTHER, "b")])
    assert scrub_event(event, ErasureTarget("namespace", NS)).action == "drop"
    assert scrub_event(event, ErasureTarget("job", NS, "load")).action == "drop"
    # Another job of the namespace, or a dataset of the same name, is not that job.
    assert scrub_event(event, ErasureTarget("job", NS, "other")).action == "keep"
    assert scrub_event(event, ErasureTarget("dataset", NS, "load")).action == "keep"


def test_a_dataset_event_of_the_erased_dataset_is_dropped():
    event = {"eventTime": "t", "producer": "p", "schemaURL": "s", "dataset": ds(NS, "t")}
    assert scrub_event(event, ErasureTarget("dataset", NS, "t")).action == "drop"
    assert scrub_event(event, ErasureTarget("dataset", NS, "u")).action == "keep"


def test_an_event_that_only_mentions_the_entity_loses_exactly_those_parts():
    lineage = {"fields": {"x": {"inputFields": [{"namespace": NS, "name": "t", "field": "x"},
                                                {"namespace": OTHER, "name": "a", "field": "x"}]}}}
    parent = {"run": {"runId": "p1"}, "job": {"namespace": NS, "name": "dag"}}
    event = run_event((OTHER, "job"), [ds(NS, "t"), ds(OTHER, "a")], [ds(OTHER, "b", columnLineage=lineage)],
                      {"parent": parent, "other": {"x": 1}})
    scrub = scrub_event(event, ErasureTarget("namespace", NS))
    assert scrub.action == "rewrite" and scrub.event is not None
    assert scrub.event["inputs"] == [ds(OTHER, "a")]
    assert scrub.event["run"]["facets"] == {"other": {"x": 1}}  # the parent facet names the erased job's run
    fields = scrub.event["outputs"][0]["facets"]["columnLineage"]["fields"]["x"]["inputFields"]
    assert fields == [{"namespace": OTHER, "name": "a", "field": "x"}]
    assert NS not in event_text(scrub.event)
    # The input event is left as it was.
    assert event["inputs"][0] == ds(NS, "t")


def test_a_dataset_erasure_keeps_a_job_of_the_same_name():
    event = run_event((NS, "t"), [ds(NS, "t")], [])
    scrub = scrub_event(event, ErasureTarget("dataset", NS, "t"))
    assert scrub.action == "rewrite" and scrub.event is not None
    assert scrub.event["job"] == {"namespace": NS, "name": "t"} and scrub.event["inputs"] == []


def test_names_are_compared_exactly():
    event = run_event(("Warehouse", "j"), [], [])
    assert scrub_event(event, ErasureTarget("namespace", "warehouse")).action == "keep"
    assert scrub_text(json.dumps(event), ErasureTarget("namespace", "warehouse")) == ("keep", json.dumps(event))


def test_text_in_any_usual_spelling_is_found_and_unparsable_text_dropped():
    target = ErasureTarget("namespace", NS)
    event = run_event((NS, "j"), [], [])
    for text in (json.dumps(event), json.dumps(event, ensure_ascii=False), json.dumps(event).replace("/", "\\/")):
        assert scrub_text(text, target) == ("drop", None)
    assert scrub_text('{"job": {"namespace": "' + NS + '"', target) == ("drop", None)
    assert scrub_text("not json at all", target) == ("keep", "not json at all")


def test_a_rewrite_is_compact_json_in_key_order():
    event = run_event((OTHER, "j"), [ds(NS, "t")], [])
    action, text = scrub_text(json.dumps(event, indent=2), ErasureTarget("namespace", NS))
    assert action == "rewrite" and text is not None
    assert list(json.loads(text)) == list(event) and "\n" not in text


def test_the_audit_records_only_a_hash_of_the_key():
    target = ErasureTarget("dataset", NS, "t")
    assert target.key_text == f"dataset:{NS}:t"
    assert target.key_hash == hashlib.sha256(f"dataset:{NS}:t".encode()).hexdigest()
    assert NS not in target.key_hash
    with pytest.raises(ValueError):
        ErasureTarget("namespace", NS, "t")
    with pytest.raises(ValueError):
        ErasureTarget("job", NS)


def test_ns_slash_name_is_split_where_a_stored_entity_is():
    known = [("s3://bucket/a", "b/c"), ("s3://bucket", "x")]
    assert split_qualified("s3://bucket/a/b/c", known) == ("s3://bucket/a", "b/c")
    with pytest.raises(ValueError, match="no stored entity"):
        split_qualified("s3://bucket/y", known)
    with pytest.raises(ValueError, match="--namespace"):
        split_qualified("a/b/c", [("a", "b/c"), ("a/b", "c")])


def test_the_printed_table():
    text = format_counts([("raw.lineage_events", 10, 2, 3, 400)], dry_run=True)
    assert text.splitlines()[1].split() == ["raw.lineage_events", "10", "2", "3", "400"]
    assert text.endswith("(dry run: nothing changed)")


def test_the_command_builds_its_target():
    known = {"dataset": [("s3://b/x", "t/1")], "job": [("airflow", "dag.task")]}
    args = lambda **kw: argparse.Namespace(**{"namespace": None, "dataset": None, "job": None, **kw})  # noqa: E731
    assert erasure_target(args(namespace="ns"), known.get) == ErasureTarget("namespace", "ns")
    assert erasure_target(args(dataset="s3://b/x/t/1"), known.get) == ErasureTarget("dataset", "s3://b/x", "t/1")
    assert erasure_target(args(job="airflow/dag.task"), known.get) == ErasureTarget("job", "airflow", "dag.task")
    assert erasure_target(args(namespace="a/b", job="c"), known.get) == ErasureTarget("job", "a/b", "c")
    with pytest.raises(UserFacingError):
        erasure_target(args(), known.get)
    with pytest.raises(UserFacingError):
        erasure_target(args(job="nope/x"), known.get)

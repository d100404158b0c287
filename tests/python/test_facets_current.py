"""Incremental maintenance of the current facets (the `facet_winners_*` revision tables): new events
change a facet's winner, late events with an older event time do not win, ties go to the event
ingested later, each load appends only what it touched, and loads one by one equal a one-shot load."""

from __future__ import annotations

import json
from typing import Any

import facet_events as ev  # tests/python is on sys.path (rootdir-less test layout)
import pytest

from python_jobs.dbt import run_dbt
from python_jobs.facets.raw_events import append_raw_events, contract_row
from python_jobs.keys import dataset_uuid, dataset_version_uuid, job_uuid
from python_jobs.settings import LAYERS
from python_jobs.spark import ensure_schemas
from python_jobs.warehouse.fingerprint import table_fingerprint

TARGET = {"namespace": "warehouse", "name": "inc.target"}
TARGET_KEY = dataset_uuid("warehouse", "inc.target")
RUNS = {n: f"0176a8c2-fe01-7c5a-9b1e-1000000000{n:02d}" for n in range(1, 7)}
WINNER_TABLES = ("facet_winners_dataset", "facet_winners_dataset_version", "facet_winners_job", "facet_winners_run")
CURRENT_VIEWS = ("current_dataset_facets", "current_job_facets", "current_run_facets")
SETUP = ["build", "--select", "stg_lineage_events", "facet_classification", "--exclude-resource-type", "test"]
FACET_MODELS = ["run", "--select", "path:models/facets"]


def output(facets: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**TARGET, "facets": facets}]


def sql(query: str) -> dict[str, Any]:
    return {"sql": {"query": query}}


def loads() -> list[list[dict[str, Any]]]:
    """Three loads of events for one dataset and one job, in ingest order."""
    return [
        [
            ev.run_event(
                "COMPLETE",
                "2026-05-01T10:00:00Z",
                RUNS[1],
                outputs=output({"schema": ev.schema_facet("a"), "custom": {"score": 1}}),
                run_facets={"nominalTime": {"nominalStartTime": "2026-05-01T10:00:00Z"}},
                job_facets=sql("select 1"),
            ),
            ev.run_event(
                "START", "2026-05-01T10:30:00Z", RUNS[2], inputs=[{**TARGET, "facets": {"documentation": {"d": "one"}}}]
            ),
        ],
        [
            ev.run_event(
                "COMPLETE",
                "2026-05-01T11:00:00Z",
                RUNS[2],
                outputs=output({"schema": ev.schema_facet("a", "b"), "custom": {"score": 3}}),
                run_facets={"nominalTime": {"nominalStartTime": "2026-05-01T10:30:00Z"}},
                job_facets=sql("select 2"),
            ),
            # Late: ingested after, but older than everything so far. Nothing of it may win.
            ev.run_event(
                "COMPLETE",
                "2026-05-01T09:00:00Z",
                RUNS[3],
                outputs=output({"schema": ev.schema_facet("old"), "documentation": {"d": "stale"}}),
                job_facets=sql("select 0"),
            ),
            # Same event time as the first event of this load: ingested later, so it wins the tie.
            ev.run_event("COMPLETE", "2026-05-01T11:00:00Z", RUNS[4], outputs=output({"custom": {"score": 2}})),
        ],
        [
            # A tie across loads: the later load's event wins.
            ev.run_event("COMPLETE", "2026-05-01T11:00:00Z", RUNS[5], outputs=output({"custom": {"score": 5}})),
            # Late, but newer than the documentation it replaces.
            ev.run_event(
                "START", "2026-05-01T10:45:00Z", RUNS[6], inputs=[{**TARGET, "facets": {"documentation": {"d": "two"}}}]
            ),
        ],
    ]


def raw_rows() -> list[list[dict[str, Any]]]:
    rows, seq = [], 0
    for events in loads():
        batch = []
        for event in events:
            seq += 1
            batch.append(contract_row(event, seq, "facet-current.ndjson", seq))
        rows.append(batch)
    return rows


def scoped(settings, spark, prefix: str):
    scoped_settings = settings.with_prefix(prefix)
    ensure_schemas(spark, scoped_settings, LAYERS)
    return scoped_settings


def current_rows(spark, settings) -> dict[str, list[dict[str, Any]]]:
    return {
        view: sorted(
            (row.asDict() for row in spark.table(settings.table("lineage", view)).collect()),
            key=lambda row: json.dumps(row, sort_keys=True, default=str),
        )
        for view in CURRENT_VIEWS
    }


def target(spark, settings) -> Any:
    [row] = spark.sql(
        f"select * from {settings.table('lineage', 'current_dataset_facets')} where dataset_uuid = '{TARGET_KEY}'"
    ).collect()
    return row


def job_facets(spark, settings) -> dict[str, Any]:
    [row] = spark.sql(
        f"select facets from {settings.table('lineage', 'current_job_facets')} "
        f"where job_uuid = '{job_uuid(ev.JOB['namespace'], ev.JOB['name'])}'"
    ).collect()
    return json.loads(row.facets)


def revisions(spark, settings, table: str) -> list[Any]:
    return spark.table(settings.table("lineage", table)).collect()


@pytest.fixture(scope="module")
def current_history(settings, spark):
    """The same history loaded in three loads (with a rebuild without new events after the last)
    and in one shot; what the tests need is captured after each load."""
    stepwise = scoped(settings, spark, "facets_current_steps_")
    batches = raw_rows()
    captured: dict[str, Any] = {"settings": stepwise, "after_load": []}
    run_dbt(stepwise, SETUP)
    for batch in batches:
        append_raw_events(spark, stepwise, batch)
        run_dbt(stepwise, FACET_MODELS)
        captured["after_load"].append(
            {
                "target": target(spark, stepwise).asDict(),
                "job": job_facets(spark, stepwise),
                "revisions": {t: revisions(spark, stepwise, t) for t in WINNER_TABLES},
            }
        )
    before = {t: table_fingerprint(spark, stepwise.table("lineage", t)) for t in WINNER_TABLES}
    run_dbt(stepwise, FACET_MODELS)
    captured["rebuild_unchanged"] = before == {
        t: table_fingerprint(spark, stepwise.table("lineage", t)) for t in WINNER_TABLES
    }
    captured["stepwise"] = current_rows(spark, stepwise)

    one_shot = scoped(settings, spark, "facets_current_once_")
    append_raw_events(spark, one_shot, [row for batch in batches for row in batch])
    run_dbt(one_shot, SETUP)
    run_dbt(one_shot, FACET_MODELS)
    captured["one_shot"] = current_rows(spark, one_shot)
    return captured


def test_new_events_change_the_winner_and_late_events_do_not_win(current_history):
    first, second, third = (state["target"] for state in current_history["after_load"])
    assert json.loads(first["facets"]) == {
        "schema": ev.schema_facet("a"),
        "custom": {"score": 1},
        "documentation": {"d": "one"},
    }
    assert first["current_version_uuid"] == dataset_version_uuid("warehouse", "inc.target", RUNS[1])
    # Load 2: a newer schema wins; the late event (09:00) changes nothing, neither facets nor version.
    assert json.loads(second["facets"]) == {
        "schema": ev.schema_facet("a", "b"),
        "custom": {"score": 2},  # same time as score 3, ingested after it in the same load
        "documentation": {"d": "one"},
    }
    assert second["current_version_uuid"] == dataset_version_uuid("warehouse", "inc.target", RUNS[4])
    assert second["last_ingest_seq"] == 5 and str(second["last_lineage_event_time"]).startswith("2026-05-01 11:00")
    # Load 3: a tie with an earlier load goes to the later event; an event older than the current
    # winner of another name still wins that name when it is newer than that name's winner.
    assert json.loads(third["facets"]) == {
        "schema": ev.schema_facet("a", "b"),
        "custom": {"score": 5},
        "documentation": {"d": "two"},
    }
    assert third["current_version_uuid"] == dataset_version_uuid("warehouse", "inc.target", RUNS[5])
    assert (third["facet_count"], third["dataset_name"], third["last_ingest_seq"]) == (3, "inc.target", 7)
    jobs = [state["job"] for state in current_history["after_load"]]
    assert [j["sql"]["query"] for j in jobs] == ["select 1", "select 2", "select 2"]  # the late "select 0" loses


def test_each_load_appends_one_revision_per_entity_and_name_it_touched(current_history):
    counts = [len(state["revisions"]["facet_winners_dataset"]) for state in current_history["after_load"]]
    # Load 1 touches schema, custom, documentation; load 2 schema, custom, documentation (the late
    # event's names too: it is compared in the view, not here); load 3 custom and documentation.
    assert counts == [3, 6, 8]
    last = current_history["after_load"][-1]["revisions"]
    latest_load = [r for r in last["facet_winners_dataset"] if r.last_ingest_seq > 5]
    assert sorted((r.name, json.loads("{" + r.member + "}")[r.name]) for r in latest_load) == [
        ("custom", {"score": 5}),
        ("documentation", {"d": "two"}),
    ]
    assert [len(state["revisions"]["facet_winners_dataset_version"]) for state in current_history["after_load"]] == [
        1,
        2,
        3,
    ]
    # Run facets keep their bodies in facet_bodies only: the revisions hold hashes.
    assert all(r.body_hash and "member" not in r.asDict() for r in last["facet_winners_run"])


def test_rebuild_without_new_events_changes_no_revision_table(current_history):
    assert current_history["rebuild_unchanged"]


def test_loads_one_by_one_equal_a_one_shot_load(current_history):
    assert current_history["stepwise"] == current_history["one_shot"]
    assert len(current_history["stepwise"]["current_run_facets"]) == 2  # the runs with run facets

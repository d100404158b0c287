"""Each of the four inputs alone, as a new user following the README would feed it (issue 21).

Every test starts from an empty warehouse (its own schema prefix), ingests one kind of input from the
hand-written samples, then runs a full ``dbt build``: every model and every data test, no ``--select``,
and without the ``sample_inputs`` var, so the sample's own models (the ``crm_accounts`` changelog, the
``com.example`` typed tables) stay disabled. The build must succeed and must have built something from
that input; the parts that had no input build empty.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from python_jobs.commands.changelog import SAMPLE_PRIMARY_KEY, SAMPLE_SNAPSHOTS
from python_jobs.commands.registry import SAMPLE_EVENTS, SAMPLE_REGISTRY
from python_jobs.dbt import DbtCommandError, DbtOutcome, run_dbt
from python_jobs.ingest.events import SD_EVENTS, SD_EVENTS_REJECTED, ingest_events
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.ingest.registry import REGISTRY_REJECTED, REGISTRY_SCHEMAS, ingest_registry
from python_jobs.ingest.snapshot import ingest_snapshot, parse_timestamp
from python_jobs.registry.ddl import EVENT_COLUMNS
from python_jobs.settings import PROJECT_DIR, SAMPLES_DIR, Settings

LINEAGE_SAMPLE = SAMPLES_DIR / "lineage" / "shop_pipeline.ndjson"
# What a user's own snapshot dataset is called here: not the sample's `crm_accounts`, which has a model.
USER_DATASET = "accounts"
USER_FAMILY_TABLE = "com_acme_order_1"
SAMPLE_ONLY_TABLES = [("changelog", "crm_accounts"), ("changelog", "crm_accounts_current"),
                      ("registry", "com_example_checkout_1"), ("registry", "com_example_page_view_1"),
                      ("registry", "com_example_signup_1")]
RAW_TABLE_SHAPES = [("raw", "registry_schemas", REGISTRY_SCHEMAS), ("audit", "registry_rejected", REGISTRY_REJECTED),
                    ("raw", "sd_events", SD_EVENTS), ("audit", "sd_events_rejected", SD_EVENTS_REJECTED)]


def full_build(settings: Settings, *extra: str, callbacks: Sequence[Callable[[Any], None]] = ()) -> DbtOutcome:
    outcome = run_dbt(settings, ["build", *extra], check=False, callbacks=callbacks)
    assert outcome.success, "dbt build failed:\n" + "\n".join(outcome.failures)
    statuses = Counter(str(result.status).split(".")[-1].lower() for result in outcome.result.results)
    assert set(statuses) <= {"success", "pass"}, statuses  # no error, failure, warning or skip
    tests = [r for r in outcome.result.results if r.node.resource_type == "test"]
    assert len(tests) > 50, "the build ran the project's data tests"
    return outcome


def count(spark, settings: Settings, layer: str, name: str) -> int:
    return spark.table(settings.table(layer, name)).count()


def assert_sample_models_not_built(spark, settings: Settings) -> None:
    for layer, name in SAMPLE_ONLY_TABLES:
        assert not spark.catalog.tableExists(settings.table(layer, name)), f"{layer}.{name} belongs to the sample"


def assert_raw_tables_match_ingest(spark, settings: Settings) -> None:
    """The registry and event raw tables, whoever created them (ingest or the on-run-start hook), have the
    columns and types the ingest code writes."""
    for layer, name, shape in RAW_TABLE_SHAPES:
        actual = [(f.name, f.dataType.simpleString()) for f in spark.table(settings.table(layer, name)).schema]
        assert actual == [(f.name, f.dataType.simpleString()) for f in shape.fields], f"{layer}.{name}"


def test_lineage_events_alone(spark, isolated_settings):
    settings = isolated_settings
    report = ingest_lineage(spark, settings, [LINEAGE_SAMPLE])
    assert report.accepted > 0

    full_build(settings)

    runs = {row.uuid: row for row in spark.table(settings.table("lineage", "runs")).collect()}
    raw_runs = spark.table(settings.table("raw", "lineage_events")).select("run_id").distinct().count()
    assert runs and len(runs) == raw_runs
    assert {row.job_name for row in runs.values()} >= {"ingest_orders"}
    assert count(spark, settings, "lineage", "datasets") > 0
    # the inputs that were not fed built empty
    assert count(spark, settings, "registry", "registry_columns") == 0
    assert count(spark, settings, "staging", "stg_sd_events") == 0
    assert_raw_tables_match_ingest(spark, settings)
    assert_sample_models_not_built(spark, settings)


@pytest.fixture()
def user_project(tmp_path: Path) -> Path:
    """The project as a user has it after following the README for one snapshot dataset of their own (a
    one-line changelog model, a table entry in the snapshots source and its name in the var changelog_models),
    and with the one-line typed-table model of a registry family that has no version in the warehouse yet."""
    root = tmp_path / "project"
    root.mkdir()
    project_file = (PROJECT_DIR / "dbt_project.yml").read_text()
    assert "\n  changelog_models: []\n" in project_file
    (root / "dbt_project.yml").write_text(
        project_file.replace("\n  changelog_models: []\n", f"\n  changelog_models: [{USER_DATASET}]\n")
    )
    for folder in ("models", "macros", "seeds", "tests/data_tests"):
        shutil.copytree(PROJECT_DIR / folder, root / folder)
    changelog = root / "models" / "changelog"
    (changelog / f"{USER_DATASET}.sql").write_text(
        f"{{{{ snapshot_to_changelog(source('snapshots', '{USER_DATASET}_snapshots'), ['account_id']) }}}}\n"
    )
    (root / "models" / "registry" / "tables" / f"{USER_FAMILY_TABLE}.sql").write_text(
        "{{ registry_table('com.acme', 'order', 1) }}\n"
    )
    sources_file = changelog / "_changelog_sources.yml"
    sources = yaml.safe_load(sources_file.read_text())
    snapshots = next(source for source in sources["sources"] if source["name"] == "snapshots")
    snapshots["tables"].append({"name": f"{USER_DATASET}_snapshots"})
    sources_file.write_text(json.dumps(sources, indent=2))  # JSON is YAML
    return root


def test_snapshots_alone(spark, isolated_settings, user_project):
    settings = replace(isolated_settings, project_dir=user_project)
    rows = []
    for file_name, snapshot_time, system_time in SAMPLE_SNAPSHOTS:
        load = ingest_snapshot(
            spark, settings, USER_DATASET, SAMPLES_DIR / "changelog" / file_name,
            parse_timestamp(snapshot_time, "snapshot time"), parse_timestamp(system_time, "system time"),
            SAMPLE_PRIMARY_KEY,
        )
        rows.append(load.rows)

    logged: list[str] = []

    def collect(event: Any) -> None:
        if event.info.name == "JinjaLogInfo":
            logged.append(event.data.msg)

    # Unlisted, the changelog model would not be ordered before the schema events: the build says so.
    compile_streams = ["compile", "--select", "changelog_streams", "--target-path", str(user_project / "target")]
    unlisted = rf"changelog model\(s\) {USER_DATASET} not listed in the var changelog_models"
    with pytest.raises(DbtCommandError, match=unlisted):
        run_dbt(settings, compile_streams, extra_vars={"changelog_models": []})

    full_build(settings, "--target-path", str(user_project / "target"), callbacks=[collect])

    assert count(spark, settings, "raw", f"{USER_DATASET}_snapshots") == sum(rows)
    stream = spark.table(settings.table("changelog", USER_DATASET))
    ops = Counter(row.op for row in stream.select("op").collect())
    assert ops[0] >= rows[0] and ops[1] + ops[2] > 0  # the first export's appends, then changes
    events = spark.table(settings.table("lineage", "dataset_schema_events")).where(
        f"dataset_name = 'changelog.{USER_DATASET}'"
    )
    assert events.count() == 1  # the stream's Arrow schema, through the changelog_streams view
    assert count(spark, settings, "lineage", "runs") == 0
    # a typed table whose family the registry does not hold yet is built empty, with the event columns only
    typed = spark.table(settings.table("registry", USER_FAMILY_TABLE))
    assert (typed.columns, typed.count()) == ([name for name, _ in EVENT_COLUMNS], 0)
    [line] = [message for message in logged if USER_FAMILY_TABLE in message]
    assert "built empty: the registry has no version of com.acme/order model 1 yet" in line
    assert_sample_models_not_built(spark, settings)


def test_registry_alone(spark, isolated_settings):
    settings = isolated_settings
    report = ingest_registry(spark, settings, SAMPLE_REGISTRY)
    assert report.accepted > 0

    full_build(settings)

    versions = spark.table(settings.table("registry", "registry_versions"))
    families = {(row.vendor, row.name) for row in versions.select("vendor", "name").collect()}
    assert ("com.example", "checkout") in families
    assert versions.count() == count(spark, settings, "staging", "stg_registry_schemas") == report.accepted
    assert count(spark, settings, "registry", "registry_columns") > 0
    assert count(spark, settings, "lineage", "runs") == 0
    assert_raw_tables_match_ingest(spark, settings)
    assert_sample_models_not_built(spark, settings)


def test_self_describing_events_alone(spark, isolated_settings):
    settings = isolated_settings
    report = ingest_events(spark, settings, SAMPLE_EVENTS)
    lines = [line for line in SAMPLE_EVENTS.joinpath("events.ndjson").read_text().splitlines() if line.strip()]
    # No registry: every event is quarantined (an unregistered schema is rejected, never dropped).
    assert (report.read, report.accepted, report.rejected) == (len(lines), 0, len(lines))

    full_build(settings)

    rejected = spark.table(settings.table("audit", "sd_events_rejected"))
    assert rejected.count() == len(lines)
    assert count(spark, settings, "staging", "stg_sd_events") == 0
    assert count(spark, settings, "registry", "registry_columns") == 0
    assert count(spark, settings, "lineage", "runs") == 0
    assert_raw_tables_match_ingest(spark, settings)
    assert_sample_models_not_built(spark, settings)

"""Incremental builds of the lineage core equal a one-shot build of the same events, whatever
order the events arrive in: the tail recompute (int_lineage_version_revisions) must place late
events exactly where a full build places them."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from python_jobs.dbt import run_dbt
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.lineage.models import core_selection
from python_jobs.tools.generate.lineage import SyntheticSpec, events

BATCHES = 4
# The models a build runs before it stops in the interrupted-build scenario: the version revisions
# of a build are written, the revision models that continue from them are not.
INTERRUPTED_AFTER = (
    "stg_lineage_events", "int_lineage_dataset_observations", "int_lineage_observed_schemas",
    "int_lineage_version_revisions", "int_lineage_build_tails",
)

# What a user reads, minus bookkeeping columns that record which build wrote a row.
COMPARED = {
    "lineage.dataset_versions": "uuid, created_at, dataset_uuid, run_uuid, dataset_schema_version_uuid, "
    "version_kind, is_current_version",
    "lineage.runs_input_mapping": "run_uuid, dataset_version_uuid, dataset_uuid",
    "lineage.runs_output_mapping": "run_uuid, dataset_version_uuid, dataset_uuid",
    "staging.int_lineage_dataset_sightings": "dataset_uuid, run_uuid, io_type, sighted_at, sighted_at_seq, "
    "observed_schema_uuid, dataset_version_uuid, is_input_version",
    "staging.int_lineage_dataset_version_schemas": "dataset_version_uuid, dataset_schema_version_uuid, "
    "is_empty_schema, pointed_at, pointed_at_seq, is_current",
    "lineage.runs": "uuid, created_at, updated_at, current_run_state, started_at, ended_at, event_count",
}


def mixed_events() -> list[dict]:
    """Synthetic runs plus inputs that show schemas (some with fields their dataset lacks, which
    makes merged schema versions) and DatasetEvents, so every versioning rule is exercised."""
    result = []
    for position, event in enumerate(events(SyntheticSpec(events=300, jobs=6, schema_change_every=4))):
        if position % 5 == 0 and event["inputs"]:
            event["inputs"][0]["facets"] = {"schema": {"fields": [
                {"name": f"seen_by_reader_{position % 3}", "type": "string"}]}}
        result.append(event)
        if position % 37 == 0:
            result.append({
                "eventTime": event["eventTime"],
                "producer": event["producer"],
                "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
                "dataset": {"namespace": "bench-warehouse", "name": f"dataset_{position % 6}", "facets": {
                    "schema": {"fields": [{"name": "from_catalog", "type": "bigint"}]}}},
            })
    return result


def write_batches(folder: Path, batches: list[list[dict]]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for number, batch in enumerate(batches):
        path = folder / f"batch_{number:02d}.ndjson"
        path.write_text("".join(json.dumps(event) + "\n" for event in batch))
        paths.append(path)
    return paths


def snapshot(spark, settings) -> dict[str, list[tuple]]:
    tables = {}
    for name, columns in COMPARED.items():
        layer, table = name.split(".")
        rows = spark.sql(f"select {columns} from {settings.table(layer, table)}").collect()
        tables[name] = sorted((tuple(row) for row in rows), key=repr)
    return tables


def referenced_schema_fields(spark, settings) -> list[tuple]:
    lineage = settings.schema("lineage")
    rows = spark.sql(
        f"select s.uuid, s.field_count, f.name, f.type from {lineage}.dataset_schema_versions s "
        f"join {lineage}.dataset_schema_versions_field_mapping m on m.dataset_schema_version_uuid = s.uuid "
        f"join {lineage}.dataset_fields f on f.uuid = m.dataset_field_uuid "
        f"where s.uuid in (select dataset_schema_version_uuid from {lineage}.dataset_versions)"
    ).collect()
    return sorted(tuple(row) for row in rows)


def log_position(log: Path) -> tuple[int, int]:
    """The log file's inode and size: where the next build's lines start."""
    if not log.exists():
        return (0, 0)
    stat = log.stat()
    return (stat.st_ino, stat.st_size)


def log_since(log: Path, position: tuple[int, int]) -> str:
    """dbt's log text written since ``position``. dbt rotates its log at 10 MB (``dbt.log`` becomes
    ``dbt.log.1``, a new file), which the whole suite's builds reach, possibly in the middle of a build."""
    inode, offset = position
    current = log.read_bytes() if log.exists() else b""
    if log.exists() and log.stat().st_ino == inode:
        return current[offset:].decode("utf-8", "replace")
    rotated = log.with_name(log.name + ".1")
    earlier = rotated.read_bytes()[offset:] if rotated.exists() and rotated.stat().st_ino == inode else b""
    return (earlier + current).decode("utf-8", "replace")


def test_incremental_builds_equal_one_shot_build_for_shuffled_arrival(
    spark, isolated_settings, tmp_path, settings, dbt_manifest
):
    selection = core_selection(settings)
    all_events = mixed_events()
    shuffled = list(all_events)
    random.Random(3).shuffle(shuffled)
    size = -(-len(shuffled) // BATCHES)
    # The first batch keeps time order; later ones arrive shuffled, reaching back into history.
    batches = [sorted(shuffled[:size], key=lambda e: e["eventTime"])] + [
        shuffled[start:start + size] for start in range(size, len(shuffled), size)
    ]
    # The last batch mostly continues every job after all earlier events (the tail search's fast
    # path: nothing of the history is read), plus a few late events of one job held back from the
    # shuffled ones (the general search), so one build takes both.
    held_back = [event for event in batches[-1] if event.get("job", {}).get("name", "").endswith("_0")][:3]
    batches[-1] = [event for event in batches[-1] if event not in held_back]
    appended = list(events(SyntheticSpec(events=36, jobs=6, schema_change_every=4, first_run=1000)))
    batches.append(held_back + appended)
    paths = write_batches(tmp_path / "events", batches)

    dbt_log = Path(os.environ["DBT_LOG_PATH"], "dbt.log")
    for number, path in enumerate(paths):
        ingest_lineage(spark, isolated_settings, [path])
        log_before = log_position(dbt_log)
        if number == 1:
            # As on a warehouse built before int_lineage_build_tails existed: the tail search must
            # group the builds it has not recorded out of the revision table, and the table is
            # then rebuilt from all builds.
            spark.sql(f"drop table {isolated_settings.table('staging', 'int_lineage_build_tails')}")
        if number == 3:
            # As on a warehouse built before int_lineage_build_tails kept each build's `head`: the
            # tail search must not read the column before the model adds it.
            build_tails = isolated_settings.table("staging", "int_lineage_build_tails")
            spark.sql(f"create table {build_tails}_old using parquet as "
                      f"select dataset_uuid, build_seq, tail_from from {build_tails}")
            spark.sql(f"drop table {build_tails}")
            spark.sql(f"alter table {build_tails}_old rename to {build_tails}")
        if number == 2:
            # A build that stops after the version revisions (a failure, or a partial selection):
            # the next build must continue the sightings and schema pointers of this one too.
            run_dbt(isolated_settings, ["run", "--select", *INTERRUPTED_AFTER])
            continue
        # the dbt tests (dedup invariants) run on the final state
        run_dbt(isolated_settings, ["build" if number == len(paths) - 1 else "run", *selection])
    # The last build's tails came from both searches: its prepare step made the fast path's
    # candidates and the general search's tails (dbt's log holds every statement it ran).
    last_build_log = log_since(dbt_log, log_before)
    assert "int_lineage_version_revisions__tail_candidates using parquet" in last_build_log
    assert "int_lineage_version_revisions__general_tails using parquet" in last_build_log
    incremental = snapshot(spark, isolated_settings)
    incremental_schemas = referenced_schema_fields(spark, isolated_settings)

    one_shot_settings = settings.with_prefix(isolated_settings.schema_prefix + "oneshot_")
    try:
        ingest_lineage(spark, one_shot_settings, paths)
        run_dbt(one_shot_settings, ["run", *selection])
        one_shot = snapshot(spark, one_shot_settings)
        one_shot_schemas = referenced_schema_fields(spark, one_shot_settings)
    finally:
        for layer in ("raw", "audit", "staging", "lineage"):
            spark.sql(f"drop database if exists {one_shot_settings.schema(layer)} cascade")

    assert {name: len(rows) for name, rows in incremental.items()} == {
        name: len(rows) for name, rows in one_shot.items()
    }
    for name in COMPARED:
        assert incremental[name] == one_shot[name], name
    assert incremental_schemas == one_shot_schemas
    # the scenario really has late events, merged schemas and input versions
    staging, lineage = isolated_settings.schema("staging"), isolated_settings.schema("lineage")
    late = spark.sql(
        f"with first_build as (select dataset_uuid, min(timeline_key) as first_key "
        f"from {staging}.int_lineage_version_revisions "
        f"where build_seq = (select min(build_seq) from {staging}.int_lineage_version_revisions) "
        f"group by dataset_uuid) "
        f"select 1 from {staging}.int_lineage_tail_ranges as later join first_build "
        f"on later.dataset_uuid = first_build.dataset_uuid "
        f"where later.build_seq > (select min(build_seq) from {staging}.int_lineage_tail_ranges) "
        f"and later.tail_from <= first_build.first_key"
    )
    assert late.count() > 0, "some later build had to recompute a dataset from its beginning"
    carried = spark.sql(
        f"select run_uuid is null as is_input_version from {staging}.int_lineage_version_revisions where is_carried"
    ).collect()
    assert {row.is_input_version for row in carried} == {True, False}, "tails continued output and input versions"
    superseded = spark.sql(f"select 1 from {staging}.int_lineage_tail_ranges where superseded_from is not null")
    assert superseded.count() > 0
    assert spark.sql(f"select 1 from {lineage}.dataset_schema_versions where is_merged").count() > 0
    assert spark.sql(f"select 1 from {lineage}.dataset_versions where version_kind = 'input'").count() > 0

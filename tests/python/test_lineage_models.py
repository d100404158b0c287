"""The lineage models on real Spark and dbt: versioning rules, Marquez ids, runs across ingests,
idempotent rebuilds. The dedup invariants themselves are dbt tests (run by every build here)."""

from __future__ import annotations

import json

from python_jobs.dbt import run_dbt
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.keys import dataset_uuid, name_uuid
from python_jobs.lineage.models import core_models, core_selection
from python_jobs.warehouse.fingerprint import warehouse_fingerprint

WAREHOUSE = "s3://shop-warehouse"
SOURCE_DB = "postgres://shop-db:5432"


def query(spark, sql: str) -> list[dict]:
    return [row.asDict() for row in spark.sql(sql).collect()]


def test_sample_schema_versions_are_deduplicated(spark, sample_warehouse):
    lineage = sample_warehouse.schema("lineage")
    versions = query(
        spark,
        f"select dataset_name, run_uuid, dataset_schema_version_uuid from {lineage}.dataset_versions "
        f"where namespace_name = '{WAREHOUSE}' and dataset_name = 'raw.orders' order by created_at",
    )
    # three runs wrote raw.orders; the first two with the same fields share one schema version
    assert len(versions) == 3
    first, second, third = (v["dataset_schema_version_uuid"] for v in versions)
    assert first == second != third
    assert first == name_uuid(f"{WAREHOUSE}:raw.orders:amount:decimal(12,2):customer_id:bigint:order_id:bigint")
    schema_rows = query(
        spark, f"select uuid, field_count, is_merged from {lineage}.dataset_schema_versions "
        f"where dataset_uuid = '{dataset_uuid(WAREHOUSE, 'raw.orders')}' order by field_count",
    )
    assert [(r["field_count"], r["is_merged"]) for r in schema_rows] == [(3, False), (4, False)]
    mapping = query(
        spark, f"select count(1) as n from {lineage}.dataset_schema_versions_field_mapping "
        f"where dataset_schema_version_uuid = '{first}'",
    )
    assert mapping == [{"n": 3}]
    legacy = query(
        spark, f"select count(1) as n from {lineage}.dataset_versions_field_mapping m "
        f"join {lineage}.dataset_versions v on m.dataset_version_uuid = v.uuid "
        f"where v.dataset_name = 'raw.orders'",
    )
    assert legacy == [{"n": 3 + 3 + 4}]


def test_input_only_dataset_gets_merged_schema_version(spark, sample_warehouse):
    lineage = sample_warehouse.schema("lineage")
    versions = query(
        spark, f"select uuid, run_uuid, version_kind, dataset_schema_version_uuid from {lineage}.dataset_versions "
        f"where dataset_uuid = '{dataset_uuid(SOURCE_DB, 'public.orders')}'",
    )
    assert len(versions) == 1 and versions[0]["version_kind"] == "input" and versions[0]["run_uuid"] is None
    schemas = query(
        spark, f"select uuid, field_count, created_at from {lineage}.dataset_schema_versions "
        f"where dataset_uuid = '{dataset_uuid(SOURCE_DB, 'public.orders')}' order by created_at",
    )
    # the narrower set first, then the merged set with the extra column; both kept, neither changed
    assert [s["field_count"] for s in schemas] == [3, 4]
    assert versions[0]["dataset_schema_version_uuid"] == schemas[1]["uuid"]
    assert schemas[1]["uuid"] == name_uuid(
        f"{SOURCE_DB}:public.orders:amount_cents:BIGINT:channel:VARCHAR:customer_id:BIGINT:order_id:BIGINT"
    )


def test_nested_fields_change_the_schema_version(spark, sample_warehouse):
    lineage = sample_warehouse.schema("lineage")
    fields = query(
        spark, f"select name, type from {lineage}.dataset_fields "
        f"where dataset_uuid = '{dataset_uuid(WAREHOUSE, 'mart.customer_profile')}' order by name",
    )
    assert [f["name"] for f in fields] == [
        "address", "address.city", "address.country", "address.zip", "customer_id"
    ]
    counts = query(
        spark, f"select field_count from {lineage}.dataset_schema_versions "
        f"where dataset_uuid = '{dataset_uuid(WAREHOUSE, 'mart.customer_profile')}' order by created_at",
    )
    assert [c["field_count"] for c in counts] == [4, 5]


def test_sample_runs(spark, sample_warehouse):
    lineage = sample_warehouse.schema("lineage")
    runs = {r["job_name"] + "#" + r["uuid"][-1]: r for r in query(spark, f"select * from {lineage}.runs")}
    assert runs["build_daily_revenue#5"]["current_run_state"] == "FAIL"
    assert str(runs["ingest_orders#1"]["ended_at"]) == "2026-11-01 02:04:10.123456"
    assert all(r["started_at"] is not None for r in runs.values())
    # Other capabilities' samples (facets) also ingest lineage events: count the shop pipeline's runs only.
    def mapped(table: str) -> list[dict]:
        return query(
            spark,
            f"select count(1) as n from {lineage}.{table} as m inner join {lineage}.runs as r "
            "on m.run_uuid = r.uuid where r.namespace_name = 'shop-scheduler'",
        )

    assert mapped("runs_input_mapping") == [{"n": 7}] and mapped("runs_output_mapping") == [{"n": 7}]


def test_observation_files_are_in_event_time_order(spark, sample_warehouse):
    """Each file of the observations is sorted by event time, so that the revision models' scan from a tail's
    earliest event time on skips the row groups before it (int_lineage_dataset_observations.sql)."""
    observations = f"{sample_warehouse.schema('staging')}.int_lineage_dataset_observations"
    [summary] = query(spark, f"""
        with positioned as (
            select _metadata.file_path as file_path, _metadata.row_index as row_index, event_time
            from {observations}
        ),

        steps as (
            select
                file_path,
                event_time < lag(event_time) over (partition by file_path order by row_index) as goes_back
            from positioned
        )

        select count(distinct file_path) as files, count(*) as observations, count_if(goes_back) as backward_steps
        from steps
    """)
    assert summary["files"] >= 2 and summary["observations"] > 100, summary  # the main job builds twice
    assert summary["backward_steps"] == 0, summary


def test_dataset_lineage_graph_depths(spark, sample_warehouse):
    lineage = sample_warehouse.schema("lineage")
    graph = {
        r["dataset_name"]: (r["upstream_depth"], r["direct_upstream_count"], r["direct_downstream_count"])
        for r in query(spark, f"select * from {lineage}.dataset_lineage_graph")
    }
    assert graph["public.orders"] == (0, 0, 1)
    assert graph["raw.orders"] == (1, 1, 2)
    assert graph["mart.daily_revenue"] == (2, 1, 0)
    assert graph["mart.customer_profile"] == (2, 1, 0)


def test_build_on_empty_warehouse_then_late_complete_then_no_op(spark, isolated_settings, tmp_path, dbt_manifest):
    selection = core_selection(isolated_settings, with_graph=True)
    # 1. nothing ingested yet: the on-run-start hook creates the raw tables and every model builds
    #    (`run` for the intermediate steps, `build` with the dedup tests once the data is complete)
    run_dbt(isolated_settings, ["run", *selection])
    raw = isolated_settings.table("raw", "lineage_events")
    assert spark.table(raw).count() == 0

    run_id = "00000000-0000-4000-8000-0000000000cc"
    def event(event_type: str, minute: int, fields: list[str]) -> dict:
        return {
            "eventType": event_type,
            "eventTime": f"2026-02-01T00:{minute:02d}:00Z",
            "run": {"runId": run_id},
            "job": {"namespace": "late", "name": "job"},
            "outputs": [{"namespace": "late", "name": "table", "facets": {"schema": {
                "fields": [{"name": f, "type": "int"} for f in fields]}}}],
            "producer": "https://example.com/tests",
        }

    start_file, complete_file = tmp_path / "start.ndjson", tmp_path / "complete.ndjson"
    start_file.write_text(json.dumps(event("START", 0, ["a"])) + "\n")
    complete_file.write_text(json.dumps(event("COMPLETE", 5, ["a", "b"])) + "\n")

    # 2. START only
    ingest_lineage(spark, isolated_settings, [start_file])
    run_dbt(isolated_settings, ["run", *selection])
    lineage = isolated_settings.schema("lineage")
    run = query(spark, f"select current_run_state, ended_at from {lineage}.runs")
    assert run == [{"current_run_state": "START", "ended_at": None}]

    # 3. the COMPLETE arrives in a later ingest: the run ends, the version keeps one row and now
    #    points at the COMPLETE's field set
    ingest_lineage(spark, isolated_settings, [complete_file])
    run_dbt(isolated_settings, ["build", *selection])
    run = query(spark, f"select current_run_state, cast(ended_at as string) as ended_at from {lineage}.runs")
    assert run == [{"current_run_state": "COMPLETE", "ended_at": "2026-02-01 00:05:00"}]
    versions = query(spark, f"select dataset_schema_version_uuid from {lineage}.dataset_versions")
    assert versions == [{"dataset_schema_version_uuid": name_uuid("late:table:a:int:b:int")}]

    # 4. nothing new: a second build changes no table and writes no file (Spark writes an empty
    #    Parquet file for an empty insert: the windowed models skip it)
    before = warehouse_fingerprint(spark, isolated_settings)
    files_before = lineage_table_files(spark, isolated_settings)
    run_dbt(isolated_settings, ["run", *selection])
    assert warehouse_fingerprint(spark, isolated_settings) == before
    assert lineage_table_files(spark, isolated_settings) == files_before
    jobs = isolated_settings.table("lineage", "jobs")
    high = spark.table(raw).agg({"ingest_seq": "max"}).collect()[0][0]
    assert input_through(spark, jobs) == high

    # 5. a lost or stale window property (a warehouse built before it existed, a build that
    #    appended and then failed before its post-hook) re-reads old input but duplicates nothing
    spark.sql(f"alter table {jobs} unset tblproperties ('lineage.input_through')")
    observations = isolated_settings.table("staging", "int_lineage_dataset_observations")
    revisions = isolated_settings.table("staging", "int_lineage_version_revisions")
    for table in (observations, revisions):
        spark.sql(f"alter table {table} set tblproperties ('lineage.input_through' = '-1')")
    run_dbt(isolated_settings, ["build", *selection])
    assert warehouse_fingerprint(spark, isolated_settings) == before
    assert input_through(spark, jobs) == high


def lineage_table_files(spark, settings) -> dict[str, list[str]]:
    """Data files of the core models (the lineage graph is a table rebuilt on every build)."""
    files, core = {}, core_models(settings)
    for layer in ("staging", "lineage"):
        for row in spark.sql(f"show tables in {settings.schema(layer)}").collect():
            if not row.isTemporary and row.tableName in core:
                name = f"{settings.schema(layer)}.{row.tableName}"
                files[name] = sorted(spark.table(name).inputFiles())
    return files


def input_through(spark, table: str) -> int | None:
    properties = {row.key: row.value for row in spark.sql(f"show tblproperties {table}").collect()}
    value = properties.get("lineage.input_through")
    return None if value is None else int(value)

"""The project's view materialization keeps a view whose definition is unchanged, and re-creates
it when the definition changed or on a full refresh."""

from __future__ import annotations

from python_jobs.dbt import run_dbt

VIEW = "stg_lineage_events"
MARKER = "test.kept_since"


def view_properties(spark, settings) -> dict[str, str]:
    rows = spark.sql(f"show tblproperties {settings.table('staging', VIEW)}").collect()
    return {row[0]: row[1] for row in rows}


def build_view(settings, *flags: str) -> None:
    run_dbt(settings, ["run", "--select", VIEW, *flags])


def test_unchanged_view_is_kept_and_changed_one_recreated(spark, isolated_settings):
    view = isolated_settings.table("staging", VIEW)
    build_view(isolated_settings)
    fingerprint = view_properties(spark, isolated_settings)["lineage.view_fingerprint"]
    assert len(fingerprint) == 32

    # Same definition: the view is not replaced, so a property set in between survives.
    spark.sql(f"alter view {view} set tblproperties ('{MARKER}' = 'first build')")
    build_view(isolated_settings)
    assert view_properties(spark, isolated_settings)[MARKER] == "first build"

    # A different recorded definition: the view is re-created and the fingerprint recorded again.
    spark.sql(f"alter view {view} set tblproperties ('lineage.view_fingerprint' = 'stale')")
    build_view(isolated_settings)
    properties = view_properties(spark, isolated_settings)
    assert MARKER not in properties
    assert properties["lineage.view_fingerprint"] == fingerprint

    # A full refresh always re-creates.
    spark.sql(f"alter view {view} set tblproperties ('{MARKER}' = 'before full refresh')")
    build_view(isolated_settings, "--full-refresh")
    properties = view_properties(spark, isolated_settings)
    assert MARKER not in properties
    assert properties["lineage.view_fingerprint"] == fingerprint
    assert spark.sql(f"select count(*) from {view}").first()[0] == 0

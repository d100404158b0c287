"""The parsed project kept between dbt commands (python_jobs/dbt_parsed_projects.py): the key changes with
everything a parse reads, and only with that; a command after an edit sees the edit."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from python_jobs.dbt import load_manifest, project_name, run_dbt
from python_jobs.dbt_parsed_projects import ParsedProjects, command_name, parse_key, resource_folders
from python_jobs.lineage.models import core_models
from python_jobs.settings import PROJECT_DIR

ADAPTER_PROJECT = PROJECT_DIR / "tests" / "python" / "adapter_project"


def write_project(root: Path, model_sql: str = "select 1 as id") -> Path:
    (root / "models").mkdir(parents=True, exist_ok=True)
    (root / "dbt_project.yml").write_text("name: p\nmodel-paths: [models]\nmacro-paths: [custom_macros]\n")
    (root / "models" / "one.sql").write_text(model_sql)
    (root / "profiles.yml").write_text("p:\n  target: \"{{ env_var('P_TARGET', 'local') }}\"\n")
    return root


def key_of(root: Path, dbt_vars: dict | None = None, environ: dict | None = None, target: str = "local") -> str:
    return parse_key(root, root, target, dbt_vars or {"schema_prefix": ""}, environ or {})


def test_the_key_follows_files_vars_target_and_the_environment_they_read(tmp_path):
    root = write_project(tmp_path)
    base = key_of(root)
    assert key_of(root) == base
    assert key_of(root, {"schema_prefix": "t1_"}) != base
    assert key_of(root, target="cluster") != base
    assert key_of(root, environ={"P_TARGET": "cluster"}) != base  # profiles.yml reads it
    assert key_of(root, environ={"UNREAD": "x"}) == base
    (root / "models" / "one.sql").write_text("select 2 as id")
    edited = key_of(root)
    assert edited != base
    (root / "models" / "two.sql").write_text("select 3 as id")
    assert key_of(root) != edited
    (root / "custom_macros").mkdir()
    (root / "custom_macros" / "m.sql").write_text("{% macro m() %}1{% endmacro %}")
    with_macro = key_of(root)
    assert with_macro != edited
    (root / "python_tests").mkdir()
    (root / "python_tests" / "test_x.py").write_text("# not read by dbt")
    assert key_of(root) == with_macro
    (root / "dbt_packages" / "utils" / "macros").mkdir(parents=True)
    (root / "dbt_packages" / "utils" / "macros" / "u.sql").write_text("{% macro u() %}1{% endmacro %}")
    assert key_of(root) != with_macro  # `dbt deps` installed a package


def test_resource_folders_are_the_projects_paths_or_dbts_defaults(tmp_path):
    root = write_project(tmp_path)
    folders = {path.relative_to(root).as_posix() for path in resource_folders(root)}
    assert {"models", "custom_macros", "seeds", "tests", "snapshots", "analyses", "dbt_packages"} == folders
    assert "macros" not in folders


def test_the_most_recent_projects_are_kept():
    kept = ParsedProjects(capacity=2)
    kept.put("a", "A")
    kept.put("b", "B")
    assert kept.get("a") == "A"  # now the most recent
    kept.put("c", "C")
    assert kept.get("b") is None and kept.get("a") == "A" and kept.get("c") == "C"
    assert len(kept) == 2


def test_command_name_skips_options():
    assert command_name(["--quiet", "build", "--select", "x"]) == "build"
    assert command_name([]) == ""


def parse_events(events: list[str]) -> int:
    """dbt fires StateCheckVarsHash once in each parse of the project."""
    return events.count("StateCheckVarsHash")


def test_commands_reuse_the_parse_and_see_an_edited_model(settings, spark, tmp_path):
    project = tmp_path / "project"
    shutil.copytree(ADAPTER_PROJECT, project)
    scoped = replace(settings.with_prefix("parsed_projects_"), project_dir=project)
    events: list[str] = []

    def collect(event) -> None:
        events.append(event.info.name)

    selection = ["run", "--select", "numbers"]
    run_dbt(scoped, selection, extra_vars={"row_count": 3})
    table = "parsed_projects_plugin_check.numbers"
    assert spark.table(table).count() == 3
    run_dbt(scoped, selection, extra_vars={"row_count": 3}, callbacks=[collect])
    assert parse_events(events) == 0, "the second command parsed the project again"

    # Other vars are another parse; going back to the first vars reuses the first parse.
    run_dbt(scoped, selection, extra_vars={"row_count": 4})
    assert spark.table(table).count() == 4
    events.clear()
    run_dbt(scoped, selection, extra_vars={"row_count": 3}, callbacks=[collect])
    assert parse_events(events) == 0
    assert spark.table(table).count() == 3

    # An edited model is parsed again and built as edited.
    model = project / "models" / "numbers.sql"
    model.write_text(model.read_text(encoding="utf-8") + "\nunion all\nselect 1000 as id, 10000 as amount\n",
                     encoding="utf-8")
    run_dbt(scoped, selection, extra_vars={"row_count": 3})
    assert spark.table(table).count() == 4
    assert spark.table(table).where("id = 1000").count() == 1


def test_the_core_is_read_from_its_own_projects_manifest_after_another_project_wrote_the_shared_one(settings, spark,
                                                                                                   tmp_path):
    """The suite (like any user with ``$DBT_TARGET_PATH``) shares one target folder between projects: after a
    command on another project, the manifest there is that project's, and the lineage core is not in it."""
    project = tmp_path / "project"
    shutil.copytree(ADAPTER_PROJECT, project)
    other = replace(settings.with_prefix("parsed_projects_"), project_dir=project)
    run_dbt(other, ["parse"])
    assert project_name(project) == "adapter_plugin_check"
    assert load_manifest(other)["metadata"]["project_name"] == "adapter_plugin_check"

    core = core_models(settings)
    assert {"int_lineage_build_tails", "int_lineage_version_revisions", "runs", "stg_lineage_events"} <= set(core)
    assert load_manifest(settings)["metadata"]["project_name"] == project_name(PROJECT_DIR) == "lineage_warehouse"

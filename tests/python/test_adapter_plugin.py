"""The spark_python adapter plugin: Python models run in the live SparkSession."""

from __future__ import annotations

import pytest

from python_jobs.dbt import run_dbt

ADAPTER_PROJECT = "tests/python/adapter_project"


def _results_by_name(outcome) -> dict[str, object]:
    return {result.node.name: result for result in outcome.result.results}


@pytest.fixture(scope="module")
def plugin_settings(settings, spark):
    from dataclasses import replace

    from python_jobs.settings import PROJECT_DIR

    scoped = replace(settings.with_prefix("plugin_"), project_dir=PROJECT_DIR / ADAPTER_PROJECT)
    return scoped


@pytest.fixture(scope="module")
def first_run(plugin_settings):
    return run_dbt(plugin_settings, ["run"], extra_vars={"row_count": 5}, check=False)


def test_adapter_is_the_plugin(first_run):
    from dbt.adapters.factory import get_adapter_class_by_name

    adapter_class = get_adapter_class_by_name("spark_python")
    assert adapter_class.__name__ == "SparkPythonAdapter"
    assert adapter_class.default_python_submission_method.fget is not None


def test_python_table_model_builds_from_sql_model(first_run, spark):
    results = _results_by_name(first_run)
    assert str(results["doubled_py"].status) == "success"
    rows = spark.table("plugin_plugin_check.doubled_py").orderBy("id").collect()
    assert [(r.id, r.amount, r.doubled) for r in rows] == [(i, i * 10, i * 20) for i in range(5)]


def test_failing_python_model_is_a_named_error_and_others_still_run(first_run):
    results = _results_by_name(first_run)
    failing = results["failing_py"]
    assert str(failing.status) == "error"
    assert "model.adapter_plugin_check.failing_py" in failing.message
    assert "ValueError: intentional failure from failing_py" in failing.message
    assert "explode_on_purpose" in failing.message  # the traceback names the user's function
    assert not first_run.success
    assert {name for name, r in results.items() if str(r.status) == "success"} == {
        "numbers",
        "doubled_py",
        "append_py",
        "orc_formatted_py",
    }


def test_file_format_config_is_honoured(first_run, spark):
    def provider(table: str) -> str:
        rows = spark.sql(f"describe table extended {table}").collect()
        return next(r.data_type for r in rows if r.col_name == "Provider").lower()

    assert provider("plugin_plugin_check.doubled_py") == "parquet"  # the default, not delta
    assert provider("plugin_plugin_check.orc_formatted_py") == "orc"


def test_incremental_python_model_appends_only_new_rows(first_run, plugin_settings, spark):
    table = "plugin_plugin_check.append_py"
    first = spark.table(table).collect()
    assert sorted(r.id for r in first) == [0, 1, 2, 3, 4]
    assert not any(r.loaded_incrementally for r in first)

    second = run_dbt(
        plugin_settings, ["run", "--select", "numbers", "append_py"], extra_vars={"row_count": 8}
    )
    assert second.success
    rows = spark.table(table).collect()
    assert sorted(r.id for r in rows) == list(range(8))  # no duplicates: the filter read {{ this }}
    assert sorted(r.id for r in rows if r.loaded_incrementally) == [5, 6, 7]

    third = run_dbt(plugin_settings, ["run", "--select", "numbers", "append_py"], extra_vars={"row_count": 8})
    assert third.success
    assert spark.table(table).count() == 8


def test_session_cursor_configures_spark_once_per_connection(spark, monkeypatch):
    """Each dbt connection passes the profile's settings through the builder for its first statement
    only, and runs the later ones on the same session."""
    from dbt.adapters.spark_python.connections import SettingsOnceConnection
    from pyspark.sql import SparkSession

    built = []
    get_or_create = SparkSession.Builder.getOrCreate
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", lambda self: built.append(1) or get_or_create(self))
    zone = spark.conf.get("spark.sql.session.timeZone")
    connection = SettingsOnceConnection(server_side_parameters={"spark.sql.session.timeZone": zone})
    answers = []
    for value in range(3):
        cursor = connection.cursor()
        cursor.execute(f"select {value} as answer")
        answers.append(cursor.fetchall()[0]["answer"])
    assert answers == [0, 1, 2]
    assert len(built) == 1
    assert connection.configured_session() is connection.session
    assert SettingsOnceConnection(server_side_parameters={}).configured_session().sparkContext is spark.sparkContext


@pytest.fixture(scope="module")
def seed_project(plugin_settings, tmp_path_factory):
    """The plugin's test project with a seed, in a folder of its own: the test edits the CSV."""
    import shutil
    from dataclasses import replace

    from python_jobs.settings import PROJECT_DIR

    folder = tmp_path_factory.mktemp("seed-project") / "project"
    shutil.copytree(PROJECT_DIR / ADAPTER_PROJECT, folder)
    (folder / "seeds").mkdir()
    (folder / "seeds" / "letters.csv").write_text("letter,position\na,1\nb,2\n", encoding="utf-8")
    (folder / "dbt_project.yml").write_text(
        (folder / "dbt_project.yml").read_text(encoding="utf-8")
        + 'seed-paths: ["seeds"]\nseeds:\n  adapter_plugin_check:\n    +schema: plugin_check\n', encoding="utf-8")
    return replace(plugin_settings, project_dir=folder)


def test_a_seed_loads_when_its_csv_changed_and_is_kept_otherwise(seed_project, spark):
    table = "plugin_plugin_check.letters"

    def seed(*flags: str) -> str:
        outcome = run_dbt(seed_project, ["seed", *flags])
        [result] = outcome.result.results
        return str(result.adapter_response.get("_message") or result.message)

    def state() -> tuple[list[tuple], str | None, str | None]:
        rows = sorted((r.letter, r.position) for r in spark.table(table).collect())
        properties = {r.key: r.value for r in spark.sql(f"show tblproperties {table}").collect()}
        return rows, properties.get("lineage.seed_checksum"), properties.get("transient_lastDdlTime")

    spark.sql(f"drop table if exists {table}")
    assert seed() == "INSERT 2"
    loaded = state()
    assert loaded[0] == [("a", 1), ("b", 2)]
    assert loaded[1]  # recorded after the rows were in

    assert seed() == "KEPT"
    assert state() == loaded  # not dropped, created or written again

    (seed_project.project_dir / "seeds" / "letters.csv").write_text("letter,position\na,1\nb,2\nc,3\n",
                                                                     encoding="utf-8")
    assert seed() == "INSERT 3"
    changed = state()
    assert changed[0] == [("a", 1), ("b", 2), ("c", 3)]
    assert changed[1] not in (None, loaded[1])
    assert seed() == "KEPT"

    # A table that lost its rows some other way is loaded again on --full-refresh, as dbt always does.
    spark.sql(f"truncate table {table}")
    assert seed() == "KEPT"
    assert seed("--full-refresh") == "CREATE 3"
    assert state()[0] == changed[0]


def test_an_upstream_question_is_asked_once_per_invocation():
    """``upstream_scalar``: models of one dbt invocation asking the same question of their upstream share one
    answer, also when they ask at the same moment; another invocation asks again; a failed question is not
    kept."""
    import threading
    import time
    from collections import OrderedDict
    from types import SimpleNamespace

    from dbt.adapters.spark_python.impl import KEPT_INVOCATIONS, SparkPythonAdapter

    asked: list[str] = []
    answers = iter(range(100))

    def execute(sql: str, fetch: bool):
        asked.append(sql)
        time.sleep(0.2)  # long enough for the other thread to ask meanwhile
        if sql == "fails":
            raise RuntimeError("metastore down")
        return None, SimpleNamespace(rows=[[next(answers)]])

    adapter = SimpleNamespace(_upstream_answers=OrderedDict(), _upstream_lock=threading.Lock(), execute=execute)

    def ask(sql: str, invocation: str) -> int:
        return SparkPythonAdapter.upstream_scalar(adapter, sql, invocation)

    at_once: list[int] = []
    threads = [threading.Thread(target=lambda: at_once.append(ask("q", "run-1"))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert at_once == [0, 0] and asked == ["q"]
    assert ask("q", "run-1") == 0 and ask("other", "run-1") == 1
    assert ask("q", "run-2") == 2  # a later build asks again
    assert asked == ["q", "other", "q"]

    for _ in range(2):
        with pytest.raises(RuntimeError, match="metastore down"):
            ask("fails", "run-2")
    assert asked.count("fails") == 2

    for number in range(KEPT_INVOCATIONS + 1):
        ask("q", f"later-{number}")
    assert "run-1" not in adapter._upstream_answers and len(adapter._upstream_answers) == KEPT_INVOCATIONS

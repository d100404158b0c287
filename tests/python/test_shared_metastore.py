"""More than one process on one warehouse.

On the embedded default (Derby, one process): a second process is refused in one line, within seconds and
before its JVM starts, naming the holder and the ways out; ``ingest lineage`` hands its files to the landing
folder of a running ``serve --build-every``. On the PostgreSQL metastore (``LINEAGE_METASTORE_URL``, the
session's throwaway server): the collector with its build loop, an ingest, ``dbt build``, ``dbt docs generate``,
``schema show`` and a notebook's PySpark session all run at once and all succeed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from lineage_events import run_event  # tests/python is on sys.path

from python_jobs.cli import main as cli_main
from python_jobs.landing import LandingLayout
from python_jobs.metastore import (
    URL_KEY,
    Metastore,
    MetastoreBusy,
    command_line,
    explain_open_failure,
    wait_until_free,
)
from python_jobs.ops.lock import LOCAL_LOCK_NAME, LockHolder
from python_jobs.ports import free_port
from python_jobs.serve.process import health, start_collector, stop_collector
from python_jobs.settings import PROJECT_DIR, Settings
from python_jobs.spark import target_spark_conf

DERBY_CONF = {"spark.hadoop.javax.jdo.option.ConnectionURL": "jdbc:derby:;databaseName=/w/metastore_db;create=true"}


def _events_file(path: Path, count: int, namespace: str = "tests", dataset: str = "handed") -> Path:
    lines = []
    for index in range(count):
        run_id = f"00000002-0000-4000-8000-{zlib.crc32(dataset.encode()) % 10**6:06d}{index:06d}"
        event = run_event(
            run={"runId": run_id},
            eventTime=f"2026-01-01T00:{index // 60:02d}:{index % 60:02d}Z",
            job={"namespace": namespace, "name": f"job_{index % 3}"},
            outputs=[{"namespace": namespace, "name": dataset, "facets": {"schema": {"fields": [
                {"name": "id", "type": "int"}, *([{"name": "extra", "type": "string"}] if index % 2 else []),
            ]}}}],
        )
        lines.append(json.dumps(event))
    path.write_text("\n".join(lines) + "\n")
    return path


def _cli(args: list[str], env: dict[str, str], timeout: float = 120) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "python_jobs", *args], cwd=PROJECT_DIR, env=env, capture_output=True, text=True,
        timeout=timeout, check=False,
    )
    return result, time.monotonic() - started


def _embedded_env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "LINEAGE_METASTORE_URL"}
    return {**env, "LINEAGE_HOME": str(home), "LINEAGE_DRIVER_MEMORY": "1g", "LINEAGE_LOCAL_MASTER": "local[1]"}


def _assert_one_line_refusal(result: subprocess.CompletedProcess[str], seconds: float, holder: str, pid: int) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    [line] = lines
    assert line.startswith("error: the warehouse metastore (embedded Derby, "), line
    assert holder in line and f"pid {pid}" in line and " since 20" in line, line
    for way_out in ("`serve --sql-port`", "land events", "LINEAGE_METASTORE_URL=jdbc:postgresql://"):
        assert way_out in line, line
    assert "Exception" not in line and "at org." not in result.stderr
    assert seconds < 15, f"the refusal took {seconds:.1f}s"
    return line


def test_the_metastore_url_configures_every_target(monkeypatch, tmp_path):
    """One home for the metastore settings: profiles.yml's shared block, on both targets; Derby keeps Spark's
    defaults, a server gets its driver on the class path and every table created when the client starts."""
    monkeypatch.setenv("LINEAGE_HOME", str(tmp_path))
    monkeypatch.delenv("LINEAGE_METASTORE_URL", raising=False)
    monkeypatch.delenv("LINEAGE_JDBC_JARS", raising=False)
    settings = Settings(PROJECT_DIR, tmp_path, "local", "")
    for target in ("local", "cluster"):
        conf = target_spark_conf(settings, target)
        assert conf[URL_KEY] == f"jdbc:derby:;databaseName={tmp_path}/metastore_db;create=true"
        assert conf["spark.hadoop.datanucleus.autoStartMechanism"] == "None"
        assert conf["spark.driver.extraClassPath"] == "/usr/share/java/postgresql.jar"
    url = "jdbc:postgresql://db:5432/metastore?user=u&password=p"
    monkeypatch.setenv("LINEAGE_METASTORE_URL", url)
    monkeypatch.setenv("LINEAGE_JDBC_JARS", "/opt/jdbc/postgresql.jar")
    for target in ("local", "cluster"):
        conf = target_spark_conf(settings, target)
        assert conf[URL_KEY] == url and conf["spark.driver.extraClassPath"] == "/opt/jdbc/postgresql.jar"
        assert conf["spark.hadoop.datanucleus.schema.autoCreateAll"] == "true"
        assert conf["spark.hadoop.hive.metastore.schema.verification"] == "false"
        assert conf["spark.hadoop.datanucleus.autoStartMechanism"] == "Classes"
        classes = [name.strip() for name in conf["spark.hadoop.datanucleus.autoStartClassNames"].split(",")]
        assert len(classes) == 30 and "org.apache.hadoop.hive.metastore.model.MTable" in classes
    assert target_spark_conf(settings, "cluster")["spark.master"].startswith("spark://")


def test_derby_urls_and_messages_need_no_jvm(tmp_path):
    assert Metastore.from_conf(DERBY_CONF).embedded_dir == Path("/w/metastore_db")
    assert Metastore("jdbc:derby:/w/m;create=true", ()).embedded_dir == Path("/w/m")
    assert Metastore("jdbc:derby://host:1527/m", ()).embedded_dir is None
    assert Metastore("jdbc:derby:memory:m;create=true", ()).embedded_dir is None
    server = Metastore("jdbc:postgresql://h:5432/m?user=u&password=secret", (str(tmp_path / "missing.jar"),))
    assert server.embedded_dir is None and "secret" not in server.display
    with pytest.raises(Exception, match=r"libpostgresql-jdbc-java .*LINEAGE_JDBC_JARS"):
        server.check_driver()
    Metastore(server.url, (str(tmp_path),)).check_driver()
    # A Derby boot failure that gets past the pre-check (two processes starting at once) reads the same.
    derby = Metastore.from_conf(DERBY_CONF)
    java_text = ("An error occurred while calling o31.databaseExists.\n: java.sql.SQLException: Failed to start "
                 "database '/w/metastore_db' with class loader ..., see the next exception for details.\n"
                 "Caused by: ERROR XSDB6: Another instance of Derby may have already booted the database "
                 "/w/metastore_db.")
    assert isinstance(explain_open_failure(derby, java_text), MetastoreBusy)
    refused = str(explain_open_failure(server, (
        "org.apache.hadoop.hive.ql.metadata.HiveException: java.lang.RuntimeException: Unable to instantiate "
        "org.apache.hadoop.hive.ql.metadata.SessionHiveMetaStoreClient\n\tat org.apache.Foo.bar(Foo.java:1)\n"
        "Caused by: javax.jdo.JDOFatalDataStoreException: Unable to open a test connection to the given database. "
        "JDBC url = jdbc:postgresql://h:5432/m?user=u&password=secret\n"
        "Caused by: org.postgresql.util.PSQLException: Connection to h:5432 refused. Check that the hostname\n"
        "Caused by: java.net.ConnectException: Connection refused"
    )))
    assert refused.startswith("the metastore jdbc:postgresql://h:5432/m?user=u&password=*** cannot be opened: ")
    assert refused.endswith("org.postgresql.util.PSQLException: Connection to h:5432 refused. Check that the hostname")
    assert "secret" not in refused and "\n" not in refused
    assert command_line(["/venv/bin/python", "-m", "python_jobs", "serve", "--port", "5000"]) == (
        "python -m python_jobs serve --port 5000"
    )
    assert command_line(["/venv/bin/python3.11", "/venv/bin/dbt", "docs", "generate"]) == "dbt docs generate"


def test_a_second_process_on_embedded_derby_is_refused_in_one_line_and_ingest_hands_off(tmp_path):
    """``serve --build-every`` holds the embedded metastore; ``schema show`` and ``warehouse compact`` are refused
    in one line within seconds, before their JVM starts; ``ingest lineage`` hands its file to serve's landing
    folder; ``metastore show`` names the holder."""
    home = tmp_path / "home"
    env = _embedded_env(home)
    landing = LandingLayout(home / "landing" / "lineage")
    port = free_port()
    serve = start_collector(
        landing.root, port, ["--build-every", "1h", "--no-read-api"], env=env, log=tmp_path / "serve.log",
        ready_timeout=300,
    )
    try:
        shown, seconds = _cli(["schema", "show", "tests", "handed"], env)
        line = _assert_one_line_refusal(shown, seconds, "`python -m python_jobs serve --port", serve.pid)
        assert f"{landing.root}/sealed" in line
        compact, seconds = _cli(["warehouse", "compact"], env)
        _assert_one_line_refusal(compact, seconds, "serve", serve.pid)

        events = _events_file(tmp_path / "events.ndjson", 4)
        ingest, seconds = _cli(["ingest", "lineage", str(events)], env)
        assert ingest.returncode == 0, (ingest.stdout, ingest.stderr)
        assert "handed 1 file(s)" in ingest.stdout and f"pid {serve.pid}" in ingest.stdout, ingest.stdout
        assert seconds < 15
        [handed] = [path for path in landing.sealed_files() if path.name.startswith("handed-")]
        assert handed.name.endswith("-events.ndjson") and handed.read_bytes() == events.read_bytes()

        show, _ = _cli(["metastore", "show"], env)
        assert show.returncode == 0 and f"pid {serve.pid}" in show.stdout, show.stdout
    finally:
        # uvicorn re-raises the SIGTERM it handled once it has shut down cleanly.
        assert stop_collector(serve) in (0, -15), (tmp_path / "serve.log").read_text()[-3000:]
    # The holder is gone: the metastore is free again, and its record is left to show who had it.
    show, _ = _cli(["metastore", "show"], env)
    assert "not open in any process" in show.stdout, show.stdout


def _stand_in_derby_holder(home: Path, seconds: float) -> subprocess.Popen[str]:
    """A process holding the lock Derby takes on ``metastore_db/dbex.lck`` (no JVM) for ``seconds``."""
    (home / "metastore_db").mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time; handle = open(sys.argv[1], 'w'); "
         "fcntl.lockf(handle, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(float(sys.argv[2]))",
         str(home / "metastore_db" / "dbex.lck"), str(seconds)],
        stdout=subprocess.PIPE, text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


def test_a_process_that_opened_derby_without_python_jobs_is_named_too(tmp_path, monkeypatch, capsys):
    """A notebook or plain dbt writes no holder record; Derby's own lock names it (here a stand-in that takes the
    lock Derby takes on ``metastore_db/dbex.lck``; no JVM). A writer's ``--wait`` waits for it to exit."""
    home = tmp_path / "home"
    holder = _stand_in_derby_holder(home, 120)
    try:
        shown, seconds = _cli(["schema", "show", "tests", "x"], _embedded_env(home))
        _assert_one_line_refusal(shown, seconds, "`python -c 'import fcntl", holder.pid)
        # In this process too (the writer path, before the writer lock): --wait gives up after its time.
        monkeypatch.setenv("LINEAGE_HOME", str(home))
        assert cli_main(["ingest", "lineage", "--wait", "1", str(tmp_path)]) == 2
        assert "waiting up to 1s for `python -c" in capsys.readouterr().err
    finally:
        holder.kill()
        holder.wait()
    metastore = Metastore.from_conf(DERBY_CONF | {URL_KEY: f"jdbc:derby:;databaseName={home}/metastore_db"})
    brief = _stand_in_derby_holder(home, 2)
    try:
        assert 1 < wait_until_free(metastore, 60) < 15
    finally:
        brief.wait()


NOTEBOOK = """
from pyspark.sql import SparkSession
from python_jobs.settings import load_settings
from python_jobs.spark import target_spark_conf

# A notebook's session on the warehouse: plain PySpark with the target's settings (the metastore among them).
builder = SparkSession.builder.enableHiveSupport()
for key, value in target_spark_conf(load_settings()).items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
print("raw events", spark.table("raw.lineage_events").count())
print("schema events", spark.table("lineage.dataset_schema_events").count())
"""
# The build loop's rounds run the schema history's models (a dozen), not the whole project, and the concurrent
# `dbt build` builds one model and its tests: what is tested here is processes sharing the metastore (CI's time
# is short), and other tests build everything.
ROUND_COMMAND = "run --select +dataset_schema_events"


def _post_events(port: int, events: Path) -> None:
    for line in events.read_text().splitlines():
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/v1/lineage", data=line.encode(), method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 201


def _wait_for(predicate: Callable[[], bool], timeout: float, what: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what()
        time.sleep(1)


def test_processes_share_a_warehouse_on_the_postgresql_metastore(tmp_path, postgres_metastore_url):
    """On one warehouse with a PostgreSQL metastore, at once: ``serve --build-every`` (collector and build loop),
    ``ingest lineage`` and plain ``dbt build`` (both queue for the writer lock, as the build loop's rounds do),
    ``dbt docs generate``, ``schema show`` and a notebook's PySpark session. Every one succeeds."""
    home = tmp_path / "home"
    base = {key: value for key, value in os.environ.items() if key not in ("DBT_TARGET_PATH", "DBT_LOG_PATH")}
    base.update(LINEAGE_HOME=str(home), LINEAGE_METASTORE_URL=postgres_metastore_url, LINEAGE_DRIVER_MEMORY="1g",
                LINEAGE_LOCAL_MASTER="local[1]", LINEAGE_LOCK_WAIT="900")

    def env_for(name: str) -> dict[str, str]:  # dbt's artifacts and logs apart per process
        return {**base, "DBT_TARGET_PATH": str(tmp_path / name / "target"), "DBT_LOG_PATH": str(tmp_path / name)}

    started = time.monotonic()
    port = free_port()
    serve_log = tmp_path / "serve.log"
    serve = start_collector(
        home / "landing" / "lineage", port,
        ["--build-every", "2s", "--lock-wait", "15m", "--build-args", ROUND_COMMAND, "--no-read-api"],
        env=env_for("serve"), log=serve_log, ready_timeout=300,
    )
    children: dict[str, subprocess.Popen[str]] = {}

    def launch(name: str, command: list[str]) -> None:
        children[name] = subprocess.Popen(command, cwd=PROJECT_DIR, env=env_for(name.replace(" ", "_")),
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    dbt = str(Path(sys.executable).with_name("dbt"))
    try:
        # The first round creates the tables from events sent to the collector; the writers, started once it
        # has sealed them and holds the writer lock, queue behind it.
        _post_events(port, _events_file(tmp_path / "posted.ndjson", 6, dataset="posted"))
        landing = LandingLayout(home / "landing" / "lineage")

        def first_round_holds_the_lock() -> bool:
            lock_file = home / LOCAL_LOCK_NAME
            holder = LockHolder.from_json(lock_file.read_text()) if lock_file.exists() else None
            sealed = landing.sealed_files() or list(landing.ingested_dir.iterdir())
            return bool(sealed) and holder is not None and holder.command.startswith("serve")

        _wait_for(first_round_holds_the_lock, 60, lambda: serve_log.read_text()[-4000:])
        launch("ingest", [sys.executable, "-m", "python_jobs", "ingest", "lineage", "--wait", "900",
                          str(_events_file(tmp_path / "ingested.ndjson", 6, dataset="ingested"))])
        launch("dbt build", [dbt, "build", "--select", "stg_lineage_events"])
        _wait_for(lambda: "dbt build done" in serve_log.read_text(), 600, lambda: serve_log.read_text()[-4000:])
        first_round = time.monotonic() - started
        # The readers need its tables; they run while the writers take their turns.
        launch("dbt docs", [dbt, "docs", "generate"])
        launch("schema show", [sys.executable, "-m", "python_jobs", "schema", "show", "tests", "posted"])
        launch("notebook", [sys.executable, "-c", NOTEBOOK])
        try:
            outputs = {name: child.communicate(timeout=900)[0] for name, child in children.items()}
        finally:
            for child in children.values():
                if child.poll() is None:
                    child.kill()
        beside = time.monotonic() - started - first_round
        failed = {name: outputs[name][-3000:] for name, child in children.items() if child.returncode != 0}
        assert not failed, failed
        assert "accepted 6" in outputs["ingest"], outputs["ingest"]
        assert "initial schema" in outputs["schema show"], outputs["schema show"]
        assert int(outputs["notebook"].split("raw events ")[1].split()[0]) >= 6, outputs["notebook"]
        assert (tmp_path / "dbt_docs" / "target" / "catalog.json").is_file()
        # The collector is still up; its build loop took its turn at the writer lock all along (a round every 2s).
        assert serve.poll() is None and health(port)["received"] == 6
    finally:
        # A clean stop lets a running round finish first.
        assert stop_collector(serve, timeout=600) in (0, -15), serve_log.read_text()[-4000:]
    rounds = [line for line in serve_log.read_text().splitlines() if line.startswith("[build round")]
    assert len(rounds) >= 2 and not [line for line in rounds if "round failed" in line], rounds
    print(f"first round through the collector {first_round:.0f}s; then {beside:.0f}s until all five were done; "
          f"{len(rounds)} rounds")

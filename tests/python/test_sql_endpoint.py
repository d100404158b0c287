"""``serve``'s SQL endpoint with real clients: beeline (shipped with pyspark), PyHive (DB-API) and dbt-spark's
``thrift`` method (the analyst project in ``sql_analyst_project/``, the ``thrift`` target of profiles.yml).

One ``python -m python_jobs serve --build-every`` process serves the whole module, on a warehouse of its own (its
own LINEAGE_HOME and Derby metastore). Its build loop builds what the events posted here give (the models
``lineage.runs`` and ``lineage.jobs`` read), so the rows the clients must see are known. The serve process logs
which scheduler pool each Spark task set joins (FairSchedulableBuilder at INFO), so the test sees the pools apply.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyspark
import pytest
from pyhive import hive

from python_jobs.errors import UserFacingError
from python_jobs.ports import free_port
from python_jobs.serve.process import start_collector, stop_collector
from python_jobs.serve.sql_endpoint import WRITES_REFUSED, check_port_free, exposure_warning, guard_jar
from python_jobs.settings import PROJECT_DIR

ANALYST_PROJECT = Path(__file__).parent / "sql_analyst_project"
BEELINE = Path(pyspark.__file__).resolve().parent / "bin" / "beeline"
NAMESPACE = "sql_endpoint_tests"
# The models the analyst project and the queries read, not the whole project: the endpoint is under test.
ROUND = "run --select +runs +jobs"
RUNS = "select uuid, job_name, current_run_state from lineage.runs"
WAIT_SECONDS = 900


def run_id(batch: str, number: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"sql-endpoint-test/{batch}/{number}"))


def batch_events(batch: str, runs: int) -> Iterator[dict]:
    """START and COMPLETE of ``runs`` runs of three jobs, each writing a dataset with a schema."""
    for number in range(runs):
        for event_type, second in (("START", 0), ("COMPLETE", 30)):
            yield {
                "eventType": event_type,
                "eventTime": f"2026-03-01T10:{number:02d}:{second:02d}Z",
                "run": {"runId": run_id(batch, number)},
                "job": {"namespace": NAMESPACE, "name": f"job_{batch}_{number % 3}"},
                "inputs": [{"namespace": "db", "name": "source"}],
                "outputs": [{"namespace": "db", "name": f"out_{batch}_{number % 3}", "facets": {"schema": {
                    "_producer": "https://example.com/tests",
                    "_schemaURL": "https://openlineage.io/spec/facets/1-1-1/SchemaDatasetFacet.json",
                    "fields": [{"name": "id", "type": "int"}],
                }}}],
                "producer": "https://example.com/tests",
                "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
            }


@dataclass
class Endpoint:
    http_port: int
    sql_port: int
    home: Path
    log: Path
    expected: set[tuple[str, str, str]] = field(default_factory=set)  # (run uuid, job name, state) built so far

    def post(self, batch: str, runs: int) -> set[tuple[str, str, str]]:
        for event in batch_events(batch, runs):
            request = urllib.request.Request(f"http://127.0.0.1:{self.http_port}/api/v1/lineage",
                                             data=json.dumps(event).encode(), method="POST",
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=30) as response:
                assert response.status == 201
        return {(run_id(batch, n), f"job_{batch}_{n % 3}", "COMPLETE") for n in range(runs)}

    def connect(self) -> hive.Connection:
        return hive.connect(host="127.0.0.1", port=self.sql_port, username="analyst")

    def lock_holder(self) -> dict | None:
        text = (self.home / "writer.lock").read_text() if (self.home / "writer.lock").exists() else ""
        return json.loads(text) if text.strip() else None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def builds(self) -> int:
        """How many build rounds have built; a failed round fails the test with its line."""
        text = self.log_text()
        assert "round failed" not in text, [line for line in text.splitlines() if "round failed" in line]
        return text.count("dbt build done")

    def wait_for_build(self, builds_before: int) -> None:
        deadline = time.monotonic() + WAIT_SECONDS
        while self.builds() == builds_before:
            assert time.monotonic() < deadline, "no build round ended"
            time.sleep(0.5)


def query(cursor, sql: str) -> list[tuple]:
    cursor.execute(sql)
    return cursor.fetchall()


def error_message(error: hive.OperationalError) -> str:
    """The message of a statement's error, without the server's stack trace PyHive's text carries."""
    status = getattr(error.args[0], "status", None) if error.args else None
    return str(getattr(status, "errorMessage", error))


def wait_for_rows(cursor, expected: set, seconds: float = WAIT_SECONDS) -> None:
    """Polls through one connection until it sees ``expected``: after each build round serve refreshes the
    client sessions' cached tables, so an open connection sees the new rows."""
    deadline = time.monotonic() + seconds
    rows: set = set()
    while rows != expected:
        try:
            rows = set(query(cursor, RUNS))
        except hive.OperationalError as error:  # before the first round has built it
            assert "TABLE_OR_VIEW_NOT_FOUND" in str(error), str(error)[:2000]
        if rows != expected:
            assert time.monotonic() < deadline, f"still {len(rows)} runs, expected {len(expected)}"
            time.sleep(2)


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory) -> Iterator[Endpoint]:
    folder = tmp_path_factory.mktemp("sql-endpoint")
    log4j = folder / "log4j2.properties"
    fair_scheduler_at_info = ("logger.fair.name = org.apache.spark.scheduler.FairSchedulableBuilder\n"
                              "logger.fair.level = info\n")
    log4j.write_text((PROJECT_DIR / "conf" / "log4j2.properties").read_text() + fair_scheduler_at_info)
    env = {"LINEAGE_HOME": str(folder / "home"), "LINEAGE_LOG4J": str(log4j), "LINEAGE_SCHEMA_PREFIX": "",
           "DBT_TARGET_PATH": str(folder / "dbt-target"), "DBT_LOG_PATH": str(folder / "dbt-logs")}
    state = Endpoint(free_port(), free_port(), folder / "home", folder / "serve.log")
    server = start_collector(
        folder / "landing", state.http_port,
        ["--build-every", "2s", "--build-args", ROUND, "--no-read-api", "--sql-port", str(state.sql_port)],
        env=env, log=state.log, ready_timeout=300,
    )
    try:
        expected = state.post("a", 6)
        state.wait_for_build(0)
        connection = state.connect()
        wait_for_rows(connection.cursor(), expected)
        connection.close()
        state.expected = expected
        yield state
    finally:
        code = stop_collector(server, timeout=300)
    # A clean shutdown (uvicorn ends the process with the SIGTERM it handled): the endpoint was stopped, after the
    # collector, and no longer listens.
    assert code in (0, -signal.SIGTERM), state.log_text()[-3000:]
    assert state.log_text().split("collector stopped")[-1].count(f"SQL endpoint stopped: 127.0.0.1:{state.sql_port}")
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", state.sql_port), timeout=5).close()


def test_startup_says_where_to_connect(endpoint):
    assert f"SQL endpoint: jdbc:hive2://127.0.0.1:{endpoint.sql_port}/default" in endpoint.log_text()
    assert "read-only; no authentication" in endpoint.log_text()


def test_pyhive_reads_the_warehouse_rows_and_session_local_statements_work(endpoint):
    connection = endpoint.connect()
    cursor = connection.cursor()
    assert {"lineage", "raw", "staging"} <= {row[0] for row in query(cursor, "show databases")}
    assert set(query(cursor, RUNS)) == endpoint.expected
    jobs = query(cursor, f"select name from lineage.jobs where namespace_name = '{NAMESPACE}' order by name")
    assert jobs == [("job_a_0",), ("job_a_1",), ("job_a_2",)]
    # What a client may change is its own session: settings, the current database, temporary views, variables.
    query(cursor, "set spark.sql.shuffle.partitions=2")
    assert query(cursor, "set spark.sql.shuffle.partitions") == [("spark.sql.shuffle.partitions", "2")]
    query(cursor, "use lineage")
    query(cursor, "create or replace temporary view my_runs as select * from runs where job_name like 'job_a_%'")
    assert query(cursor, "select count(*) from my_runs") == [(len(endpoint.expected),)]
    query(cursor, "declare variable wanted string default 'job_a_0'")
    assert query(cursor, "select count(*) from runs where job_name = wanted") == [(2,)]
    other = endpoint.connect()  # another client does not see the first one's view: it is the session's own
    with pytest.raises(hive.OperationalError, match="TABLE_OR_VIEW_NOT_FOUND"):
        query(other.cursor(), "select * from my_runs")
    query(cursor, "drop view my_runs")
    other.close()
    connection.close()


WRITES = [
    "insert into lineage.jobs select * from lineage.jobs",
    "insert overwrite table lineage.jobs values ('u', 'n', 'ns', 'job', timestamp'2026-01-01 00:00:00', 1)",
    "create table default.scratch (a int) using parquet",
    "create table default.scratch as select 1 as a",
    "create view lineage.my_view as select 1 as a",
    "create database scratch",
    "drop table lineage.jobs",
    "drop view lineage.runs",
    "drop database staging cascade",
    "alter table lineage.jobs set location '/tmp/elsewhere'",
    "alter table lineage.jobs set tblproperties ('reviewed_by' = 'me')",
    "alter table lineage.jobs add columns (extra int)",
    "alter table lineage.jobs rename to lineage.jobs_old",
    "truncate table lineage.jobs",
    "analyze table lineage.jobs compute statistics",
    "msck repair table raw.lineage_events",
    "cache table lineage.jobs",
    "uncache table lineage.jobs",
    "clear cache",
    "add jar /tmp/any.jar",
    "create temporary function f as 'org.apache.hadoop.hive.ql.udf.UDFMonth'",
    "insert overwrite directory '/tmp/sql-endpoint-test-out' using parquet select 1",
    "load data local inpath '/etc/hostname' into table lineage.jobs",
    "execute immediate 'insert into lineage.jobs select * from lineage.jobs'",
    "begin insert into lineage.jobs select * from lineage.jobs; end",
]
OTHER_REFUSALS = {
    "select * from text.`{readable_file}`": "queries over files by path are refused",
    "select transform(name) using 'cat' as (x) from lineage.jobs": "SELECT TRANSFORM is refused",
    "select reflect('java.lang.Thread', 'sleep', 1000L)": "reflect, java_method and try_reflect are refused",
    "create global temporary view everyone as select 1 as a": WRITES_REFUSED,
    "create temporary view files using parquet options (path '/tmp')": WRITES_REFUSED,
    "set spark.sql.thriftserver.scheduler.pool=default": "scheduler pool",
}


def test_writes_are_refused_with_where_writes_go_and_change_nothing(endpoint):
    cursor = endpoint.connect().cursor()
    tables_before = sorted(query(cursor, "show tables in lineage"))
    refused = {}
    for statement, expected in [*((s, WRITES_REFUSED) for s in WRITES), *OTHER_REFUSALS.items()]:
        with pytest.raises(hive.OperationalError) as error:
            query(cursor, statement.format(readable_file=endpoint.log))
        refused[statement] = expected in str(error.value) or error_message(error.value)
    assert {statement: ok for statement, ok in refused.items() if ok is not True} == {}
    assert sorted(query(cursor, "show tables in lineage")) == tables_before
    assert "scratch" not in {row[0] for row in query(cursor, "show databases")}
    assert query(cursor, "show tables in default") == []
    assert set(query(cursor, RUNS)) == endpoint.expected


def test_beeline_reads_and_is_refused_a_write(endpoint):
    script = "select count(*) from lineage.runs;\ninsert into lineage.jobs select * from lineage.jobs;\n"
    result = subprocess.run(
        [str(BEELINE), "-u", f"jdbc:hive2://127.0.0.1:{endpoint.sql_port}/lineage", "-n", "analyst",
         "--outputformat=csv2", "--showHeader=false", "--force=true", "-e", script],
        capture_output=True, text=True, timeout=300, check=False,
    )
    output = result.stdout + result.stderr
    assert f"\n{len(endpoint.expected)}\n" in f"\n{result.stdout}", output[-3000:]
    assert "the SQL endpoint is read-only and refuses INSERT" in output and WRITES_REFUSED in output


def test_a_query_answers_while_a_build_round_runs_and_then_sees_its_rows(endpoint):
    connection = endpoint.connect()
    cursor = connection.cursor()
    assert set(query(cursor, RUNS)) == endpoint.expected  # this connection has resolved the tables
    dbt_starts, builds = endpoint.log_text().count("Running with dbt="), endpoint.builds()
    new = endpoint.post("b", 4)
    # The round that ingests them is running once it holds the writer lock and its dbt command has started.
    deadline = time.monotonic() + WAIT_SECONDS
    while (holder := endpoint.lock_holder()) is None or endpoint.log_text().count("Running with dbt=") == dbt_starts:
        assert time.monotonic() < deadline, "no build round started"
        time.sleep(0.05)
    started = time.monotonic()
    rows = set(query(cursor, RUNS))
    answered_in = time.monotonic() - started
    assert endpoint.lock_holder() == holder, "the round ended before the query answered: it proves nothing"
    assert rows == endpoint.expected  # the state before the round: the round has not finished
    print(f"query answered in {answered_in:.2f} s during the build round")
    # After the round the same connection sees its rows (serve refreshed the client sessions' cached tables).
    endpoint.wait_for_build(builds)
    wait_for_rows(cursor, endpoint.expected | new)
    endpoint.expected |= new
    connection.close()
    # The scheduler put client statements in the pool `sql` and the build in `default`.
    pools = re.findall(r"Added task set \S+ tasks to pool (\w+)", endpoint.log_text())
    assert {"sql", "default"} <= set(pools), sorted(set(pools))


def test_an_analysts_dbt_project_reads_through_the_thrift_target(endpoint, tmp_path):
    env = {**os.environ, "LINEAGE_SQL_PORT": str(endpoint.sql_port), "DBT_PROFILES_DIR": str(PROJECT_DIR),
           "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    dbt = Path(sys.executable).with_name("dbt")
    result = subprocess.run(
        [str(dbt), "build", "--target", "thrift", "--project-dir", str(ANALYST_PROJECT),
         "--target-path", str(tmp_path / "target"), "--log-path", str(tmp_path / "logs"),
         "--vars", json.dumps({"expected_runs": len(endpoint.expected)})],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )
    results = json.loads((tmp_path / "target" / "run_results.json").read_text())["results"]
    status = {item["unique_id"].split(".")[-1] if item["unique_id"].startswith("model.")
              else item["unique_id"].split(".")[2]: item["status"] for item in results}
    # Every test ran against the warehouse and passed; the one model that writes was refused.
    assert status.pop("analyst_table") == "error", result.stdout[-3000:]
    assert status and set(status.values()) == {"pass"}, (status, result.stdout[-3000:])
    assert {"every_run_counted", "runs_match_the_posted_events"} <= set(status)
    assert result.returncode == 1 and WRITES_REFUSED in result.stdout


def test_a_taken_sql_port_is_refused_in_one_line_before_spark_starts(endpoint, tmp_path):
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "python_jobs", "serve", "--port", str(free_port()), "--landing", str(tmp_path),
         "--read-api", "--sql-port", str(endpoint.sql_port)],
        cwd=PROJECT_DIR, env={**os.environ, "LINEAGE_HOME": str(tmp_path / "home")},
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.startswith(f"error: the SQL endpoint cannot listen on 127.0.0.1:{endpoint.sql_port}")
    assert "--sql-port PORT, or --no-sql-endpoint" in result.stderr and len(result.stderr.splitlines()) == 1
    assert time.monotonic() - started < 60 and not (tmp_path / "home" / "metastore_db").exists()
    with pytest.raises(UserFacingError, match="cannot listen"):
        check_port_free("127.0.0.1", endpoint.sql_port)


def test_the_guard_is_compiled_once_per_source(settings):
    first = guard_jar(settings)
    modified = first.stat().st_mtime_ns
    assert guard_jar(settings) == first and first.stat().st_mtime_ns == modified
    assert first.name.startswith("sql-endpoint-guard-") and first.suffix == ".jar"


def test_a_non_loopback_sql_host_is_warned_about():
    assert exposure_warning("127.0.0.1") is None and exposure_warning("::1") is None
    assert "no authentication" in (exposure_warning("0.0.0.0") or "")

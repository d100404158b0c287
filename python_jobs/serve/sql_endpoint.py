"""The SQL endpoint of ``serve``: Spark's Thrift JDBC/ODBC server (the HiveServer2 protocol) inside the serve
process's own Spark session, so SQL clients (beeline, JDBC and ODBC BI tools, PyHive, dbt-spark's ``thrift``
method) query the warehouse in the process that owns it.

- **Read-only clients.** ``jvm/ReadOnlyClients.java``, a Spark session extension, adds a check rule to every
  session of the JVM: the session serve ingests and builds in is registered as the writer and passes; every client
  session gets a clear error for DDL and DML (writes go through ingest and builds), file reads by path, SELECT
  TRANSFORM and reflect. The Java source is compiled once with ``javac`` against the installed Spark's jars and
  cached by its hash (``guard_jar``): no binary is committed.
- **Its own scheduler pool.** The session runs Spark's FAIR scheduler with the pools of ``conf/fairscheduler.xml``;
  client statements run in the pool ``sql`` (minimum share one core), the build loop in ``default``, so a query
  starts on the next free core instead of waiting for a build round to end.
- **Fresh reads.** Each client session caches the tables it resolved (their file listings); ``refresh_readers``
  drops those caches after every build round, so an open connection sees what the round wrote.

``prepare_spark_conf`` comes first (before Spark starts: it checks the port and compiles the guard), then
``SqlEndpoint.start`` once the session is up, and ``stop`` at shutdown.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pyspark
from pyspark.sql import SparkSession

from python_jobs.errors import UserFacingError
from python_jobs.settings import PROJECT_DIR, Settings

DEFAULT_SQL_PORT = 10000
DEFAULT_SQL_HOST = "127.0.0.1"
SQL_POOL = "sql"
GUARD_CLASS = "lineagewarehouse.sqlendpoint.ReadOnlyClients"
GUARD_SOURCE = Path(__file__).resolve().parent / "jvm" / "ReadOnlyClients.java"
FAIR_SCHEDULER_FILE = PROJECT_DIR / "conf" / "fairscheduler.xml"
# What a client reads in its error when a statement is refused; tests and docs quote it.
WRITES_REFUSED = "writes go through ingest and builds"
JAVAC_TIMEOUT_SECONDS = 300

T = TypeVar("T")


# ------------------------------------------------------------------------------------------------ the guard


def spark_jars_dir() -> Path:
    """The jars the session's JVM runs on: ``$SPARK_HOME/jars`` when set (pyspark uses it), else pyspark's own."""
    spark_home = os.environ.get("SPARK_HOME")
    if spark_home and (Path(spark_home) / "jars").is_dir():
        return Path(spark_home) / "jars"
    return Path(pyspark.__file__).resolve().parent / "jars"


def _guard_key(jars: Path) -> str:
    """The cache key of the compiled guard: its source and the Spark and Scala jars it is compiled against."""
    digest = hashlib.sha256(GUARD_SOURCE.read_bytes())
    for name in sorted(path.name for path in jars.glob("*.jar")):
        if name.startswith(("spark-sql", "spark-catalyst", "spark-core", "scala-library")):
            digest.update(name.encode())
    return digest.hexdigest()[:16]


def _cache_dirs(settings: Settings) -> list[Path]:
    """Where a compiled guard is kept: the virtualenv (shared by every LINEAGE_HOME), else LINEAGE_HOME."""
    dirs = []
    if sys.prefix != sys.base_prefix:
        dirs.append(Path(sys.prefix) / "share" / "lineage-warehouse")
    dirs.append(settings.lineage_home / "jvm")
    return dirs


def find_javac() -> Path:
    java_home = os.environ.get("JAVA_HOME")
    candidates = [Path(java_home) / "bin" / "javac"] if java_home else []
    found = shutil.which("javac")
    candidates += [Path(found)] if found else []
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise UserFacingError(
        "the SQL endpoint compiles its read-only guard (python_jobs/serve/jvm/ReadOnlyClients.java) once with "
        "javac, and javac was not found: install a JDK 17 (Debian/Ubuntu: apt-get install openjdk-17-jdk-headless; "
        "macOS: brew install openjdk@17) or point JAVA_HOME at one, or start serve with --no-sql-endpoint"
    )


def guard_jar(settings: Settings) -> Path:
    """The compiled guard, compiled now if no cache holds this source's build (about 5 s, once per source)."""
    jars = spark_jars_dir()
    name = f"sql-endpoint-guard-{_guard_key(jars)}.jar"
    dirs = _cache_dirs(settings)
    for directory in dirs:
        if (directory / name).is_file():
            return directory / name
    for directory in dirs:
        with contextlib.suppress(OSError):
            directory.mkdir(parents=True, exist_ok=True)
        if os.access(directory, os.W_OK):
            return _compile_guard(jars, directory / name)
    raise UserFacingError(f"no writable folder to keep the SQL endpoint's compiled guard in: {dirs}")


def _compile_guard(jars: Path, jar: Path) -> Path:
    javac = find_javac()
    with tempfile.TemporaryDirectory(prefix="sql-endpoint-guard-", dir=jar.parent) as work:
        classes = Path(work) / "classes"
        result = subprocess.run(
            [str(javac), "--release", "17", "-nowarn", "-encoding", "UTF-8", "-cp", str(jars / "*"),
             "-d", str(classes), str(GUARD_SOURCE)],
            capture_output=True, text=True, timeout=JAVAC_TIMEOUT_SECONDS, check=False,
        )
        if result.returncode != 0:
            raise UserFacingError(
                f"javac could not compile the SQL endpoint's guard {GUARD_SOURCE} against {jars} "
                f"(a Spark version it does not know?):\n{(result.stdout + result.stderr).strip()[-3000:]}"
            )
        staged = Path(work) / jar.name
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
        os.replace(staged, jar)  # atomic: a concurrent compile of the same source writes the same classes
    return jar


# ------------------------------------------------------------------------------------------- before Spark


def check_port_free(host: str, port: int) -> None:
    """Fails in one line, before Spark starts, when something already listens on the endpoint's address."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            raise UserFacingError(
                f"the SQL endpoint cannot listen on {host}:{port}: {error.strerror or error} (another serve, or "
                "another HiveServer2?). Pass --sql-port PORT, or --no-sql-endpoint"
            ) from None


def prepare_spark_conf(settings: Settings, base: Mapping[str, str], host: str, port: int) -> dict[str, str]:
    """The settings the session must start with for the endpoint (over the target's ``base``): the guard on the
    driver's class path and in ``spark.sql.extensions``, the FAIR scheduler and the clients' pool. Checks the
    port and compiles the guard first, so a mistake costs no JVM start."""
    check_port_free(host, port)
    jar = guard_jar(settings)
    class_path = [str(jar), *filter(None, [base.get("spark.driver.extraClassPath")])]
    extensions = [*filter(None, [base.get("spark.sql.extensions")]), GUARD_CLASS]
    return {
        "spark.driver.extraClassPath": os.pathsep.join(class_path),
        "spark.sql.extensions": ",".join(extensions),
        "spark.scheduler.mode": "FAIR",
        "spark.scheduler.allocation.file": str(FAIR_SCHEDULER_FILE),
        "spark.sql.thriftserver.scheduler.pool": SQL_POOL,
        # One session per connection (Spark's default, stated): a client's SET, USE and temporary views are its own.
        "spark.sql.hive.thriftServer.singleSession": "false",
    }


# ---------------------------------------------------------------------------------------------- the server


def _in_new_thread(function: Callable[[], T]) -> T:
    """Runs ``function`` in a thread of its own, so its py4j calls run on a new JVM thread (pyspark pins one per
    Python thread). HiveServer2 takes its settings from the Hive session state of the thread that starts it, and
    the thread that has used the metastore already holds one, with other settings: the port and host would be
    ignored there."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = function()
        except BaseException as error:  # handed to the caller's thread, raised there
            outcome["error"] = error

    thread = threading.Thread(target=run, name="sql-endpoint-start", daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _connect_host(host: str) -> str:
    return "127.0.0.1" if host in ("", "0.0.0.0") else "::1" if host == "::" else host


@dataclass
class SqlEndpoint:
    """A running Thrift JDBC/ODBC server over ``spark``'s warehouse; see the module docstring."""

    spark: SparkSession
    host: str
    port: int
    _server: Any  # the JVM's HiveThriftServer2
    _guard: Any  # the JVM class ReadOnlyClients

    @classmethod
    def start(cls, spark: SparkSession, host: str = DEFAULT_SQL_HOST, port: int = DEFAULT_SQL_PORT,
              ready_timeout: float = 60.0) -> SqlEndpoint:
        """Registers ``spark`` as the writer, then starts the server on a client root session of its own."""
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        extensions = spark.sparkContext.getConf().get("spark.sql.extensions") or ""
        if GUARD_CLASS not in extensions.split(","):
            raise UserFacingError(
                "the SQL endpoint needs a Spark session started with its settings (prepare_spark_conf): this one "
                "has no read-only guard, so clients could write; refusing to start it"
            )
        scheduler = spark.sparkContext._jsc.sc()  # type: ignore[union-attr]
        if str(scheduler.getSchedulingMode()) != "FAIR" or not scheduler.getPoolForName(SQL_POOL).isDefined():
            raise UserFacingError(f"the SQL endpoint needs Spark's FAIR scheduler with the pool {SQL_POOL!r} "
                                  f"({FAIR_SCHEDULER_FILE}); this session runs {scheduler.getSchedulingMode()}")
        guard = getattr(jvm, GUARD_CLASS)
        guard.registerWriter(spark._jsparkSession)
        # Clients' sessions are new sessions of this root, never the writer's (even with singleSession).
        root = spark._jsparkSession.newSession()
        settings = {
            "hive.server2.thrift.port": str(port),
            "hive.server2.thrift.bind.host": host,
            "hive.server2.transport.mode": "binary",
            "hive.server2.authentication": "NONE",
            "hive.server2.enable.doAs": "false",
        }
        for key, value in settings.items():
            root.conf().set(key, value)
        server_class = jvm.org.apache.spark.sql.hive.thriftserver.HiveThriftServer2
        server = _in_new_thread(lambda: server_class.startWithSparkSession(root, False))
        endpoint = cls(spark, host, port, server, guard)
        conf = server.getHiveConf()
        effective = (conf.get("hive.server2.thrift.bind.host"), conf.get("hive.server2.thrift.port"))
        if effective != (host, str(port)):
            endpoint.stop()
            raise UserFacingError(f"the SQL endpoint started on {effective[0]}:{effective[1]} instead of "
                                  f"{host}:{port}; stopped it")
        endpoint._wait_listening(ready_timeout)
        return endpoint

    def _wait_listening(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection((_connect_host(self.host), self.port), timeout=1.0):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise UserFacingError(
                        f"the SQL endpoint did not listen on {self.host}:{self.port} within {timeout:g} s"
                    ) from None
                time.sleep(0.1)

    def jdbc_url(self, database: str = "default") -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"jdbc:hive2://{host}:{self.port}/{database}"

    def refresh_readers(self) -> int:
        """Drops every client session's cached tables, so its next query reads what a build wrote; returns how
        many sessions it refreshed."""
        return int(self._guard.refreshReaders())

    def describe(self) -> str:
        exposed = "" if _is_loopback(self.host) else ", NOT loopback"
        return (f"SQL endpoint: {self.jdbc_url()}  (HiveServer2 protocol; read-only; no authentication: any user "
                f"name{exposed}; queries in scheduler pool {SQL_POOL!r})")

    def stop(self) -> None:
        """Stops listening and closes the client sessions (once; again is a no-op); the Spark session goes on."""
        if self._server is not None:
            server, self._server = self._server, None
            server.stop()
            print(f"SQL endpoint stopped: {self.host}:{self.port}", flush=True)


def _is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


def exposure_warning(host: str) -> str | None:
    """What serve prints when the endpoint listens beyond loopback."""
    if _is_loopback(host):
        return None
    return (f"warning: the SQL endpoint listens on {host} with no authentication: anyone who reaches that port "
            "reads the whole warehouse under any user name. Keep it on 127.0.0.1 and reach it through an SSH "
            "tunnel, or put it behind a firewall or a TLS proxy that authenticates clients")

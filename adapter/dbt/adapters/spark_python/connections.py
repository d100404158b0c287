"""Credentials and connection manager: dbt-spark's, renamed, with a session cursor that configures the
SparkSession once per connection, and the ``before_write`` hook (see ``run_before_write_hooks``)."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from dbt.adapters.contracts.connection import Connection, ConnectionState
from dbt.adapters.spark import session as session_method
from dbt.adapters.spark.connections import SparkConnectionManager, SparkConnectionMethod, SparkCredentials
from dbt.flags import get_flags
from dbt_common.exceptions import DbtRuntimeError
from pyspark.sql import SparkSession
from pyspark.sql.utils import AnalysisException

ADAPTER_TYPE = "spark_python"


@dataclass
class SparkPythonCredentials(SparkCredentials):
    @property
    def type(self) -> str:
        return ADAPTER_TYPE


class SettingsOnceConnection(session_method.Connection):
    """The ``session`` method's connection. dbt-spark's cursor passes every profile setting through
    ``SparkSession.builder`` before each statement (a JVM call per setting, 2-4 ms a statement); this
    one's cursors do it for the connection's first statement and reuse that session afterwards. dbt
    opens a connection per model, so each model still starts from the profile's settings."""

    def __init__(self, *, server_side_parameters: dict[Any, str] | None = None) -> None:
        super().__init__(server_side_parameters=server_side_parameters)
        self.session: SparkSession | None = None

    def cursor(self) -> SettingsOnceCursor:
        return SettingsOnceCursor(self)

    def configured_session(self) -> SparkSession:
        """The session of this connection's statements; built again when Spark was stopped meanwhile."""
        if self.session is None or self.session.sparkContext._jsc is None:
            builder = SparkSession.builder.enableHiveSupport()
            for key, value in self.server_side_parameters.items():
                builder = builder.config(key, value)
            self.session = builder.getOrCreate()
        return self.session


class SettingsOnceCursor(session_method.Cursor):
    def __init__(self, connection: SettingsOnceConnection) -> None:
        super().__init__(server_side_parameters=connection.server_side_parameters)
        self._connection = connection

    def execute(self, sql: str, *parameters: Any) -> None:
        if parameters:
            sql = sql % parameters
        try:
            self._df = self._connection.configured_session().sql(sql)
        except AnalysisException as exc:
            raise DbtRuntimeError(str(exc)) from exc


# dbt commands that write the warehouse (``flags.WHICH``); docs, compile, ls, show, parse and test only read.
WRITING_COMMANDS = frozenset({"build", "run", "seed", "snapshot", "run-operation", "clone", "retry"})
# Entry-point group of the functions called before a writing command's first connection (see below).
BEFORE_WRITE_GROUP = "dbt_spark_python.before_write"


def run_before_write_hooks() -> None:
    """Before the first connection of a writing dbt command starts Spark, calls every function registered
    under the entry-point group ``dbt_spark_python.before_write`` with the command (``"build"``, ...).

    A hook may block (e.g. wait for a lock) or raise to fail the run before any model; its error is
    reported as a dbt runtime error. The adapter imports nothing of the project that installs it: the
    lineage-warehouse project registers ``python_jobs.ops.cli_lock:hold_for_dbt``, which takes the warehouse
    writer lock for the rest of the process (re-entrant: within ``python -m python_jobs`` it is already held).
    With no hook installed, nothing happens.
    """
    which = str(getattr(get_flags(), "WHICH", "") or "")
    if which not in WRITING_COMMANDS:
        return
    for hook in entry_points(group=BEFORE_WRITE_GROUP):
        try:
            hook.load()(which)
        except DbtRuntimeError:
            raise
        except Exception as error:
            raise DbtRuntimeError(str(error)) from error


class SparkPythonConnectionManager(SparkConnectionManager):
    TYPE = ADAPTER_TYPE

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        if connection.state != ConnectionState.OPEN:
            run_before_write_hooks()
        opened = super().open(connection)
        wrapper = opened.handle
        if (
            opened.credentials.method == SparkConnectionMethod.SESSION
            and isinstance(wrapper, session_method.SessionConnectionWrapper)
            and not isinstance(wrapper.handle, SettingsOnceConnection)
        ):
            opened.handle = session_method.SessionConnectionWrapper(
                SettingsOnceConnection(server_side_parameters=opened.credentials.server_side_parameters)
            )
        return opened

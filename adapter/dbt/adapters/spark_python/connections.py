"""Credentials and connection manager: dbt-spark's, renamed, with a session cursor that configures the
SparkSession once per connection."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from dbt.adapters.contracts.connection import Connection, ConnectionState
from dbt.adapters.spark import session as session_method
from dbt.adapters.spark.connections import SparkConnectionManager, SparkConnectionMethod, SparkCredentials
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


def hold_writer_lock_if_writing() -> None:
    """Plain ``dbt build``: take the warehouse writer lock before the first connection starts Spark, and
    keep it until the process exits. Within ``python -m python_jobs`` the lock is already held (re-entrant).

    The lock lives in the project's ``python_jobs.ops.lock``; a busy lock fails the run before any model.
    ``LINEAGE_LOCK_WAIT`` (seconds) makes plain dbt wait for it like ``--wait``.
    """
    from dbt.flags import get_flags

    which = str(getattr(get_flags(), "WHICH", "") or "")
    if which not in WRITING_COMMANDS:
        return
    from python_jobs.errors import UserFacingError
    from python_jobs.ops.lock import hold_until_exit
    from python_jobs.settings import load_settings

    wait = os.environ.get("LINEAGE_LOCK_WAIT", "").strip()
    try:
        hold_until_exit(load_settings(), f"dbt {which}", float(wait) if wait else None)
    except UserFacingError as error:
        raise DbtRuntimeError(str(error)) from error


class SparkPythonConnectionManager(SparkConnectionManager):
    TYPE = ADAPTER_TYPE

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        if connection.state != ConnectionState.OPEN:
            hold_writer_lock_if_writing()
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

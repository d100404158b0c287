"""Run a compiled dbt Python model inside the live SparkSession.

The compiled code that dbt-spark renders (model function, ``dbtObj`` and the writer
that ends in ``saveAsTable``) is plain Python that expects a global ``spark``. We
execute it in a fresh namespace with that global bound to the active session, so
the model reads and writes through the same JVM and metastore as the SQL models.
"""

from __future__ import annotations

import linecache
import time
import traceback
from dataclasses import dataclass
from typing import Any

from dbt.adapters.base import PythonJobHelper
from dbt_common.exceptions import DbtRuntimeError
from pyspark.sql import SparkSession

SESSION_METHOD = "session"


@dataclass(frozen=True)
class SessionSubmissionResult:
    seconds: float
    rows_written: int | None = None


def active_spark_session() -> Any:
    """The SparkSession that the ``session`` connection method started (or a new one)."""
    session = SparkSession.getActiveSession()
    if session is None:
        session = SparkSession.builder.enableHiveSupport().getOrCreate()
    return session


def model_failure_message(model_name: str, error: BaseException) -> str:
    """A dbt error text that names the model and keeps the Python traceback."""
    trace = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return f"Python model '{model_name}' failed: {type(error).__name__}: {error}\n{trace}"


class SessionPythonJobHelper(PythonJobHelper):
    """Submission helper for ``submission_method: session`` (the default of this adapter)."""

    def __init__(self, parsed_model: dict[str, Any], credentials: Any) -> None:
        self.parsed_model = parsed_model
        self.credentials = credentials
        self.model_name = str(parsed_model.get("alias") or parsed_model.get("name", "<unknown>"))
        self.unique_id = str(parsed_model.get("unique_id", self.model_name))

    def submit(self, compiled_code: str) -> SessionSubmissionResult:
        started = time.monotonic()
        namespace: dict[str, Any] = {
            "__name__": f"dbt_python_model_{self.model_name}",
            "spark": active_spark_session(),
        }
        filename = f"<dbt model {self.unique_id}>"
        # Registering the source lets tracebacks show the model's own lines.
        linecache.cache[filename] = (len(compiled_code), None, compiled_code.splitlines(True), filename)
        try:
            code = compile(compiled_code, filename, "exec")
            exec(code, namespace)
        except Exception as error:
            raise DbtRuntimeError(model_failure_message(self.unique_id, error)) from error
        return SessionSubmissionResult(seconds=time.monotonic() - started)

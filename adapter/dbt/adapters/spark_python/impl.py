"""The adapter: dbt-spark's SparkAdapter with the ``session`` Python submission method."""

from typing import Any

from dbt.adapters.base import PythonJobHelper
from dbt.adapters.base.impl import AdapterTrackingRelationInfo
from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.spark.impl import SparkAdapter
from dbt.adapters.spark_python.__version__ import version as plugin_version
from dbt.adapters.spark_python.connections import ADAPTER_TYPE, SparkPythonConnectionManager
from dbt.adapters.spark_python.python_submissions import (
    SESSION_METHOD,
    SessionPythonJobHelper,
    SessionSubmissionResult,
)


class SparkPythonAdapter(SparkAdapter):
    ConnectionManager = SparkPythonConnectionManager  # type: ignore[assignment]

    @classmethod
    def get_adapter_run_info(cls, config: Any) -> AdapterTrackingRelationInfo:
        # dbt derives the plugin module from the class name ("sparkpython"); ours is spark_python.
        from dbt.adapters import __about__

        return AdapterTrackingRelationInfo(
            adapter_name=ADAPTER_TYPE,
            base_adapter_version=__about__.version,
            adapter_version=plugin_version,
            model_adapter_details=cls._get_adapter_specific_run_info(config),
        )

    @property
    def default_python_submission_method(self) -> str:
        return SESSION_METHOD

    @property
    def python_submission_helpers(self) -> dict[str, type[PythonJobHelper]]:
        helpers: dict[str, type[PythonJobHelper]] = dict(super().python_submission_helpers)
        helpers[SESSION_METHOD] = SessionPythonJobHelper
        return helpers

    def generate_python_submission_response(self, submission_result: Any) -> AdapterResponse:
        if isinstance(submission_result, SessionSubmissionResult):
            return AdapterResponse(
                _message=f"OK in {submission_result.seconds:.1f}s",
                rows_affected=submission_result.rows_written,
            )
        return super().generate_python_submission_response(submission_result)

"""The adapter: dbt-spark's SparkAdapter with the ``session`` Python submission method."""

from typing import Any

from dbt.adapters.base import PythonJobHelper, available
from dbt.adapters.base.impl import AdapterTrackingRelationInfo
from dbt.adapters.base.relation import BaseRelation
from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.spark.impl import SparkAdapter
from dbt.adapters.spark_python.__version__ import version as plugin_version
from dbt.adapters.spark_python.connections import ADAPTER_TYPE, SparkPythonConnectionManager
from dbt.adapters.spark_python.python_submissions import (
    SESSION_METHOD,
    SessionPythonJobHelper,
    SessionSubmissionResult,
)
from dbt.adapters.spark_python.relation_text import table_property, top_level_columns


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

    def _cached_information(self, relation: BaseRelation) -> str:
        cached = self.get_relation(relation.database, relation.schema, relation.identifier)  # type: ignore[arg-type]
        return str(getattr(cached, "information", None) or "") if cached is not None else ""

    @available
    def table_property(self, relation: BaseRelation, key: str) -> str | None:
        """One table property, or None when unset. A table's own properties only change in its own
        materialization, after this read, so the text cached at the start of the run is current; a table
        created during the run has none cached and is asked directly."""
        information = self._cached_information(relation)
        if information:
            return table_property(information, key)
        _, rows = self.execute(f"show tblproperties {relation}", fetch=True)
        return next((str(row[1]) for row in rows if row[0] == key), None)

    @available
    def column_names(self, relation: BaseRelation) -> list[str]:
        """The table's column names in order, from the cached schema tree when there is one."""
        names = top_level_columns(self._cached_information(relation))
        return names or [column.name for column in self.get_columns_in_relation(relation)]

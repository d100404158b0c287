"""The adapter: dbt-spark's SparkAdapter with the ``session`` Python submission method."""

import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import Any

from dbt.adapters.base import PythonJobHelper, available
from dbt.adapters.base.impl import AdapterTrackingRelationInfo
from dbt.adapters.base.relation import BaseRelation
from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.spark.impl import SparkAdapter
from dbt.adapters.spark_python.__version__ import version as plugin_version
from dbt.adapters.spark_python.connections import ADAPTER_TYPE, SparkPythonConnectionManager
from dbt.adapters.spark_python.published_writes import (
    RECURSIVE_OPTION,
    STAGING_SUFFIX,
    HadoopFolders,
    append_folder,
    clear_retired_default_folder,
    describe,
    staged_folder,
    switch_to_query,
)
from dbt.adapters.spark_python.python_submissions import (
    SESSION_METHOD,
    SessionPythonJobHelper,
    SessionSubmissionResult,
    active_spark_session,
)
from dbt.adapters.spark_python.relation_text import table_property, top_level_columns

# Upstream answers are kept for this many dbt invocations: those of the invocations still running in the process.
KEPT_INVOCATIONS = 4


class SparkPythonAdapter(SparkAdapter):
    ConnectionManager = SparkPythonConnectionManager  # type: ignore[assignment]
    # invocation id -> query -> its answer (upstream_scalar); shared by the adapter instances of one process.
    _upstream_answers: OrderedDict[str, dict[str, Future[Any]]] = OrderedDict()
    _upstream_lock = threading.Lock()

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
    def upstream_scalar(self, sql: str, invocation_id: str) -> Any:
        """The first column of the first row of ``sql``, a query that reads only ancestors of the running model,
        asked once per dbt invocation. By the time a model runs, each of its ancestors has been built and no later
        node of the invocation writes it, so every model that asks the same question gets the same answer: in a
        build with no new input, every model reading the staged events asks for the same window. Models asking
        at the same moment (dbt's other threads) wait for the first one's answer."""
        with self._upstream_lock:
            answers = self._upstream_answers.setdefault(invocation_id, {})
            self._upstream_answers.move_to_end(invocation_id)
            while len(self._upstream_answers) > KEPT_INVOCATIONS:
                self._upstream_answers.popitem(last=False)
            answer = answers.get(sql)
            asks = answer is None
            if asks:
                answer = answers[sql] = Future()
        if asks:
            try:
                _, table = self.execute(sql, fetch=True)
                answer.set_result(table.rows[0][0] if len(table.rows) else None)
            except BaseException as error:
                with self._upstream_lock:
                    answers.pop(sql, None)  # the next model asks again
                answer.set_exception(error)
        return answer.result()

    @available
    def relations_in(self, database: str | None, schema: str) -> list[BaseRelation]:
        """The relations of a schema: from dbt's relation cache when it holds the schema, else listed (empty for a
        schema that does not exist), each with its listing's text (``information``)."""
        return list(self.list_relations(database, schema))

    @available
    def column_names(self, relation: BaseRelation) -> list[str]:
        """The table's column names in order, from the schema tree of the relation's listing (its own, or the
        relation cache's) when there is one."""
        information = str(getattr(relation, "information", None) or "") or self._cached_information(relation)
        names = top_level_columns(information)
        return names or [column.name for column in self.get_columns_in_relation(relation)]

    def _local_session(self) -> Any | None:
        """The SparkSession statements run in, when it is in this process (the ``session`` method)."""
        if self.config.credentials.method != SESSION_METHOD:
            return None
        # Not SparkSession.getActiveSession(): the JVM keeps the active session per thread, and dbt runs each
        # model in a thread of its own, where it is None.
        return active_spark_session()

    def drop_relation(self, relation: BaseRelation) -> None:
        """dbt-spark's drop, then clears a retired folder left at the table's default location, which would
        make the create that follows a drop (full refresh, changed columns) fail."""
        super().drop_relation(relation)
        spark = self._local_session()
        if spark is not None and relation.type != "view":
            clear_retired_default_folder(spark, str(relation))

    @available
    def append_staging(self, relation: BaseRelation) -> dict[str, Any] | None:
        """Readies a published append to ``relation`` (see ``published_writes``): the table reads its
        subfolders, and ``<table>__staged_append`` exists with the table's columns and bucketing at the
        table's staged folder. Returns ``{'staging': relation, 'folder': staged
        folder, 'location': ...}``, or None when the table is written the plain way (partitioned, not
        Parquet, no local session)."""
        spark = self._local_session()
        facts = describe(spark, str(relation)) if spark is not None else None
        if spark is None or facts is None or not facts.publishes_appends:
            return None
        if not facts.reads_subfolders:
            self.execute(f"alter table {relation} set serdeproperties ('{RECURSIVE_OPTION}' = 'true')")
        staging = relation.incorporate(path={"identifier": f"{relation.identifier}{STAGING_SUFFIX}"})
        folder = staged_folder(facts.location)
        # Kept between appends (holding no files then): a create and a drop cost more than the append's
        # rename. Made again when the table moved (a compaction) or changed its columns or bucketing.
        current = describe(spark, str(staging))
        if current is None or current.location.rstrip("/") != folder or (
            current.schema_tree, current.bucketing) != (facts.schema_tree, facts.bucketing):
            self.execute(f"drop table if exists {staging}")
            self.execute(f"create table {staging} like {relation} location '{folder}'")
        return {"staging": staging, "folder": folder, "location": facts.location}

    @available
    def switch_table_data(self, relation: BaseRelation, sql: str) -> bool:
        """Rebuilds an existing table from ``sql`` by a data switch (see ``published_writes``); False when it
        must be dropped and created instead (first build, changed columns, a layout or a connection that
        cannot switch)."""
        spark = self._local_session()
        return spark is not None and switch_to_query(spark, str(relation), sql)

    @available
    def publish_staged(self, relation: BaseRelation, staging: dict[str, Any]) -> bool:
        """Makes the rows inserted into the staged folder visible in one rename (the caller's main statement,
        ``published_append_statement``, refreshes the table); False when nothing was staged (an empty insert:
        the staged folder is removed)."""
        spark = self._local_session()
        if spark is None:
            return False
        folders = HadoopFolders(spark)
        if folders.visible_files(staging["folder"]) == 0:
            folders.delete(staging["folder"])
            return False
        folders.rename(staging["folder"], append_folder(staging["location"]))
        return True

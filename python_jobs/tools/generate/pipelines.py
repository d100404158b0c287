"""OpenLineage events of a small data platform: Airflow DAGs that start Spark jobs, and a dbt project.

The shapes follow what the integrations send: Airflow's provider names jobs ``<dag_id>.<task_id>`` and
sends DAG-level runs; every task run carries a ``parent`` facet naming its DAG run; a Spark application
started by a task names that task as its parent and calls its job ``<app>.<action>.<output table>``;
dbt sends a run for the whole invocation (``dbt-run-<project>``) and one per model, parented to it.
Facets carry ``_producer`` and ``_schemaURL``; Spark reports its column lineage and, now and then, a
large ``spark.logicalPlan``.

Over the timeline the outputs' schemas evolve (a column added, one removed, one retyped); sources are
only ever read (input-only datasets); a few runs fail or are aborted. ``pipeline_lines`` adds at-least-once
duplicates and a few malformed lines on top of the events.
"""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

OL_VERSION = "1.26.0"
AIRFLOW_PRODUCER = "https://github.com/apache/airflow/tree/providers-openlineage/1.15.0"
SPARK_PRODUCER = f"https://github.com/OpenLineage/OpenLineage/tree/{OL_VERSION}/integration/spark"
DBT_PRODUCER = f"https://github.com/OpenLineage/OpenLineage/tree/{OL_VERSION}/integration/dbt"
RUN_EVENT_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
FACET_URL = "https://openlineage.io/spec/facets/{}.json#/$defs/{}"
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)

LAKE = "s3://acme-lake"
HIVE = "hive://metastore:9083"
CRM_DB = "postgres://crm-db:5432"
KAFKA = "kafka://broker:9092"
THRIFT = "spark://spark-thrift:10000"

Field = tuple[str, str]  # (name, type)
Event = dict[str, Any]


@dataclass(frozen=True)
class PipelineSpec:
    days: int
    copies: int = 1  # independent copies of the platform (team_00, team_01, ...) for larger sizes
    seed: int = 7
    large_facets: int = 2  # Spark plans of about ``large_bytes`` each, spread over the timeline
    large_bytes: int = 1 << 20
    orders_runs_per_day: int = 4


@dataclass
class Counts:
    events: int = 0
    failed_runs: int = 0
    aborted_runs: int = 0
    large_facets: int = 0


def facet(producer: str, facet_type: str, spec_version: str, /, **body: Any) -> dict[str, Any]:
    url = FACET_URL.format(f"{spec_version}/{facet_type}", facet_type)
    return {"_producer": producer, "_schemaURL": url, **body}


def run_id(seed: int, key: str) -> str:
    return str(uuid.UUID(bytes=hashlib.sha256(f"{seed}:{key}".encode()).digest()[:16], version=4))


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def evolving(base: list[Field], position: float, added: Field | None = None, removed: str | None = None,
             retyped: Field | None = None, at: tuple[float, float, float] = (0.3, 0.5, 0.7)) -> list[Field]:
    """A schema at ``position`` (0..1) of the timeline: ``added`` from at[0], ``removed`` gone from at[1],
    ``retyped`` from at[2]."""
    fields = [f for f in base if not (removed and f[0] == removed and position >= at[1])]
    if retyped and position >= at[2]:
        fields = [retyped if f[0] == retyped[0] else f for f in fields]
    if added and position >= at[0]:
        fields.append(added)
    return fields


def schema_facet(producer: str, fields: list[Field]) -> dict[str, Any]:
    return facet(producer, "SchemaDatasetFacet", "1-1-1", fields=[{"name": n, "type": t} for n, t in fields])


def column_lineage(producer: str, mapping: dict[str, list[tuple[str, str, str, str]]]) -> dict[str, Any]:
    """``mapping``: output column -> [(namespace, dataset, column, transformation subtype)]."""
    return facet(producer, "ColumnLineageDatasetFacet", "1-2-0", fields={
        column: {"inputFields": [
            {"namespace": ns, "name": name, "field": field, "transformations": [
                {"type": "DIRECT" if subtype in ("IDENTITY", "TRANSFORMATION", "AGGREGATION") else "INDIRECT",
                 "subtype": subtype, "description": "", "masking": False}]}
            for ns, name, field, subtype in sources]}
        for column, sources in mapping.items()
    })


def dataset(namespace: str, name: str, producer: str, fields: list[Field] | None = None,
            **facets: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"dataSource": facet(producer, "DatasourceDatasetFacet", "1-0-1", name=namespace,
                                                 uri=namespace)}
    if fields is not None:
        body["schema"] = schema_facet(producer, fields)
    body.update(facets)
    return {"namespace": namespace, "name": name, "facets": body}


def logical_plan(variant: int, size: int) -> dict[str, Any]:
    """A Spark logical plan facet of about ``size`` bytes, in the integration's serialised node list."""
    nodes = []
    node_bytes = 0
    number = 0
    while node_bytes < size:
        digest = hashlib.sha256(f"{variant}:{number}".encode()).hexdigest()
        node = {
            "class": "org.apache.spark.sql.catalyst.plans.logical." + ("Project", "Filter", "Join", "Aggregate")[
                number % 4],
            "num-children": 1 if number % 4 != 2 else 2,
            "projectList": [[{"class": "org.apache.spark.sql.catalyst.expressions.AttributeReference",
                              "num-children": 0, "name": f"col_{number % 23}", "dataType": "long",
                              "nullable": True, "exprId": {"id": number, "jvmId": digest[:32]},
                              "qualifier": ["spark_catalog", "curated", "orders"]}]],
        }
        nodes.append(node)
        node_bytes += len(json.dumps(node, separators=(",", ":"))) + 1
        number += 1
    return facet(SPARK_PRODUCER, "LogicalPlanFacet", "spark/v1", plan=nodes)


class Platform:
    """One copy of the platform; ``events_for_day`` yields a day's events in time order."""

    def __init__(self, spec: PipelineSpec, copy: int):
        self.spec = spec
        self.copy = copy
        self.team = f"team_{copy:02d}"
        self.airflow_ns = f"airflow-{self.team}"
        self.rng = random.Random(f"{spec.seed}:platform:{copy}")
        self.counts = Counts()
        total_spark_runs = spec.days * (1 + spec.orders_runs_per_day)
        every = max(1, total_spark_runs // max(spec.large_facets, 1))
        self.large_at = {every // 2 + i * every for i in range(spec.large_facets)} if spec.large_facets else set()
        self.spark_runs = 0

    # ------------------------------------------------------------------ envelopes

    def event(self, producer: str, event_type: str, at: datetime, run: str, namespace: str, job: str,
              run_facets: dict[str, Any], job_facets: dict[str, Any], inputs: list, outputs: list) -> Event:
        self.counts.events += 1
        return {
            "eventTime": stamp(at), "producer": producer, "schemaURL": RUN_EVENT_URL, "eventType": event_type,
            "run": {"runId": run, "facets": run_facets},
            "job": {"namespace": namespace, "name": job, "facets": job_facets},
            "inputs": inputs, "outputs": outputs,
        }

    def parent(self, producer: str, namespace: str, job: str, run: str) -> dict[str, Any]:
        return facet(producer, "ParentRunFacet", "1-0-1", run={"runId": run}, job={"namespace": namespace,
                                                                                    "name": job})

    def airflow_facets(self, dag: str, task: str | None, dag_run: str, nominal: datetime) -> dict[str, Any]:
        facets: dict[str, Any] = {
            "processing_engine": facet(AIRFLOW_PRODUCER, "ProcessingEngineRunFacet", "1-1-1", version="2.10.4",
                                       name="Airflow", openlineageAdapterVersion="1.15.0"),
            "nominalTime": facet(AIRFLOW_PRODUCER, "NominalTimeRunFacet", "1-0-1", nominalStartTime=stamp(nominal)),
        }
        if task is not None:
            facets["parent"] = self.parent(AIRFLOW_PRODUCER, self.airflow_ns, dag, dag_run)
            facets["airflow"] = {"_producer": AIRFLOW_PRODUCER,
                                 "_schemaURL": f"{AIRFLOW_PRODUCER}/airflow/facets/AirflowRunFacet.json",
                                 "dag": {"dag_id": dag, "schedule_interval": "@daily", "owner": self.team},
                                 "task": {"task_id": task, "operator_class": "SparkSubmitOperator"},
                                 "dagRun": {"dag_id": dag, "run_id": f"scheduled__{stamp(nominal)}"}}
        return facets

    def job_type(self, producer: str, integration: str, job_type: str) -> dict[str, Any]:
        return {"jobType": facet(producer, "JobTypeJobFacet", "2-0-3", processingType="BATCH",
                                 integration=integration, jobType=job_type)}

    # ------------------------------------------------------------------ one DAG run

    def dag_run(self, dag: str, nominal: datetime, tasks: list[tuple[str, Any]]) -> Iterator[Event]:
        """A DAG run: DAG START, each task (a generator of events taking (dag_run_id, start) and returning
        its end time and state), DAG COMPLETE/FAIL."""
        dag_run = run_id(self.spec.seed, f"{self.team}:{dag}:{stamp(nominal)}")
        dag_facets = self.job_type(AIRFLOW_PRODUCER, "AIRFLOW", "DAG")
        at = nominal + timedelta(seconds=self.rng.randint(2, 40), milliseconds=self.rng.randint(0, 999))
        yield self.event(AIRFLOW_PRODUCER, "START", at, dag_run, self.airflow_ns, dag,
                         self.airflow_facets(dag, None, dag_run, nominal), dag_facets, [], [])
        state = "COMPLETE"
        for task, body in tasks:
            if state != "COMPLETE":
                break
            at, state = yield from body(dag, task, dag_run, nominal, at + timedelta(seconds=self.rng.randint(3, 30)))
        final = "FAIL" if state in ("FAIL", "ABORT") else "COMPLETE"
        if final == "FAIL":
            self.counts.failed_runs += 1
        yield self.event(AIRFLOW_PRODUCER, final, at + timedelta(seconds=2), dag_run, self.airflow_ns, dag,
                         self.airflow_facets(dag, None, dag_run, nominal), dag_facets, [], [])

    def task(self, dag: str, task: str, dag_run: str, nominal: datetime, start: datetime,
             inputs: list, outputs: list, child: Any = None) -> Iterator[Event]:
        task_run = run_id(self.spec.seed, f"{self.team}:{dag}.{task}:{stamp(nominal)}")
        facets = self.airflow_facets(dag, task, dag_run, nominal)
        job_facets = self.job_type(AIRFLOW_PRODUCER, "AIRFLOW", "TASK")
        name = f"{dag}.{task}"
        yield self.event(AIRFLOW_PRODUCER, "START", start, task_run, self.airflow_ns, name, facets, job_facets,
                         inputs, [])
        end, state = start + timedelta(seconds=self.rng.randint(20, 300)), "COMPLETE"
        if child is not None:
            end, state = yield from child(name, task_run, start + timedelta(seconds=self.rng.randint(5, 20)))
            end += timedelta(seconds=self.rng.randint(1, 10))
        if state != "COMPLETE":
            self.counts.failed_runs += 1
            facets = {**facets, "errorMessage": facet(AIRFLOW_PRODUCER, "ErrorMessageRunFacet", "1-0-1",
                                                      message=f"{name} failed: child job ended {state}",
                                                      programmingLanguage="python")}
        yield self.event(AIRFLOW_PRODUCER, "COMPLETE" if state == "COMPLETE" else "FAIL", end, task_run,
                         self.airflow_ns, name, facets, job_facets, inputs, outputs)
        return end, state

    # ------------------------------------------------------------------ Spark

    def spark_job(self, app: str, output: dict[str, Any], inputs: list, parent_job: str, parent_run: str,
                  start: datetime, rows: int) -> Iterator[Event]:
        table = output["name"].replace("/", "_")
        job = f"{app}.execute_insert_into_hadoop_fs_relation_command.{table}"
        spark_run = run_id(self.spec.seed, f"{self.team}:{job}:{stamp(start)}")
        run_facets: dict[str, Any] = {
            "parent": self.parent(SPARK_PRODUCER, self.airflow_ns, parent_job, parent_run),
            "processing_engine": facet(SPARK_PRODUCER, "ProcessingEngineRunFacet", "1-1-1", version="3.5.4",
                                       name="spark", openlineageAdapterVersion=OL_VERSION),
            "spark_properties": {"_producer": SPARK_PRODUCER, "_schemaURL": f"{SPARK_PRODUCER}/spark_properties",
                                 "properties": {"spark.master": "yarn", "spark.app.name": app}},
        }
        job_facets = self.job_type(SPARK_PRODUCER, "SPARK", "SQL_JOB")
        yield self.event(SPARK_PRODUCER, "START", start, spark_run, self.airflow_ns, job, run_facets, job_facets,
                         inputs, [output])
        running = {**run_facets, "spark_unknown": {"_producer": SPARK_PRODUCER, "_schemaURL": SPARK_PRODUCER,
                                                   "output": {"description": "unknown LogicalRelation"}}}
        yield self.event(SPARK_PRODUCER, "RUNNING", start + timedelta(seconds=30), spark_run, self.airflow_ns,
                         job, running, job_facets, inputs, [output])
        end = start + timedelta(seconds=self.rng.randint(60, 900))
        final = dict(run_facets)
        if self.spark_runs in self.large_at:
            final["spark.logicalPlan"] = logical_plan(self.spark_runs, self.spec.large_bytes)
            self.counts.large_facets += 1
        self.spark_runs += 1
        outcome = "COMPLETE"
        roll = self.rng.random()
        if roll < 0.03:
            outcome = "FAIL"
            final["errorMessage"] = facet(SPARK_PRODUCER, "ErrorMessageRunFacet", "1-0-1",
                                          message="Job aborted due to stage failure: ExecutorLostFailure",
                                          programmingLanguage="JAVA")
        elif roll < 0.045:
            outcome = "ABORT"
        if outcome == "FAIL":
            self.counts.failed_runs += 1
        if outcome == "ABORT":
            self.counts.aborted_runs += 1
        written = {**output, "outputFacets": {"outputStatistics": facet(
            SPARK_PRODUCER, "OutputStatisticsOutputDatasetFacet", "1-0-2", rowCount=rows, size=rows * 180)}}
        yield self.event(SPARK_PRODUCER, outcome, end, spark_run, self.airflow_ns, job, final, job_facets,
                         inputs, [written] if outcome == "COMPLETE" else [output])
        return end, outcome

    # ------------------------------------------------------------------ the three pipelines

    def crm_sync(self, nominal: datetime, position: float) -> Iterator[Event]:
        source_fields = [("account_id", "varchar"), ("account_name", "varchar"), ("country", "varchar"),
                         ("industry", "varchar"), ("owner_email", "varchar"), ("annual_revenue", "bigint"),
                         ("status", "varchar"), ("updated_at", "timestamp")]
        crm_source = dataset(CRM_DB, "crm.public.accounts", AIRFLOW_PRODUCER, source_fields)
        raw_fields = [(n, {"varchar": "string"}.get(t, t)) for n, t in source_fields]
        raw = dataset(LAKE, f"{self.team}/raw/crm_accounts", SPARK_PRODUCER, raw_fields)
        clean_fields = evolving(
            [("account_id", "string"), ("account_name", "string"), ("country", "string"), ("segment", "string"),
             ("annual_revenue", "long"), ("is_active", "boolean")],
            position, added=("owner_email", "string"), removed="segment", retyped=("annual_revenue", "decimal(18,2)"))
        lineage = {name: [(LAKE, raw["name"], name if name != "is_active" else "status",
                           "IDENTITY" if name != "is_active" else "TRANSFORMATION")]
                   for name, _ in clean_fields if name != "segment"}
        lineage["segment"] = [(LAKE, raw["name"], "annual_revenue", "TRANSFORMATION")]
        lineage = {k: v for k, v in lineage.items() if k in dict(clean_fields)}
        clean = dataset(LAKE, f"{self.team}/curated/accounts", SPARK_PRODUCER, clean_fields,
                        symlinks=facet(SPARK_PRODUCER, "SymlinksDatasetFacet", "1-0-1", identifiers=[
                            {"namespace": HIVE, "name": f"{self.team}_curated.accounts", "type": "TABLE"}]),
                        columnLineage=column_lineage(SPARK_PRODUCER, lineage))

        def extract(dag: str, task: str, dag_run: str, nominal: datetime, start: datetime):
            return (yield from self.task(dag, task, dag_run, nominal, start, [crm_source], [raw]))

        def transform(dag: str, task: str, dag_run: str, nominal: datetime, start: datetime):
            def child(parent_job: str, parent_run: str, at: datetime):
                return (yield from self.spark_job(f"{self.team}_crm_clean", clean, [raw], parent_job, parent_run,
                                                  at, 500 + self.rng.randint(0, 50)))
            return (yield from self.task(dag, task, dag_run, nominal, start, [raw], [clean], child))

        yield from self.dag_run(f"{self.team}_crm_sync", nominal, [("extract_accounts", extract),
                                                                   ("clean_accounts", transform)])

    def orders_etl(self, nominal: datetime, position: float) -> Iterator[Event]:
        topic_fields = [("order_id", "long"), ("customer_id", "string"), ("amount", "double"),
                        ("currency", "string"), ("ordered_at", "timestamp")]
        topic = dataset(KAFKA, f"{self.team}.orders", SPARK_PRODUCER, topic_fields)
        rates = dataset(LAKE, "reference/currency_rates.csv", SPARK_PRODUCER,
                        [("currency", "string"), ("rate_to_eur", "double"), ("valid_on", "date")])
        order_fields = evolving(
            [("order_id", "long"), ("customer_id", "string"), ("amount_eur", "decimal(12,2)"),
             ("ordered_at", "timestamp"), ("legacy_source", "string")],
            position, added=("channel", "string"), removed="legacy_source", retyped=("amount_eur", "decimal(18,2)"),
            at=(0.25, 0.45, 0.6))
        lineage = {
            "order_id": [(KAFKA, topic["name"], "order_id", "IDENTITY")],
            "customer_id": [(KAFKA, topic["name"], "customer_id", "IDENTITY")],
            "amount_eur": [(KAFKA, topic["name"], "amount", "TRANSFORMATION"),
                           (LAKE, rates["name"], "rate_to_eur", "TRANSFORMATION"),
                           (KAFKA, topic["name"], "currency", "JOIN")],
            "ordered_at": [(KAFKA, topic["name"], "ordered_at", "IDENTITY")],
            "channel": [(KAFKA, topic["name"], "customer_id", "TRANSFORMATION")],
            "legacy_source": [(KAFKA, topic["name"], "order_id", "TRANSFORMATION")],
        }
        orders = dataset(LAKE, f"{self.team}/curated/orders", SPARK_PRODUCER, order_fields,
                         symlinks=facet(SPARK_PRODUCER, "SymlinksDatasetFacet", "1-0-1", identifiers=[
                             {"namespace": HIVE, "name": f"{self.team}_curated.orders", "type": "TABLE"}]),
                         columnLineage=column_lineage(
                             SPARK_PRODUCER, {k: v for k, v in lineage.items() if k in dict(order_fields)}))

        def load(dag: str, task: str, dag_run: str, nominal: datetime, start: datetime):
            def child(parent_job: str, parent_run: str, at: datetime):
                return (yield from self.spark_job(f"{self.team}_orders_etl", orders, [topic, rates], parent_job,
                                                  parent_run, at, 2000 + self.rng.randint(0, 400)))
            return (yield from self.task(dag, task, dag_run, nominal, start, [topic, rates], [orders], child))

        yield from self.dag_run(f"{self.team}_orders_etl", nominal, [("load_orders", load)])

    def analytics(self, nominal: datetime, position: float) -> Iterator[Event]:
        project = f"{self.team}_analytics"
        hive_orders = f"{self.team}_curated.orders"
        hive_accounts = f"{self.team}_curated.accounts"
        models: list[tuple[str, list[str], list[Field], dict[str, list[tuple[str, str, str, str]]]]] = [
            ("stg_orders", [hive_orders],
             evolving([("order_id", "bigint"), ("customer_id", "string"), ("amount_eur", "decimal(12,2)"),
                       ("ordered_on", "date")], position, added=("channel", "string"),
                      retyped=("amount_eur", "decimal(18,2)"), at=(0.25, 1.1, 0.6)),
             {"order_id": [(THRIFT, hive_orders, "order_id", "IDENTITY")]}),
            ("stg_accounts", [hive_accounts],
             [("account_id", "string"), ("account_name", "string"), ("country", "string"), ("is_active", "boolean")],
             {"account_id": [(THRIFT, hive_accounts, "account_id", "IDENTITY")]}),
            ("dim_customers", [f"{project}.stg_accounts", f"{project}.stg_orders"],
             evolving([("customer_id", "string"), ("country", "string"), ("first_order_on", "date"),
                       ("order_count", "bigint")], position, added=("lifetime_value_eur", "decimal(18,2)"),
                      at=(0.4, 1.1, 1.1)),
             {"order_count": [(THRIFT, f"{project}.stg_orders", "order_id", "AGGREGATION")]}),
            ("fct_revenue", [f"{project}.stg_orders", f"{project}.dim_customers"],
             evolving([("ordered_on", "date"), ("country", "string"), ("revenue_eur", "decimal(18,2)"),
                       ("orders", "bigint"), ("avg_basket_eur", "double")], position, removed="avg_basket_eur",
                      at=(1.1, 0.55, 1.1)),
             {"revenue_eur": [(THRIFT, f"{project}.stg_orders", "amount_eur", "AGGREGATION")],
              "country": [(THRIFT, f"{project}.dim_customers", "country", "IDENTITY")]}),
        ]

        def dbt_build(dag: str, task: str, dag_run: str, nominal: datetime, start: datetime):
            def child(parent_job: str, parent_run: str, at: datetime):
                return (yield from self.dbt_invocation(project, models, parent_job, parent_run, at))
            inputs = [dataset(THRIFT, hive_orders, AIRFLOW_PRODUCER), dataset(THRIFT, hive_accounts, AIRFLOW_PRODUCER)]
            return (yield from self.task(dag, task, dag_run, nominal, start, inputs, [], child))

        yield from self.dag_run(f"{self.team}_analytics_daily", nominal, [("dbt_build", dbt_build)])

    def dbt_invocation(self, project: str, models: list, parent_job: str, parent_run: str,
                       start: datetime) -> Iterator[Event]:
        invocation = run_id(self.spec.seed, f"{self.team}:dbt:{stamp(start)}")
        base_facets = {
            "dbt_version": {"_producer": DBT_PRODUCER, "_schemaURL": f"{DBT_PRODUCER}/dbt-version-run-facet.json",
                            "version": "1.8.7"},
            "processing_engine": facet(DBT_PRODUCER, "ProcessingEngineRunFacet", "1-1-1", version="1.8.7",
                                       name="dbt", openlineageAdapterVersion=OL_VERSION),
            "dbt_run": {"_producer": DBT_PRODUCER, "_schemaURL": f"{DBT_PRODUCER}/dbt-run-run-facet.json",
                        "invocation_id": invocation},
        }
        job = f"dbt-run-{project}"
        job_facets = self.job_type(DBT_PRODUCER, "DBT", "JOB")
        top_facets = {**base_facets, "parent": self.parent(DBT_PRODUCER, self.airflow_ns, parent_job, parent_run)}
        yield self.event(DBT_PRODUCER, "START", start, invocation, project, job, top_facets, job_facets, [], [])
        at = start + timedelta(seconds=3)
        cancelled = self.rng.random() < 0.03
        state = "COMPLETE"
        for index, (model, sources, fields, lineage) in enumerate(models):
            model_run = run_id(self.spec.seed, f"{self.team}:{model}:{stamp(start)}")
            model_facets = {**base_facets, "parent": self.parent(DBT_PRODUCER, project, job, invocation)}
            model_job = self.job_type(DBT_PRODUCER, "DBT", "MODEL")
            model_job["sql"] = facet(DBT_PRODUCER, "SQLJobFacet", "1-1-0", dialect="spark",
                                     query=f"select {', '.join(n for n, _ in fields)} from {' join '.join(sources)}")
            inputs = [dataset(THRIFT, source, DBT_PRODUCER) for source in sources]
            output = dataset(THRIFT, f"{project}.{model}", DBT_PRODUCER, fields,
                             columnLineage=column_lineage(DBT_PRODUCER, lineage))
            name = f"model.{project}.{model}"
            yield self.event(DBT_PRODUCER, "START", at, model_run, project, name, model_facets, model_job, inputs,
                             [output])
            at += timedelta(seconds=self.rng.randint(4, 60))
            if cancelled and index == len(models) - 1:
                state = "ABORT"
                yield self.event(DBT_PRODUCER, "ABORT", at, model_run, project, name, model_facets, model_job,
                                 inputs, [output])
                break
            yield self.event(DBT_PRODUCER, "COMPLETE", at, model_run, project, name, model_facets, model_job,
                             inputs, [output])
        if state == "ABORT":
            self.counts.aborted_runs += 2  # the model run and the invocation
        yield self.event(DBT_PRODUCER, state, at + timedelta(seconds=1), invocation, project, job, top_facets,
                         job_facets, [], [])
        return at + timedelta(seconds=1), state

    def events_for_day(self, day: int) -> list[Event]:
        position = day / max(self.spec.days - 1, 1)
        midnight = EPOCH + timedelta(days=day)
        events: list[Event] = []
        events += self.crm_sync(midnight + timedelta(hours=1), position)
        for slot in range(self.spec.orders_runs_per_day):
            events += self.orders_etl(midnight + timedelta(hours=slot * 24 // self.spec.orders_runs_per_day,
                                                           minutes=15), position)
        events += self.analytics(midnight + timedelta(hours=3), position)
        return events


EVENTS_PER_DAY = 9 + 4 * 7 + 14  # crm_sync 9, orders_etl 4 x 7, analytics 14 (one copy, no failures)


def spec_for_events(events: int, seed: int, large_facets: int, large_bytes: int) -> PipelineSpec:
    copies = 1 + events // 40_000
    days = max(2, round(events / (EVENTS_PER_DAY * copies)))
    return PipelineSpec(days=days, copies=copies, seed=seed, large_facets=large_facets, large_bytes=large_bytes)


def day_events(spec: PipelineSpec, platforms: list[Platform], day: int) -> list[Event]:
    """Every copy's events of one day, in event-time order."""
    events = [event for platform in platforms for event in platform.events_for_day(day)]
    return sorted(events, key=lambda e: e["eventTime"])


MALFORMED = (
    lambda event: json.dumps(event)[: len(json.dumps(event)) // 2],  # a truncated write
    lambda event: json.dumps({**event, "eventTime": "yesterday at noon"}),
    lambda event: json.dumps({**event, "run": {}}),  # no runId
    lambda event: "<html><body>502 Bad Gateway</body></html>",  # a proxy's error page logged as an event
)


def pipeline_lines(spec: PipelineSpec, malformed: int, duplicates: int) -> Iterator[tuple[int, list[str], Counts]]:
    """Per day: (day, NDJSON lines, counts so far). ``malformed`` bad lines and ``duplicates`` verbatim repeats
    (at-least-once delivery: a few lines later in the same day) are spread over the days."""
    platforms = [Platform(spec, copy) for copy in range(spec.copies)]
    rng = random.Random(f"{spec.seed}:delivery")
    bad_days = {round(i * (spec.days - 1) / max(malformed - 1, 1)) for i in range(malformed)} if malformed else set()
    bad_left = malformed
    per_day_dups = [duplicates // spec.days + (1 if d < duplicates % spec.days else 0) for d in range(spec.days)]
    totals = Counts()
    for day in range(spec.days):
        lines = [json.dumps(event, separators=(",", ":")) for event in day_events(spec, platforms, day)]
        for _ in range(per_day_dups[day]):
            source = rng.randrange(len(lines))
            lines.insert(min(len(lines), source + rng.randint(1, 5)), lines[source])
        if day in bad_days:
            count = bad_left if day == max(bad_days) else 1
            for _ in range(count):
                kind = (malformed - bad_left) % len(MALFORMED)
                lines.insert(rng.randrange(len(lines)), MALFORMED[kind](json.loads(lines[0])))
                bad_left -= 1
        totals = Counts(
            events=sum(p.counts.events for p in platforms),
            failed_runs=sum(p.counts.failed_runs for p in platforms),
            aborted_runs=sum(p.counts.aborted_runs for p in platforms),
            large_facets=sum(p.counts.large_facets for p in platforms),
        )
        yield day, lines, totals

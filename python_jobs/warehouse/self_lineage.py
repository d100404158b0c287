"""Self-lineage: OpenLineage events for the project's own dbt runs, one job per model.

The events come from OpenLineage's own dbt support (``openlineage.common.provider.dbt``): its local
artifact processor reads ``manifest.json``, ``run_results.json`` and, when there is one, ``catalog.json``
(column types) of a finished dbt command and builds a START and a COMPLETE (or FAIL) event per model,
with the model's schema facet, its parents as inputs and its table as the output. Two things differ
from the stock processor:

- it accepts our adapter type ``spark_python`` (dbt-spark on the ``session`` method, which the stock
  processor rejects) and names the datasets' namespace after the Spark warehouse location;
- events are deterministic for the same artifacts: run ids are name-based UUIDs of the dbt invocation
  and the job instead of random ones, and dbt's tests are left out (the processor stamps their events
  with the current time, and every test would become a job). Emitting the same run twice therefore
  writes the same events, which ingest counts as duplicates.

Events go through the OpenLineage Python client: over HTTP to a collector (``HttpTransport``), or else
with its ``FileTransport`` into ``<LINEAGE_HOME>/landing/lineage/``, first under a hidden ``.partial`` name
and then renamed to ``self-lineage-<invocation id>.ndjson``, so a reader of the folder never sees half
a file.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import attr
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import RunEvent
from openlineage.client.transport.file import FileConfig, FileTransport
from openlineage.client.transport.http import HttpConfig, HttpTransport
from openlineage.common.provider.dbt.local import DbtLocalArtifactProcessor
from openlineage.common.provider.dbt.processor import Adapter, DbtEvents, UnsupportedDbtCommand

from python_jobs.errors import UserFacingError
from python_jobs.keys import name_uuid
from python_jobs.landing import LandingLayout, default_landing_root
from python_jobs.settings import Settings

ADAPTER_TYPE = "spark_python"
PRODUCER = "https://github.com/lineage-warehouse/lineage-warehouse/self-lineage"
DEFAULT_JOB_NAMESPACE = "lineage_warehouse"
ARTIFACTS = ("manifest.json", "run_results.json", "catalog.json")
SELF_LINEAGE_ENV = "LINEAGE_SELF_LINEAGE"


class SparkPythonArtifactProcessor(DbtLocalArtifactProcessor):
    """The OpenLineage dbt artifact processor, taught our adapter and made deterministic."""

    should_raise_on_unsupported_command = True

    def extract_adapter_type(self, profile: dict) -> None:
        if profile["type"] == ADAPTER_TYPE:
            self.adapter_type = Adapter.SPARK  # dbt-spark underneath: Spark SQL, Spark names
        else:
            super().extract_adapter_type(profile)

    def extract_namespace(self, profile: dict) -> str:
        if profile["type"] == ADAPTER_TYPE and profile.get("method") == "session":
            return warehouse_namespace(profile)
        return super().extract_namespace(profile)

    def parse_test(self, context: Any, nodes: dict) -> DbtEvents:
        return DbtEvents()


def warehouse_namespace(profile: dict) -> str:
    """The Spark warehouse folder as a URI: where the tables of a session-method target live."""
    parameters = profile.get("server_side_parameters") or {}
    location = str(parameters.get("spark.sql.warehouse.dir") or "spark-warehouse")
    if "://" in location:
        return location.rstrip("/")
    return Path(location).resolve().as_uri()


def with_run_id(event: RunEvent, invocation_id: str) -> RunEvent:
    """The event with a run id derived from the dbt invocation and the job (one run per model)."""
    run_id = name_uuid(f"dbt-run:{invocation_id}:{event.job.namespace}:{event.job.name}")
    return attr.evolve(event, run=attr.evolve(event.run, runId=run_id))


def without_column_lineage(event: RunEvent) -> RunEvent:
    """The event without the outputs' ``columnLineage`` facets. The processor derives them by parsing the
    compiled SQL, and the parser names CTEs and subqueries ``f1``, ``f2``, ... as if they were datasets, in an
    order that changes between two runs of the same artifacts: the facet would be neither true nor stable."""
    if not event.outputs:
        return event
    outputs = [
        attr.evolve(dataset, facets={k: v for k, v in dataset.facets.items() if k != "columnLineage"})
        if dataset.facets and "columnLineage" in dataset.facets else dataset
        for dataset in event.outputs
    ]
    return attr.evolve(event, outputs=outputs)


def dbt_run_events(
    project_dir: Path, artifacts_dir: Path, target: str, job_namespace: str = DEFAULT_JOB_NAMESPACE
) -> tuple[str, list[RunEvent]]:
    """The dbt invocation id and its events, ordered by time, then job, then START before the end."""
    missing = [name for name in ("manifest.json", "run_results.json") if not (artifacts_dir / name).is_file()]
    if missing:
        raise UserFacingError(f"no dbt artifacts to emit lineage from: {', '.join(missing)} missing in {artifacts_dir}")
    processor = SparkPythonArtifactProcessor(
        producer=PRODUCER,
        job_namespace=job_namespace,
        project_dir=str(project_dir),
        target=target,
        target_path=str(artifacts_dir),
    )
    try:
        events = processor.parse().events()
    except UnsupportedDbtCommand as error:
        raise UserFacingError(f"{artifacts_dir / 'run_results.json'} is not of a dbt run or build: {error}") from error
    invocation_id = str(processor.run_metadata.get("invocation_id") or "")
    if not invocation_id:
        raise ValueError(f"{artifacts_dir / 'run_results.json'} names no dbt invocation_id")
    ordered = sorted(
        (without_column_lineage(with_run_id(event, invocation_id)) for event in events),
        key=lambda e: (e.eventTime, e.job.name, e.eventType.value != "START"),
    )
    return invocation_id, ordered


def landing_dir(settings: Settings) -> Path:
    """The collector's ``sealed/`` folder: the events land as any producer's would, and are ingested once."""
    return LandingLayout(default_landing_root(settings.lineage_home)).ensure().sealed_dir


def artifacts_dir(settings: Settings) -> Path:
    """Where the main job keeps the build's artifacts: ``docs generate`` rewrites run_results.json."""
    return settings.lineage_home / "self-lineage" / "artifacts"


def keep_artifacts(target_dir: Path, destination: Path, names: tuple[str, ...] = ARTIFACTS) -> None:
    destination.mkdir(parents=True, exist_ok=True)
    for name in names:
        source = target_dir / name
        if source.is_file():
            shutil.copyfile(source, destination / name)


@dataclass(frozen=True)
class Emitted:
    invocation_id: str
    events: int
    destination: str
    landed_file: Path | None  # the sealed NDJSON file, when the events went to the landing folder


def emit_events(events: list[RunEvent], transport: Any) -> None:
    client = OpenLineageClient(transport=transport)
    for event in events:
        client.emit(event)
    transport.close()


def emit_self_lineage(
    settings: Settings,
    artifacts: Path,
    collector_url: str | None = None,
    job_namespace: str = DEFAULT_JOB_NAMESPACE,
) -> Emitted:
    """Emits the events of the dbt command whose artifacts are in ``artifacts``."""
    invocation_id, events = dbt_run_events(settings.project_dir, artifacts, settings.target, job_namespace)
    if collector_url:
        emit_events(events, HttpTransport(HttpConfig(url=collector_url)))
        return Emitted(invocation_id, len(events), collector_url, None)
    folder = landing_dir(settings)
    folder.mkdir(parents=True, exist_ok=True)
    sealed = folder / f"self-lineage-{invocation_id}.ndjson"
    partial = folder / f".{sealed.name}.partial"
    partial.unlink(missing_ok=True)
    emit_events(events, FileTransport(FileConfig(log_file_path=str(partial), append=True)))
    if not partial.exists():  # no model ran: nothing to land
        return Emitted(invocation_id, 0, str(folder), None)
    os.replace(partial, sealed)
    return Emitted(invocation_id, len(events), str(folder), sealed)


def self_lineage_requested(flag: bool) -> bool:
    """The command-line flag, or ``LINEAGE_SELF_LINEAGE=1`` (true/yes) in the environment."""
    return flag or os.environ.get(SELF_LINEAGE_ENV, "").strip().lower() in {"1", "true", "yes"}

"""What job versions and point-in-time lineage need from the warehouse, read with the snapshot.

Per run only two small values are read from the facet tables: the url of the ``sourceCodeLocation``
job facet its events carried, and the two times of its ``nominalTime`` run facet (never whole facet
bodies). The runs' inputs and outputs are the snapshot's ``run_io``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from pyspark.sql import SparkSession

from python_jobs.marquez_api.graph import LineageGraph
from python_jobs.marquez_api.job_versions import (
    DatasetRef,
    JobHistory,
    RunDefinition,
    aware,
    build_history,
    dataset_jobs,
    run_definitions,
)


@dataclass
class VersionState:
    """Per job (uuid) its version history; per run its definition and nominal times; per dataset the
    jobs any version of which read or wrote it."""

    histories: dict[str, JobHistory] = field(default_factory=dict)
    run_definitions: dict[str, RunDefinition] = field(default_factory=dict)
    nominal_times: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    dataset_jobs: dict[DatasetRef, set[str]] = field(default_factory=dict)
    # The last graphs drawn as of a moment (a page reload or a client's repeated calls ask again).
    graphs_as_of: dict[datetime, LineageGraph] = field(default_factory=dict)


def _latest_per_run(spark: SparkSession, table: str, facet: str, paths: list[str]) -> dict[str, list[str | None]]:
    """Per run, JSON paths read from the latest body of one facet (the later event wins, as for the
    current facets)."""
    if not spark.catalog.tableExists(table):
        return {}
    values = ", ".join(f"get_json_object(facet, '{path}') as v{i}" for i, path in enumerate(paths))
    picked = ", ".join(f"max_by(v{i}, struct(lineage_event_time, ingest_seq)) as v{i}" for i in range(len(paths)))
    rows = spark.sql(f"""
        select run_id, {picked}
        from (select run_id, lineage_event_time, ingest_seq, {values} from {table}
              where name = '{facet}' and run_id is not null)
        group by run_id
    """).collect()
    return {row.run_id: [row[f"v{i}"] for i in range(len(paths))] for row in rows}


def load_run_details(
    spark: SparkSession, lineage: str
) -> tuple[dict[str, str | None], dict[str, tuple[str | None, str | None]]]:
    """Per run: its source code location; its nominal start and end (as sent)."""
    locations = {run: values[0] for run, values in _latest_per_run(
        spark, f"{lineage}.job_facets", "sourceCodeLocation", ["$.sourceCodeLocation.url"]).items()}
    nominal = {run: (values[0], values[1]) for run, values in _latest_per_run(
        spark, f"{lineage}.run_facets", "nominalTime",
        ["$.nominalTime.nominalStartTime", "$.nominalTime.nominalEndTime"]).items()}
    return locations, nominal


def build_version_state(
    jobs: dict[str, tuple[str, str]], runs_by_job: dict[str, list[dict]],
    io: dict[str, list[tuple[str, DatasetRef]]], locations: dict[str, str | None],
    nominal: dict[str, tuple[str | None, str | None]],
) -> VersionState:
    """``jobs``: job uuid → (namespace, name); ``runs_by_job``: each job's runs newest first."""
    state = VersionState(nominal_times={
        run: (nominal_iso(start), nominal_iso(end)) for run, (start, end) in nominal.items()})
    for job_uuid, runs in runs_by_job.items():
        if job_uuid not in jobs:
            continue
        namespace, name = jobs[job_uuid]
        definitions = run_definitions(namespace, name, runs, io, locations)
        state.histories[job_uuid] = build_history(namespace, name, definitions)
        state.run_definitions.update((d.run_uuid, d) for d in definitions)
    state.dataset_jobs = dataset_jobs(state.histories)
    return state


def nominal_iso(text: str | None) -> str | None:
    """A nominal time as the API's timestamp text (UTC, with a Z); the sent text when it does not parse."""
    if not text:
        return None
    try:
        parsed = aware(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        return text
    return parsed.isoformat().replace("+00:00", "Z") if parsed else None

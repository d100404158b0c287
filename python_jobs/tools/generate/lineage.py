"""The lineage benchmark's OpenLineage events: deterministic, about 3 KB each (``SyntheticSpec.lean``: 1.5 KB).

``SyntheticSpec`` describes a pipeline of ``jobs`` jobs. Job ``j`` reads the outputs of two
earlier jobs (or source tables) and writes ``dataset_j``; each run sends a START and a COMPLETE
that both carry the output's schema facet. About one run in ``schema_change_every`` of a job
adds a column to its output, so schema versions change occasionally, not per run. A lean spec keeps that
shape (jobs, inputs, outputs, schema changes, facets) with fewer columns and no column descriptions, so 10M
events fit on a small disk (``bench scale``).
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

PRODUCER = "https://github.com/example/lineage-warehouse/bench"
RUN_EVENT_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
SCHEMA_FACET_URL = "https://openlineage.io/spec/facets/1-1-1/SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet"
SQL_FACET_URL = "https://openlineage.io/spec/facets/1-1-0/SQLJobFacet.json#/$defs/SQLJobFacet"
NAMESPACE = "bench-warehouse"
TYPES = ("bigint", "string", "double", "timestamp", "boolean", "date", "decimal(18,2)")
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class SyntheticSpec:
    events: int
    jobs: int = 200
    seed: int = 7
    base_columns: int = 22
    schema_change_every: int = 200
    first_run: int = 0  # continue an earlier file: later run numbers, later times
    descriptions: bool = True  # each schema field's "description"
    # A schema change adds a column ("add": outputs widen with the history, 125 extra columns at 10M events) or
    # renames the last one ("rename": as many schema versions and new fields, the width stays put).
    schema_change: str = "add"

    @classmethod
    def lean(cls, events: int, **changes: int) -> SyntheticSpec:
        """The same pipeline (jobs, inputs, facets, a schema version every ``schema_change_every`` runs of a job)
        with 8 columns per output, renamed rather than added, and no descriptions: bytes per event stay
        about 1.5 KB whatever the history's size."""
        return cls(events=events, base_columns=8, descriptions=False, schema_change="rename", **changes)


def _run_id(seed: int, run_number: int) -> str:
    return str(uuid.UUID(int=random.Random(seed * 1_000_003 + run_number).getrandbits(128), version=4))


def _fields(job: int, changes: int, spec: SyntheticSpec) -> list[dict[str, str]]:
    """The output schema of ``job`` after ``changes`` schema changes."""
    width = spec.base_columns if spec.schema_change == "rename" else spec.base_columns + changes
    fields = [{"name": f"col_{job}_{i:02d}", "type": TYPES[(job + i) % len(TYPES)]} for i in range(width)]
    if spec.schema_change == "rename" and changes:
        fields[-1]["name"] = f"col_{job}_v{changes}"
    if spec.descriptions:
        for i, field in enumerate(fields):
            field["description"] = f"column {i} of job {job}"
    return fields


def _dataset(name: str, fields: list[dict[str, str]] | None) -> dict:
    dataset: dict = {"namespace": NAMESPACE, "name": name}
    if fields is not None:
        dataset["facets"] = {"schema": {"_producer": PRODUCER, "_schemaURL": SCHEMA_FACET_URL, "fields": fields}}
    return dataset


def _upstreams(job: int) -> list[str]:
    if job < 2:
        return [f"source.table_{job}_a", f"source.table_{job}_b"]
    return [f"dataset_{(job * 7) % job}", f"dataset_{(job * 13 + 1) % job}"]


def events(spec: SyntheticSpec) -> Iterator[dict]:
    """The events of ``spec``, START then COMPLETE per run, runs in time order."""
    runs = (spec.events + 1) // 2
    produced = 0
    for run_number in range(spec.first_run, spec.first_run + runs):
        job = run_number % spec.jobs
        job_run = run_number // spec.jobs
        extra = job_run // spec.schema_change_every  # a schema change every schema_change_every runs
        started = EPOCH + timedelta(minutes=5 * run_number)
        run_id = _run_id(spec.seed, run_number)
        output = _dataset(f"dataset_{job}", _fields(job, extra, spec))
        inputs = [_dataset(name, None) for name in _upstreams(job)]
        query = f"insert into dataset_{job} select * from {' join '.join(_upstreams(job))} -- run {job_run}"
        for event_type, at in (("START", started), ("COMPLETE", started + timedelta(minutes=3))):
            if produced >= spec.events:
                return
            produced += 1
            yield {
                "eventType": event_type,
                "eventTime": at.isoformat().replace("+00:00", "Z"),
                "run": {"runId": run_id, "facets": {"nominalTime": {
                    "_producer": PRODUCER, "_schemaURL": PRODUCER, "nominalStartTime": started.isoformat()}}},
                "job": {"namespace": "bench-scheduler", "name": f"job_{job}", "facets": {
                    "sql": {"_producer": PRODUCER, "_schemaURL": SQL_FACET_URL, "query": query}}},
                "inputs": inputs,
                "outputs": [output],
                "producer": PRODUCER,
                "schemaURL": RUN_EVENT_URL,
            }


def write_events(spec: SyntheticSpec, out: Path) -> int:
    out.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with out.open("w") as handle:
        for event in events(spec):
            handle.write(json.dumps(event, separators=(",", ":")))
            handle.write("\n")
            count += 1
    return count


def proposal_example(out: Path, columns: int = 20, days: int = 30, every_minutes: int = 10) -> int:
    """The Marquez proposal's example: one job every 10 minutes for 30 days writing a stable
    20-column dataset, START and COMPLETE per run (4,320 runs, 8,640 events)."""
    runs = days * 24 * 60 // every_minutes
    fields = [{"name": f"column_{i:02d}", "type": "string"} for i in range(columns)]
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as handle:
        for run_number in range(runs):
            started = EPOCH + timedelta(minutes=every_minutes * run_number)
            run_id = _run_id(1, run_number)
            for event_type, at in (("START", started), ("COMPLETE", started + timedelta(minutes=2))):
                event = {
                    "eventType": event_type,
                    "eventTime": at.isoformat().replace("+00:00", "Z"),
                    "run": {"runId": run_id},
                    "job": {"namespace": "proposal", "name": "every_ten_minutes"},
                    "outputs": [_dataset("stable_twenty_columns", fields)],
                    "producer": PRODUCER,
                    "schemaURL": RUN_EVENT_URL,
                }
                handle.write(json.dumps(event, separators=(",", ":")) + "\n")
    return runs

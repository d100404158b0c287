"""Marquez's own write calls (``marquez-python``'s ``create_dataset``, ``create_job``, ``create_job_run`` and
``mark_job_run_as_*``) as OpenLineage events.

Marquez wrote these straight into its tables. Here each becomes the OpenLineage event that says the same
thing, and goes through the collector like any posted event: the same validation, the same landing file,
the same build. So the warehouse has one way in, re-posting is idempotent, and nothing a client wrote lives
outside the event history.

- ``PUT /namespaces/{ns}/datasets/{ds}`` → a DatasetEvent (schema, dataSource, documentation, tags and
  datasetType facets); with ``runId``, a RunEvent ``OTHER`` of that run with the dataset as its output.
- ``PUT /namespaces/{ns}/jobs/{job}`` → a JobEvent (inputs, outputs, sourceCodeLocation, documentation,
  jobType and sql facets); with ``runId``, a RunEvent ``OTHER`` of that run.
- ``POST /namespaces/{ns}/jobs/{job}/runs`` → a RunEvent ``OTHER`` (the run is NEW until a state arrives),
  with the nominalTime facet and the run's args in a ``marquez_runArgs`` facet.
- ``POST /jobs/runs/{id}/{start|complete|fail|abort}?at=`` → a RunEvent START, COMPLETE, FAIL or ABORT.

Everything here is pure: the caller supplies the time and, for calls that name only a run, the run's job.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from python_jobs.keys import name_uuid

PRODUCER = "https://github.com/lineage-warehouse/lineage-warehouse/marquez-api"
SPEC = "https://openlineage.io/spec"
RUN_EVENT_URL = f"{SPEC}/2-0-2/OpenLineage.json#/$defs/RunEvent"
JOB_EVENT_URL = f"{SPEC}/2-0-2/OpenLineage.json#/$defs/JobEvent"
DATASET_EVENT_URL = f"{SPEC}/2-0-2/OpenLineage.json#/$defs/DatasetEvent"
RUN_ARGS_FACET = "marquez_runArgs"

# Marquez's run transitions (``POST /jobs/runs/{id}/{action}``) → OpenLineage event types.
RUN_ACTIONS = {"start": "START", "complete": "COMPLETE", "fail": "FAIL", "abort": "ABORT"}
DATASET_TYPES = ("DB_TABLE", "STREAM")
JOB_TYPES = ("BATCH", "STREAM", "SERVICE")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


class LegacyWriteError(ValueError):
    """The request body is not what Marquez accepts for this call (a 400, with this message)."""


@dataclass(frozen=True)
class JobRef:
    namespace: str
    name: str


def stamp(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_time(text: str, label: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as error:
        raise LegacyWriteError(f"{label} is not an ISO-8601 timestamp: '{text}'") from error
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _facet(schema: str, **body: Any) -> dict[str, Any]:
    return {"_producer": PRODUCER, "_schemaURL": f"{SPEC}/facets/{schema}", **body}


def _object(body: Any, label: str) -> dict[str, Any]:
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise LegacyWriteError(f"the {label} body must be a JSON object")
    return body


def _text(body: dict[str, Any], key: str, required: bool = False) -> str | None:
    value = body.get(key)
    if value is None or value == "":
        if required:
            raise LegacyWriteError(f"{key} is required")
        return None
    if not isinstance(value, str):
        raise LegacyWriteError(f"{key} must be a string")
    return value


def _choice(body: dict[str, Any], key: str, allowed: tuple[str, ...]) -> str:
    value = (_text(body, key, required=True) or "").upper()
    if value not in allowed:
        raise LegacyWriteError(f"{key} must be one of {', '.join(allowed)}, not '{body.get(key)}'")
    return value


def _run_id(value: Any, label: str) -> str:
    if not isinstance(value, str) or not _UUID.match(value):
        raise LegacyWriteError(f"{label} must be a UUID, not '{value}'")
    return value.lower()


def _names(values: Any, label: str) -> list[str]:
    if values is None:
        return []
    if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
        raise LegacyWriteError(f"{label} must be a list of names")
    return list(values)


def _dataset_ids(values: Any, label: str) -> list[dict[str, str]]:
    if values is None:
        return []
    if not isinstance(values, list):
        raise LegacyWriteError(f"{label} must be a list of {{namespace, name}}")
    ids = []
    for value in values:
        if not isinstance(value, dict) or not all(isinstance(value.get(k), str) and value[k] for k in
                                                  ("namespace", "name")):
            raise LegacyWriteError(f"each of {label} needs a namespace and a name")
        ids.append({"namespace": value["namespace"], "name": value["name"]})
    return ids


def _run_event(event_type: str, run_id: str, job_ref: JobRef, at: datetime, *, run: dict[str, Any] | None = None,
               job: dict[str, Any] | None = None, inputs: list[dict[str, Any]] | None = None,
               outputs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"eventTime": stamp(at), "eventType": event_type, "producer": PRODUCER, "schemaURL": RUN_EVENT_URL,
            "run": {"runId": run_id, **(run or {})},
            "job": {"namespace": job_ref.namespace, "name": job_ref.name, **(job or {})},
            "inputs": inputs or [], "outputs": outputs or []}


def dataset_facets(body: dict[str, Any]) -> dict[str, Any]:
    """The facets of Marquez's DatasetMeta: type, sourceName, fields (with tags), tags, description."""
    fields = body.get("fields") or []
    if not isinstance(fields, list):
        raise LegacyWriteError("fields must be a list")
    schema_fields, tags = [], []
    for entry in fields:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
            raise LegacyWriteError("each field needs a name")
        schema_fields.append({k: entry[k] for k in ("name", "type", "description") if entry.get(k) is not None})
        tags += [{"key": t, "value": t, "source": "MARQUEZ_API", "field": entry["name"]}
                 for t in _names(entry.get("tags"), f"tags of field {entry['name']}")]
    tags += [{"key": t, "value": t, "source": "MARQUEZ_API"} for t in _names(body.get("tags"), "tags")]
    kind = _choice(body, "type", DATASET_TYPES)
    facets: dict[str, Any] = {
        "datasetType": _facet("DatasetTypeDatasetFacet.json", datasetType="STREAM" if kind == "STREAM" else "TABLE"),
        "dataSource": _facet("DatasourceDatasetFacet.json", name=_text(body, "sourceName", required=True)),
    }
    if schema_fields:
        facets["schema"] = _facet("SchemaDatasetFacet.json", fields=schema_fields)
    description = _text(body, "description")
    if description:
        facets["documentation"] = _facet("DocumentationDatasetFacet.json", description=description)
    if tags:
        facets["tags"] = _facet("TagsDatasetFacet.json", tags=tags)
    return facets


def dataset_event(namespace: str, name: str, body: Any, at: datetime, run_job: JobRef | None = None) -> dict[str, Any]:
    """``create_dataset``: a DatasetEvent, or with ``runId`` (whose job is ``run_job``) that run's output."""
    body = _object(body, "dataset")
    dataset = {"namespace": namespace, "name": name, "facets": dataset_facets(body)}
    if body.get("runId") is None:
        return {"eventTime": stamp(at), "producer": PRODUCER, "schemaURL": DATASET_EVENT_URL, "dataset": dataset}
    run_id = _run_id(body["runId"], "runId")
    if run_job is None:
        raise LegacyWriteError(f"runId: run '{run_id}' is not known")
    return _run_event("OTHER", run_id, run_job, at, outputs=[dataset])


def job_facets(body: dict[str, Any]) -> dict[str, Any]:
    """The facets of Marquez's JobMeta: type, location, description and context's sql."""
    kind = _choice(body, "type", JOB_TYPES)
    facets: dict[str, Any] = {"jobType": _facet(
        "JobTypeJobFacet.json", processingType="STREAMING" if kind == "STREAM" else "BATCH",
        integration="MARQUEZ", jobType="SERVICE" if kind == "SERVICE" else "JOB")}
    location = _text(body, "location")
    if location:
        scheme = location.split(":", 1)[0].lower() if ":" in location else "file"
        facets["sourceCodeLocation"] = _facet("SourceCodeLocationJobFacet.json", type=scheme, url=location)
    description = _text(body, "description")
    if description:
        facets["documentation"] = _facet("DocumentationJobFacet.json", description=description)
    context = _object(body.get("context"), "context")
    if isinstance(context.get("sql"), str) and context["sql"]:
        facets["sql"] = _facet("SQLJobFacet.json", query=context["sql"])
    return facets


def job_event(namespace: str, name: str, body: Any, at: datetime) -> dict[str, Any]:
    """``create_job``: a JobEvent with its inputs and outputs, or with ``runId`` a RunEvent of that run."""
    body = _object(body, "job")
    job = {"namespace": namespace, "name": name, "facets": job_facets(body)}
    inputs = _dataset_ids(body.get("inputs"), "inputs")
    outputs = _dataset_ids(body.get("outputs"), "outputs")
    if body.get("runId") is None:
        return {"eventTime": stamp(at), "producer": PRODUCER, "schemaURL": JOB_EVENT_URL, "job": job,
                "inputs": inputs, "outputs": outputs}
    run_id = _run_id(body["runId"], "runId")
    return _run_event("OTHER", run_id, JobRef(namespace, name), at, job={"facets": job["facets"]},
                      inputs=inputs, outputs=outputs)


def new_run_id(job: JobRef, body: dict[str, Any], at: datetime) -> str:
    """A run created without an id: Marquez draws a random one; here it is a hash of what the call said
    and when, so the same call replayed (the same landing file ingested again) names the same run."""
    canonical = json.dumps([job.namespace, job.name, stamp(at), body], sort_keys=True, separators=(",", ":"))
    return name_uuid(f"marquez_run:{canonical}")


def new_run_event(namespace: str, job_name: str, body: Any, at: datetime) -> dict[str, Any]:
    """``create_job_run``: a RunEvent OTHER, which creates the run in state NEW."""
    body = _object(body, "run")
    job = JobRef(namespace, job_name)
    run_id = _run_id(body["id"], "id") if body.get("id") is not None else new_run_id(job, body, at)
    facets: dict[str, Any] = {}
    start, end = _text(body, "nominalStartTime"), _text(body, "nominalEndTime")
    if start or end:
        nominal = {"nominalStartTime": stamp(parse_time(start, "nominalStartTime")) if start else None,
                   "nominalEndTime": stamp(parse_time(end, "nominalEndTime")) if end else None}
        facets["nominalTime"] = _facet("NominalTimeRunFacet.json", **{k: v for k, v in nominal.items() if v})
    args = _object(body.get("args"), "args")
    if args:
        facets[RUN_ARGS_FACET] = _facet("RunFacet", args={str(k): str(v) for k, v in args.items()})
    return _run_event("OTHER", run_id, job, at, run={"facets": facets} if facets else None)


def run_state_event(run_id: str, action: str, job: JobRef, at: datetime) -> dict[str, Any]:
    """``mark_job_run_as_{started,completed,failed,aborted}``: the RunEvent of that transition."""
    event_type = RUN_ACTIONS.get(action.lower())
    if event_type is None:
        raise LegacyWriteError(f"unknown run transition '{action}' (start, complete, fail or abort)")
    return _run_event(event_type, _run_id(run_id, "run id"), job, at)


def event_bytes(event: dict[str, Any]) -> bytes:
    """One NDJSON line's body (the collector adds the line break)."""
    return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

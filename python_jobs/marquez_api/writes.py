"""The writes Marquez's web UI makes (tags, tag descriptions, soft deletes), answered as Marquez does.

Each write is checked against the current snapshot (404 as Marquez for a missing namespace,
dataset, field or job), appended to the log in the warehouse (durable before the answer), folded
into the state and shown at once: the API's snapshot is swapped for one with the write applied.

Thread safety: handlers run in Starlette's thread pool. ``api.curation_lock`` orders the writes
(each takes the next ``write_seq``) and keeps ``refresh`` from swapping in a snapshot folded before
a write it did not see; ``api.spark_lock`` is the lock every Spark call of the read API takes. The
build loop uses the same SparkSession meanwhile: the log is a table no model reads or writes, every
name is fully qualified, so its dbt runs and these appends do not meet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from python_jobs.marquez_api.api import BadRequest, MarquezReadApi, NotFound
from python_jobs.marquez_api.curation import (
    ADD_TAG,
    DELETE,
    PUT_NAMESPACE,
    PUT_SOURCE,
    PUT_TAG,
    REMOVE_TAG,
    CurationWrite,
    apply,
)
from python_jobs.marquez_api.curation_store import append_write
from python_jobs.marquez_api.sources import redacted


@dataclass(frozen=True)
class Writer:
    """Who asks: ``curation.actor`` of the request's credentials, and the client's address."""

    actor: str
    remote_address: str | None


class MarquezWrites:
    def __init__(self, api: MarquezReadApi) -> None:
        self.api = api

    def _write(self, writer: Writer, action: str, kind: str, namespace: str | None = None, name: str | None = None,
               field: str | None = None, tag: str | None = None, description: str | None = None,
               attributes: dict[str, Any] | None = None) -> None:
        with self.api.curation_lock:
            state = self.api.snapshot.curation.state
            write = CurationWrite(
                write_seq=state.next_seq, action=action, entity_kind=kind, namespace=namespace, name=name,
                field=field, tag=tag, description=description, actor=writer.actor,
                remote_address=writer.remote_address, written_at=datetime.now(UTC),
                attributes=json.dumps(attributes, sort_keys=True) if attributes is not None else None,
            )
            with self.api.spark_lock:
                append_write(self.api.spark, self.api.settings, write)
            self.api.recurate(apply(state, write))

    # -- tags ----------------------------------------------------------------------------------

    def put_tag(self, writer: Writer, tag: str, description: str | None) -> dict[str, Any]:
        """PUT /api/v1/tags/{tag}: creates the tag or sets its description; answers the tag."""
        self._write(writer, PUT_TAG, "tag", tag=tag, description=description)
        return {"name": tag, "description": description}

    def tag_dataset(self, writer: Writer, namespace: str, dataset: str, tag: str, add: bool) -> dict[str, Any]:
        self.api.get_namespace(namespace)
        self.api.get_dataset(namespace, dataset)
        self._write(writer, ADD_TAG if add else REMOVE_TAG, "dataset", namespace, dataset, tag=tag)
        return self.api.get_dataset(namespace, dataset)

    def tag_field(self, writer: Writer, namespace: str, dataset: str, field: str, tag: str,
                  add: bool) -> dict[str, Any]:
        """Marquez upper-cases the tag of a field (and only there)."""
        self.api.get_namespace(namespace)
        body = self.api.get_dataset(namespace, dataset)
        if field not in {f["name"] for f in body["fields"]}:
            raise NotFound(f"Field '{field}' not found.")
        self._write(writer, ADD_TAG if add else REMOVE_TAG, "dataset_field", namespace, dataset, field, tag.upper())
        return self.api.get_dataset(namespace, dataset)

    def tag_job(self, writer: Writer, namespace: str, job: str, tag: str, add: bool) -> dict[str, Any]:
        self.api.get_namespace(namespace)
        self.api.get_job(namespace, job)
        self._write(writer, ADD_TAG if add else REMOVE_TAG, "job", namespace, job, tag=tag)
        return self.api.get_job(namespace, job)

    # -- soft deletes --------------------------------------------------------------------------

    def delete_dataset(self, writer: Writer, namespace: str, dataset: str) -> dict[str, Any]:
        """Answers the dataset as it was before the delete, as Marquez."""
        self.api.get_namespace(namespace)
        body = self.api.get_dataset(namespace, dataset)
        self._write(writer, DELETE, "dataset", namespace, dataset)
        return body

    def delete_job(self, writer: Writer, namespace: str, job: str) -> dict[str, Any]:
        self.api.get_namespace(namespace)
        body = self.api.get_job(namespace, job)
        self._write(writer, DELETE, "job", namespace, job)
        return body

    def delete_namespace(self, writer: Writer, namespace: str) -> dict[str, Any]:
        """Hides the namespace with its datasets and jobs (each back when an event names it again)."""
        body = self.api.get_namespace(namespace)
        self._write(writer, DELETE, "namespace", namespace)
        return body

    # -- namespaces and sources ------------------------------------------------------------------

    def put_namespace(self, writer: Writer, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        """PUT /api/v1/namespaces/{ns} (``{"ownerName", "description"}``): creates the namespace or sets its
        owner and description, as Marquez; a deleted namespace shows again. Answers the namespace."""
        owner = _required_text(body, "ownerName")
        self._write(writer, PUT_NAMESPACE, "namespace", namespace, description=_optional_text(body, "description"),
                    attributes={"ownerName": owner})
        return self.api.get_namespace(namespace)

    def put_source(self, writer: Writer, source: str, body: dict[str, Any]) -> dict[str, Any]:
        """PUT /api/v1/sources/{name} (``{"type", "connectionUrl", "description"}``). The URL is stored with
        its password masked (the API never answers it), so the log holds no credential."""
        source_type = _required_text(body, "type").upper()
        url = _required_text(body, "connectionUrl")
        if "://" not in url and not url.startswith(("jdbc:", "file:")):
            raise BadRequest(f"connectionUrl must be a URI: {url!r}")
        self._write(writer, PUT_SOURCE, "source", name=source, description=_optional_text(body, "description"),
                    attributes={"type": source_type, "connectionUrl": redacted(url)})
        return self.api.get_source(source)


def _required_text(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value.strip():
        raise BadRequest(f"{key} must be a non-empty string")
    return value


def _optional_text(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise BadRequest(f"{key} must be a string")
    return value

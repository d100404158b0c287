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

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from python_jobs.marquez_api.api import MarquezReadApi, NotFound
from python_jobs.marquez_api.curation import ADD_TAG, DELETE, PUT_TAG, REMOVE_TAG, CurationWrite, apply
from python_jobs.marquez_api.curation_store import append_write


@dataclass(frozen=True)
class Writer:
    """Who asks: ``curation.actor`` of the request's credentials, and the client's address."""

    actor: str
    remote_address: str | None


class MarquezWrites:
    def __init__(self, api: MarquezReadApi) -> None:
        self.api = api

    def _write(self, writer: Writer, action: str, kind: str, namespace: str | None = None, name: str | None = None,
               field: str | None = None, tag: str | None = None, description: str | None = None) -> None:
        with self.api.curation_lock:
            state = self.api.snapshot.curation.state
            write = CurationWrite(
                write_seq=state.next_seq, action=action, entity_kind=kind, namespace=namespace, name=name,
                field=field, tag=tag, description=description, actor=writer.actor,
                remote_address=writer.remote_address, written_at=datetime.now(UTC),
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

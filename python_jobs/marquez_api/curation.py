"""What the API's writes (tags, descriptions of tags, soft deletes, namespace and source metadata)
change, folded from their log.

Each write through the Marquez-compatible API is one row of an append-only log (``CurationWrite``;
stored by ``curation_store``). The current state is the fold of the log in ``write_seq`` order, so
it survives any rebuild of the warehouse's models, and who did what and when stays readable.

Deletes are soft, as in Marquez: a deleted dataset, job or namespace is hidden from lists, search
and lineage until an event names it again. Marquez un-hides an entity when a later event upserts
it; here an entity is visible again when an event naming it has an event time after the delete.
Pure functions only: no Spark.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

# Actions and the entity kinds they apply to.
PUT_TAG = "put_tag"  # entity_kind "tag": create a tag or set its description
ADD_TAG = "add_tag"  # on a dataset, dataset_field or job
REMOVE_TAG = "remove_tag"
DELETE = "delete"  # a dataset, job or namespace
PUT_NAMESPACE = "put_namespace"  # entity_kind "namespace": its owner and description (``attributes``)
PUT_SOURCE = "put_source"  # entity_kind "source" (``name``): its type and connection URL (``attributes``)
ACTIONS = (PUT_TAG, ADD_TAG, REMOVE_TAG, DELETE, PUT_NAMESPACE, PUT_SOURCE)
TAGGABLE = ("dataset", "dataset_field", "job")
DELETABLE = ("dataset", "job", "namespace")

# (kind, namespace, name, field): field is "" except for dataset fields.
EntityKey = tuple[str, str, str, str]
# (kind, namespace, name): name is "" for a namespace.
Deletable = tuple[str, str, str]


@dataclass(frozen=True)
class CurationWrite:
    """One row of the log: one accepted write."""

    write_seq: int
    action: str
    entity_kind: str
    namespace: str | None
    name: str | None
    field: str | None
    tag: str | None
    description: str | None
    actor: str
    remote_address: str | None
    written_at: datetime
    # JSON text of what a put_namespace ({"ownerName"}) or put_source ({"type", "connectionUrl"}) sets.
    attributes: str | None = None

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"unknown action {self.action!r}")

    @property
    def entity(self) -> EntityKey:
        return (self.entity_kind, self.namespace or "", self.name or "", self.field or "")


@dataclass(frozen=True)
class CurationState:
    """The fold of the log: tags and their descriptions, tags per entity, and when each entity was
    last deleted. ``next_seq`` is the ``write_seq`` of the next write."""

    tags: Mapping[str, str | None] = field(default_factory=dict)
    entity_tags: Mapping[EntityKey, frozenset[str]] = field(default_factory=dict)
    deleted_at: Mapping[Deletable, datetime] = field(default_factory=dict)
    # Namespace name → ownerName, description, createdAt (first put), updatedAt (last put).
    namespaces: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # Source name → type, connectionUrl, description, createdAt, updatedAt.
    sources: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    next_seq: int = 1

    def tags_of(self, kind: str, namespace: str, name: str, field_name: str = "") -> frozenset[str]:
        return self.entity_tags.get((kind, namespace, name, field_name), frozenset())

    def field_tags(self, namespace: str, name: str) -> dict[str, frozenset[str]]:
        """A dataset's tagged fields: field name → tags."""
        return {key[3]: tags for key, tags in self.entity_tags.items()
                if key[:3] == ("dataset_field", namespace, name) and tags}


def _put_entry(previous: Mapping[str, Any] | None, write: CurationWrite) -> dict[str, Any]:
    """A namespace's or source's metadata after a put: the put replaces it all but its first put time."""
    attributes = json.loads(write.attributes) if write.attributes else {}
    created = previous["createdAt"] if previous is not None else write.written_at
    return {**attributes, "description": write.description, "createdAt": created, "updatedAt": write.written_at}


def apply(state: CurationState, write: CurationWrite) -> CurationState:
    """The state after one more write (a new state: readers may hold the previous one)."""
    next_seq = max(state.next_seq, write.write_seq + 1)
    if write.action == PUT_NAMESPACE:
        name = write.namespace or ""
        entry = _put_entry(state.namespaces.get(name), write)
        return replace(state, namespaces={**state.namespaces, name: entry}, next_seq=next_seq)
    if write.action == PUT_SOURCE:
        name = write.name or ""
        entry = _put_entry(state.sources.get(name), write)
        return replace(state, sources={**state.sources, name: entry}, next_seq=next_seq)
    if write.action == PUT_TAG:
        return replace(state, tags={**state.tags, str(write.tag): write.description}, next_seq=next_seq)
    if write.action in (ADD_TAG, REMOVE_TAG):
        tag = str(write.tag)
        current = state.entity_tags.get(write.entity, frozenset())
        changed = current | {tag} if write.action == ADD_TAG else current - {tag}
        tags = state.tags if write.action == REMOVE_TAG or tag in state.tags else {**state.tags, tag: None}
        return replace(state, tags=tags, entity_tags={**state.entity_tags, write.entity: changed},
                       next_seq=next_seq)
    key = (write.entity_kind, write.namespace or "", write.name or "")
    previous = state.deleted_at.get(key)
    deleted = write.written_at if previous is None else max(previous, write.written_at)
    return replace(state, deleted_at={**state.deleted_at, key: deleted}, next_seq=next_seq)


def fold(writes: Iterable[CurationWrite], state: CurationState | None = None) -> CurationState:
    """The state after ``writes``, taken in ``write_seq`` order whatever order they come in."""
    state = state or CurationState()
    for write in sorted(writes, key=lambda w: w.write_seq):
        state = apply(state, write)
    return state


def delete_time(state: CurationState, kind: str, namespace: str, name: str) -> datetime | None:
    """When a dataset or job was deleted, itself or with its namespace: the later of the two."""
    keys = ((kind, namespace, name), ("namespace", namespace, ""))
    times = [state.deleted_at[key] for key in keys if key in state.deleted_at]
    return max(times) if times else None


def is_hidden(state: CurationState, last_seen: Mapping[Deletable, datetime], kind: str, namespace: str,
              name: str = "") -> bool:
    """Deleted and not named by an event whose time is after the delete. ``last_seen`` holds, per
    dataset, job and namespace, the latest event time naming it (at least those after a delete)."""
    deleted = (state.deleted_at.get(("namespace", namespace, "")) if kind == "namespace"
               else delete_time(state, kind, namespace, name))
    if deleted is None:
        return False
    seen = last_seen.get((kind, namespace, name))
    put = state.namespaces.get(namespace) if kind == "namespace" else None
    if put is not None and put["updatedAt"] > deleted:
        return False  # a PUT of the namespace after its delete shows it again (its datasets and jobs stay hidden)
    return seen is None or seen <= deleted


def earliest_delete(state: CurationState) -> datetime | None:
    return min(state.deleted_at.values()) if state.deleted_at else None


def actor(user: str | None, api_key: str | None) -> str:
    """Who wrote: the Basic-auth user name when given, else a short fingerprint of the API key (never
    the key), else ``anonymous``."""
    if user:
        return user
    if api_key:
        return "key:" + hashlib.sha256(api_key.encode()).hexdigest()[:12]
    return "anonymous"


@dataclass(frozen=True)
class CuratedView:
    """What a snapshot shows of the writes: their state, and what the deletes took out of the lists
    (a deleted dataset still answers its own GET, with ``deleted: true``, as in Marquez)."""

    state: CurationState = field(default_factory=CurationState)
    deleted_datasets: Mapping[tuple[str, str], dict] = field(default_factory=dict)
    hidden_namespaces: Mapping[str, dict] = field(default_factory=dict)

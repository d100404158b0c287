"""Marquez's sources, from the OpenLineage ``dataSource`` facets of the datasets.

A source is a name (``dataSource.name``) shared by the datasets that carry it. It first appeared with the
earliest of them and was last updated with the latest; its connection URL is the ``uri`` the most
recently updated of them gives (its password masked), and its type the scheme of that URI in upper case
(``postgres://...`` is ``POSTGRES``), or ``UNKNOWN`` without one. A source put through the API
(PUT /api/v1/sources/{name}) takes the type, URL and description sent, and exists without datasets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from python_jobs.marquez_api.snapshot import iso

EPOCH = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class SourceSighting:
    """One dataset's ``dataSource`` facet, with the dataset's creation and last update."""

    name: str
    uri: str | None
    created_at: datetime | None
    updated_at: datetime | None


def sightings(entries: Iterable[dict[str, Any]], facets_of: Callable[[str], dict[str, Any]],
              moment: Callable[[str], datetime]) -> list[SourceSighting]:
    """The ``dataSource`` of each dataset entry (``uuid``, ``createdAt``, ``updatedAt`` ISO texts)."""
    found = []
    for entry in entries:
        facet = facets_of(entry["uuid"]).get("dataSource")
        if not isinstance(facet, dict) or not isinstance(facet.get("name"), str) or not facet["name"]:
            continue
        uri = facet.get("uri") if isinstance(facet.get("uri"), str) and facet.get("uri") else None
        found.append(SourceSighting(
            facet["name"], uri,
            moment(entry["createdAt"]) if entry.get("createdAt") else None,
            moment(entry["updatedAt"]) if entry.get("updatedAt") else None,
        ))
    return found


def source_type(uri: str | None) -> str:
    if not uri or ":" not in uri:
        return "UNKNOWN"
    scheme = uri.split(":", 1)[0]
    return scheme.upper() if scheme.replace("+", "").replace("-", "").replace(".", "").isalnum() else "UNKNOWN"


def redacted(uri: str | None) -> str | None:
    """The URI without a password (``user:secret@host`` → ``user:****@host``): producers put credentials
    in ``dataSource.uri``, and the API answers anyone who may read lineage."""
    if not uri:
        return uri
    scheme, separator, rest = uri.partition("://")
    if not separator:
        return uri
    authority, slash, path = rest.partition("/")
    userinfo, at, host = authority.rpartition("@")
    if not at or ":" not in userinfo:
        return uri
    user = userinfo.split(":", 1)[0]
    return f"{scheme}://{user}:****@{host}{slash}{path}"


def sources(found: Iterable[SourceSighting]) -> list[dict[str, Any]]:
    """Marquez's Source bodies, one per name, sorted by name."""
    by_name: dict[str, list[SourceSighting]] = {}
    for sighting in found:
        by_name.setdefault(sighting.name, []).append(sighting)
    answer = []
    for name in sorted(by_name):
        group = by_name[name]
        created = [s.created_at for s in group if s.created_at is not None]
        latest = max(group, key=lambda s: (s.updated_at or EPOCH, s.uri is not None, s.uri or ""))
        with_uri = [s for s in group if s.uri]
        uri = latest.uri or (max(with_uri, key=lambda s: (s.updated_at or EPOCH, s.uri)).uri if with_uri else None)
        updated = [s.updated_at for s in group if s.updated_at is not None]
        answer.append({
            "type": source_type(uri),
            "name": name,
            "createdAt": iso(min(created)) if created else None,
            "updatedAt": iso(max(updated)) if updated else None,
            "connectionUrl": redacted(uri),
            "description": None,
        })
    return answer


def with_put_sources(found: list[dict[str, Any]], put: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``found`` (from the facets) with the sources put through the API over them, sorted by name:
    the put's type, URL and description win; the times span both."""
    if not put:
        return found
    by_name = {source["name"]: source for source in found}
    for name, entry in put.items():
        seen = by_name.get(name)
        created, updated = iso(entry["createdAt"]), iso(entry["updatedAt"])
        by_name[name] = {
            "type": entry.get("type") or "UNKNOWN",
            "name": name,
            "createdAt": min(seen["createdAt"], created) if seen and seen["createdAt"] else created,
            "updatedAt": max(seen["updatedAt"], updated) if seen and seen["updatedAt"] else updated,
            "connectionUrl": redacted(entry.get("connectionUrl")),
            "description": entry.get("description"),
        }
    return [by_name[name] for name in sorted(by_name)]

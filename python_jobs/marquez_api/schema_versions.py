"""The datasets' schema versions and their fields, kept between refreshes and read past a mark.

A schema version's id names its field set, and the models never change one: a changed or merged field set is a
new version (dataset_schema_versions.sql). So the snapshot keeps the versions and their fields with the mark
they are complete through (the lower ``lineage.input_through`` of ``dataset_schema_versions`` and its field
mapping), and the next refresh reads only the versions and mappings built past it. The fields' names, types and
descriptions come from ``dataset_fields``, joined to the new mappings only. A version with a mapped field that
``dataset_fields`` lacks (its model failed in a build that wrote the mapping) is served without that field, as
the full read's inner join serves it, and read again by the next refresh rather than kept short. The kept
versions are trusted only while the three tables have grown by appends alone (watermarks.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

from python_jobs.marquez_api.watermarks import Watermark, can_extend, least_mark, table_files
from python_jobs.settings import Settings

MARKED_TABLES = ("dataset_schema_versions", "dataset_schema_versions_field_mapping")
SOURCE_TABLES = (*MARKED_TABLES, "dataset_fields")


@dataclass(frozen=True)
class SchemaVersion:
    dataset_uuid: str
    created_at: datetime | None


@dataclass(frozen=True)
class SchemaVersions:
    """``fields``: per schema version, its fields (name, then type); ``versions``: each schema version's dataset
    and creation; ``incomplete``: the versions to read again; ``watermark``: the mark they are complete through
    and the files read; ``rows_read``: the versions and field mappings read to make these."""

    fields: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    versions: dict[str, SchemaVersion] = field(default_factory=dict)
    incomplete: frozenset[str] = frozenset()
    watermark: Watermark = field(default_factory=Watermark)
    rows_read: int = 0

    def by_dataset(self, shown_time: Callable[[datetime | None], str | None]) -> dict[str, list[dict[str, Any]]]:
        """Per dataset, its schema versions as the API shows them (times through ``shown_time``), by creation
        (nulls first, as Spark's ascending order), then id."""
        ordered = sorted(self.versions.items(), key=lambda item: (
            item[1].created_at is not None, item[1].created_at or datetime.min.replace(tzinfo=UTC), item[0]))
        shown: dict[str, list[dict[str, Any]]] = {}
        for uuid, version in ordered:
            shown.setdefault(version.dataset_uuid, []).append(
                {"id": uuid, "createdAt": shown_time(version.created_at), "fields": self.fields.get(uuid, [])})
        return shown


def _bounds(column: str, after: int | None, through: int | None, again: Iterable[str], uuid: str) -> str:
    """Rows past ``after`` through ``through`` (open where None), and the rows of the versions ``again``."""
    bounds = " and ".join(part for part in (
        f"{column} > {int(after)}" if after is not None else "",
        f"{column} <= {int(through)}" if through is not None else "",
    ) if part) or "true"
    listed = ", ".join(f"'{version}'" for version in sorted(again) if version.replace("-", "").isalnum())
    return f"(({bounds}) or {uuid} in ({listed}))" if listed else f"({bounds})"


def read_versions(spark: SparkSession, lineage: str, after: int | None, through: int | None,
                  again: Iterable[str]) -> dict[str, SchemaVersion]:
    table = spark.sql(f"""
        select uuid, dataset_uuid, created_at from {lineage}.dataset_schema_versions
        where {_bounds("built_through_seq", after, through, again, "uuid")}
    """).toArrow()
    return {uuid: SchemaVersion(dataset, created) for uuid, dataset, created in zip(
        table.column("uuid").to_pylist(), table.column("dataset_uuid").to_pylist(),
        table.column("created_at").to_pylist(), strict=True)}


def read_fields(spark: SparkSession, lineage: str, after: int | None, through: int | None,
                again: Iterable[str]) -> tuple[dict[str, list[dict[str, Any]]], set[str], int]:
    """The fields of the versions whose mappings were built past ``after`` (and of ``again``), each version's
    by name and type; the versions with a mapped field not found; how many mappings were read."""
    table = spark.sql(f"""
        select
            m.dataset_schema_version_uuid as schema_version, f.uuid is not null as found, f.name, f.type,
            f.description
        from {lineage}.dataset_schema_versions_field_mapping as m
        left join {lineage}.dataset_fields as f on m.dataset_field_uuid = f.uuid
        where {_bounds("m.built_through_seq", after, through, again, "m.dataset_schema_version_uuid")}
    """).toArrow()
    return fields_by_version(table)


def fields_by_version(table: pa.Table) -> tuple[dict[str, list[dict[str, Any]]], set[str], int]:
    """``read_fields``' result from its rows (``schema_version``, ``found``, ``name``, ``type``, ``description``)."""
    fields: dict[str, list[dict[str, Any]]] = {}
    incomplete: set[str] = set()
    columns = [table.column(name).to_pylist() for name in ("schema_version", "found", "name", "type", "description")]
    for version, found, name, type_, description in zip(*columns, strict=True):
        entries = fields.setdefault(version, [])
        if not found:
            incomplete.add(version)
            continue
        entries.append({"name": name, "type": type_, "tags": [], "description": description})
    for entries in fields.values():
        entries.sort(key=_field_order)
    return fields, incomplete, table.num_rows


def _field_order(entry: dict[str, Any]) -> tuple[bool, str, bool, str]:
    """By name, then type, nulls first: Spark's ascending order (strings compare by code point in both)."""
    return entry["name"] is not None, entry["name"] or "", entry["type"] is not None, entry["type"] or ""


def load_schema_versions(spark: SparkSession, settings: Settings, kept: SchemaVersions | None = None) -> SchemaVersions:
    """Every schema version and its fields: ``kept`` and those built past its mark where it can be extended
    (``can_extend``), else all of them."""
    lineage = settings.schema("lineage")
    current = Watermark(least_mark(spark, [f"{lineage}.{table}" for table in MARKED_TABLES]),
                        table_files(spark, [f"{lineage}.{table}" for table in SOURCE_TABLES]))
    if kept is not None and can_extend(kept.watermark, current):
        again = kept.incomplete
        versions = {**kept.versions, **read_versions(spark, lineage, kept.watermark.through, current.through, again)}
        fields, incomplete, read = read_fields(spark, lineage, kept.watermark.through, current.through, again)
        fields = {**kept.fields, **fields}
    else:
        versions = read_versions(spark, lineage, None, current.through, ())
        fields, incomplete, read = read_fields(spark, lineage, None, current.through, ())
    return SchemaVersions(fields, versions, frozenset(incomplete), current, read + len(versions))

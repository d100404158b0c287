"""Ordered, typed columns of one schema model, computed from all of its versions.

Rules (the only place they live; the dbt model ``registry_columns`` and the ``registry ddl``
command both call :func:`plan_model`):

* Flattening: nested objects with properties become leaf columns named ``parent__child``;
  arrays and objects without properties stay one column of JSON text. ``$ref`` is not expanded:
  a property holding one (or oneOf/anyOf/allOf/not) is one nullable column of JSON text.
* A leaf is required when it and every ancestor are required and its type does not allow null.
* First version: required columns first, then nullable ones, each group by name.
* Later versions append their new columns after all earlier ones, in version order; within a
  version required first, then by name. Appended columns are nullable. Removed properties keep
  their column. Sorting is on (required, name), never on set iteration order.
* Breaking change: a version whose value type does not fit the existing column, or that drops a
  required column, is not merged; its rows go to a recovery table ``<table>_recovered_<hash>``
  whose columns follow that version alone.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from python_jobs.registry.naming import column_name, json_path
from python_jobs.registry.schemaver import SchemaVer
from python_jobs.registry.types import LeafType, allows_null, fits, is_flattened_object, leaf_type

RECOVERY_INFIX = "_recovered_"


@dataclass(frozen=True)
class Leaf:
    path: tuple[str, ...]
    spark_type: str
    kind: str
    required: bool

    @property
    def name(self) -> str:
        return column_name(self.path)


@dataclass(frozen=True)
class Column:
    position: int  # from 1
    name: str
    spark_type: str
    kind: str
    nullable: bool
    introduced_in: str
    json_path: str
    path: tuple[str, ...] = field(compare=False)


@dataclass(frozen=True)
class VersionPlan:
    version: SchemaVer
    schema_hash: str
    table_suffix: str  # "" for the model's table, "_recovered_<hash>" for a recovery table
    added: tuple[str, ...]  # names of the columns this version appended (main table only)
    conflicts: tuple[str, ...]  # why the version went to recovery, one line per column

    @property
    def is_recovery(self) -> bool:
        return bool(self.table_suffix)


@dataclass(frozen=True)
class ModelPlan:
    columns: tuple[Column, ...]  # the model's table
    versions: tuple[VersionPlan, ...]  # in SchemaVer order
    recovery_columns: dict[str, tuple[Column, ...]]  # table suffix -> columns of that recovery table


def schema_hash(schema: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON text of a schema (sorted keys, no whitespace)."""
    canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def flatten(schema: dict[str, Any]) -> list[Leaf]:
    """Leaf columns of a schema, in property-path order."""
    return list(_walk(schema, (), required_so_far=True))


def _walk(node: dict[str, Any], path: tuple[str, ...], required_so_far: bool) -> Iterator[Leaf]:
    required_keys = set(node.get("required", []))
    for key in sorted(node.get("properties", {})):
        child = node["properties"][key]
        if not isinstance(child, dict):
            child = {}
        child_path = (*path, key)
        child_required = required_so_far and key in required_keys
        if is_flattened_object(child):
            yield from _walk(child, child_path, child_required and not allows_null(child))
        else:
            typed: LeafType = leaf_type(child)
            yield Leaf(child_path, typed.spark_type, typed.kind, child_required and not typed.allows_null)


def _order_key(leaf: Leaf) -> tuple[bool, str, tuple[str, ...]]:
    return (not leaf.required, leaf.name, leaf.path)


def _unique_name(base: str, taken: set[str]) -> str:
    if base not in taken:
        return base
    suffix = 2
    while f"{base}_{suffix}" in taken:
        suffix += 1
    return f"{base}_{suffix}"


def first_version_columns(leaves: Sequence[Leaf], version: SchemaVer) -> list[Column]:
    columns: list[Column] = []
    taken: set[str] = set()
    for leaf in sorted(leaves, key=_order_key):
        name = _unique_name(leaf.name, taken)
        taken.add(name)
        columns.append(
            Column(len(columns) + 1, name, leaf.spark_type, leaf.kind, not leaf.required, str(version),
                   json_path(leaf.path), leaf.path)
        )
    return columns


def version_conflicts(columns: Sequence[Column], leaves: Sequence[Leaf], version: SchemaVer) -> list[str]:
    """Why ``leaves`` (one version) cannot be loaded into ``columns`` without a cast or lost data."""
    by_path = {leaf.path: leaf for leaf in leaves}
    conflicts = []
    for column in columns:
        leaf = by_path.get(column.path)
        if leaf is None:
            if not column.nullable:
                conflicts.append(f"`{column.name}`: required since {column.introduced_in}, removed in {version}")
            continue
        if not fits((leaf.spark_type, leaf.kind), (column.spark_type, column.kind)):
            conflicts.append(
                f"`{column.name}`: {_describe(column.spark_type, column.kind)} since {column.introduced_in}, "
                f"{_describe(leaf.spark_type, leaf.kind)} in {version}"
            )
    return conflicts


def _describe(spark_type: str, kind: str) -> str:
    return "STRING (JSON text)" if kind == "json" else spark_type


def plan_model(versions: Sequence[tuple[SchemaVer, dict[str, Any]]]) -> ModelPlan:
    """Columns of one model's table and the fate of each version. ``versions`` may come in any order."""
    ordered = sorted(versions, key=lambda item: item[0])
    if len({v.model for v, _ in ordered}) > 1:
        raise ValueError("plan_model takes the versions of one model")
    columns: list[Column] = []
    plans: list[VersionPlan] = []
    recovery: dict[str, tuple[Column, ...]] = {}
    for version, schema in ordered:
        leaves = flatten(schema)
        digest = schema_hash(schema)
        if not plans:
            columns = first_version_columns(leaves, version)
            plans.append(VersionPlan(version, digest, "", tuple(c.name for c in columns), ()))
            continue
        conflicts = version_conflicts(columns, leaves, version)
        if conflicts:
            suffix = f"{RECOVERY_INFIX}{digest[:8]}"
            recovery[suffix] = tuple(first_version_columns(leaves, version))
            plans.append(VersionPlan(version, digest, suffix, (), tuple(conflicts)))
            continue
        columns, added = _merge_version(columns, leaves, version)
        plans.append(VersionPlan(version, digest, "", added, ()))
    return ModelPlan(tuple(columns), tuple(plans), recovery)


def _merge_version(
    columns: list[Column], leaves: Sequence[Leaf], version: SchemaVer
) -> tuple[list[Column], tuple[str, ...]]:
    known = {column.path: column for column in columns}
    by_path = {leaf.path: leaf for leaf in leaves}
    merged = []
    for column in columns:
        leaf = by_path.get(column.path)
        # A column stays NOT NULL only while every version requires it.
        still_required = not column.nullable and leaf is not None and leaf.required
        merged.append(_with_nullable(column, not still_required))
    taken = {column.name for column in merged}
    added: list[str] = []
    for leaf in sorted((leaf for leaf in leaves if leaf.path not in known), key=_order_key):
        name = _unique_name(leaf.name, taken)
        taken.add(name)
        added.append(name)
        merged.append(
            Column(len(merged) + 1, name, leaf.spark_type, leaf.kind, True, str(version), json_path(leaf.path),
                   leaf.path)
        )
    return merged, tuple(added)


def _with_nullable(column: Column, nullable: bool) -> Column:
    if column.nullable == nullable:
        return column
    return Column(column.position, column.name, column.spark_type, column.kind, nullable, column.introduced_in,
                  column.json_path, column.path)

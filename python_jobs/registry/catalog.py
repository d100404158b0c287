"""Registry rows -> the rows of the ``registry_columns`` and ``registry_versions`` tables.

The dbt Python models call these functions with what ``stg_registry_schemas`` holds, so the
column order in the warehouse is exactly what :func:`plan_model` computes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from python_jobs.registry.columns import ModelPlan, plan_model
from python_jobs.registry.naming import table_name
from python_jobs.registry.schemaver import SchemaVer, missing_versions, parse_schemaver

COLUMN_FIELDS = (
    "vendor string, name string, model int, table_name string, table_suffix string, column_position int, "
    "column_name string, spark_type string, column_kind string, is_nullable boolean, introduced_in string, "
    "json_path string"
)
VERSION_FIELDS = (
    "vendor string, name string, model int, version string, version_order int, table_name string, "
    "table_suffix string, is_recovery boolean, added_columns string, conflicts string, missing_before string, "
    "schema_hash string"
)


@dataclass(frozen=True)
class RegisteredSchema:
    vendor: str
    name: str
    format: str
    version: str
    schema_json: str


def model_plans(schemas: Iterable[RegisteredSchema]) -> dict[tuple[str, str, int], ModelPlan]:
    grouped: dict[tuple[str, str, int], list[tuple[SchemaVer, dict[str, Any]]]] = {}
    for item in schemas:
        if item.format != "jsonschema":
            continue
        version = parse_schemaver(item.version)
        grouped.setdefault((item.vendor, item.name, version.model), []).append((version, json.loads(item.schema_json)))
    return {key: plan_model(versions) for key, versions in sorted(grouped.items())}


def column_rows(plans: dict[tuple[str, str, int], ModelPlan]) -> list[tuple[Any, ...]]:
    rows = []
    for (vendor, name, model), plan in plans.items():
        table = table_name(vendor, name, model)
        tables = [("", plan.columns), *sorted(plan.recovery_columns.items())]
        for suffix, columns in tables:
            rows += [
                (vendor, name, model, table, suffix, c.position, c.name, c.spark_type, c.kind, c.nullable,
                 c.introduced_in, c.json_path)
                for c in columns
            ]
    return rows


def version_rows(plans: dict[tuple[str, str, int], ModelPlan]) -> list[tuple[Any, ...]]:
    rows = []
    for (vendor, name, model), plan in plans.items():
        table = table_name(vendor, name, model)
        present = [p.version for p in plan.versions]
        missing = missing_versions(present)
        for order, version_plan in enumerate(plan.versions, start=1):
            gaps_before = [str(m) for m in missing if m < version_plan.version]
            rows.append(
                (vendor, name, model, str(version_plan.version), order, table, version_plan.table_suffix,
                 version_plan.is_recovery, ", ".join(version_plan.added), "; ".join(version_plan.conflicts),
                 ", ".join(gaps_before), version_plan.schema_hash)
            )
    return rows

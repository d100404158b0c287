"""Schema versions of tables this warehouse writes itself (the changelog streams).

Their schema is the Spark schema of the table, so the field list is the table's columns with Spark's
type strings (``bigint``, ``struct<a:int>``); nested types stay inside the top-level type string, which
already changes whenever anything inside it changes. Ids follow Marquez's rule, like every other schema
version: a name-based MD5 UUID over ``<namespace>:<name>:<sorted name:type tokens>``.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.types import StructType

from python_jobs.keys import name_uuid

# Datasets the warehouse produces are named under one namespace, independent of where the files live,
# so the local and cluster targets give the same ids.
WAREHOUSE_NAMESPACE = "lineage_warehouse"


def spark_schema_fields(schema: StructType) -> list[dict[str, Any]]:
    fields: list[dict[str, Any]] = []
    for position, field in enumerate(schema.fields, start=1):
        spec: dict[str, Any] = {"name": field.name, "type": field.dataType.simpleString(), "ordinal_position": position}
        comment = field.metadata.get("comment")
        if comment:
            spec["description"] = comment
        fields.append(spec)
    return fields


def _java_order(text: str) -> bytes:
    # Java's String.compareTo compares UTF-16 code units; big-endian UTF-16 bytes sort the same way.
    return text.encode("utf-16-be")


def marquez_schema_version_uuid(namespace: str, name: str, fields: list[dict[str, Any]]) -> str:
    pairs = {(f["name"], f.get("type")) for f in fields}
    ordered = sorted(pairs, key=lambda p: (_java_order(p[0]), p[1] is not None, _java_order(p[1] or "")))
    tokens = [field if type_ is None else f"{field}:{type_}" for field, type_ in ordered]
    return name_uuid(f"{namespace}:{name}:{':'.join(tokens)}")

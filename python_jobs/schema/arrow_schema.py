"""Build, serialize and render the Arrow schema of a dataset schema version.

Input fields are OpenLineage schema-facet fields: ``{"name", "type", "description", "fields"}``, where
``fields`` nests a struct (for an array type, its one element; for a map type, ``key`` and ``value``; for a
union, one member per child, as Spark reads Avro unions). Fields are placed by ``ordinal_position`` when the
producer sends it, otherwise in the order given. OpenLineage says nothing about nullability, so every field
is nullable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from python_jobs.schema.types import FALLBACK_KEY, ORIGINAL_TYPE_KEY, TypeMapping

DESCRIPTION_KEY = "description"
Field = Mapping[str, Any]


def arrow_field(spec: Field, mapping: TypeMapping) -> pa.Field:
    children = spec.get("fields") or []
    original_type = spec.get("type")
    metadata: dict[str, str] = {}
    if original_type is not None:
        metadata[ORIGINAL_TYPE_KEY] = str(original_type)
    if children:
        arrow_type = _nested_type(str(original_type or ""), [arrow_field(c, mapping) for c in _ordered(children)])
    else:
        arrow_type, fell_back = mapping.to_arrow(original_type)
        if fell_back:
            metadata[FALLBACK_KEY] = "true"
    if spec.get("description"):
        metadata[DESCRIPTION_KEY] = str(spec["description"])
    return pa.field(str(spec["name"]), arrow_type, nullable=True, metadata=metadata or None)


def _ordered(fields: Sequence[Field]) -> list[Field]:
    def position(indexed: tuple[int, Field]) -> tuple[int, int]:
        index, spec = indexed
        ordinal = spec.get("ordinal_position")
        return (ordinal if isinstance(ordinal, int) else index + 1, index)

    return [spec for _, spec in sorted(enumerate(fields), key=position)]


def _nested_type(type_string: str, children: list[pa.Field]) -> pa.DataType:
    kind = type_string.strip().lower()
    if kind.startswith(("array", "list", "repeated")):
        element = children[0].type if len(children) == 1 else pa.struct(children)
        return pa.list_(element)
    if kind.startswith("map") and len(children) == 2:
        return pa.map_(children[0].type, children[1].type)
    return pa.struct(children)


def arrow_schema(
    fields: Sequence[Field], mapping: TypeMapping | None = None, metadata: Mapping[str, str] | None = None
) -> pa.Schema:
    mapping = mapping or TypeMapping()
    return pa.schema([arrow_field(spec, mapping) for spec in _ordered(fields)], metadata=dict(metadata or {}) or None)


def serialize(schema: pa.Schema) -> bytes:
    """Arrow IPC encapsulated schema message; ``pyarrow.ipc.read_schema`` gives the schema back."""
    return schema.serialize().to_pybytes()


def deserialize(data: bytes) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(data))


def _type_json(arrow_type: pa.DataType) -> Any:
    if pa.types.is_struct(arrow_type):
        return {"struct": [_field_json(arrow_type.field(i)) for i in range(arrow_type.num_fields)]}
    if pa.types.is_map(arrow_type):
        return {"map": {"key": _type_json(arrow_type.key_type), "value": _type_json(arrow_type.item_type)}}
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return {"list": _type_json(arrow_type.value_type)}
    return str(arrow_type)


def _field_json(arrow_field_: pa.Field) -> dict[str, Any]:
    rendered: dict[str, Any] = {
        "name": arrow_field_.name,
        "type": _type_json(arrow_field_.type),
        "nullable": arrow_field_.nullable,
    }
    if arrow_field_.metadata:
        rendered["metadata"] = {k.decode(): v.decode() for k, v in sorted(arrow_field_.metadata.items())}
    return rendered


def render_json(schema: pa.Schema) -> str:
    """A human-readable, stable JSON rendering (pretty-printed, keys in a fixed order)."""
    return json.dumps({"fields": [_field_json(f) for f in schema]}, indent=2, ensure_ascii=False)


_SPARK_SIMPLE = {
    pa.bool_(): "BOOLEAN",
    pa.int8(): "TINYINT",
    pa.int16(): "SMALLINT",
    pa.int32(): "INT",
    pa.int64(): "BIGINT",
    pa.float32(): "FLOAT",
    pa.float64(): "DOUBLE",
    pa.utf8(): "STRING",
    pa.large_utf8(): "STRING",
    pa.binary(): "BINARY",
    pa.large_binary(): "BINARY",
    pa.date32(): "DATE",
    pa.timestamp("us", tz="UTC"): "TIMESTAMP",
    pa.timestamp("us"): "TIMESTAMP_NTZ",
}


def spark_type(arrow_type: pa.DataType) -> str:
    """Spark SQL type for an Arrow type; Arrow time-of-day has no Spark type and becomes STRING."""
    if arrow_type in _SPARK_SIMPLE:
        return _SPARK_SIMPLE[arrow_type]
    if pa.types.is_decimal(arrow_type):
        return f"DECIMAL({min(arrow_type.precision, 38)},{arrow_type.scale})"
    if pa.types.is_struct(arrow_type):
        members = ", ".join(
            f"{_quote(arrow_type.field(i).name)}: {spark_type(arrow_type.field(i).type)}"
            for i in range(arrow_type.num_fields)
        )
        return f"STRUCT<{members}>"
    if pa.types.is_map(arrow_type):
        return f"MAP<{spark_type(arrow_type.key_type)}, {spark_type(arrow_type.item_type)}>"
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return f"ARRAY<{spark_type(arrow_type.value_type)}>"
    if pa.types.is_timestamp(arrow_type):
        return "TIMESTAMP" if arrow_type.tz else "TIMESTAMP_NTZ"
    return "STRING"


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def spark_ddl(schema: pa.Schema) -> str:
    """Column list in Spark DDL (``StructType.fromDDL`` / ``CREATE TABLE t (<ddl>)`` accept it)."""
    columns = []
    for column in schema:
        text = f"{_quote(column.name)} {spark_type(column.type)}"
        description = (column.metadata or {}).get(DESCRIPTION_KEY.encode())
        if description:
            text += f" COMMENT {_sql_string(description.decode())}"
        columns.append(text)
    return ", ".join(columns)

"""JSON Schema -> Spark SQL type: the one place the type table of the registry lives.

| JSON Schema                                   | Spark type            |
|-----------------------------------------------|-----------------------|
| string / format date / format date-time       | STRING / DATE / TIMESTAMP |
| boolean                                       | BOOLEAN               |
| integer with both bounds inside int32         | INT, otherwise BIGINT |
| number with multipleOf and both bounds        | DECIMAL(p,s), otherwise DOUBLE |
| enum                                          | narrowest type holding every value |
| union of types, array, object without properties | STRING holding JSON text |
| $ref, oneOf, anyOf, allOf, not                | STRING holding JSON text, nullable |
| null plus one type                            | that type, nullable   |

``$ref`` is never expanded here: a property holding a ``$ref`` (to an ``iglu:`` schema or a local
``#/`` pointer, the only kinds ``ingest registry`` accepts) is one column of JSON text, whatever
the referenced schema says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
MAX_DECIMAL_PRECISION = 38
_DECIMAL = re.compile(r"^DECIMAL\((\d+),(\d+)\)$")

# A column's kind says how its value is extracted: `typed` casts the JSON value to the Spark type,
# `json` keeps the value's JSON text (quotes included for strings).
TYPED = "typed"
JSON = "json"


@dataclass(frozen=True)
class LeafType:
    spark_type: str
    kind: str
    allows_null: bool


def json_types(schema: dict[str, Any]) -> set[str]:
    declared = schema.get("type")
    if declared is None:
        return set()
    return {declared} if isinstance(declared, str) else set(declared)


def allows_null(schema: dict[str, Any]) -> bool:
    return "null" in json_types(schema) or None in schema.get("enum", [])


def is_flattened_object(schema: dict[str, Any]) -> bool:
    """An object with declared properties becomes leaf columns; anything else is one column."""
    non_null = json_types(schema) - {"null"}
    has_properties = bool(schema.get("properties"))
    return has_properties and (non_null == {"object"} or not non_null) and not _is_combinator(schema)


def _is_combinator(schema: dict[str, Any]) -> bool:
    return any(key in schema for key in ("oneOf", "anyOf", "allOf", "not", "$ref"))


def leaf_type(schema: dict[str, Any]) -> LeafType:
    nullable = allows_null(schema)
    if _is_combinator(schema):
        return LeafType("STRING", JSON, True)
    if "enum" in schema:
        return LeafType(*_enum_type([v for v in schema["enum"] if v is not None]), nullable)
    non_null = json_types(schema) - {"null"}
    if non_null == {"integer", "number"}:
        non_null = {"number"}  # every integer is a number; the narrower reading would reject valid data
    if len(non_null) != 1:
        return LeafType("STRING", JSON, True if not non_null else nullable)
    (json_type,) = non_null
    spark_type, kind = _scalar_type(json_type, schema)
    return LeafType(spark_type, kind, nullable)


def _scalar_type(json_type: str, schema: dict[str, Any]) -> tuple[str, str]:
    if json_type == "string":
        return {"date": "DATE", "date-time": "TIMESTAMP"}.get(schema.get("format", ""), "STRING"), TYPED
    if json_type == "boolean":
        return "BOOLEAN", TYPED
    if json_type == "integer":
        return _integer_type(schema.get("minimum"), schema.get("maximum")), TYPED
    if json_type == "number":
        return _number_type(schema), TYPED
    return "STRING", JSON  # array, object without properties, null-only


def _integer_type(minimum: Any, maximum: Any) -> str:
    if _is_number(minimum) and _is_number(maximum) and minimum >= INT32_MIN and maximum <= INT32_MAX:
        return "INT"
    return "BIGINT"


def _number_type(schema: dict[str, Any]) -> str:
    step, low, high = schema.get("multipleOf"), schema.get("minimum"), schema.get("maximum")
    if not (_is_number(step) and _is_number(low) and _is_number(high)) or step <= 0:
        return "DOUBLE"
    scale = _scale(Decimal(str(step)))
    integer_digits = _integer_digits(max(abs(Decimal(str(low))), abs(Decimal(str(high)))))
    return _decimal_or_double(integer_digits + scale, scale)


def _enum_type(values: list[Any]) -> tuple[str, str]:
    if not values:
        return "STRING", JSON
    if all(isinstance(v, bool) for v in values):
        return "BOOLEAN", TYPED
    if all(isinstance(v, str) for v in values):
        return "STRING", TYPED
    if all(_is_number(v) for v in values):
        if all(isinstance(v, int) for v in values):
            return _integer_type(min(values), max(values)), TYPED
        decimals = [Decimal(str(v)) for v in values]
        scale = max(_scale(d) for d in decimals)
        integer_digits = max(_integer_digits(abs(d)) for d in decimals)
        return _decimal_or_double(integer_digits + scale, scale), TYPED
    return "STRING", JSON


def _decimal_or_double(precision: int, scale: int) -> str:
    if precision > MAX_DECIMAL_PRECISION:
        return "DOUBLE"
    return f"DECIMAL({max(precision, 1)},{scale})"


def _scale(value: Decimal) -> int:
    exponent = value.normalize().as_tuple().exponent
    return max(0, -int(exponent))


def _integer_digits(value: Decimal) -> int:
    return max(1, len(str(int(value))))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def fits(new: LeafType | tuple[str, str], existing: tuple[str, str]) -> bool:
    """Whether every value of (type, kind) ``new`` is stored exactly by an existing column of ``existing``.

    Spark cannot change a Parquet column's type in place, so a later version may only narrow a
    column or keep it; anything wider would have to be cast, which we never do silently.
    """
    new_type, new_kind = (new.spark_type, new.kind) if isinstance(new, LeafType) else new
    old_type, old_kind = existing
    if old_kind == JSON:
        return True  # any JSON value has a JSON text
    if new_kind == JSON:
        return False
    if new_type.upper() == old_type.upper():
        return True
    return _widens_exactly(new_type.upper(), old_type.upper())


def _widens_exactly(new_type: str, old_type: str) -> bool:
    integer_digits = {"INT": 10, "BIGINT": 19}
    if new_type in integer_digits:
        if old_type == "BIGINT":
            return new_type == "INT"
        if old_type == "DOUBLE":
            return new_type == "INT"
        old_decimal = _DECIMAL.match(old_type)
        return bool(old_decimal) and int(old_decimal[1]) - int(old_decimal[2]) >= integer_digits[new_type]
    new_decimal = _DECIMAL.match(new_type)
    if new_decimal:
        precision, scale = int(new_decimal[1]), int(new_decimal[2])
        if old_type == "DOUBLE":
            return precision <= 15  # a double holds 15 significant decimal digits exactly
        old_decimal = _DECIMAL.match(old_type)
        return bool(old_decimal) and (
            scale <= int(old_decimal[2]) and precision - scale <= int(old_decimal[1]) - int(old_decimal[2])
        )
    return new_type == "DATE" and old_type == "TIMESTAMP"

"""The one place that maps OpenLineage schema-facet type strings to Arrow types.

Producers spell types in many dialects; all of these are understood:

| input (any case, extra spaces ok) | Arrow type |
|---|---|
| `boolean`, `bool` | bool |
| `tinyint`, `byte`, `int1` | int8 |
| `smallint`, `short`, `int2` | int16 |
| `int`, `integer`, `int4`, `mediumint`, `serial` | int32 |
| `bigint`, `long`, `int8`, `bigserial`, `int64` | int64 |
| `float`, `real`, `float4` | float32 (Spark's `float` is 32-bit) |
| `double`, `double precision`, `float8`, `float64`, `number` | float64 |
| `decimal(p,s)`, `numeric(p,s)`, `dec(p,s)`, `decimal(p)` | decimal128(p, s) (decimal256 when p > 38) |
| `decimal`, `numeric` without precision | decimal128(10, 0), Spark's default |
| `string`, `text`, `varchar(n)`, `char(n)`, `character varying(n)`, `nvarchar(n)` | utf8 |
| `uuid`, `json`, `jsonb`, `enum`, `object`, `variant` (JSON text) | utf8 |
| `binary`, `varbinary(n)`, `bytea`, `blob`, `bytes` | binary |
| `date` | date32 |
| `time`, `time without time zone` | time64[us] |
| `timestamp`, `timestamp with time zone`, `timestamptz`, `timestamp_ltz` | timestamp[us, tz=UTC] (an instant) |
| `timestamp without time zone`, `timestamp_ntz`, `datetime` | timestamp[us] (wall-clock) |
| `array<T>`, `struct<a:T,b:T>`, `map<K,V>` (Spark simple strings, nested) | list / struct / map |

A type not in the table never fails a run: it becomes utf8, the original name stays in the field metadata
(`openlineage.type`, on every field) and the fallback is counted (``TypeMapping.fallbacks``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pyarrow as pa

ORIGINAL_TYPE_KEY = "openlineage.type"
FALLBACK_KEY = "openlineage.type_fallback"

_SIMPLE_TYPES: dict[str, pa.DataType] = {
    **dict.fromkeys(["boolean", "bool"], pa.bool_()),
    **dict.fromkeys(["tinyint", "byte", "int1"], pa.int8()),
    **dict.fromkeys(["smallint", "short", "int2", "smallserial"], pa.int16()),
    **dict.fromkeys(["int", "integer", "int4", "mediumint", "serial", "int32"], pa.int32()),
    **dict.fromkeys(["bigint", "long", "int8", "bigserial", "int64"], pa.int64()),
    **dict.fromkeys(["float", "real", "float4", "float32"], pa.float32()),
    **dict.fromkeys(["double", "double precision", "float8", "float64", "number"], pa.float64()),
    **dict.fromkeys(
        [
            "string",
            "text",
            "varchar",
            "char",
            "character",
            "character varying",
            "nvarchar",
            "nchar",
            "uuid",
            "json",
            "jsonb",
            "enum",
            "longtext",
            "mediumtext",
            "tinytext",
            "clob",
            "object",
            "variant",
        ],
        pa.utf8(),
    ),
    **dict.fromkeys(["binary", "varbinary", "bytea", "blob", "bytes", "longblob"], pa.binary()),
    "date": pa.date32(),
    **dict.fromkeys(["time", "time without time zone"], pa.time64("us")),
    **dict.fromkeys(
        ["timestamp", "timestamp with time zone", "timestamptz", "timestamp_ltz", "timestamp with local time zone"],
        pa.timestamp("us", tz="UTC"),
    ),
    **dict.fromkeys(["timestamp without time zone", "timestamp_ntz", "datetime"], pa.timestamp("us")),
}

_DECIMAL = re.compile(r"^(?:decimal|numeric|dec)\s*\(\s*(\d+)\s*(?:,\s*(-?\d+)\s*)?\)$")
_SIZED = re.compile(r"^(.*?)\s*\(\s*\d+\s*\)(.*)$")  # varchar(255), timestamp(6) with time zone, ...


class UnknownType(ValueError):
    """Raised internally for a type string outside the table; callers fall back to utf8."""


@dataclass
class TypeMapping:
    """Maps type strings, counting the ones that fell back to utf8."""

    fallbacks: int = 0
    unknown_types: dict[str, int] = field(default_factory=dict)

    def to_arrow(self, type_string: str | None) -> tuple[pa.DataType, bool]:
        """Arrow type for an OpenLineage type string, and whether it fell back to utf8."""
        if type_string is None or not type_string.strip():
            return self._fallback(type_string or "")
        try:
            return parse_type(type_string), False
        except UnknownType:
            return self._fallback(type_string)

    def _fallback(self, type_string: str) -> tuple[pa.DataType, bool]:
        self.fallbacks += 1
        self.unknown_types[type_string] = self.unknown_types.get(type_string, 0) + 1
        return pa.utf8(), True


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def parse_type(type_string: str) -> pa.DataType:
    """Parse one type string; raises UnknownType for anything outside the documented table."""
    parser = _NestedTypeParser(type_string)
    result = parser.parse_type()
    parser.expect_end()
    return result


def _simple_type(word: str) -> pa.DataType:
    name = _normalise(word)
    if name in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[name]
    decimal = _DECIMAL.match(name)
    if decimal:
        precision, scale = int(decimal.group(1)), int(decimal.group(2) or 0)
        if not 0 < precision <= 76 or scale > precision:
            raise UnknownType(word)
        return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
    if name in {"decimal", "numeric", "dec"}:
        return pa.decimal128(10, 0)
    sized = _SIZED.match(name)
    if sized:
        return _simple_type(f"{sized.group(1)}{sized.group(2)}")
    raise UnknownType(word)


class _NestedTypeParser:
    """Recursive-descent parser for Spark simple strings: array<T>, map<K,V>, struct<name:T,...>."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def parse_type(self) -> pa.DataType:
        self._skip_spaces()
        start = self.pos
        word = self._read_until(set("<>,:"))
        keyword = _normalise(word)
        if self._peek() == "<" and keyword in {"array", "map", "struct"}:
            self.pos += 1
            if keyword == "array":
                result: pa.DataType = pa.list_(self.parse_type())
            elif keyword == "map":
                key = self.parse_type()
                self._expect(",")
                result = pa.map_(key, self.parse_type())
            else:
                result = pa.struct(self._struct_fields())
            self._expect(">")
            return result
        if not word.strip():
            raise UnknownType(self.text[start:] or self.text)
        return _simple_type(word)

    def _struct_fields(self) -> list[pa.Field]:
        fields: list[pa.Field] = []
        self._skip_spaces()
        if self._peek() == ">":
            return fields
        while True:
            self._skip_spaces()
            name = self._read_until(set(":<>,")).strip().strip("`")
            self._expect(":")
            fields.append(pa.field(name, self.parse_type()))
            self._skip_spaces()
            if self._peek() != ",":
                return fields
            self.pos += 1

    def _read_until(self, stops: set[str]) -> str:
        # Parentheses may hold commas (decimal(10,2)), so they are read as part of the word.
        start, depth = self.pos, 0
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == "(":
                depth += 1
            elif char == ")":
                depth -= 1
            elif depth == 0 and char in stops:
                break
            self.pos += 1
        return self.text[start : self.pos]

    def _peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def _skip_spaces(self) -> None:
        while self._peek().isspace():
            self.pos += 1

    def _expect(self, char: str) -> None:
        self._skip_spaces()
        if self._peek() != char:
            raise UnknownType(self.text)
        self.pos += 1

    def expect_end(self) -> None:
        self._skip_spaces()
        if self.pos != len(self.text):
            raise UnknownType(self.text)

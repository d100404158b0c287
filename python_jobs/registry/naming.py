"""Column and table names, and JSON paths, derived from schema property names."""

from __future__ import annotations

import re
from collections.abc import Sequence

_ACRONYM_END = re.compile(r"([A-Z]+)([A-Z][a-z])")  # HTTPRequest -> HTTP_Request
_LOWER_UPPER = re.compile(r"([a-z0-9])([A-Z])")  # camelCase -> camel_Case
_NOT_WORD = re.compile(r"[^a-z0-9]+")
_SIMPLE_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

NESTING_SEPARATOR = "__"


def snake_case(name: str) -> str:
    """``camelCase`` -> ``camel_case``, ``HTTPRequest`` -> ``http_request``, ``a-b`` -> ``a_b``."""
    spaced = _LOWER_UPPER.sub(r"\1_\2", _ACRONYM_END.sub(r"\1_\2", name))
    cleaned = _NOT_WORD.sub("_", spaced.lower()).strip("_")
    if not cleaned:
        return "_"
    return f"_{cleaned}" if cleaned[0].isdigit() else cleaned


def column_name(path: Sequence[str]) -> str:
    return NESTING_SEPARATOR.join(snake_case(key) for key in path)


def json_path(path: Sequence[str]) -> str:
    """A JSONPath that Spark's ``variant_get`` and ``get_json_object`` accept: ``$.a.b`` or ``$['a-b']``."""
    parts = ["$"]
    for key in path:
        if _SIMPLE_KEY.match(key):
            parts.append(f".{key}")
        else:
            parts.append("['" + key.replace("\\", "\\\\").replace("'", "\\'") + "']")
    return "".join(parts)


def table_name(vendor: str, name: str, model: int) -> str:
    """The typed table of one model, e.g. ``com.example/checkout`` model 1 -> ``com_example_checkout_1``."""
    return f"{snake_case(vendor.replace('.', '_'))}_{snake_case(name)}_{model}"

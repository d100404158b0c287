"""The pure-Python interpreter of ``event_rules.RULES``: one event's text → its first problem.

It reads the same rule table as the Spark CASE of ``event_parsing`` and defines every check the way
Spark evaluates it on the columns of ``extract_checked_fields``: what Spark's ``from_json`` makes of
the text (``EventView``: which structures parsed, whether the record is corrupt, each scalar's string
value and JSON type name) and then the predicates on those. tests/python/test_lineage_event_rules.py
checks both interpreters against each other.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from python_jobs.lineage.event_rules import (
    ENTRY_SCALARS,
    EVENT_TYPES,
    RULES,
    SCALARS,
    STRUCTURES,
    TIMESTAMP_PATTERN,
    UUID_PATTERN,
    Rule,
    message_parts,
    placeholder_markers,
    placeholder_pattern,
)

# Java's ``.`` stops at every line terminator, Python's only at ``\n``; ``\d`` is ASCII in Java.
_JAVA_DOT = "[^\n\r\u0085\u2028\u2029]"


def _java_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern.replace(".", _JAVA_DOT).replace("\\" + _JAVA_DOT, "\\."), re.ASCII)


_PLACEHOLDERS = {label: (placeholder_markers(label), _java_regex(placeholder_pattern(label))) for label in SCALARS}
_TIMESTAMP = re.compile(TIMESTAMP_PATTERN.replace("$", r"(?:\r\n|[\n\r\u0085\u2028\u2029])?\Z"), re.ASCII)
_UUID = re.compile(UUID_PATTERN.replace("$", r"(?:\r\n|[\n\r\u0085\u2028\u2029])?\Z"), re.ASCII)
_EVENT_TYPES = frozenset(EVENT_TYPES)
_TIMESTAMP_PARTS = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})([Tt ])(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?([Zz]|[+-](\d{2})(?::?(\d{2}))?)?$",
    re.ASCII,
)


class _Number(str):
    """A JSON number, kept as its text: its variant type depends on how it is written."""


@dataclass
class EventView:
    """What Spark's parse of one record gives the checks."""

    empty: bool = False
    corrupt: bool = False
    has: dict[str, bool] = field(default_factory=dict)
    types: dict[str, str | None] = field(default_factory=dict)
    texts: dict[str, str | None] = field(default_factory=dict)
    entries_without: dict[str, bool] = field(default_factory=dict)
    kind: str | None = None
    trailing: bool = False


def first_problem(text: str) -> str | None:
    """The reason an event is rejected, or None when it is accepted (the same as ``ingest lineage``)."""
    view = event_view(text)
    for rule in RULES:
        if rule.kind is not None and view.kind != rule.kind:
            continue
        if _CHECKS[rule.check](view, rule.field):
            return _message(rule, view)
    return None


def event_view(text: str) -> EventView:
    document, trailing = _parse(text)
    if not isinstance(document, dict):
        return _unparsed()
    view = EventView(trailing=trailing)
    structures: dict[str, Any] = {}
    for name in STRUCTURES:
        value = document.get(name)
        shaped, fits = _shaped(name, value)
        view.corrupt = view.corrupt or not fits
        structures[name] = shaped
        view.has[name] = shaped is not None
    for label, path in SCALARS.items():
        if len(path) == 1:
            present, value = path[0] in document, document.get(path[0])
        else:
            parent = structures[path[0]]
            present = parent is not None and path[1] in parent
            value = parent.get(path[1]) if parent is not None else None
        view.types[label] = variant_type(value) if present else None
        view.texts[label] = value if isinstance(value, str) and not isinstance(value, _Number) else None
    for side in ("inputs", "outputs"):
        entries = structures[side]
        for name in ENTRY_SCALARS:
            view.entries_without[f"{side}.{name}"] = entries is not None and any(
                entry is None or not _is_string(entry.get(name)) or entry.get(name) == "" for entry in entries
            )
    view.kind = _kind(view)
    return view


def _unparsed() -> EventView:
    return EventView(corrupt=True, has=dict.fromkeys(STRUCTURES, False), types=dict.fromkeys(SCALARS),
                     texts=dict.fromkeys(SCALARS), entries_without={})


def _is_string(value: Any) -> bool:
    return isinstance(value, str) and not isinstance(value, _Number)


def _is_facets(value: Any) -> bool:
    return value is None or isinstance(value, dict)


def _shaped(name: str, value: Any) -> tuple[Any, bool]:
    """The structure as Spark's parse keeps it (None when absent or of the wrong type), and whether
    all of it fits the schema. A facets map of the wrong type leaves its structure in place (Spark
    keeps the partial result) but marks the record corrupt; an entry of inputs/outputs that is not
    an object drops the whole array."""
    if value is None:
        return None, True
    if name in ("inputs", "outputs"):
        if not isinstance(value, list) or any(entry is not None and not isinstance(entry, dict) for entry in value):
            return None, False
        extra = "inputFacets" if name == "inputs" else "outputFacets"
        fits = all(
            entry is None or (_is_facets(entry.get("facets")) and _is_facets(entry.get(extra))) for entry in value
        )
        return value, fits
    if not isinstance(value, dict):
        return None, False
    return value, _is_facets(value.get("facets"))


# Jackson's read limits as Spark's from_json meets them: a number of more than 1,000 digits (sign, point
# and exponent marks not counted) or more than 1,000 nested objects and arrays fails the whole record.
MAX_NUMBER_DIGITS = 1000
MAX_NESTING_DEPTH = 1000


def _number(text: str) -> _Number:
    if sum(character.isdigit() for character in text) > MAX_NUMBER_DIGITS:
        raise ValueError(f"a number of more than {MAX_NUMBER_DIGITS} digits")
    return _Number(text)


_DECODER = json.JSONDecoder(parse_int=_number, parse_float=_number, parse_constant=_Number)
_JSON_WHITESPACE = " \t\n\r"
_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _nesting_depth(text: str) -> int:
    """The deepest nesting of objects and arrays, brackets inside strings not counted."""
    depth = deepest = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest


def _depth_at_least_limit(text: str) -> int:
    """The nesting depth when it may reach the limit, else 0: counting brackets is cheap and bounds
    the depth, so only a text with many of them is scanned."""
    if text.count("[") + text.count("{") < MAX_NESTING_DEPTH:
        return 0
    return _nesting_depth(text)


def _ensure_recursion_room() -> None:
    """Python's decoder and ``variant_type`` recurse once per level: room for Jackson's limit."""
    needed = 3 * MAX_NESTING_DEPTH + 200
    if sys.getrecursionlimit() < needed:
        sys.setrecursionlimit(needed)


def _parse(text: str) -> tuple[Any, bool]:
    """The first JSON value of the text (a sentinel when none parses) and whether anything but JSON
    whitespace follows it (Spark's parse ignores that; the ``trailing`` check does not)."""
    stripped = text.lstrip(_JSON_WHITESPACE)
    depth = _depth_at_least_limit(stripped)
    if depth > MAX_NESTING_DEPTH:
        return _UNPARSED, False
    try:
        value, end = _DECODER.raw_decode(stripped)
    except (ValueError, RecursionError):
        return _UNPARSED, False
    # Spark's end check reads the record as an array element, one level deeper: at the limit it
    # cannot see where the record ends, and refuses it with the same reason.
    return value, depth == MAX_NESTING_DEPTH or bool(stripped[end:].strip(_JSON_WHITESPACE))


_UNPARSED = object()
_ensure_recursion_room()


def _kind(view: EventView) -> str | None:
    url = view.texts.get("schemaURL") or ""
    for kind in ("RunEvent", "DatasetEvent", "JobEvent"):
        if url.endswith("/" + kind):
            return kind
    if view.has["run"]:
        return "RunEvent"
    if view.has["dataset"]:
        return "DatasetEvent"
    if view.has["job"]:
        return "JobEvent"
    return None


def variant_type(value: Any) -> str:
    """The lower-case name Spark's ``schema_of_variant`` gives a parsed JSON value."""
    if value is None:
        return "void"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, _Number):
        return _number_type(value)
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return f"array<{_merged([variant_type(item) for item in value])}>"
    fields = ", ".join(f"{key}: {variant_type(item)}" for key, item in sorted(value.items()))
    return f"object<{fields}>"


def _number_type(text: str) -> str:
    """Spark keeps an integer that fits 64 bits as bigint, a plain decimal of up to 38 digits as a
    decimal without trailing fraction zeros, and anything else (an exponent, NaN) as a double."""
    if text in ("NaN", "Infinity", "-Infinity") or "e" in text or "E" in text:
        return "double"
    # Compared as digits first: int() of a text past Python's digit limit (4300) raises.
    if "." not in text and len(text.lstrip("-").lstrip("0")) <= 19 and -(2**63) <= int(text) < 2**63:
        return "bigint"
    whole, _, fraction = text.lstrip("-").partition(".")
    fraction = fraction.rstrip("0")
    scale = len(fraction)
    precision = max(len(whole.lstrip("0")) + scale, scale, 1)
    return "double" if precision > 38 else f"decimal({precision},{scale})"


_DECIMAL = re.compile(r"^decimal\((\d+),(\d+)\)$")


def _merged(types: list[str]) -> str:
    """The element type of an array, as ``schema_of_variant`` merges its elements' types."""
    distinct = list(dict.fromkeys(t for t in types if t != "void"))
    if not distinct:
        return "void"
    if len(distinct) == 1:
        return distinct[0]
    if all(t in ("bigint", "double") or _DECIMAL.match(t) for t in distinct):
        if "double" in distinct:
            return "double"
        # bigint counts as decimal(20,0), Spark's decimal for a long.
        shapes = [(20, 0) if t == "bigint" else tuple(int(n) for n in _DECIMAL.match(t).groups()) for t in distinct]
        scale = max(s for _, s in shapes)
        whole = max(p - s for p, s in shapes)
        return "double" if whole + scale > 38 else f"decimal({whole + scale},{scale})"
    return "variant"


def _valid_timestamp(text: str) -> bool:
    """Whether Spark's ``to_timestamp`` (no format) reads a text that matches ``TIMESTAMP_PATTERN``:
    an upper-case ``T`` or a space, a valid proleptic Gregorian date (year 0 included), seconds
    whenever an offset follows, an upper-case ``Z``, and an offset of at most 18 hours."""
    parts = _TIMESTAMP_PARTS.match(text.rstrip("\n\r\u0085\u2028\u2029"))
    if parts is None:
        return False
    year, month, day, separator, hour, minute, second, zone, zone_hours, zone_minutes = parts.groups()
    if separator == "t" or zone == "z" or (zone and second is None):
        return False
    if not (1 <= int(month) <= 12 and 1 <= int(day) <= _days_in_month(int(year), int(month))):
        return False
    if int(hour) > 23 or int(minute) > 59 or int(second or 0) > 59:
        return False
    if zone_hours is not None:
        hours, minutes = int(zone_hours), int(zone_minutes or 0)
        if minutes > 59 or hours * 60 + minutes > 18 * 60:
            return False
    return True


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _is_placeholder(text: str, label: str) -> bool:
    markers, pattern = _PLACEHOLDERS[label]
    return any(marker in text for marker in markers) and pattern.search(text) is not None


def _text_check(test: Callable[[str], bool]) -> Callable[[EventView, str], bool]:
    """A check on a string field: false when the field is not a string (SQL null in Spark)."""
    return lambda view, label: view.texts[label] is not None and test(view.texts[label])


_CHECKS: dict[str, Callable[[EventView, str], bool]] = {
    "empty": lambda view, _: view.empty,
    "unparsable": lambda view, _: view.corrupt and view.types["eventTime"] is None and not any(view.has.values()),
    "trailing": lambda view, _: view.trailing,
    "corrupt": lambda view, _: view.corrupt,
    "no_kind": lambda view, _: view.kind is None,
    "placeholder": lambda view, label: view.texts[label] is not None and _is_placeholder(view.texts[label], label),
    "missing": lambda view, label: view.types[label] is None,
    "not_string": lambda view, label: view.types[label] is not None and view.texts[label] is None,
    "blank": _text_check(lambda text: text.strip(" ") == ""),
    "not_timestamp": _text_check(lambda text: _TIMESTAMP.search(text) is None or not _valid_timestamp(text)),
    "not_event_type": _text_check(lambda text: text.upper() not in _EVENT_TYPES),
    "not_uuid": _text_check(lambda text: _UUID.search(text) is None),
    "present": lambda view, names: any(view.has[name] for name in names.split("|")),
    "entry_without": lambda view, side_field: view.entries_without.get(side_field, False),
}


def _message(rule: Rule, view: EventView) -> str:
    pieces: list[str] = []
    for part in message_parts(rule.message):
        if part == "{value}":
            pieces.append(view.texts[rule.field] or "")
        elif part == "{type}":
            pieces.append(view.types[rule.field] or "")
        elif part == "{structures}":
            pieces.append(", ".join(name for name in STRUCTURES if not view.has[name]))
        else:
            pieces.append(part)
    return "".join(pieces)

"""Validation of one self-describing event against its registry schema (draft-04), as a pure function.

Reasons are written for the person fixing the sender: the JSON pointer of the value, then what
is wrong (unknown property, wrong type, missing required property, wrong format, ...). Several
problems are reported together, sorted, so the reason text is deterministic.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from jsonschema import Draft4Validator, FormatChecker, validators
from jsonschema.exceptions import ValidationError
from referencing.exceptions import Unresolvable

from python_jobs.keys import name_uuid
from python_jobs.registry.references import RESOLVABLE, schema_registry
from python_jobs.registry.schemaver import SchemaKey, SchemaVerError, parse_iglu_uri

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")

# Our own checks: jsonschema skips date-time silently when rfc3339-validator is absent, and a
# value that passes here must cast to DATE/TIMESTAMP in Spark. A raised ValueError (2024-02-30)
# counts as a format error.
FORMAT_CHECKER = FormatChecker(formats=())


@FORMAT_CHECKER.checks("date", raises=ValueError)
def _is_date(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not _DATE.match(value):
        return False
    date.fromisoformat(value)
    return True


@FORMAT_CHECKER.checks("date-time", raises=ValueError)
def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not _DATE_TIME.match(value):
        return False
    datetime.fromisoformat(value.replace("z", "Z").replace("Z", "+00:00"))
    return True


def _exact_multiple_of(
    validator: Any, divisor: Any, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    """multipleOf in decimal arithmetic: 19.99 is a multiple of 0.01 (binary floats say it is not)."""
    if not validator.is_type(instance, "number"):
        return
    try:
        remainder = Decimal(str(instance)) % Decimal(str(divisor))
    except (InvalidOperation, ValueError):
        remainder = Decimal(1)
    if remainder != 0:
        yield ValidationError(f"{instance!r} is not a multiple of {divisor}")


# Draft 4 with decimal multipleOf; everything else is jsonschema's own Draft 4.
ExactDraft4Validator = validators.extend(Draft4Validator, {"multipleOf": _exact_multiple_of})


@dataclass(frozen=True)
class Accepted:
    key: SchemaKey
    event_id: str


@dataclass(frozen=True)
class Rejected:
    reason: str
    schema_uri: str | None


def event_id(schema_uri: str, data: Any) -> str:
    """Deterministic: the same schema and the same data (any key order, any spacing) give the same id."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return name_uuid(f"sd_event:{schema_uri}:{canonical}")


class EventValidator:
    """Holds the registry (schema URI -> schema) and one compiled validator per schema.

    ``$ref``s resolve within the registry only (:mod:`python_jobs.registry.references`): nothing is
    fetched. Whatever goes wrong validating one event (a reference that does not resolve, any
    exception of the validator) rejects that event with the reason; it never raises.
    """

    def __init__(self, schemas: Mapping[str, dict[str, Any]]) -> None:
        self._schemas = dict(schemas)
        self._registry = schema_registry(self._schemas)
        self._validators: dict[str, Any] = {}
        self._families: dict[str, list[str]] = {}
        for uri in sorted(self._schemas):
            key = parse_iglu_uri(uri)
            self._families.setdefault(key.family, []).append(str(key.version))

    def _validator(self, uri: str) -> Any:
        if uri not in self._validators:
            self._validators[uri] = ExactDraft4Validator(
                self._schemas[uri], format_checker=FORMAT_CHECKER, registry=self._registry
            )
        return self._validators[uri]

    def check(self, text: str) -> Accepted | Rejected:
        try:
            event = strict_json(text)
        except ValueError as error:
            return Rejected(f"invalid JSON: {error}", None)
        if not isinstance(event, dict) or not isinstance(event.get("schema"), str) or "data" not in event:
            return Rejected("not a self-describing event: expected an object with a `schema` URI and `data`", None)
        uri = event["schema"]
        try:
            key = parse_iglu_uri(uri)
        except SchemaVerError as error:
            return Rejected(f"invalid schema URI: {error}", uri)
        if uri not in self._schemas:
            known = self._families.get(key.family)
            detail = f"registry has {', '.join(known)}" if known else f"registry has no {key.family}"
            return Rejected(f"unknown schema: {uri} is not in the registry ({detail})", uri)
        try:
            problems = sorted({describe_error(e) for e in self._validator(uri).iter_errors(event["data"])})
        except Exception as error:  # one event's failure is its reason, never the batch's
            return Rejected(f"could not validate against {uri}: {validation_failure(error)}", uri)
        if problems:
            return Rejected("; ".join(problems), uri)
        return Accepted(key, event_id(uri, event["data"]))


def validation_failure(error: BaseException) -> str:
    """One line saying why validating an event raised instead of answering."""
    if isinstance(error, Unresolvable):
        return f"$ref {error.ref!r} does not resolve within the registry ({RESOLVABLE})"
    if isinstance(error, RecursionError):
        return "the schema recurses without end ($ref cycle)"
    return f"{type(error).__name__}: {str(error)[:300]}"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(keys) != len(set(keys)):
        duplicated = sorted({key for key in keys if keys.count(key) > 1})
        raise ValueError(f"duplicate key(s) {', '.join(map(repr, duplicated))}")
    return dict(pairs)


def strict_json(text: str) -> Any:
    """JSON as Spark's parse_json reads it: no NaN/Infinity, no duplicate keys (Python accepts both)."""
    return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)


def _pointer(error: ValidationError) -> str:
    return "/" + "/".join(str(part) for part in error.absolute_path)


def describe_error(error: ValidationError) -> str:
    where = _pointer(error)
    instance = error.instance
    if error.validator == "additionalProperties" and isinstance(instance, dict):
        declared = set(error.schema.get("properties", {}))
        patterns = [re.compile(p) for p in error.schema.get("patternProperties", {})]
        extras = sorted(k for k in instance if k not in declared and not any(p.search(k) for p in patterns))
        return f"unknown property {', '.join(map(repr, extras))} at {where}"
    if error.validator == "required" and isinstance(instance, dict):
        missing = sorted(k for k in error.validator_value if k not in instance)
        return f"missing required property {', '.join(map(repr, missing))} at {where}"
    if error.validator == "type":
        return f"wrong type at {where}: expected {_expected(error.validator_value)}, got {_json_type(instance)}"
    if error.validator == "format":
        return f"wrong format at {where}: expected {error.validator_value}, got {json.dumps(instance)[:80]}"
    return f"{error.validator} violated at {where}: {error.message[:200]}"


def _expected(value: Any) -> str:
    return " or ".join(value) if isinstance(value, list) else str(value)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"

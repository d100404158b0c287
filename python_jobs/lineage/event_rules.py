"""The validation contract of an OpenLineage event, as data.

``RULES`` is the ordered list of checks: the first one that fails names the event's problem. Two
interpreters read it and nothing else:

* ``event_parsing._first_problem`` turns it into one Spark ``CASE`` (``ingest lineage``);
* ``event_validation.first_problem`` evaluates it on one event's text in pure Python (the HTTP
  collector answers 400 with it, per request, where a Spark job per event would be far too slow).

A rule is (check, field, message, kind): ``check`` names a predicate that both interpreters define
the same way (``CHECKS`` lists them), ``field`` the scalar label (see ``SCALARS``), structure or
entry field it applies to, ``message`` the reason's template, and ``kind`` restricts the rule to one
event kind. Templates may use ``{value}`` (the field's string value), ``{type}`` (its JSON type
name, lower case, as Spark's ``schema_of_variant`` writes it) and ``{structures}`` (the structures
that did not parse). tests/python/test_lineage_event_rules.py checks that both interpreters give
the same decision and reason on the shared corpus and on mutated events.
"""

from __future__ import annotations

from dataclasses import dataclass

EVENT_TYPES = ("START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER")
UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
# ISO-8601 date-time: seconds and a fraction of up to 9 digits are optional, the offset too.
TIMESTAMP_PATTERN = r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}(:?\d{2})?)?$"
OFFSET_PATTERN = r"([Zz]|[+-]\d{2}(:?\d{2})?)$"
# Test fixtures of OpenLineage integrations: Jinja-like matchers and json-unit placeholders.
PLACEHOLDER_PATTERN = r"\{\{.*\}\}|\$\{json-unit\.[^}]*\}"
# In a namespace or a name only json-unit's placeholder marks a fixture: `{{ }}` there is a name a producer
# chose (dbt and Jinja users have them), and names from data are stored as they are sent. The integrations'
# fixtures put their `{{ }}` matchers in ids, times and facets, never in names.
NAME_PLACEHOLDER_PATTERN = r"\$\{json-unit\.[^}]*\}"
NAME_SCALARS = ("job.namespace", "job.name", "dataset.namespace", "dataset.name")

# A record is one JSON value: a second event or stray bytes after it (a NUL, garbage) would otherwise
# be dropped unseen, since JSON parsers read the first value and stop.
TRAILING_MESSAGE = (
    "text follows the event's JSON object (a second event or stray bytes such as NUL): "
    "send one event per line or request"
)

# The scalar fields that are validated: label → path inside the event.
SCALARS = {
    "eventTime": ("eventTime",),
    "eventType": ("eventType",),
    "producer": ("producer",),
    "schemaURL": ("schemaURL",),
    "run.runId": ("run", "runId"),
    "job.namespace": ("job", "namespace"),
    "job.name": ("job", "name"),
    "dataset.namespace": ("dataset", "namespace"),
    "dataset.name": ("dataset", "name"),
}
STRUCTURES = ("run", "job", "inputs", "outputs", "dataset")
# The scalar paths inside an entry of inputs/outputs and inside dataset.
ENTRY_SCALARS = ("namespace", "name")
# Scalars that a clearly valid RunEvent must hold as non-blank strings (the shortcut's list).
RUN_EVENT_REQUIRED = ("eventTime", "producer", "run.runId", "job.namespace", "job.name")

# check → what it means (both interpreters implement exactly these).
CHECKS = {
    "empty": "the record parsed to nothing",
    "unparsable": "not JSON, or not an object: nothing parsed and the record is corrupt",
    "trailing": "something other than JSON whitespace follows the first JSON value of the record",
    "corrupt": "some structure has the wrong JSON type",
    "no_kind": "neither run, job nor dataset, and no kind in the schemaURL",
    "placeholder": "the string value matches placeholder_pattern(field)",
    "missing": "the field is absent",
    "not_string": "the field is present but not a JSON string",
    "blank": "the string is empty or spaces only",
    "not_timestamp": "not TIMESTAMP_PATTERN, or not a valid date-time",
    "not_event_type": "a string that is not one of EVENT_TYPES (any case)",
    "not_uuid": "not UUID_PATTERN",
    "present": "the structure (one of a |-separated list) is present",
    "entry_without": "an entry of inputs/outputs has no non-empty string at this field",
}


@dataclass(frozen=True)
class Rule:
    check: str
    field: str
    message: str
    kind: str | None = None


def _required(label: str, kind: str | None = None) -> list[Rule]:
    return [
        Rule("missing", label, f"missing required field {label}", kind),
        Rule("not_string", label, f"{label} must be a string, got {{type}}", kind),
        Rule("blank", label, f"{label} is empty", kind),
    ]


RULES: tuple[Rule, ...] = (
    Rule("empty", "", "empty record"),
    Rule("unparsable", "", "not valid JSON or not a JSON object"),
    Rule("trailing", "", TRAILING_MESSAGE),
    Rule("corrupt", "", "a field has the wrong JSON type (one of: {structures})"),
    Rule("no_kind", "", "not an OpenLineage event: it has no run, job or dataset"),
    *[Rule("placeholder", label, f"{label} is a template placeholder: {{value}}") for label in SCALARS],
    *_required("eventTime"),
    Rule("not_timestamp", "eventTime", "eventTime is not an ISO-8601 date-time: {value}"),
    *_required("producer"),
    Rule("not_string", "schemaURL", "schemaURL must be a string, got {type}"),
    Rule("not_string", "eventType", "eventType must be a string, got {type}"),
    Rule("not_event_type", "eventType", "eventType must be one of " + ", ".join(EVENT_TYPES) + ", got {value}"),
    *_required("run.runId", "RunEvent"),
    Rule("not_uuid", "run.runId", "run.runId is not a UUID: {value}", "RunEvent"),
    *_required("job.namespace", "RunEvent"),
    *_required("job.name", "RunEvent"),
    Rule("present", "run", "a JobEvent must not have a run", "JobEvent"),
    *_required("job.namespace", "JobEvent"),
    *_required("job.name", "JobEvent"),
    Rule("present", "run|job", "a DatasetEvent must not have a run or job", "DatasetEvent"),
    *_required("dataset.namespace", "DatasetEvent"),
    *_required("dataset.name", "DatasetEvent"),
    *[
        Rule("entry_without", f"{side}.{field}", f"an entry of {side} has no {field} string")
        for side in ("inputs", "outputs")
        for field in ENTRY_SCALARS
    ],
)


def message_parts(message: str) -> list[str]:
    """A template split into literal text and ``{placeholder}`` parts, in order."""
    parts: list[str] = []
    rest = message
    while "{" in rest:
        start = rest.index("{")
        end = rest.index("}", start)
        if start:
            parts.append(rest[:start])
        parts.append(rest[start : end + 1])
        rest = rest[end + 1 :]
    if rest:
        parts.append(rest)
    return parts


def placeholder_pattern(label: str) -> str:
    """The placeholder pattern of a validated scalar: json-unit's only for namespaces and names."""
    return NAME_PLACEHOLDER_PATTERN if label in NAME_SCALARS else PLACEHOLDER_PATTERN


def placeholder_markers(label: str) -> tuple[str, ...]:
    """Substrings that every match of ``placeholder_pattern(label)`` contains: a cheap test first."""
    return ("${",) if label in NAME_SCALARS else ("{{", "${")

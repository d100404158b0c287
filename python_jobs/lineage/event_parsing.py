"""Column expressions that parse and validate OpenLineage events inside Spark.

The event text is parsed with ``from_json`` against ``TEXT_PARSE_SCHEMA``:

* facets are ``map<facet name, JSON text>`` (Spark keeps a nested object as its compact JSON text
  when the target type is a string), so a 10 MB facet is copied, never expanded into columns;
* the scalars we validate are ``string``. Spark turns any JSON value into a string (``"runId": 7``
  becomes ``"7"``, an object its JSON text, JSON null SQL null), so the text alone cannot tell a
  JSON string from another type. ``needs_typed_parse`` flags every record where it might not (a
  null scalar inside a present structure, or a text that could be another JSON value's rendering:
  a number, ``true``/``false``, or starting with ``{``, ``[`` or ``"``); only those records are
  parsed a second time against ``PARSE_SCHEMA``, whose scalars are ``variant`` so that their JSON
  type can be checked. Ordinary events never need the variants, and building them for every
  record cost about a tenth of the parse and checks (JVM CPU at 100k events);
* ``_corrupt_record`` is filled whenever some part of the event does not fit the schema, which is
  how a structure of the wrong type (``"run": "x"``, ``"inputs": {}``) is detected.

The columns read the typed parse ``pv`` where ``typed`` is true and the text parse ``p`` elsewhere;
both give the same strings, type names and canonical JSON for a record that is not flagged, so the
results are those of the variant parse alone.

Every function here returns a Column; nothing collects rows to the driver.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F

# The contract's constants live with its rule table; imported here under their old names.
from python_jobs.lineage.event_rules import (
    ENTRY_SCALARS,
    EVENT_TYPES,
    OFFSET_PATTERN,
    RULES,
    RUN_EVENT_REQUIRED,
    SCALARS,
    STRUCTURES,
    TIMESTAMP_PATTERN,
    UUID_PATTERN,
    Rule,
    message_parts,
    placeholder_markers,
    placeholder_pattern,
)

CORRUPT_COLUMN = "_corrupt_record"

_FACETS = "map<string, string>"
PARSE_SCHEMA = (
    "struct<"
    "eventTime: variant, eventType: variant, producer: variant, schemaURL: variant, "
    f"run: struct<runId: variant, facets: {_FACETS}>, "
    f"job: struct<namespace: variant, name: variant, facets: {_FACETS}>, "
    f"inputs: array<struct<namespace: variant, name: variant, facets: {_FACETS}, inputFacets: {_FACETS}>>, "
    f"outputs: array<struct<namespace: variant, name: variant, facets: {_FACETS}, outputFacets: {_FACETS}>>, "
    f"dataset: struct<namespace: variant, name: variant, facets: {_FACETS}>, "
    f"{CORRUPT_COLUMN}: string>"
)
PARSE_OPTIONS = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_COLUMN}
# The same shape with string scalars: the parse every record gets.
TEXT_PARSE_SCHEMA = PARSE_SCHEMA.replace("variant", "string")



def parse_event(text: Column) -> Column:
    """The typed parse: scalars as ``variant``."""
    return F.from_json(text, PARSE_SCHEMA, PARSE_OPTIONS)


def parse_event_text(text: Column) -> Column:
    """The parse every record gets: scalars as text."""
    return F.from_json(text, TEXT_PARSE_SCHEMA, PARSE_OPTIONS)


# A scalar's text that some non-string JSON value renders as under a string target type: an
# object, an array, a quoted NaN/Infinity (``"NaN"``), a boolean or a number (JSON's grammar, which
# also covers Java's renderings such as ``1.0E10``; a UUID of digits only is not one). Matched at every line
# start of the joined texts (``(?m)``): a separator inside a value only adds a match, never hides one.
NON_STRING_TEXT = r"(?m)^(?:[{\[\"]|true$|false$|-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$)"


def has_text_after_value(text: Column) -> Column:
    """True when anything but JSON whitespace follows the first JSON value of ``text`` (a second
    event, a NUL, garbage); Spark's parsers read the first value and ignore the rest.

    One Jackson pass that skips over the value: the text becomes the first element of an array whose
    second element is a number derived from the text itself (its xxhash64). Reading element 1 gives
    that number only when the first value ends where the text does: after anything else the array is
    malformed (null) or element 1 is something the text holds. A fixed sentinel could be written into
    the text to fake the end; this one would have to contain its own hash. Jackson skips over the
    value without building anything: about a third of ``from_json``'s cost on 100k generated events
    (measured on a busy machine; BENCHMARKS.md has its share of the whole ingest)."""
    sentinel = F.xxhash64(text).cast("string")
    wrapped = F.concat(F.lit("["), text, F.lit(","), sentinel, F.lit("]"))
    # get_json_object's parser refuses NaN and Infinity, which from_json reads: a record holding them
    # (rare) is asked again through from_json, which copies the value's text and so costs more.
    # coalesce stops at its first non-null argument, so the other records never pay for it.
    with_constants = F.from_json(wrapped, "array<string>")[1] != sentinel
    return F.coalesce(F.get_json_object(wrapped, "$[1]") != sentinel, with_constants, F.lit(True))


def needs_typed_parse(parsed: Column) -> Column:
    """True when the text parse ``parsed`` cannot stand for the variant parse: some scalar may not
    be a JSON string (its text looks like another JSON value's rendering), or is null inside a
    present structure (absent and JSON null differ for the variant parse), or the record did not
    parse cleanly. False means every scalar that is present is a JSON string with this text."""
    texts: list[Column] = [_at(parsed, path) for path in SCALARS.values()]
    null_inside_present = [
        _at(parsed, path[:-1]).isNotNull() & _at(parsed, path).isNull() if len(path) > 1 else _at(parsed, path).isNull()
        for path in SCALARS.values()
    ]
    for side in ("inputs", "outputs"):
        for field in ENTRY_SCALARS:
            values = parsed[side][field]
            texts.append(values)
            # array_compact drops nulls: a null entry or a null name inside the array.
            null_inside_present.append(F.size(F.array_compact(values)) != F.size(values))
    flagged = parsed.isNull() | parsed[CORRUPT_COLUMN].isNotNull()
    for condition in null_inside_present:
        flagged = flagged | condition
    # Top-level scalars of absent structures are null in both parses and skipped by concat_ws.
    return flagged | F.concat_ws("\n", *texts).rlike(NON_STRING_TEXT)


def json_type(value: Column) -> Column:
    """``STRING``, ``BIGINT``, ``OBJECT<...>``, ``VOID`` (JSON null)...; null when the key is absent."""
    return F.call_function("schema_of_variant", value)


def as_string(value: Column) -> Column:
    """The value of a JSON string; null for any other JSON type."""
    string_value = F.call_function("variant_get", value, F.lit("$"), F.lit("string"))
    return F.when(json_type(value) == F.lit("STRING"), string_value)




def _at(parsed: Column, path: tuple[str, ...]) -> Column:
    column = parsed
    for part in path:
        column = column[part]
    return column


def text_col(label: str) -> str:
    return f"s_{label.replace('.', '_')}"


def json_type_name(label: str) -> Column:
    """The lower-case JSON type of a checked scalar (``string``, ``bigint``...), null when absent.
    From the typed parse ``pv`` where ``typed``; elsewhere every present scalar is a string.

    An expression, not a column of ``extract_checked_fields``: inside the reason's CASE it is only
    evaluated for the records that fail ``clearly_accepted``, where it names the wrong type."""
    typed_name = F.lower(json_type(_at(F.col("pv"), SCALARS[label])))
    text_name = F.when(F.col(text_col(label)).isNotNull(), F.lit("string"))
    return F.when(F.col("typed"), typed_name).otherwise(text_name)


def extract_checked_fields(parsed: Column, typed_parse: Column, typed: Column) -> list[Column]:
    """Columns that ``rejection_reason`` and the contract read: each checked scalar as text, which
    structures are present, and ``inputs``/``outputs`` in the contract shape, from the text parse
    ``parsed`` or, where ``typed``, the typed parse. Selecting them in a stage of their own keeps
    Spark from re-evaluating them in every check. The JSON type names (``json_type_name``) are not
    columns: only the messages of rejected records need them."""
    columns: list[Column] = []
    for label, path in SCALARS.items():
        columns.append(
            F.when(typed, as_string(_at(typed_parse, path))).otherwise(_at(parsed, path)).alias(text_col(label))
        )
    for name in STRUCTURES:
        columns.append(parsed[name].isNotNull().alias(f"has_{name}"))
    columns.append(parsed[CORRUPT_COLUMN].isNotNull().alias("is_corrupt"))
    columns.append(parsed.isNull().alias("is_empty"))
    for side, extra in (("inputs", "input"), ("outputs", "output")):
        from_typed = F.transform(typed_parse[side], _reference_maker(extra, typed=True))
        from_text = F.transform(parsed[side], _reference_maker(extra, typed=False))
        columns.append(F.when(typed, from_typed).otherwise(from_text).alias(side))
    return columns


def _reference_maker(extra_facets: str, typed: bool) -> Callable[[Column], Column]:
    """A one-argument lambda for ``F.transform`` (PySpark counts the lambda's parameters)."""
    return lambda entry: dataset_reference(entry, extra_facets, typed)


def blank_reference_checks() -> list[Column]:
    """``inputs_without_namespace`` ... flags, read from the ``inputs``/``outputs`` contract columns of
    ``extract_checked_fields`` (names already turned into strings, null when not a string), without
    a lambda: ``array_contains`` is null when the array holds a null and no match."""
    columns: list[Column] = []
    for side in ("inputs", "outputs"):
        for field in ("namespace", "name"):
            values = F.col(side)[field]
            blank = F.when(values.isNotNull(), F.coalesce(F.array_contains(values, F.lit("")), F.lit(True)))
            columns.append(F.coalesce(blank, F.lit(False)).alias(f"{side}_without_{field}"))
    return columns


def event_kind() -> Column:
    """RunEvent when a run is present; otherwise DatasetEvent or JobEvent. A kind named by the
    schemaURL fragment wins (events of spec 1-x have neither kinds nor such fragments)."""
    url = F.coalesce(F.col(text_col("schemaURL")), F.lit(""))
    return (
        F.when(url.endswith("/RunEvent"), F.lit("RunEvent"))
        .when(url.endswith("/DatasetEvent"), F.lit("DatasetEvent"))
        .when(url.endswith("/JobEvent"), F.lit("JobEvent"))
        .when(F.col("has_run"), F.lit("RunEvent"))
        .when(F.col("has_dataset"), F.lit("DatasetEvent"))
        .when(F.col("has_job"), F.lit("JobEvent"))
    )


def _may_be_placeholder(text: Column, label: str) -> Column:
    """Every match of the field's placeholder pattern contains one of its markers (``{{`` or ``${``): a
    substring test that lets almost every value skip the regular expression (the checks run on every
    field of every event)."""
    first, *rest = placeholder_markers(label)
    found = text.contains(first)
    for marker in rest:
        found = found | text.contains(marker)
    return found


def clearly_accepted(kind: Column) -> Column:
    """True for a RunEvent that passes every check of ``rejection_reason``; false or null otherwise.

    The same conditions as the reason's CASE for a RunEvent, with none of its messages and none of
    the JSON type names (a scalar's text is non-null exactly when it is a JSON string), so nearly
    every record skips the CASE. Anything else (another kind, a null somewhere) only means the CASE
    decides, so this may be false for an accepted event but is never true for a rejected one."""
    text = lambda label: F.col(text_col(label))  # noqa: E731 - a short local alias reads best here
    no_placeholder = [F.coalesce(~_may_be_placeholder(text(label), label), F.lit(True)) for label in SCALARS]
    required = [
        text(label).isNotNull() & (F.trim(text(label)) != F.lit(""))
        for label in RUN_EVENT_REQUIRED
    ]
    event_type = text("eventType")
    conditions = [
        ~F.col("is_empty"),
        ~F.col("has_trailing_text"),
        ~F.col("is_corrupt"),
        kind == F.lit("RunEvent"),
        *no_placeholder,
        *required,
        text("eventTime").rlike(TIMESTAMP_PATTERN),
        F.to_timestamp(text("eventTime")).isNotNull(),
        text("schemaURL").isNotNull() | json_type_name("schemaURL").isNull(),
        F.upper(event_type).isin(*EVENT_TYPES) | (event_type.isNull() & json_type_name("eventType").isNull()),
        text("run.runId").rlike(UUID_PATTERN),
        *[~F.col(f"{side}_without_{field}") for side in ("inputs", "outputs") for field in ("namespace", "name")],
    ]
    accepted = conditions[0]
    for condition in conditions[1:]:
        accepted = accepted & condition
    return accepted


def rejection_reason(kind: Column) -> Column:
    """The first problem of an event, or null when it is accepted (reads ``extract_checked_fields``
    and the parsed struct ``p``). The CASE only runs for records that ``clearly_accepted`` does not
    pass: its dozens of conditions cost about as much as the parse when every record took them."""
    return F.when(F.coalesce(clearly_accepted(kind), F.lit(False)), F.lit(None).cast("string")).otherwise(
        _first_problem(kind)
    )


def _first_problem(kind: Column) -> Column:
    """The CASE of ``rejection_reason``: the first failing rule's message (``event_rules.RULES``),
    null when none fails."""
    first, *rest = [_rule_case(rule, kind) for rule in RULES]
    reason = F.when(*first)
    for condition, message in rest:
        reason = reason.when(condition, message)
    return reason


def _rule_case(rule: Rule, kind: Column) -> tuple[Column, Column]:
    """One rule as a (condition, message) branch of the CASE."""
    condition = _check(rule.check, rule.field, kind)
    if rule.kind is not None:
        condition = (kind == F.lit(rule.kind)) & condition
    return condition, _message(rule)


def _check(check: str, field: str, kind: Column) -> Column:
    """The Spark predicate of a rule's check (``event_rules.CHECKS``), on the columns of
    ``extract_checked_fields`` and ``blank_reference_checks``."""
    if check == "empty":
        return F.col("is_empty")
    if check == "unparsable":
        nothing = json_type_name("eventTime").isNull()
        for name in STRUCTURES:
            nothing = nothing & ~F.col(f"has_{name}")
        return nothing & F.col("is_corrupt")
    if check == "trailing":
        return F.col("has_trailing_text")
    if check == "corrupt":
        return F.col("is_corrupt")
    if check == "no_kind":
        return kind.isNull()
    if check == "present":
        present = [F.col(f"has_{name}") for name in field.split("|")]
        either = present[0]
        for other in present[1:]:
            either = either | other
        return either
    if check == "entry_without":
        side, entry_field = field.split(".")
        return F.col(f"{side}_without_{entry_field}")
    text = F.col(text_col(field))
    if check == "placeholder":
        return _may_be_placeholder(text, field) & text.rlike(placeholder_pattern(field))
    if check == "missing":
        return json_type_name(field).isNull()
    if check == "not_string":
        return json_type_name(field).isNotNull() & text.isNull()
    if check == "blank":
        return F.trim(text) == F.lit("")
    if check == "not_timestamp":
        return ~text.rlike(TIMESTAMP_PATTERN) | F.to_timestamp(text).isNull()
    if check == "not_event_type":
        return text.isNotNull() & ~F.upper(text).isin(*EVENT_TYPES)
    if check == "not_uuid":
        return ~text.rlike(UUID_PATTERN)
    raise ValueError(f"unknown check {check!r}")


def _message(rule: Rule) -> Column:
    pieces: list[Column] = []
    for part in message_parts(rule.message):
        if part == "{value}":
            pieces.append(F.col(text_col(rule.field)))
        elif part == "{type}":
            pieces.append(json_type_name(rule.field))
        elif part == "{structures}":
            pieces.append(F.concat_ws(", ", *[F.when(~F.col(f"has_{name}"), F.lit(name)) for name in STRUCTURES]))
        else:
            pieces.append(F.lit(part))
    return pieces[0] if len(pieces) == 1 else F.concat(*pieces)


def event_time_utc() -> Column:
    """UTC timestamp (microseconds: Spark truncates nanoseconds); no offset means UTC."""
    return F.to_timestamp(F.col(text_col("eventTime")))


def has_offset() -> Column:
    return F.col(text_col("eventTime")).rlike(OFFSET_PATTERN)


def dataset_reference(entry: Column, extra_facets: str | None, typed: bool = True) -> Column:
    """One dataset of an event in the ``DATASET_REFERENCE`` shape of the ingest contract, from the
    typed parse or (``typed=False``) from the text parse of a record that ``needs_typed_parse``
    did not flag."""
    empty = F.lit(None).cast(_FACETS)
    scalar = as_string if typed else (lambda value: value)
    return F.struct(
        scalar(entry["namespace"]).alias("namespace"),
        scalar(entry["name"]).alias("name"),
        entry["facets"].alias("facets"),
        (entry["inputFacets"] if extra_facets == "input" else empty).alias("input_facets"),
        (entry["outputFacets"] if extra_facets == "output" else empty).alias("output_facets"),
    )


def parent_field(parsed: Column, path: str) -> Column:
    """A field of the ``parent`` run facet, e.g. ``$.run.runId``."""
    return F.get_json_object(parsed["run"]["facets"].getItem("parent"), path)


CANONICAL_FIELDS = ("eventTime", "eventType", "producer", "schemaURL", "run", "job", "inputs", "outputs", "dataset")


def canonical_event(parsed: Column) -> Column:
    """Compact JSON of every spec field of the event: whitespace and unknown top-level keys do not count.

    A transport that delivers an event twice resends the same document, so this text is the same
    for both copies and its hash is the event id. Defined on the typed parse; the text parse of a
    record that ``needs_typed_parse`` does not flag gives the same text (to_json writes a string
    field and a string variant alike), so it stands for it there.
    """
    return F.to_json(F.struct(*[parsed[name].alias(name) for name in CANONICAL_FIELDS]))


def canonical_event_of(parsed: Column, typed_parse: Column, typed: Column) -> Column:
    return F.when(typed, canonical_event(typed_parse)).otherwise(canonical_event(parsed))


def event_id(canonical: Column) -> Column:
    """``event_id``: the sha256 (hex) of the event's canonical JSON (``canonical_event``). The one rule,
    for ingest and for rows written without it (``event_id_of_text``)."""
    return F.sha2(canonical, 256)


def event_id_of_text(text: Column) -> Column:
    """The ``event_id`` ingest gives the event ``text``. From the typed parse alone: ingest's text parse
    gives the same canonical JSON wherever it stands for the typed one, so the id is the same."""
    return event_id(canonical_event(parse_event(text)))

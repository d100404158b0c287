"""Reading the text dbt-spark caches about a table (``show table extended``'s ``Information`` column).

dbt-spark lists every table of a schema once at the start of a run; the text it keeps per table holds
the table's properties and its schema tree. Reading them there saves a statement per model and build.
"""

from __future__ import annotations

PROPERTIES_PREFIX = "Table Properties: ["
SCHEMA_FIELD_PREFIX = " |-- "


def table_property(information: str, key: str) -> str | None:
    """The value of property ``key`` in the cached text, or None when the table does not set it."""
    for line in information.splitlines():
        if line.startswith(PROPERTIES_PREFIX) and line.endswith("]"):
            for entry in line[len(PROPERTIES_PREFIX) : -1].split(", "):
                name, separator, value = entry.partition("=")
                if separator and name == key:
                    return value
    return None


def top_level_columns(information: str) -> list[str]:
    """The table's column names in order, from the schema tree (nested fields are indented further)."""
    names = []
    for line in information.splitlines():
        if line.startswith(SCHEMA_FIELD_PREFIX):
            name, separator, _ = line[len(SCHEMA_FIELD_PREFIX) :].partition(": ")
            if separator:
                names.append(name)
    return names

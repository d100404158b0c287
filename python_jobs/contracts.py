"""Reads the contracts that the dbt project's YAML defines once, for the Python side.

The macros read the same YAML through dbt, so a contract is written in one place:

- the raw and audit tables that ingest appends to and the on-run-start hooks create are dbt sources
  (``models/staging/_sources.yml``, ``_registry_sources.yml``): each column's ``data_type`` is its
  Spark type, ``constraints: [{type: not_null}]`` marks a column not null, and the table's
  ``config.meta.partition_by`` lists its partition columns. ``source_table`` turns one into a
  ``StructType``; the hooks (``create_source_table``) into ``create table`` DDL;
- project-wide names that are no table's columns (the changelog's system columns and op codes) are
  dbt vars in ``dbt_project.yml``, read by ``project_var`` here and ``var()`` in the macros.

Read from the project folder, not from dbt's manifest: ingest runs before (and without) any dbt command.
"""

from __future__ import annotations

import re
import shutil
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from python_jobs.settings import PROJECT_DIR

RAW_SOURCES = PROJECT_DIR / "models" / "staging" / "_sources.yml"
REGISTRY_SOURCES = PROJECT_DIR / "models" / "staging" / "_registry_sources.yml"
API_WRITE_SOURCES = PROJECT_DIR / "models" / "staging" / "_api_write_sources.yml"
DBT_PROJECT = PROJECT_DIR / "dbt_project.yml"
# The on-run-start hooks create tables from these sources: a copy of the project that keeps its
# dbt_project.yml (and so the hooks) needs them too (``copy_source_contracts``).
SOURCE_CONTRACT_FILES = (RAW_SOURCES, REGISTRY_SOURCES)
# Every file a contract is read from: a cluster's executors get them inside python_jobs' zip (spark.py).
CONTRACT_FILES = (*SOURCE_CONTRACT_FILES, API_WRITE_SOURCES, DBT_PROJECT)

_PRIMITIVES: dict[str, DataType] = {
    "string": StringType(),
    "bigint": LongType(),
    "int": IntegerType(),
    "boolean": BooleanType(),
    "timestamp": TimestampType(),
    "double": DoubleType(),
    "date": DateType(),
    "binary": BinaryType(),
}
_TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*|[<>,:])")


class ContractError(ValueError):
    """A contract is missing from the project's YAML or cannot be read."""


@dataclass(frozen=True)
class SourceTable:
    schema: StructType
    partition_by: tuple[str, ...]


def spark_type(text: str) -> DataType:
    """The type a Spark type string names (``bigint``, ``array<struct<name: string>>``, ...): the
    subset the contracts use, parsed here because Spark's own parser needs a running JVM and the
    contracts are module constants."""
    tokens = _tokens(text)
    parsed, end = _parse_type(tokens, 0, text)
    if end != len(tokens):
        raise ContractError(f"unexpected {tokens[end]!r} in the type {text!r}")
    return parsed


def _tokens(text: str) -> list[str]:
    tokens, position = [], 0
    while position < len(text.rstrip()):
        match = _TOKEN.match(text, position)
        if match is None:
            raise ContractError(f"cannot read the type {text!r} at {text[position:]!r}")
        tokens.append(match.group(1))
        position = match.end()
    return tokens


def _expect(tokens: list[str], at: int, token: str, text: str) -> int:
    if at >= len(tokens) or tokens[at] != token:
        raise ContractError(f"expected {token!r} in the type {text!r}")
    return at + 1


def _parse_type(tokens: list[str], at: int, text: str) -> tuple[DataType, int]:
    word = tokens[at].lower() if at < len(tokens) else ""
    if word == "array":
        element, at = _parse_type(tokens, _expect(tokens, at + 1, "<", text), text)
        return ArrayType(element), _expect(tokens, at, ">", text)
    if word == "map":
        key, at = _parse_type(tokens, _expect(tokens, at + 1, "<", text), text)
        value, at = _parse_type(tokens, _expect(tokens, at, ",", text), text)
        return MapType(key, value), _expect(tokens, at, ">", text)
    if word == "struct":
        return _parse_struct(tokens, _expect(tokens, at + 1, "<", text), text)
    if word in _PRIMITIVES:
        return _PRIMITIVES[word], at + 1
    raise ContractError(f"unknown type {word or 'end'!r} in {text!r} (known: {', '.join(_PRIMITIVES)})")


def _parse_struct(tokens: list[str], at: int, text: str) -> tuple[StructType, int]:
    fields: list[StructField] = []
    while at < len(tokens) and tokens[at] != ">":
        if fields:
            at = _expect(tokens, at, ",", text)
        name = tokens[at]
        field_type, at = _parse_type(tokens, _expect(tokens, at + 1, ":", text), text)
        fields.append(StructField(name, field_type))
    return StructType(fields), _expect(tokens, at, ">", text)


@cache
def _yaml(path: Path) -> dict[str, Any]:
    return yaml.safe_load(_contract_text(path))


def _contract_text(path: Path) -> str:
    # On a cluster's executors python_jobs is imported from the zip that spark.ship_python_jobs sends, so
    # PROJECT_DIR is that zip and the contract files are members of it.
    for archive in path.parents:
        if archive.is_file() and zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zipped:
                return zipped.read(path.relative_to(archive).as_posix()).decode("utf-8")
    return path.read_text(encoding="utf-8")


def source_table(sources_file: Path, source: str, table: str) -> SourceTable:
    """The columns (in order, with types and not-null marks) and partition columns of one dbt source table."""
    entry = _source_table_entry(sources_file, source, table)
    columns = entry.get("columns") or []
    if not columns or not all("data_type" in column for column in columns):
        raise ContractError(f"{sources_file}: every column of {source}.{table} needs a data_type")
    meta = (entry.get("config") or {}).get("meta") or {}
    return SourceTable(StructType([_field(column) for column in columns]), tuple(meta.get("partition_by") or ()))


def _source_table_entry(sources_file: Path, source: str, table: str) -> dict[str, Any]:
    for source_entry in _yaml(sources_file).get("sources") or []:
        if source_entry.get("name") != source:
            continue
        for table_entry in source_entry.get("tables") or []:
            if table_entry.get("name") == table:
                return table_entry
    raise ContractError(f"{sources_file} defines no table {table} in the source {source}")


def _field(column: dict[str, Any]) -> StructField:
    not_null = any(constraint.get("type") == "not_null" for constraint in column.get("constraints") or [])
    return StructField(column["name"], spark_type(column["data_type"]), nullable=not not_null)


def copy_source_contracts(project_root: Path) -> None:
    """Copies the sources YAML that the on-run-start hooks read into a scratch copy of the project."""
    for path in SOURCE_CONTRACT_FILES:
        target = project_root / path.relative_to(PROJECT_DIR)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)


def project_var(name: str) -> Any:
    """A var of ``dbt_project.yml`` as written there (the contracts among them hold no Jinja)."""
    variables = _yaml(DBT_PROJECT).get("vars") or {}
    if name not in variables:
        raise ContractError(f"{DBT_PROJECT} defines no var {name}")
    return variables[name]


# The changelog's names, defined once as dbt vars (the changelog macros read them with var()).
CHANGELOG_SYSTEM_COLUMNS: tuple[str, ...] = tuple(project_var("changelog_system_columns"))
CHANGELOG_RAW_METADATA_COLUMNS: tuple[str, ...] = tuple(project_var("changelog_raw_metadata_columns"))
CHANGELOG_OP_CODES: dict[str, int] = dict(project_var("changelog_op_codes"))


def is_changelog_stream(columns: Sequence[str]) -> bool:
    """Whether a table with these columns is a changelog stream: they start with the system columns."""
    return tuple(columns[: len(CHANGELOG_SYSTEM_COLUMNS)]) == CHANGELOG_SYSTEM_COLUMNS

"""``ingest registry DIR``: load an Iglu static registry (``schemas/<vendor>/<name>/<format>/<M-R-A>``).

Registries are small (hundreds of files), so files are read on the driver; only the writes go
through Spark. A file is rejected to ``audit.registry_rejected`` when it is not JSON, has no
``self`` block, its ``self`` block disagrees with its path, its version is not SchemaVer, it is
not a valid draft-04 schema, one of its properties would become a system column of the typed
table, one of its ``$ref``s does not resolve within the registry (only ``iglu:`` URIs of
registered schemas and local ``#/`` pointers do; nothing is fetched), or it changes a version that
is already registered (schemas are immutable). Re-ingesting the same directory changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jsonschema import Draft4Validator
from jsonschema.exceptions import SchemaError
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from python_jobs.contracts import REGISTRY_SOURCES, source_table
from python_jobs.errors import UserFacingError
from python_jobs.keys import name_uuid
from python_jobs.registry.catalog import RegisteredSchema, model_plans
from python_jobs.registry.columns import flatten, schema_hash
from python_jobs.registry.ddl import EVENT_COLUMNS
from python_jobs.registry.naming import table_name
from python_jobs.registry.references import reference_problems, schema_registry
from python_jobs.registry.schemaver import (
    SchemaKey,
    SchemaVer,
    SchemaVerError,
    gap_report,
    key_part_problem,
    parse_iglu_uri,
    parse_schemaver,
)
from python_jobs.settings import Settings

SUPPORTED_FORMAT = "jsonschema"

# The columns are the dbt sources' (models/staging/_registry_sources.yml), which the on-run-start hook reads too.
REGISTRY_SCHEMAS = source_table(REGISTRY_SOURCES, "registry_raw", "registry_schemas").schema
REGISTRY_REJECTED = source_table(REGISTRY_SOURCES, "registry_audit", "registry_rejected").schema


@dataclass(frozen=True)
class RegistrySchema:
    key: SchemaKey
    schema: dict[str, Any]
    text: str
    digest: str
    source_file: str


@dataclass(frozen=True)
class RegistryRejection:
    source_file: str
    reason: str
    text: str | None


@dataclass(frozen=True)
class RegistryIngestReport:
    files: int
    accepted: int
    already_present: int
    rejected: int
    gaps: list[str]
    breaking: list[str]

    def lines(self) -> list[str]:
        lines = [
            f"registry: {self.files} file(s) read, {self.accepted} schema(s) added, "
            f"{self.already_present} already registered, {self.rejected} rejected "
            "(see audit.registry_rejected)"
        ]
        lines += [f"warning: version gap: {gap}" for gap in self.gaps]
        lines += [f"warning: BREAKING: {line}" for line in self.breaking]
        return lines


def registry_files(root: Path) -> list[Path]:
    schemas_dir = root / "schemas"
    if not schemas_dir.is_dir():
        raise UserFacingError(f"{root} is not a static registry: it has no schemas/ folder")
    return sorted(p for p in schemas_dir.rglob("*") if p.is_file() and not p.name.startswith("."))


def read_schema_file(root: Path, path: Path) -> RegistrySchema | RegistryRejection:
    """One file of the registry at ``root``, checked; a file that is not UTF-8 is a rejection, not a crash."""
    relative = path.relative_to(root / "schemas").parts
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return RegistryRejection(
            "schemas/" + "/".join(relative),
            f"not UTF-8 text: byte 0x{data[error.start]:02x} at offset {error.start} cannot be decoded "
            "(JSON schemas are UTF-8; re-save the file as UTF-8)",
            data.decode("utf-8", errors="replace"),
        )
    return check_schema_file(relative, text)


def check_schema_file(relative: Sequence[str], text: str) -> RegistrySchema | RegistryRejection:
    """``relative`` is the path under ``schemas/``: (vendor, name, format, version) when well placed."""
    source = "schemas/" + "/".join(relative)
    if len(relative) != 4:
        return RegistryRejection(source, "not at schemas/<vendor>/<name>/<format>/<version>", text)
    # Vendor and name become part of a typed table's name: refuse what Iglu URIs cannot hold.
    for part, value in zip(("vendor", "name", "format"), relative, strict=False):
        problem = key_part_problem(part, value)
        if problem:
            return RegistryRejection(source, f"{problem} (the folder names the schema)", text)
    try:
        document = json.loads(text)
    except ValueError as error:
        return RegistryRejection(source, f"invalid JSON: {error}", text)
    problem = _self_block_problem(relative, document)
    if problem:
        return RegistryRejection(source, problem, text)
    vendor, name, format_, version_text = relative
    if format_ != SUPPORTED_FORMAT:
        return RegistryRejection(source, f"format {format_!r} is not supported (only {SUPPORTED_FORMAT})", text)
    try:
        version = parse_schemaver(version_text)
    except SchemaVerError as error:
        return RegistryRejection(source, str(error), text)
    try:
        Draft4Validator.check_schema(document)
    except SchemaError as error:
        return RegistryRejection(source, f"not a valid draft-04 JSON Schema: {error.message}", text)
    if "object" not in _types(document) and not document.get("properties"):
        return RegistryRejection(source, "the root of a self-describing schema must be an object schema", text)
    problems = system_column_problems(document)
    if problems:
        return RegistryRejection(source, "; ".join(problems), text)
    key = SchemaKey(vendor, name, format_, version)
    return RegistrySchema(key, document, text, schema_hash(document), source)


def system_column_problems(document: dict[str, Any]) -> list[str]:
    """Properties whose column name is one of the event columns every typed table starts with.

    Names are compared after normalisation (``eventId`` -> ``event_id``); the list of system
    columns is :data:`python_jobs.registry.ddl.EVENT_COLUMNS`, the one the DDL writes.
    """
    system = [name for name, _ in EVENT_COLUMNS]
    return [
        f"property {leaf.path[-1]!r} at {_properties_pointer(leaf.path)} becomes column {leaf.name}, which is a "
        f"system column of the typed table ({', '.join(system)}): rename the property"
        for leaf in flatten(document)
        if leaf.name in system
    ]


def _properties_pointer(path: Sequence[str]) -> str:
    return "".join("/properties/" + key.replace("~", "~0").replace("/", "~1") for key in path)


def refuse_unresolved_references(
    new: Sequence[RegistrySchema], registered: dict[str, dict[str, Any]]
) -> tuple[list[RegistrySchema], list[RegistryRejection]]:
    """Splits new schemas into those whose ``$ref``s resolve within the registry and refusals.

    The registry is what the warehouse holds plus the new schemas that pass; a schema that refers
    to a refused one is refused in turn (repeated until nothing changes).
    """
    kept = list(new)
    refused: list[RegistryRejection] = []
    while True:
        registry = schema_registry({**registered, **{item.key.uri: item.schema for item in kept}})
        still: list[RegistrySchema] = []
        dropped = []
        for item in kept:
            problems = reference_problems(item.schema, registry)
            if problems:
                dropped.append(RegistryRejection(item.source_file, "; ".join(problems), item.text))
            else:
                still.append(item)
        if not dropped:
            return kept, refused
        kept, refused = still, refused + dropped


def _types(document: dict[str, Any]) -> set[str]:
    declared = document.get("type", [])
    return {declared} if isinstance(declared, str) else set(declared)


def _self_block_problem(relative: Sequence[str], document: Any) -> str | None:
    if not isinstance(document, dict):
        return "not a JSON object"
    block = document.get("self")
    if not isinstance(block, dict):
        return "no `self` block (vendor, name, format, version)"
    fields = ("vendor", "name", "format", "version")
    absent = [f for f in fields if not isinstance(block.get(f), str)]
    if absent:
        return f"`self` block lacks {', '.join(absent)}"
    mismatches = [
        f"self.{f} is {block[f]!r} but the path says {part!r}"
        for f, part in zip(fields, relative, strict=True)
        if block[f] != part
    ]
    return "; ".join(mismatches) or None


def classify(
    checked: Sequence[RegistrySchema | RegistryRejection], registered: dict[str, str]
) -> tuple[list[RegistrySchema], int, list[RegistryRejection]]:
    """Splits checked files into new schemas, already-registered ones, and rejections.

    ``registered`` maps schema URI -> schema hash of what the warehouse already holds.
    """
    new: list[RegistrySchema] = []
    already = 0
    rejected: list[RegistryRejection] = []
    # Typed table name -> the family that has it: vendors and names differing only in case or in
    # '.', '-' and '_' map to one table name, and a table holds one family.
    owners: dict[str, str] = {}
    for uri in sorted(registered):
        try:
            key = parse_iglu_uri(uri)
        except SchemaVerError:
            continue
        owners.setdefault(table_name(key.vendor, key.name, key.version.model), key.family)
    for item in checked:
        if isinstance(item, RegistryRejection):
            rejected.append(item)
            continue
        key = item.key
        table = table_name(key.vendor, key.name, key.version.model)
        owner = owners.setdefault(table, key.family)
        if owner != key.family:
            rejected.append(
                RegistryRejection(
                    item.source_file,
                    f"{key.family} model {key.version.model} would load into the typed table {table}, "
                    f"which belongs to {owner}; rename the vendor or the name",
                    item.text,
                )
            )
            continue
        known_hash = registered.get(item.key.uri)
        if known_hash is None:
            new.append(item)
        elif known_hash == item.digest:
            already += 1
        else:
            rejected.append(
                RegistryRejection(
                    item.source_file,
                    f"{item.key.uri} is already registered with different content "
                    f"(hash {known_hash[:12]}, this file {item.digest[:12]}); published schemas are immutable, "
                    "publish a new version instead",
                    item.text,
                )
            )
    return new, already, rejected


def ensure_registry_tables(spark: SparkSession, settings: Settings) -> None:
    for layer, name, schema in (
        ("raw", "registry_schemas", REGISTRY_SCHEMAS),
        ("audit", "registry_rejected", REGISTRY_REJECTED),
    ):
        create_table_if_absent(spark, settings.table(layer, name), schema)


def create_table_if_absent(spark: SparkSession, table: str, schema: StructType) -> None:
    if not spark.catalog.tableExists(table):
        spark.createDataFrame([], schema).write.format("parquet").saveAsTable(table)


def registered_hashes(spark: SparkSession, settings: Settings) -> dict[str, str]:
    rows = spark.table(settings.table("raw", "registry_schemas")).select("schema_uri", "schema_hash").collect()
    return {row.schema_uri: row.schema_hash for row in rows}


def registered_schemas(spark: SparkSession, settings: Settings) -> dict[str, dict[str, Any]]:
    rows = spark.table(settings.table("raw", "registry_schemas")).select("schema_uri", "schema_json").collect()
    return {row.schema_uri: json.loads(row.schema_json) for row in rows}


def ingest_registry(spark: SparkSession, settings: Settings, root: Path) -> RegistryIngestReport:
    root = root.resolve()
    files = registry_files(root)
    checked = [read_schema_file(root, path) for path in files]
    ensure_registry_tables(spark, settings)
    new, already, rejected = classify(checked, registered_hashes(spark, settings))
    new, unresolved = refuse_unresolved_references(new, registered_schemas(spark, settings))
    rejected = sorted([*rejected, *unresolved], key=lambda item: item.source_file)
    batch_id = name_uuid("registry_batch:" + ",".join(sorted(s.source_file + ":" + s.digest for s in new)))
    now = datetime.now(UTC).replace(tzinfo=None)
    _append(spark, settings.table("raw", "registry_schemas"), REGISTRY_SCHEMAS,
            [_schema_row(s, batch_id, now) for s in new])
    _append_rejections(spark, settings, rejected, batch_id, now)
    return RegistryIngestReport(
        len(files), len(new), already, len(rejected), registry_gaps(spark, settings), breaking_versions(spark, settings)
    )


def breaking_versions(spark: SparkSession, settings: Settings) -> list[str]:
    """One line per registered version that cannot load into its model's table, naming the columns."""
    rows = spark.table(settings.table("raw", "registry_schemas")).select(
        "vendor", "name", "format", "version", "schema_json"
    )
    plans = model_plans([RegisteredSchema(*row) for row in rows.collect()])
    lines = []
    for (vendor, name, model), plan in plans.items():
        for version in plan.versions:
            if version.is_recovery:
                table = table_name(vendor, name, model)
                lines.append(
                    f"{vendor}/{name} {version.version}: {'; '.join(version.conflicts)} "
                    f"-> its events load into {table}{version.table_suffix}, not {table}"
                )
    return lines


def registry_gaps(spark: SparkSession, settings: Settings) -> list[str]:
    """Gap lines over everything the warehouse has registered, not only this batch."""
    rows = spark.table(settings.table("raw", "registry_schemas")).select("vendor", "name", "version").collect()
    by_family: dict[str, set[SchemaVer]] = {}
    for row in rows:
        by_family.setdefault(f"{row.vendor}/{row.name}", set()).add(parse_schemaver(row.version))
    return [line for family in sorted(by_family) for line in gap_report(family, by_family[family])]


def _schema_row(item: RegistrySchema, batch_id: str, now: datetime) -> tuple[Any, ...]:
    key = item.key
    return (key.uri, key.vendor, key.name, key.format, str(key.version), key.version.model,
            key.version.revision, key.version.addition, item.text, item.digest, item.source_file, batch_id, now)


def _append_rejections(
    spark: SparkSession, settings: Settings, rejected: Sequence[RegistryRejection], batch_id: str, now: datetime
) -> None:
    table = settings.table("audit", "registry_rejected")
    known = {row.reject_id for row in spark.table(table).select("reject_id").collect()}
    rows = []
    for item in rejected:
        reject_id = name_uuid(f"registry_rejected:{item.source_file}:{item.reason}:{item.text}")
        if reject_id not in known:
            known.add(reject_id)
            rows.append((reject_id, item.source_file, item.reason, item.text, batch_id, now))
    _append(spark, table, REGISTRY_REJECTED, rows)


def _append(spark: SparkSession, table: str, schema: StructType, rows: Sequence[tuple[Any, ...]]) -> None:
    if rows:
        frame: DataFrame = spark.createDataFrame(list(rows), schema)
        frame.write.mode("append").format("parquet").saveAsTable(table)

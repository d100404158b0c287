"""Registry commands: ``ingest registry DIR``, ``ingest events PATH``, ``registry ddl VENDOR/NAME``."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from python_jobs.errors import UserFacingError
from python_jobs.ingest.events import ingest_events
from python_jobs.ingest.registry import (
    RegistryRejection,
    RegistrySchema,
    classify,
    ingest_registry,
    read_schema_file,
    registry_files,
)
from python_jobs.registry.catalog import RegisteredSchema, model_plans
from python_jobs.registry.ddl import migration_script
from python_jobs.registry.naming import table_name
from python_jobs.registry.schemaver import gap_report, parse_schemaver
from python_jobs.settings import LAYERS, PROJECT_DIR, SAMPLES_DIR, Settings, load_settings
from python_jobs.spark import ensure_schemas, get_spark
from python_jobs.tools.bench.registry import render, run_bench

SAMPLE_REGISTRY = SAMPLES_DIR / "registry"
SAMPLE_EVENTS = SAMPLES_DIR / "registry" / "events"
MODEL_DIR = PROJECT_DIR / "models" / "registry" / "tables"


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    registry_parser = groups["ingest"].add_parser(
        "registry", help="load an Iglu static registry (DIR/schemas/<vendor>/<name>/jsonschema/<M-R-A>)"
    )
    registry_parser.add_argument("dir", type=Path, help="registry root, the folder that holds schemas/")
    registry_parser.set_defaults(handler=run_ingest_registry)

    events_parser = groups["ingest"].add_parser(
        "events", help="load self-describing events (NDJSON file or folder) into raw.sd_events"
    )
    events_parser.add_argument("path", type=Path)
    events_parser.set_defaults(handler=run_ingest_events)

    ddl_parser = groups["registry"].add_parser(
        "ddl", help="print CREATE TABLE and the migration DDL of every version of VENDOR/NAME"
    )
    ddl_parser.add_argument("family", help="vendor/name, e.g. com.example/checkout")
    ddl_parser.add_argument(
        "--registry", type=Path, help="read this registry folder instead of the warehouse (no Spark start)"
    )
    ddl_parser.set_defaults(handler=run_ddl)

    scaffold_parser = groups["registry"].add_parser(
        "scaffold", help="write the one-line typed-table model of every registry family that has none"
    )
    scaffold_parser.add_argument("--registry", type=Path, help="read this registry folder instead of the warehouse")
    scaffold_parser.set_defaults(handler=run_scaffold)

    bench_parser = groups["bench"].add_parser(
        "registry", help="time registry ingest, event validation and typed-table loads (prefix bench_registry_)"
    )
    bench_parser.add_argument("--events", type=int, default=20000, help="synthetic events in the first batch")
    bench_parser.set_defaults(handler=run_bench_command)


def load_samples(spark: SparkSession, settings: Settings) -> None:
    for line in ingest_registry(spark, settings, SAMPLE_REGISTRY).lines():
        print(line)
    for line in ingest_events(spark, settings, SAMPLE_EVENTS).lines():
        print(line)


def _session() -> tuple[SparkSession, Settings]:
    settings = load_settings()
    spark = get_spark(settings)
    ensure_schemas(spark, settings, LAYERS)
    return spark, settings


def run_ingest_registry(args: argparse.Namespace) -> int:
    spark, settings = _session()
    for line in ingest_registry(spark, settings, args.dir).lines():
        print(line)
    return 0


def run_ingest_events(args: argparse.Namespace) -> int:
    spark, settings = _session()
    for line in ingest_events(spark, settings, args.path).lines():
        print(line)
    return 0


def family_schemas_from_dir(root: Path, vendor: str, name: str) -> list[RegisteredSchema]:
    schemas = []
    for path in registry_files(root):
        checked = read_schema_file(root, path)
        if isinstance(checked, RegistrySchema) and (checked.key.vendor, checked.key.name) == (vendor, name):
            schemas.append(RegisteredSchema(vendor, name, checked.key.format, str(checked.key.version), checked.text))
        elif isinstance(checked, RegistryRejection) and checked.source_file.startswith(f"schemas/{vendor}/{name}/"):
            print(f"-- warning: skipped {checked.source_file}: {checked.reason}")
    return schemas


def family_schemas_from_warehouse(vendor: str, name: str) -> tuple[list[RegisteredSchema], Settings]:
    spark, settings = _session()
    table = settings.table("raw", "registry_schemas")
    if not spark.catalog.tableExists(table):
        raise UserFacingError(f"{table} does not exist: run `python -m python_jobs ingest registry DIR` first")
    rows = (
        spark.table(table)
        .where((spark.table(table).vendor == vendor) & (spark.table(table).name == name))
        .select("vendor", "name", "format", "version", "schema_json")
        .collect()
    )
    return [RegisteredSchema(*row) for row in rows], settings


def run_bench_command(args: argparse.Namespace) -> int:
    if args.events < 10:
        raise UserFacingError("--events must be at least 10")
    spark, settings = _session()
    print(render(run_bench(spark, settings, args.events)))
    return 0


def model_file_text(vendor: str, name: str, model: int) -> str:
    return "{{ registry_table('" + vendor + "', '" + name + "', " + str(model) + ") }}\n"


_MODEL_CALL = re.compile(r"registry_table\(\s*'([^']*)'\s*,\s*'([^']*)'\s*,\s*(\d+)\s*\)")


def registry_dir_families(root: Path) -> tuple[set[tuple[str, str, int]], list[str]]:
    """(vendor, name, model) of every family the registry at ``root`` would register, and one line per
    file it would refuse (not UTF-8, not a schema, a table name another family owns, ...)."""
    checked = [read_schema_file(root, path) for path in registry_files(root)]
    accepted, _, rejected = classify(checked, {})
    families = {(c.key.vendor, c.key.name, c.key.version.model) for c in accepted if c.key.format == "jsonschema"}
    return families, [f"skipped {r.source_file}: {r.reason}" for r in rejected]


def _shown(path: Path) -> str:
    return str(path.relative_to(PROJECT_DIR)) if path.is_relative_to(PROJECT_DIR) else str(path)


def model_file_owner(text: str) -> tuple[str, str, int] | None:
    """(vendor, name, model) of the registry_table call in a model file, None when it holds none."""
    match = _MODEL_CALL.search(text)
    return (match[1], match[2], int(match[3])) if match else None


def run_scaffold(args: argparse.Namespace) -> int:
    if args.registry:
        families, skipped = registry_dir_families(args.registry.resolve())
        for line in skipped:
            print(line, file=sys.stderr)
    else:
        spark, settings = _session()
        rows = spark.table(settings.table("raw", "registry_schemas")).where("format = 'jsonschema'")
        families = {(r.vendor, r.name, r.model) for r in rows.select("vendor", "name", "model").distinct().collect()}
    written = present = 0
    collisions: list[str] = []
    for vendor, name, model in sorted(families):
        path = MODEL_DIR / f"{table_name(vendor, name, model)}.sql"
        if path.exists():
            owner = model_file_owner(path.read_text(encoding="utf-8", errors="replace"))
            if owner == (vendor, name, model):
                present += 1
            elif owner is None:
                collisions.append(
                    f"{vendor}/{name} model {model}: not written, {_shown(path)} exists and holds no "
                    "registry_table(...) call (a hand-written model owns the name); move that model or rename "
                    "the vendor or the name")
            else:
                collisions.append(
                    f"{vendor}/{name} model {model}: not written, {_shown(path)} is the model of "
                    f"{owner[0]}/{owner[1]} model {owner[2]}, which owns the typed table name "
                    f"{table_name(vendor, name, model)}; rename the vendor or the name")
            continue
        path.write_text(model_file_text(vendor, name, model))
        written += 1
        print(f"wrote {_shown(path)}; document it in models/registry/tables/_registry_tables.yml")
    for line in collisions:
        print(f"error: {line}", file=sys.stderr)
    print(f"{written} model file(s) written, {present} already present, {len(collisions)} name collision(s)")
    return 1 if collisions else 0


def run_ddl(args: argparse.Namespace) -> int:
    vendor, _, name = args.family.partition("/")
    if not vendor or not name:
        raise UserFacingError(f"expected VENDOR/NAME, e.g. com.example/checkout, got {args.family!r}")
    if args.registry:
        schemas, settings = family_schemas_from_dir(args.registry.resolve(), vendor, name), load_settings()
    else:
        schemas, settings = family_schemas_from_warehouse(vendor, name)
    plans = model_plans(schemas)
    versions = [parse_schemaver(s.version) for s in schemas if s.format == "jsonschema"]
    for gap in gap_report(f"{vendor}/{name}", versions):
        print(f"-- warning: version gap: {gap}")
    if not plans:
        raise UserFacingError(f"the registry has no jsonschema versions of {vendor}/{name}")
    for (_, _, model), plan in plans.items():
        table = settings.table("registry", table_name(vendor, name, model))
        print(f"-- {vendor}/{name} model {model}: {table}")
        print(migration_script(table, plan))
    return 0

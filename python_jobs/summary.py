"""What the main job built, read back from the warehouse, for a person to take in at a glance."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from rich import box
from rich.console import Console
from rich.table import Table

from python_jobs.contracts import CHANGELOG_OP_CODES, is_changelog_stream
from python_jobs.settings import Settings

PUBLIC_LAYERS = ("lineage", "changelog", "registry")
_OP_LABELS = {"append": "+A append", "retract": "-R retract", "correct_from": "-C correct from",
              "correct_to": "+C correct to"}
OP_NAMES = {CHANGELOG_OP_CODES[name]: label for name, label in _OP_LABELS.items()}  # code -> label
REASON_WIDTH = 90


@dataclass(frozen=True)
class SchemaDedup:
    """Schema versions stored once per distinct field set, against Marquez's per-version mapping, which
    holds one row per field per dataset version (``dataset_versions_field_mapping``)."""

    dataset_versions: int
    schema_versions: int
    schema_mapping_rows: int
    per_version_mapping_rows: int


@dataclass(frozen=True)
class RegistryTable:
    table: str
    versions: tuple[str, ...]
    rows: int
    is_recovery: bool


@dataclass(frozen=True)
class MainSummary:
    table_rows: dict[str, int]  # "<layer>.<table>" -> rows
    rejected: dict[str, dict[str, int]]  # audit table -> reason -> records
    schema_dedup: SchemaDedup
    changelog_ops: dict[str, dict[int, int]]  # changelog stream -> op -> rows
    registry_tables: tuple[RegistryTable, ...]
    docs_page: Path | None
    lineage_page: Path
    ingest_lines: tuple[str, ...] = ()
    dbt_results: dict[str, int] = field(default_factory=dict)


def _tables(spark: SparkSession, database: str) -> list[str]:
    if not spark.catalog.databaseExists(database):
        return []
    return sorted(row.tableName for row in spark.sql(f"show tables in {database}").collect() if not row.isTemporary)


def public_tables(spark: SparkSession, settings: Settings) -> dict[str, int]:
    """Rows per table or view of the public layers; dbt's and the changelog's internals (``__``) left out."""
    rows = {}
    for layer in PUBLIC_LAYERS:
        for table in _tables(spark, settings.schema(layer)):
            if "__" not in table:
                rows[f"{layer}.{table}"] = spark.table(settings.table(layer, table)).count()
    return rows


def rejected_by_reason(spark: SparkSession, settings: Settings) -> dict[str, dict[str, int]]:
    rejected: dict[str, dict[str, int]] = {}
    for table in _tables(spark, settings.schema("audit")):
        frame = spark.table(settings.table("audit", table))
        if "reason" not in frame.columns:
            continue
        counts = frame.groupBy("reason").count().collect()
        rejected[table] = {str(row["reason"]): int(row["count"]) for row in counts}
    return rejected


def schema_dedup(spark: SparkSession, settings: Settings) -> SchemaDedup:
    def count(name: str) -> int:
        table = settings.table("lineage", name)
        return spark.table(table).count() if spark.catalog.tableExists(table) else 0

    return SchemaDedup(
        dataset_versions=count("dataset_versions"),
        schema_versions=count("dataset_schema_versions"),
        schema_mapping_rows=count("dataset_schema_versions_field_mapping"),
        per_version_mapping_rows=count("dataset_versions_field_mapping"),
    )


def changelog_ops(spark: SparkSession, settings: Settings) -> dict[str, dict[int, int]]:
    streams: dict[str, dict[int, int]] = {}
    for table in _tables(spark, settings.schema("changelog")):
        frame = spark.table(settings.table("changelog", table))
        if "__" in table or not is_changelog_stream(frame.columns):
            continue
        streams[table] = {int(r["op"]): int(r["count"]) for r in frame.groupBy("op").count().collect()}
    return streams


def registry_tables(spark: SparkSession, settings: Settings) -> tuple[RegistryTable, ...]:
    versions_table = settings.table("registry", "registry_versions")
    if not spark.catalog.tableExists(versions_table):
        return ()
    versions = (
        spark.table(versions_table)
        .select(F.concat("table_name", F.coalesce("table_suffix", F.lit(""))).alias("table_name"), "version",
                "is_recovery")
        .groupBy("table_name", "is_recovery")
        .agg(F.sort_array(F.collect_list("version")).alias("versions"))
        .collect()
    )
    present = set(_tables(spark, settings.schema("registry")))
    found = []
    for row in sorted(versions, key=lambda r: r["table_name"]):
        name = row["table_name"]
        rows = spark.table(settings.table("registry", name)).count() if name in present else 0
        found.append(RegistryTable(name, tuple(row["versions"]), rows, bool(row["is_recovery"])))
    return tuple(found)


def collect_summary(
    spark: SparkSession, settings: Settings, docs_page: Path | None, lineage_page: Path,
    ingest_lines: tuple[str, ...] = (), dbt_results: dict[str, int] | None = None,
) -> MainSummary:
    return MainSummary(
        table_rows=public_tables(spark, settings),
        rejected=rejected_by_reason(spark, settings),
        schema_dedup=schema_dedup(spark, settings),
        changelog_ops=changelog_ops(spark, settings),
        registry_tables=registry_tables(spark, settings),
        docs_page=docs_page,
        lineage_page=lineage_page,
        ingest_lines=ingest_lines,
        dbt_results=dict(dbt_results or {}),
    )


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                  min_width=len(title))
    for index, column in enumerate(columns):
        table.add_column(column, justify="right" if index and column != "reason" else "left")
    return table


def render_summary(summary: MainSummary, console: Console) -> None:
    tables = _table("Rows per public table", "table", "rows")
    for name, rows in summary.table_rows.items():
        tables.add_row(name, f"{rows:,}")
    console.print(tables)

    rejected = _table("Rejected records (audit.*), per reason", "audit table", "reason", "records")
    for table, reasons in summary.rejected.items():
        for reason, count in sorted(reasons.items(), key=lambda item: (-item[1], item[0])):
            short = reason if len(reason) <= REASON_WIDTH else reason[: REASON_WIDTH - 1] + "…"
            rejected.add_row(table, short, f"{count:,}")
    if not any(summary.rejected.values()):
        rejected.add_row("-", "nothing rejected", "0")
    console.print(rejected)

    dedup = summary.schema_dedup
    schema = _table("Schema versions against Marquez's per-version mapping", "", "rows")
    schema.add_row("dataset versions", f"{dedup.dataset_versions:,}")
    schema.add_row("schema versions (one per distinct field set)", f"{dedup.schema_versions:,}")
    schema.add_row("schema field-mapping rows stored", f"{dedup.schema_mapping_rows:,}")
    schema.add_row("per-version mapping rows they replace", f"{dedup.per_version_mapping_rows:,}")
    ratio = dedup.per_version_mapping_rows / dedup.schema_mapping_rows if dedup.schema_mapping_rows else 0.0
    schema.add_row("ratio", f"{ratio:,.1f}x")
    console.print(schema)

    ops = _table("Changelog ops per stream", "stream", *OP_NAMES.values(), "total")
    for stream, counts in summary.changelog_ops.items():
        ops.add_row(stream, *(f"{counts.get(op, 0):,}" for op in OP_NAMES), f"{sum(counts.values()):,}")
    console.print(ops)

    registry = _table("Registry tables and their versions", "table", "versions", "rows")
    for entry in summary.registry_tables:
        kind = " (recovery table of a breaking version)" if entry.is_recovery else ""
        registry.add_row(entry.table + kind, ", ".join(entry.versions), f"{entry.rows:,}")
    console.print(registry)

    if summary.dbt_results:
        console.print("dbt build: " + ", ".join(f"{n:,} {status}" for status, n in sorted(summary.dbt_results.items())),
                      highlight=False)
    docs = f"{summary.docs_page}" if summary.docs_page else "not generated (--skip-docs)"
    console.print(f"docs:         {docs}", highlight=False)
    page_state = "" if summary.lineage_page.exists() else " (not written by this build)"
    console.print(f"lineage page: {summary.lineage_page}{page_state}", highlight=False)

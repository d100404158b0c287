"""The DDL a typed registry table goes through, printed for review by ``registry ddl``.

The dbt materialization ``registry_table`` runs the same statements; the event columns that
lead every table are listed here and in ``macros/registry/registry_table.sql`` and a test keeps
the two in step.
"""

from __future__ import annotations

from collections.abc import Sequence

from python_jobs.registry.columns import Column, ModelPlan

# Every typed table starts with these (the system columns), then the registry columns in registry
# order. The one list: `ingest registry` refuses a schema with a property that would become one of
# these columns (python_jobs/ingest/registry.py, system_column_problems), and the dbt macro
# registry_event_columns() mirrors it (test_registry_tables checks the built table against it).
EVENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("event_id", "STRING"),
    ("schema_version", "STRING"),
    ("source_file", "STRING"),
    ("source_line", "BIGINT"),
    ("loaded_at", "TIMESTAMP"),
)


def column_definitions(columns: Sequence[Column]) -> list[str]:
    definitions = [f"{name} {spark_type}" for name, spark_type in EVENT_COLUMNS]
    definitions += [f"{column.name} {column.spark_type}" for column in columns]
    return definitions


def create_table(table: str, columns: Sequence[Column], file_format: str = "parquet") -> str:
    body = ",\n    ".join(column_definitions(columns))
    return f"create table if not exists {table} (\n    {body}\n) using {file_format};"


def add_columns(table: str, columns: Sequence[Column]) -> str:
    body = ",\n    ".join(f"{column.name} {column.spark_type}" for column in columns)
    return f"alter table {table} add columns (\n    {body}\n);"


def migration_script(table: str, plan: ModelPlan, file_format: str = "parquet") -> str:
    """CREATE TABLE for the first version, then what each later version does to the table."""
    by_name = {column.name: column for column in plan.columns}
    lines: list[str] = []
    for index, version_plan in enumerate(plan.versions):
        version = version_plan.version
        if index == 0:
            first = [c for c in plan.columns if c.introduced_in == str(version)]
            lines += [f"-- {version}: create", create_table(table, first, file_format)]
        elif version_plan.is_recovery:
            recovery_table = f"{table}{version_plan.table_suffix}"
            lines.append(f"-- {version}: BREAKING, rows go to {recovery_table}")
            lines += [f"--   {conflict}" for conflict in version_plan.conflicts]
            lines.append(create_table(recovery_table, plan.recovery_columns[version_plan.table_suffix], file_format))
        elif version_plan.added:
            lines += [f"-- {version}: add {len(version_plan.added)} column(s)",
                      add_columns(table, [by_name[name] for name in version_plan.added])]
        else:
            lines.append(f"-- {version}: no new columns")
    return "\n".join(lines) + "\n"

"""``bench registry``: figures for registry ingest, event validation and typed-table loads.

Runs in its own schema prefix (``bench_registry_``), rebuilt from scratch each time, on synthetic
checkout events generated from the sample registry (a tenth of them invalid).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from python_jobs.dbt import run_dbt
from python_jobs.ingest.events import ingest_events
from python_jobs.ingest.registry import ingest_registry
from python_jobs.registry.catalog import RegisteredSchema, model_plans
from python_jobs.settings import SAMPLES_DIR, Settings
from python_jobs.tools.bench.harness import Figures, drop_warehouse, reset_warehouse, timed
from python_jobs.tools.generate.registry import checkout_events

BENCH_PREFIX = "bench_registry_"
SAMPLE_REGISTRY = SAMPLES_DIR / "registry"
BUILD_SELECTION = ["stg_registry_schemas", "stg_sd_events", "registry_columns", "registry_versions",
                   "com_example_checkout_1"]


@dataclass(frozen=True)
class Figure:
    step: str
    rows: int
    seconds: float

    def rate(self) -> str:
        return f"{self.rows / self.seconds:,.0f}" if self.rows and self.seconds > 0 else "-"


MIGRATION_VERSION = "1-0-3"
MIGRATION_REGISTRY_STEP = f"ingest registry: checkout {MIGRATION_VERSION} (+1 column)"
MIGRATION_BUILD_STEP = f"dbt build: migration to {MIGRATION_VERSION} + its events"


def write_migration_registry(root: Path) -> Path:
    """A registry holding one ADDITION of the sample checkout family: 1-0-2 plus ``referralCode``."""
    family = ("com.example", "checkout", "jsonschema")
    document = json.loads(SAMPLE_REGISTRY.joinpath("schemas", *family, "1-0-2").read_text())
    document["self"]["version"] = MIGRATION_VERSION
    document["properties"]["referralCode"] = {"type": ["string", "null"], "maxLength": 64}
    target = root.joinpath("schemas", *family, MIGRATION_VERSION)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=2))
    return root


def migration_events(count: int, offset: int) -> list[str]:
    """Valid checkout events of the migration version, carrying the new column."""
    lines = []
    for index in range(offset, offset + count):
        data = {
            "orderId": f"o-{index}", "total": 12, "currency": "EUR", "itemCount": 1 + index % 7,
            "customer": {"id": f"c-{index % 500}", "isMember": False}, "channel": "app",
            "referralCode": f"r-{index % 97}",
        }
        lines.append(json.dumps({"schema": f"iglu:com.example/checkout/jsonschema/{MIGRATION_VERSION}", "data": data}))
    return lines


def _timed(step: str, rows: int, action: Callable[[], Any]) -> tuple[Figure, Any]:
    seconds, result = timed(action)
    return Figure(step, rows, seconds), result


def dbt(settings: Settings, command: list[str]) -> None:
    """The typed table benchmarked is the sample registry's checkout: enabled by the var sample_inputs."""
    run_dbt(settings, command, extra_vars={"sample_inputs": True})


def run_bench(spark: SparkSession, base: Settings, events: int) -> list[Figure]:
    settings = reset_warehouse(spark, base.with_prefix(BENCH_PREFIX))
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="bench-registry-") as folder:
        first = Path(folder) / "first.ndjson"
        first.write_text("\n".join(checkout_events(events, seed=1)) + "\n")
        more = Path(folder) / "more.ndjson"
        more.write_text("\n".join(checkout_events(max(events // 10, 1), seed=2, offset=events)) + "\n")

        figure, _ = _timed("ingest registry (samples)", 9, lambda: ingest_registry(spark, settings, SAMPLE_REGISTRY))
        figures.append(figure)
        figure, report = _timed("ingest + validate events", events, lambda: ingest_events(spark, settings, first))
        figures.append(figure)
        figures.append(Figure(f"  accepted {report.accepted:,} / rejected {report.rejected:,}", 0, 0.0))
        figure, _ = _timed("re-ingest the same file (0 new)", events, lambda: ingest_events(spark, settings, first))
        figures.append(figure)
        build = ["build", "--indirect-selection", "cautious", "--select", *BUILD_SELECTION]
        figure, _ = _timed("dbt build: create + load typed table", report.accepted, lambda: dbt(settings, build))
        figures.append(figure)
        figure, _ = _timed("dbt build: no new events", 0, lambda: dbt(settings, build))
        figures.append(figure)
        figure, more_report = _timed("ingest +10% events", events // 10, lambda: ingest_events(spark, settings, more))
        figures.append(figure)
        figure, _ = _timed("dbt build: +10% events", more_report.new, lambda: dbt(settings, build))
        figures.append(figure)
        migration_registry = write_migration_registry(Path(folder) / "registry-1-0-3")
        figure, _ = _timed(MIGRATION_REGISTRY_STEP, 1, lambda: ingest_registry(spark, settings, migration_registry))
        figures.append(figure)
        migrated = Path(folder) / "migrated.ndjson"
        migrated.write_text("\n".join(migration_events(max(events // 10, 1), offset=2 * events)) + "\n")
        figure, migrated_report = _timed(
            "ingest +10% events of 1-0-3", events // 10, lambda: ingest_events(spark, settings, migrated)
        )
        figures.append(figure)
        figures.append(Figure(
            f"  accepted {migrated_report.accepted:,} / rejected {migrated_report.rejected:,}", 0, 0.0
        ))
        figure, _ = _timed(MIGRATION_BUILD_STEP, migrated_report.new, lambda: dbt(settings, build))
        figures.append(figure)
    figures.append(_plan_figure())
    drop_warehouse(spark, settings)
    return figures


def _plan_figure(repeat: int = 200) -> Figure:
    folder = SAMPLE_REGISTRY / "schemas" / "com.example" / "checkout" / "jsonschema"
    schemas = [RegisteredSchema("com.example", "checkout", "jsonschema", p.name, p.read_text())
               for p in sorted(folder.iterdir())]
    figure, _ = _timed("column plan of checkout (3 versions) x200", repeat,
                       lambda: [model_plans(schemas) for _ in range(repeat)])
    return figure


def render(figures: list[Figure]) -> str:
    table = Figures(("step", "rows", "seconds", "rows/s"), echo=False)
    for figure in figures:
        table.add(figure.step, f"{figure.rows:,}", f"{figure.seconds:.2f}", figure.rate())
    return table.table()

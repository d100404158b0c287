"""What the report says about the machine and the software it ran on."""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path

from pyspark.sql import SparkSession


def _first_value(path: str, key: str) -> str | None:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def machine() -> list[tuple[str, str]]:
    memory_kb = _first_value("/proc/meminfo", "MemTotal")
    memory = f"{int(memory_kb.split()[0]) / 1024 / 1024:,.1f} GiB" if memory_kb else "unknown"
    return [
        ("cores", str(os.cpu_count() or "unknown")),
        ("memory", memory),
        ("CPU", _first_value("/proc/cpuinfo", "model name") or platform.processor() or "unknown"),
        ("OS", f"{platform.system()} {platform.release()}"),
    ]


def _package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def versions(spark: SparkSession) -> list[tuple[str, str]]:
    system = spark.sparkContext._jvm.java.lang.System
    java = f"{system.getProperty('java.version')} ({system.getProperty('java.vm.name')})"
    return [
        ("Python", platform.python_version()),
        ("Java", java),
        ("Spark", spark.version),
        ("dbt-core", _package_version("dbt-core")),
        ("dbt-spark", _package_version("dbt-spark")),
        ("pyarrow", _package_version("pyarrow")),
        ("duckdb", _package_version("duckdb")),
    ]

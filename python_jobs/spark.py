"""One SparkSession per process, configured from the same profiles.yml target that dbt uses.

dbt's ``session`` connection method calls ``SparkSession.builder.getOrCreate()``, so when the
jobs start Spark first, dbt runs inside the same JVM: one start-up cost for ingest, dbt and
checks, and one Derby metastore owner.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Any

import jinja2
import yaml
from pyspark.sql import SparkSession

from python_jobs.contracts import CONTRACT_FILES
from python_jobs.settings import PROJECT_DIR, Settings

PROFILE_NAME = "lineage_warehouse"


def _env_var(name: str, default: str | None = None) -> str:
    value = os.environ.get(name, default)
    if value is None:
        raise KeyError(f"environment variable {name} is required by profiles.yml and is not set")
    return value


def render_profiles(profiles_path: Path) -> dict[str, Any]:
    """profiles.yml rendered the way dbt renders it (only ``env_var`` is needed there)."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.globals["env_var"] = _env_var
    text = env.from_string(profiles_path.read_text()).render()
    return yaml.safe_load(text)


def target_spark_conf(settings: Settings, target: str | None = None) -> dict[str, str]:
    profiles = render_profiles(settings.project_dir / "profiles.yml")[PROFILE_NAME]
    name = target or settings.target
    if name not in profiles["outputs"]:
        raise KeyError(f"target {name!r} is not in profiles.yml (have: {sorted(profiles['outputs'])})")
    params = profiles["outputs"][name].get("server_side_parameters", {})
    conf = {str(key): str(value) for key, value in params.items()}
    conf["spark.sql.ansi.enabled"] = "false"  # dbt-spark forces this; match it from the start
    return conf


def get_spark(settings: Settings, target: str | None = None) -> SparkSession:
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    settings.lineage_home.mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in target_spark_conf(settings, target).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if not spark.sparkContext.master.startswith("local"):
        ship_python_jobs(spark, settings)
    return spark


def ship_python_jobs(spark: SparkSession, settings: Settings) -> None:
    """Executors on a cluster must import python_jobs for UDFs defined in it; send them a zip, with the
    contract files its modules read on import (``contracts.CONTRACT_FILES``) at their project paths."""
    archive = settings.lineage_home / "python_jobs_dist.zip"
    package = settings.project_dir / "python_jobs"
    members = [path for path in sorted(package.rglob("*")) if path.is_file() and "__pycache__" not in path.parts]
    members += [settings.project_dir / path.relative_to(PROJECT_DIR) for path in CONTRACT_FILES]
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for path in members:
            zipped.write(path, path.relative_to(settings.project_dir).as_posix())
    spark.sparkContext.addPyFile(str(archive))


def ensure_schemas(spark: SparkSession, settings: Settings, layers: tuple[str, ...]) -> None:
    # Checking first keeps the Hive metastore from logging AlreadyExistsException for every run.
    for layer in layers:
        if not spark.catalog.databaseExists(settings.schema(layer)):
            spark.sql(f"create database if not exists {settings.schema(layer)}")

"""One SparkSession per process, configured from the same profiles.yml target that dbt uses.

dbt's ``session`` connection method calls ``SparkSession.builder.getOrCreate()``, so when the
jobs start Spark first, dbt runs inside the same JVM: one start-up cost for ingest, dbt and
checks, and one Derby metastore owner.

Before the JVM starts, the target's metastore is checked (``python_jobs.metastore``): a server's JDBC driver
must be on the class path, and embedded Derby must not be open in another process (one line says which). The
metastore is opened at once, so a failure to open it is reported in one line too, not at the first query.
"""

from __future__ import annotations

import functools
import os
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import jinja2
import yaml
from pyspark import SparkContext
from pyspark.sql import SparkSession

from python_jobs.contracts import CONTRACT_FILES
from python_jobs.metastore import Metastore, claim, explain_open_failure
from python_jobs.settings import PROJECT_DIR, Settings

PROFILE_NAME = "lineage_warehouse"
Built = TypeVar("Built")


def built_once_per_jvm(builder: Callable[[], Built]) -> Callable[[], Built]:
    """``builder``'s result (Spark ``Column`` expressions), built once per JVM and then reused.

    A Column names its inputs and belongs to no DataFrame or session, so one built expression serves every
    query of the process. Building one is a py4j call per function in it, and the ingest's checks are hundreds
    of functions: about 1.2 s each time, paid twice per ingest, against nothing when kept. A new JVM (a
    restarted gateway) builds them again."""
    kept: dict[int, Built] = {}

    @functools.wraps(builder)
    def kept_or_built() -> Built:
        jvm_key = id(SparkContext._gateway)
        if jvm_key not in kept:
            kept.clear()
            kept[jvm_key] = builder()
        return kept[jvm_key]

    return kept_or_built


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


def target_metastore(settings: Settings, target: str | None = None) -> Metastore:
    """The metastore the target's Spark settings name (``LINEAGE_METASTORE_URL`` or embedded Derby)."""
    return Metastore.from_conf(target_spark_conf(settings, target))


def get_spark(
    settings: Settings, target: str | None = None, extra_conf: Mapping[str, str] | None = None
) -> SparkSession:
    """The process's session; the first call starts it from the target's settings, with ``extra_conf`` over them
    (``serve``'s SQL endpoint adds its session extension and scheduler pools so)."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    settings.lineage_home.mkdir(parents=True, exist_ok=True)
    conf = {**target_spark_conf(settings, target), **(extra_conf or {})}
    metastore = Metastore.from_conf(conf)
    metastore.check_driver()
    metastore.check_credentials()
    claim(metastore)
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    open_metastore(spark, metastore)
    if not spark.sparkContext.master.startswith("local"):
        ship_python_jobs(spark, settings)
    return spark


# Loggers that print a Java stack trace for each attempt to open a metastore that cannot be opened.
METASTORE_OPEN_LOGGERS = ("DataNucleus",)


def open_metastore(spark: SparkSession, metastore: Metastore) -> None:
    """Opens the metastore now (Spark opens it at the first catalog call): a metastore that cannot be opened
    (Derby booted by a process that started at the same moment, a server that refuses us) fails here, in one
    line naming the cause, instead of in the middle of a command after pages of Java traces."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    log4j = jvm.org.apache.logging.log4j
    configurator = log4j.core.config.Configurator
    levels = {name: log4j.LogManager.getLogger(name).getLevel() for name in METASTORE_OPEN_LOGGERS}
    for name in levels:
        configurator.setLevel(name, log4j.Level.OFF)
    try:
        spark.catalog.databaseExists("default")
    except Exception as error:
        # A captured Java exception's text is its first line; the causes, which say what failed, are in its
        # JVM stack trace (pyspark's CapturedException keeps it in _stackTrace).
        java_text = f"{error}\n{getattr(error, '_stackTrace', '')}"
        raise explain_open_failure(metastore, java_text) from None
    finally:
        for name, level in levels.items():
            configurator.setLevel(name, level)


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

"""Shared fixtures: one SparkSession and one warehouse folder for the whole test session.

Spark costs ~20 s to start, so every test shares the JVM. ``bin/test`` runs three pytest-xdist workers, each a
session of its own (its own JVM, warehouse folder and Derby metastore); ``pytest_collection_modifyitems``
keeps each test file on one worker and every file that reads the main job's warehouse on the same one, so
the main job runs once. Tests that need an empty warehouse
take ``isolated_settings``: a fresh ``schema_prefix`` gives them their own copy of every layer
(raw_, staging_, ...) inside the same metastore.
"""

from __future__ import annotations

import itertools
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from python_jobs.settings import PROJECT_DIR

SHARED_CORPUS = PROJECT_DIR.parent / "shared" / "corpus"
_TEST_HOME = Path(tempfile.mkdtemp(prefix="lineage-tests-"))
# Where the main job writes its sample; the cluster test writes the same sample to the same place
# (test_home / "sample"), as file paths are part of the rows.
MAIN_SAMPLE_ROOT = _TEST_HOME / "sample"

# Must be set before python_jobs.settings.load_settings() and before Spark starts.
os.environ["LINEAGE_HOME"] = str(_TEST_HOME / "local")
os.environ["LINEAGE_TARGET"] = "local"
os.environ["LINEAGE_SCHEMA_PREFIX"] = ""
os.environ["LINEAGE_LOCAL_MASTER"] = "local[2]"
os.environ["LINEAGE_SHUFFLE_PARTITIONS"] = "4"
# Tests run thousands of small queries over a handful of rows, where compiling each plan's generated Java costs
# more than it saves: off, test_lineage_key_collisions.py used 17 % less JVM CPU and the main job's pipeline on
# the sample 10 % less. The results are the same either way; the main job, the CLI and the benchmarks keep it on.
os.environ["LINEAGE_WHOLE_STAGE_CODEGEN"] = "false"
# Single expressions too, interpreted rather than compiled (profiles.yml): test_lineage_key_collisions.py took 115 s
# against 135 s with Spark's default, one run each on an idle machine. The cluster test runs its warehouse with code
# generation on, as users do, and compares it with the one built here.
os.environ.setdefault("LINEAGE_EXPRESSION_CODEGEN", "NO_CODEGEN")
os.environ["DBT_TARGET_PATH"] = str(_TEST_HOME / "dbt-target")
os.environ["DBT_LOG_PATH"] = str(_TEST_HOME / "dbt-logs")
os.environ["DBT_SEND_ANONYMOUS_USAGE_STATS"] = "false"
os.environ["DBT_PROFILES_DIR"] = str(PROJECT_DIR)

_prefix_counter = itertools.count(1)

# Fixtures whose value is the main job's warehouse: their files share one xdist worker.
_SAMPLE_FIXTURES = {"main_run", "sample_warehouse"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Groups tests for ``--dist loadgroup``: a file's tests together (module fixtures, such as a serve
    process, start once), and all files that read the main job's warehouse in one group. It runs first: xdist's
    own implementation reads the groups into the test ids, whatever order the plugins were registered in."""
    sample_files = {item.path for item in items if _SAMPLE_FIXTURES & set(getattr(item, "fixturenames", ()))}
    for item in items:
        group = "main-job-warehouse" if item.path in sample_files else item.path.name
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session")
def test_home() -> Path:
    return _TEST_HOME


@pytest.fixture(scope="session")
def settings():
    from python_jobs.settings import load_settings

    return load_settings()


@pytest.fixture(scope="session")
def spark(settings):
    from python_jobs.spark import get_spark

    session = get_spark(settings)
    yield session
    session.stop()


@pytest.fixture()
def isolated_settings(request, settings, spark):
    """Settings with a schema prefix of their own: an empty copy of every warehouse layer."""
    from python_jobs.settings import LAYERS
    from python_jobs.spark import ensure_schemas

    slug = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:30].strip("_")
    scoped = settings.with_prefix(f"t{next(_prefix_counter)}_{slug}_")
    ensure_schemas(spark, scoped, LAYERS)
    return scoped


@pytest.fixture(scope="session")
def main_sample():
    """The generated sample the main job ingests (``main_run``), and its manifest."""
    from python_jobs.tools.generate.sample import SampleSpec, generate_sample

    return generate_sample(SampleSpec(), MAIN_SAMPLE_ROOT)


@pytest.fixture(scope="session")
def main_run(settings, spark, main_sample):
    """The main job (generated sample, dbt build, docs, self-lineage, summary) run once on the default
    prefix, with the hand-written lineage samples the model tests assert on; shared read-only."""
    from python_jobs.warehouse.main_job import HAND_WRITTEN_LINEAGE, run_pipeline

    return run_pipeline(spark, settings, main_sample.inputs(HAND_WRITTEN_LINEAGE), docs=True, self_lineage=True)


@pytest.fixture(scope="session")
def sample_warehouse(settings, main_run):
    """The settings of the warehouse the main job built (see ``main_run``)."""
    return settings


@pytest.fixture(scope="session")
def dbt_manifest(settings) -> Path:
    """dbt's manifest of this project, which ``python_jobs.lineage.models`` reads the lineage core from: the
    one the session's dbt commands write, or a ``dbt parse``'s when none has run yet."""
    from python_jobs.dbt import run_dbt, target_dir

    manifest = target_dir(settings) / "manifest.json"
    if not manifest.is_file():
        run_dbt(settings, ["parse"])
    return manifest


@pytest.fixture(scope="session")
def postgres_server():
    """A throwaway PostgreSQL server (``python_jobs/ops/postgres.py``: its own OS user under root, a temporary
    folder, a free port, fsync off) for the shared-metastore tests. Started once, by the first test that needs
    it, and stopped at the end of the session. A fixture rather than a server started by bin/test: a single
    test file run alone gets it too, and a session that needs none does not pay for it. A test that needs it
    fails (it does not skip) when the server cannot start."""
    from python_jobs.ops.postgres import postgres_server as throwaway_server

    with throwaway_server(durable=False) as server:
        yield server


@pytest.fixture()
def postgres_metastore_url(request, postgres_server) -> str:
    """The JDBC URL of a new, empty database on the session's PostgreSQL server: one warehouse's metastore."""
    slug = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:40].strip("_")
    return postgres_server.create_database(f"m{next(_prefix_counter)}_{slug}")


@pytest.fixture(scope="session")
def shared_corpus() -> Iterator[Path]:
    if not SHARED_CORPUS.is_dir():
        pytest.skip(f"shared corpus not found at {SHARED_CORPUS} (it lives beside the project in ../shared)")
    yield SHARED_CORPUS

"""`--target cluster` against a real standalone master + worker, with its metastore in PostgreSQL (the session's
throwaway server) and Spark's code generation on, gives the same warehouse as `local` on embedded Derby with the
suite's interpreted expressions."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from python_jobs.landing import LandingLayout, default_landing_root
from python_jobs.settings import PROJECT_DIR
from python_jobs.standalone import standalone_cluster
from python_jobs.warehouse.fingerprint import warehouse_fingerprint

# Runs in its own process: a JVM's master and metastore cannot change.
CLUSTER_JOB = """
import json, os, shutil, sys
from pathlib import Path
from python_jobs.dbt import run_dbt
from python_jobs.ingest.lineage import ingest_lineage
from python_jobs.settings import load_settings
from python_jobs.spark import get_spark
from python_jobs.tools.generate.sample import SampleSpec, generate_sample
from python_jobs.warehouse.fingerprint import warehouse_fingerprint
from python_jobs.warehouse.main_job import HAND_WRITTEN_LINEAGE, SAMPLE_DBT_VARS, WITHOUT_DATA_TESTS, run_pipeline
settings = load_settings()
spark = get_spark(settings)
assert spark.sparkContext.master.startswith("spark://"), spark.sparkContext.master
# The job writes the seeded sample again, byte for byte, where the local run wrote it. Ingest batch ids
# name each file's path, size and modification time, so the local files' times are put back.
sample_root = Path(sys.argv[2])
times = {path: (path.stat().st_atime_ns, path.stat().st_mtime_ns) for path in sample_root.rglob("*") if path.is_file()}
manifest = generate_sample(SampleSpec(), sample_root)
for path, (atime, mtime) in times.items():
    os.utime(path, ns=(atime, mtime))
# The data tests only read, and the local run ran them on the same rows: the cluster builds leave them out.
run_pipeline(spark, settings, manifest.inputs(HAND_WRITTEN_LINEAGE), docs=False, data_tests=False)
# The local warehouse also holds the lineage of its own build (main's self-lineage), whose events name the
# local warehouse folder and dbt invocation: load the very file it loaded, from the path it was loaded from
# (the path is part of each row), then build as main does after it.
kept, sealed = Path(sys.argv[3]), Path(sys.argv[4])
shutil.copy2(kept, sealed)  # with its modification time, as above
try:
    ingest_lineage(spark, settings, [sealed])
finally:
    sealed.unlink()
run_dbt(settings, ["build", *WITHOUT_DATA_TESTS], extra_vars=SAMPLE_DBT_VARS)
json.dump(warehouse_fingerprint(spark, settings), open(sys.argv[1], "w"))
"""


@pytest.mark.cluster
def test_cluster_target_matches_local(sample_warehouse, spark, test_home, tmp_path, postgres_metastore_url):
    local = warehouse_fingerprint(spark, sample_warehouse)
    landing = LandingLayout(default_landing_root(sample_warehouse.lineage_home))
    [self_lineage_file] = sorted(landing.ingested_dir.glob("self-lineage-*.ndjson"))
    cluster_home = test_home / "cluster"
    out = tmp_path / "cluster-fingerprint.json"
    with standalone_cluster(tmp_path / "spark-standalone", worker_cores=2, worker_memory="3g") as cluster:
        env = dict(
            os.environ,
            LINEAGE_TARGET="cluster",
            SPARK_MASTER_URL=cluster.master_url,
            LINEAGE_HOME=str(cluster_home),
            LINEAGE_SHARED_WAREHOUSE=str(cluster_home / "warehouse"),
            LINEAGE_METASTORE_URL=postgres_metastore_url,
            LINEAGE_DRIVER_MEMORY="2g",
            PYSPARK_PYTHON=sys.executable,
            PYSPARK_DRIVER_PYTHON=sys.executable,
            DBT_TARGET_PATH=str(tmp_path / "dbt-target"),
            DBT_LOG_PATH=str(tmp_path / "dbt-logs"),
            # Spark's code generation as users run it (the suite interprets, see conftest.py): the two warehouses
            # must be equal across both evaluation modes too.
            LINEAGE_WHOLE_STAGE_CODEGEN="true",
            LINEAGE_EXPRESSION_CODEGEN="FALLBACK",
        )
        job = subprocess.run(
            [sys.executable, "-c", CLUSTER_JOB, str(out), str(test_home / "sample"), str(self_lineage_file),
             str(landing.sealed_dir / self_lineage_file.name)],
            cwd=PROJECT_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=1500,
            check=False,
        )
        assert job.returncode == 0, f"cluster job failed:\n{job.stdout[-4000:]}\n{job.stderr[-6000:]}"
        # The metastore was PostgreSQL's, not a Derby file beside the warehouse.
        assert not (cluster_home / "metastore_db").exists()
        # The work really ran on the standalone worker, not in a local executor.
        assert any((tmp_path / "spark-standalone" / "worker").glob("app-*")), (
            "no application ran on the worker"
        )
    remote = json.loads(out.read_text())
    assert remote.keys() == local.keys()
    differing = {name for name in local if local[name] != remote[name]}
    assert not differing, {name: (local[name], remote[name]) for name in sorted(differing)}

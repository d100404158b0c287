"""A Spark standalone master and worker started from the pyspark installation, on loopback.

Used by the cluster test and handy for trying ``--target cluster`` on a laptop:
``python -m python_jobs cluster start`` prints the master URL to export as SPARK_MASTER_URL.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyspark

from python_jobs.ports import free_port


def spark_home() -> Path:
    return Path(pyspark.__file__).resolve().parent


@dataclass
class StandaloneCluster:
    master_url: str
    master_ui: str
    processes: list[subprocess.Popen]
    log_dir: Path

    def alive_workers(self) -> int:
        with urllib.request.urlopen(f"{self.master_ui}/json/", timeout=5) as response:
            return int(json.load(response).get("aliveworkers", 0))

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


def _launch(args: list[str], log_file: Path, env: dict[str, str]) -> subprocess.Popen:
    spark_class = spark_home() / "bin" / "spark-class"
    handle = log_file.open("w")
    return subprocess.Popen(
        [str(spark_class), *args], stdout=handle, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )


def start_cluster(
    work_dir: Path, worker_cores: int = 2, worker_memory: str = "3g", timeout_s: float = 90.0
) -> StandaloneCluster:
    work_dir.mkdir(parents=True, exist_ok=True)
    env = dict(
        os.environ,
        SPARK_HOME=str(spark_home()),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(work_dir),
        SPARK_WORKER_DIR=str(work_dir / "worker"),
    )
    master_port, master_ui_port, worker_ui_port = free_port(), free_port(), free_port()
    master_url = f"spark://127.0.0.1:{master_port}"
    cluster = StandaloneCluster(master_url, f"http://127.0.0.1:{master_ui_port}", [], work_dir)
    try:
        cluster.processes.append(
            _launch(
                [
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(master_port),
                    "--webui-port",
                    str(master_ui_port),
                ],
                work_dir / "master.log",
                env,
            )
        )
        cluster.processes.append(
            _launch(
                [
                    "org.apache.spark.deploy.worker.Worker",
                    master_url,
                    "--host",
                    "127.0.0.1",
                    "--webui-port",
                    str(worker_ui_port),
                    "--cores",
                    str(worker_cores),
                    "--memory",
                    worker_memory,
                    "--work-dir",
                    str(work_dir / "worker"),
                ],
                work_dir / "worker.log",
                env,
            )
        )
        _wait_for_worker(cluster, timeout_s)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _wait_for_worker(cluster: StandaloneCluster, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for process in cluster.processes:
            if process.poll() is not None:
                raise RuntimeError(f"a Spark daemon exited early; see the logs in {cluster.log_dir}")
        try:
            if cluster.alive_workers() >= 1:
                return
        except OSError:
            pass
        time.sleep(1)
    raise TimeoutError(
        f"no worker registered with {cluster.master_url} in {timeout_s:.0f}s; logs in {cluster.log_dir}"
    )


@contextmanager
def standalone_cluster(work_dir: Path, **kwargs: object) -> Iterator[StandaloneCluster]:
    cluster = start_cluster(work_dir, **kwargs)  # type: ignore[arg-type]
    try:
        yield cluster
    finally:
        cluster.stop()

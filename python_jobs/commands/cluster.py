"""``cluster start``: a Spark standalone master + worker from the pyspark package, for trying the cluster target."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from python_jobs.settings import load_settings
from python_jobs.standalone import standalone_cluster


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    parser = groups[""].add_parser("cluster", help="run a local Spark standalone cluster")
    sub = parser.add_subparsers(dest="cluster_command", required=True, metavar="ACTION")
    start = sub.add_parser("start", help="start a master and one worker on 127.0.0.1 until Ctrl-C")
    start.add_argument("--cores", type=int, default=2)
    start.add_argument("--memory", default="3g")
    start.add_argument("--work-dir", type=Path, help="logs and worker files (default: $LINEAGE_HOME/standalone)")
    start.set_defaults(handler=run_start)


def run_start(args: argparse.Namespace) -> int:
    work_dir = args.work_dir or load_settings().lineage_home / "standalone"
    with standalone_cluster(work_dir, worker_cores=args.cores, worker_memory=args.memory) as cluster:
        print(f"export SPARK_MASTER_URL={cluster.master_url}")
        print(f"master UI: {cluster.master_ui}; logs in {work_dir}; Ctrl-C stops both daemons", flush=True)
        try:
            while all(process.poll() is None for process in cluster.processes):
                time.sleep(2)
        except KeyboardInterrupt:
            pass
    return 0

"""``self-lineage``: OpenLineage events for the last dbt command, e.g. after a plain ``dbt build``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from python_jobs.dbt import target_dir
from python_jobs.settings import load_settings


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    parser = groups[""].add_parser(
        "self-lineage",
        help="emit OpenLineage events (one job per model) for the dbt build whose artifacts are in target/",
    )
    parser.add_argument(
        "--target-dir", type=Path, default=None, help="dbt's target folder (default: $DBT_TARGET_PATH or ./target)"
    )
    parser.add_argument(
        "--collector-url",
        default=None,
        help="OpenLineage collector to send to (default: $OPENLINEAGE_URL; else LINEAGE_HOME/landing/lineage)",
    )
    parser.set_defaults(handler=run_self_lineage)


def run_self_lineage(args: argparse.Namespace) -> int:
    # Heavy (the read API loads pyarrow.compute, self-lineage OpenLineage): imported when the command runs,
    # not on every CLI start.
    from python_jobs.warehouse.self_lineage import emit_self_lineage

    settings = load_settings()
    artifacts = args.target_dir or target_dir(settings)
    emitted = emit_self_lineage(settings, artifacts, args.collector_url or os.environ.get("OPENLINEAGE_URL") or None)
    print(f"{emitted.events} events of dbt run {emitted.invocation_id} sent to {emitted.destination}")
    if emitted.landed_file is not None:
        print(f"load them with: python -m python_jobs ingest lineage {emitted.landed_file}")
    return 0

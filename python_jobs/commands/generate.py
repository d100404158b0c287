"""``generate sample``: the realistic sample the main job ingests, written to a folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from python_jobs.tools.generate.sample import DEFAULT_SIZE, SampleSpec, generate_sample


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    sample = groups["generate"].add_parser(
        "sample",
        help="OpenLineage events of Airflow, Spark and dbt pipelines, CRM snapshots, an Iglu registry and its events",
    )
    sample.add_argument(
        "--size", type=int, default=DEFAULT_SIZE,
        help=f"about how many lineage events; every part scales with it (default {DEFAULT_SIZE})",
    )
    sample.add_argument("--seed", type=int, default=7, help="same size and seed, same bytes (default 7)")
    sample.add_argument("--out", type=Path, required=True, help="folder to write (its parts are replaced)")
    sample.set_defaults(handler=run_generate_sample)


def run_generate_sample(args: argparse.Namespace) -> int:
    manifest = generate_sample(SampleSpec(size=args.size, seed=args.seed), args.out)
    facts = manifest.lineage
    print(
        f"lineage: {len(manifest.lineage_files)} files, {facts.lines:,} lines = {facts.events:,} events + "
        f"{facts.duplicates} duplicates + {facts.malformed} malformed; {facts.failed_runs} failed and "
        f"{facts.aborted_runs} aborted runs; {facts.large_facets} large facets"
    )
    print(f"snapshots: {len(manifest.snapshots)} of crm_accounts, {manifest.snapshots[-1].rows:,} rows in the last")
    print(f"registry: {len(manifest.registry_schemas)} schemas; events: {manifest.sd_events:,} lines")
    print(f"wrote {manifest.root} (manifest.json describes it)")
    return 0

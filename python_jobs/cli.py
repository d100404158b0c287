"""``python -m python_jobs <command>``.

Each module in ``python_jobs/commands`` adds its sub-commands through ``register(groups)``,
where ``groups`` maps a group name (``ingest``, ``bench``, ...) to its sub-parser action and
``""`` to the top level. New capabilities add a module there and touch nothing else.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from python_jobs import commands
from python_jobs.errors import UserFacingError
from python_jobs.ops.cli_lock import mark_writer, run_handler

GROUPS = {
    "ingest": "load input files into the raw layer",
    "generate": "write synthetic input files",
    "bench": "benchmarks that print a table of figures",
    "schema": "inspect dataset schema history",
    "registry": "inspect the schema registry",
    "lineage": "browse the job and dataset lineage graph",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m python_jobs",
        description="lineage-warehouse jobs: ingest, generate, benchmark and inspect, in one Spark session.",
    )
    top = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    groups: dict[str, argparse._SubParsersAction] = {"": top}
    for name, help_text in GROUPS.items():
        group_parser = top.add_parser(name, help=help_text)
        groups[name] = group_parser.add_subparsers(dest=f"{name}_command", required=True, metavar="KIND")
    for module_info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{module_info.name}")
        module.register(groups)
    # Every ingest writes the raw and audit layers, whichever module added it.
    for name, ingest_parser in groups["ingest"].choices.items():
        mark_writer(ingest_parser, f"ingest {name}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run_handler(args)
    except KeyboardInterrupt:
        return 130
    except UserFacingError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

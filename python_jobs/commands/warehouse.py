"""``warehouse fingerprint``: an order-independent digest of every table (``python_jobs.warehouse.fingerprint``).
``warehouse compact``: rewrites tables that appends have split into many files (``python_jobs.ops.compaction``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from python_jobs.ops.cli_lock import mark_writer
from python_jobs.ops.compaction import DEFAULT_MIN_FILES, compact_warehouse
from python_jobs.settings import load_settings
from python_jobs.spark import get_spark
from python_jobs.warehouse.fingerprint import warehouse_fingerprint


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    parser = groups[""].add_parser("warehouse", help="inspect the warehouse as a whole")
    sub = parser.add_subparsers(dest="warehouse_command", required=True, metavar="ACTION")
    fingerprint = sub.add_parser("fingerprint", help="row count and content digest of every table")
    fingerprint.add_argument("--out", type=Path, help="write JSON here instead of printing it")
    fingerprint.set_defaults(handler=run_fingerprint)
    compact = sub.add_parser(
        "compact", help="rewrite tables holding many small files into few (run while no ingest or build runs)"
    )
    compact.add_argument("--min-files", type=int, default=DEFAULT_MIN_FILES,
                         help=f"rewrite a table once it holds this many files (default {DEFAULT_MIN_FILES})")
    compact.add_argument("--dry-run", action="store_true", help="only list the tables that would be rewritten")
    compact.set_defaults(handler=run_compact)
    mark_writer(compact, "warehouse compact")


def run_fingerprint(args: argparse.Namespace) -> int:
    settings = load_settings()
    digest = warehouse_fingerprint(get_spark(settings), settings)
    text = json.dumps(digest, indent=2, sort_keys=True)
    if args.out:
        args.out.write_text(text)
    else:
        print(text)
    return 0


def run_compact(args: argparse.Namespace) -> int:
    settings = load_settings()
    results = compact_warehouse(get_spark(settings), settings, min_files=args.min_files, dry_run=args.dry_run)
    for result in results:
        after = "(dry run)" if args.dry_run else f"-> {result.files_after} in {result.seconds:.1f}s"
        print(f"{result.table}: {result.files_before} files {after}")
    verb = "would rewrite" if args.dry_run else "rewrote"
    print(f"{verb} {len(results)} tables with at least {args.min_files} files")
    return 0

"""``warehouse fingerprint``: an order-independent digest of every table (``python_jobs.warehouse.fingerprint``).
``warehouse compact``: rewrites tables that appends have split into many files (``python_jobs.ops.compaction``).
``warehouse erase``: removes a namespace, dataset or job from the stored input (``python_jobs.warehouse.erasure``),
then rebuilds the lineage models from it.
``warehouse retain``: forgets the lineage input older than a cut-off but what the current state needs
(``python_jobs.warehouse.retention``), then rebuilds the lineage models from it.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

import yaml

from python_jobs.dbt import run_dbt
from python_jobs.errors import UserFacingError
from python_jobs.ops.cli_lock import mark_writer
from python_jobs.ops.compaction import DEFAULT_MIN_FILES, compact_warehouse
from python_jobs.settings import PROJECT_DIR, Settings, load_settings
from python_jobs.spark import get_spark
from python_jobs.warehouse.erasure import erase, known_entities
from python_jobs.warehouse.erasure_plan import ErasureTarget, format_counts, split_qualified
from python_jobs.warehouse.fingerprint import warehouse_fingerprint
from python_jobs.warehouse.retention import REBUILD_SELECT, cut_off, derived_counts, parse_age, retain


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
    erase_parser = sub.add_parser(
        "erase", help="remove every trace of a namespace, dataset or job, then rebuild the lineage models")
    erase_parser.add_argument("--namespace", help="erase this namespace (with --dataset/--job: their namespace)")
    which = erase_parser.add_mutually_exclusive_group()
    which.add_argument("--dataset", metavar="NS/NAME", help="erase this dataset (NAME alone with --namespace)")
    which.add_argument("--job", metavar="NS/NAME", help="erase this job (NAME alone with --namespace)")
    erase_parser.add_argument("--dry-run", action="store_true", help="print what would be removed, change nothing")
    add_rebuild_options(erase_parser)
    erase_parser.set_defaults(handler=run_erase)
    mark_writer(erase_parser, "warehouse erase")
    retain_parser = sub.add_parser(
        "retain", help="forget lineage input older than a cut-off, keeping the current state; then rebuild")
    when = retain_parser.add_mutually_exclusive_group(required=True)
    when.add_argument("--older-than", metavar="AGE", help="cut-off this long before now: 90d, 12h, 30m")
    when.add_argument("--before", metavar="TIME", help="cut-off as an ISO time (UTC when it has no offset)")
    retain_parser.add_argument("--dry-run", action="store_true", help="print what would be removed, change nothing")
    add_rebuild_options(retain_parser)
    retain_parser.set_defaults(handler=run_retain)
    mark_writer(retain_parser, "warehouse retain")
    bench = groups["bench"].add_parser(
        "retention", help="time and bytes freed by `warehouse retain` on a large history, beside a full rebuild")
    bench.add_argument("--events", type=int, default=1_000_000, help="synthetic events (default 1000000)")
    bench.add_argument("--share", type=float, default=0.10,
                       help="share of the events before the cut-off (default 0.10)")
    bench.add_argument("--work-dir", type=Path, default=None, help="generated files (default LINEAGE_HOME/bench)")
    bench.add_argument("--report", type=Path, default=PROJECT_DIR / "BENCHMARKS.md",
                       help="the report whose retention section is replaced (default BENCHMARKS.md)")
    bench.add_argument("--no-report", action="store_true", help="print the figures only")
    bench.set_defaults(handler=run_bench_retention)


def add_rebuild_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-build", action="store_true",
                        help="skip the rebuild of the lineage models (they hold the removed rows until the next "
                             "`dbt build --full-refresh --select stg_lineage_events+`)")
    parser.add_argument("--vars", default=None, help="dbt vars (YAML) for the rebuild, as the warehouse is built")


def rebuild(settings: Settings, args: argparse.Namespace) -> None:
    """The lineage models again from the stored input: a full refresh, since the incremental models
    remember how far they read and would not see removed or rewritten rows."""
    if args.dry_run or args.no_build:
        return
    extra_vars = yaml.safe_load(args.vars) if args.vars else None
    print(f"rebuilding {REBUILD_SELECT} (full refresh)", flush=True)
    run_dbt(settings, ["build", "--full-refresh", "--select", REBUILD_SELECT], extra_vars=extra_vars)


def erasure_target(args: argparse.Namespace, known: object) -> ErasureTarget:
    """``known(kind)`` lists the stored (namespace, name) pairs of a kind, to split ``NS/NAME``."""
    kind = "dataset" if args.dataset is not None else "job" if args.job is not None else "namespace"
    if kind == "namespace":
        if not args.namespace:
            raise UserFacingError("warehouse erase needs --namespace NS, --dataset NS/NAME or --job NS/NAME")
        return ErasureTarget("namespace", args.namespace)
    value = args.dataset if kind == "dataset" else args.job
    if args.namespace is not None:
        return ErasureTarget(kind, args.namespace, value)
    try:
        namespace, name = split_qualified(value, known(kind))  # type: ignore[operator]
    except ValueError as error:
        raise UserFacingError(f"--{kind}: {error}") from error
    return ErasureTarget(kind, namespace, name)


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


def run_erase(args: argparse.Namespace) -> int:
    settings = load_settings()
    spark = get_spark(settings)
    target = erasure_target(args, lambda kind: known_entities(spark, settings, kind))
    report = erase(spark, settings, target, dry_run=args.dry_run)
    print(f"erase {target.kind} (key sha256 {target.key_hash[:16]}...)")
    print(format_counts(report.rows(), args.dry_run))
    for note in report.notes:
        print(f"note: {note}")
    rebuild(settings, args)
    return 0


def retention_cut_off(args: argparse.Namespace, now: datetime) -> datetime:
    try:
        if args.older_than:
            return cut_off(now, parse_age(args.older_than))
        moment = datetime.fromisoformat(args.before.replace("Z", "+00:00"))
    except ValueError as error:
        raise UserFacingError(f"warehouse retain: {error}") from error
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def run_retain(args: argparse.Namespace) -> int:
    settings = load_settings()
    spark = get_spark(settings)
    before = retention_cut_off(args, datetime.now(UTC))
    derived_before = derived_counts(spark, settings)
    report = retain(spark, settings, before, dry_run=args.dry_run)
    print(f"retain: events before {before.isoformat()}")
    print(format_counts(report.rows(), args.dry_run))
    rebuild(settings, args)
    if not args.dry_run and not args.no_build:
        after = derived_counts(spark, settings)
        rows = [(name, count, count - after.get(name, 0), after.get(name, 0), 0)
                for name, count in derived_before.items()]
        print("rebuilt (bytes not counted):")
        print(format_counts(rows, False))
    return 0


def run_bench_retention(args: argparse.Namespace) -> int:
    # A tool: imported when the benchmark runs, so the product's command modules do not load it otherwise.
    from python_jobs.tools.bench.retention import bench_retention, figures, replace_section, section

    if args.events < 2 or not 0 < args.share < 1:
        raise UserFacingError("--events must be at least 2 and --share between 0 and 1")
    settings = load_settings()
    spark = get_spark(settings)
    result = bench_retention(spark, settings, args.events, args.share, args.work_dir or settings.lineage_home / "bench")
    print(figures(result).table())
    if not args.no_report:
        command = f"python -m python_jobs bench retention --events {args.events} --share {args.share:g}"
        text = replace_section(args.report.read_text(encoding="utf-8"),
                               section(result, command, datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")))
        args.report.write_text(text, encoding="utf-8")
        print(f"section written to {args.report}")
    return 0

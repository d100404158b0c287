"""``lineage show`` (the job/dataset graph as text, or a page with ``--html``) and ``bench api``."""

from __future__ import annotations

import argparse
from pathlib import Path

from python_jobs.errors import UserFacingError
from python_jobs.lineage_page.render import render_lineage_page
from python_jobs.settings import load_settings
from python_jobs.spark import get_spark


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    show = groups["lineage"].add_parser("show", help="print the job and dataset graph around a dataset")
    show.add_argument("namespace")
    show.add_argument("dataset")
    show.add_argument("--depth", type=int, default=20, help="job steps to follow (default 20, as Marquez)")
    direction = show.add_mutually_exclusive_group()
    direction.add_argument("--upstream", action="store_const", const="upstream", dest="direction")
    direction.add_argument("--downstream", action="store_const", const="downstream", dest="direction")
    show.add_argument("--html", type=Path, default=None, help="also write a self-contained page to this file")
    show.set_defaults(handler=run_show, direction="both")

    bench = groups["bench"].add_parser("api", help="p50/p95 of the Marquez read API over HTTP on synthetic events")
    bench.add_argument("--events", type=int, default=1_000_000, help="synthetic events (default 1000000)")
    bench.add_argument("--requests", type=int, default=200, help="timed requests per endpoint (default 200)")
    bench.add_argument("--work-dir", type=Path, default=None, help="generated files (default LINEAGE_HOME/bench)")
    bench.add_argument("--rebuild", action="store_true", help="rebuild the bench warehouse even if it exists")
    bench.set_defaults(handler=run_bench)


def run_show(args: argparse.Namespace) -> int:
    # Heavy (the read API loads pyarrow.compute, self-lineage OpenLineage): imported when the command runs,
    # not on every CLI start.
    from python_jobs.marquez_api.api import MarquezReadApi, lineage_page_inputs
    from python_jobs.marquez_api.graph import dataset_node_id, render_text

    settings = load_settings()
    api = MarquezReadApi(get_spark(settings), settings)
    start = dataset_node_id(args.namespace, args.dataset)
    if start not in api.graph.nodes:
        raise UserFacingError(f"no dataset '{args.dataset}' in namespace '{args.namespace}'")
    print(render_text(api.graph, start, args.depth, args.direction), end="")
    if args.html is not None:
        graph, details = lineage_page_inputs(api, start, args.depth, args.direction)
        args.html.write_text(render_lineage_page(graph, details, f"Lineage of {args.namespace}:{args.dataset}"))
        print(f"wrote {args.html}")
    return 0


def run_bench(args: argparse.Namespace) -> int:
    # The benchmark needs the dev extras (httpx): imported when it runs, so the CLI starts without them.
    from python_jobs.tools.bench.read_api import run_api_bench

    settings = load_settings()
    spark = get_spark(settings)
    work_dir = args.work_dir or settings.lineage_home / "bench"
    run_api_bench(spark, settings, args.events, args.requests, work_dir, rebuild=args.rebuild)
    return 0

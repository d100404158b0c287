"""``serve``: the OpenLineage HTTP collector (optionally keeping the warehouse current, with the SQL endpoint),
``bench collector`` and ``bench sql``."""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Callable
from pathlib import Path

import uvicorn

from python_jobs.errors import UserFacingError
from python_jobs.landing import LandingLayout, default_landing_root
from python_jobs.metastore import advertise_landing
from python_jobs.serve.app import LINEAGE_PATH, CollectorConfig, create_app
from python_jobs.serve.build_loop import BuildLoop, RoundReport, locked_round
from python_jobs.serve.http_limits import HttpLimits
from python_jobs.serve.sql_endpoint import (
    DEFAULT_SQL_HOST,
    DEFAULT_SQL_PORT,
    SqlEndpoint,
    exposure_warning,
    prepare_spark_conf,
)
from python_jobs.settings import load_settings
from python_jobs.spark import get_spark, target_metastore, target_spark_conf
from python_jobs.warehouse.retention import RETENTION_DAYS_ENV, RetentionSchedule, configured_retention_days

DEFAULT_PORT = 5000


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``5m``, ``1h`` → seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 30s, 5m, 1h)")
    value, unit = float(match.group(1)), match.group(2) or "s"
    return value * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]


def parse_size(text: str) -> int:
    """``16MiB``, ``64MB``, ``1000`` → bytes."""
    match = re.fullmatch(r"\s*(\d+)\s*(B|KB|KiB|MB|MiB|GB|GiB)?\s*", text, re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 16MiB)")
    units = {"b": 1, "kb": 1000, "kib": 1024, "mb": 10**6, "mib": 2**20, "gb": 10**9, "gib": 2**30}
    return int(match.group(1)) * units[(match.group(2) or "b").lower()]


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    serve = groups[""].add_parser(
        "serve",
        help="the OpenLineage HTTP collector: POST /api/v1/lineage lands events durably for ingest",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}, Marquez's)")
    serve.add_argument(
        "--landing", type=Path, default=None,
        help="landing folder (default LINEAGE_LANDING_DIR or LINEAGE_HOME/landing/lineage)",
    )
    serve.add_argument(
        "--build-every", type=parse_duration, default=None, metavar="DURATION",
        help="also ingest the sealed landing files and run the incremental dbt build every DURATION "
        "(e.g. 5m), in this process and Spark session; without it Spark is never started",
    )
    serve.add_argument("--build-args", default="build",
                       help="the dbt command of each round (default: build; e.g. 'build --select tag:x')")
    serve.add_argument("--max-body", type=parse_size, default="16MiB",
                       help="largest accepted event, also after gzip decompression (default 16MiB)")
    serve.add_argument("--body-timeout", type=parse_duration, default="30s", metavar="DURATION",
                       help="answer 408 to a client that sends no bytes of its body for DURATION (default 30s)")
    serve.add_argument(
        "--max-header-size", type=parse_size, default="64KiB", metavar="SIZE",
        help="largest request line plus headers; a request over it is answered 431 and its connection "
        "closed (default 64KiB)",
    )
    serve.add_argument(
        "--header-timeout", type=parse_duration, default="10s", metavar="DURATION",
        help="a request must complete its headers within DURATION of the connection opening or of the "
        "previous answer on a kept-alive connection, however it trickles them; else 408 and the "
        "connection is closed (an idle connection is just closed) (default 10s)",
    )
    serve.add_argument(
        "--keep-alive-timeout", type=parse_duration, default="5s", metavar="DURATION",
        help="close a kept-alive connection idle for DURATION (default 5s; at most --header-timeout)",
    )
    serve.add_argument(
        "--max-connections", type=int, default=1000, metavar="N",
        help="open connections at most; one more is answered 503 and closed at once, unread (default 1000)",
    )
    serve.add_argument("--rotate-size", type=parse_size, default="64MiB",
                       help="seal the open landing file at this size (default 64MiB)")
    serve.add_argument("--rotate-age", type=parse_duration, default="60s",
                       help="seal the open landing file at this age (default 60s)")
    serve.add_argument("--no-fsync", action="store_true",
                       help="answer 201 after write() without fsync (NOT durable; benchmarks only)")
    serve.add_argument(
        "--read-api", action=argparse.BooleanOptionalAction, default=None,
        help="also answer Marquez's read endpoints (/api/v1/namespaces, /lineage, /search, ...) and the "
        "lineage page at / from the warehouse; starts Spark (default: on with --build-every, else off)",
    )
    serve.add_argument(
        "--web-ui", type=Path, default=None, metavar="DIR",
        help="also serve Marquez's web UI, built (its dist/ folder), at / beside the read API, which it "
        "turns on; the lineage page moves to /lineage-page (default: LINEAGE_WEB_UI, else off)",
    )
    serve.add_argument(
        "--sql-endpoint", action=argparse.BooleanOptionalAction, default=None,
        help="also answer SQL over JDBC/ODBC (Spark's Thrift server, the HiveServer2 protocol: beeline, BI tools, "
        "PyHive, dbt-spark's thrift method) in this process's Spark session; clients read, writes are refused "
        "(default: on with the read API, or with --sql-port)",
    )
    serve.add_argument("--sql-port", type=int, default=None, metavar="PORT",
                       help=f"port of the SQL endpoint (default {DEFAULT_SQL_PORT}, HiveServer2's)")
    serve.add_argument(
        "--sql-host", default=DEFAULT_SQL_HOST, metavar="ADDRESS",
        help=f"address the SQL endpoint binds (default {DEFAULT_SQL_HOST}; it has no authentication: see README)",
    )
    serve.add_argument(
        "--lock-wait", type=parse_duration, default="0s", metavar="DURATION",
        help="how long a build round waits for the warehouse writer lock held by another writer; "
        "a round that does not get it is reported and retried on the next tick (default 0s)",
    )
    serve.add_argument(
        "--retention-days", type=int, default=None, metavar="DAYS",
        help="with --build-every, once a day forget lineage input older than DAYS but the current state "
        f"(warehouse retain; default {RETENTION_DAYS_ENV}, else keep everything)",
    )
    serve.set_defaults(handler=run_serve)

    bench = groups["bench"].add_parser(
        "collector", help="collector throughput and latency (1/8/32 clients, fsync on and off) and freshness"
    )
    bench.add_argument("--clients", default="1,8,32", help="comma-separated client counts (default 1,8,32)")
    bench.add_argument("--seconds", type=float, default=5.0, help="load per measurement (default 5)")
    bench.add_argument("--work-dir", type=Path, default=None, help="default: LINEAGE_HOME/bench/collector")
    bench.add_argument("--skip-freshness", action="store_true", help="skip the --build-every freshness part")
    bench.add_argument("--freshness-every", type=parse_duration, default="5s",
                       help="--build-every of the freshness part (default 5s)")
    bench.add_argument("--freshness-events", type=int, default=3, help="events timed for freshness (default 3)")
    bench.add_argument("--live-events", type=int, default=50,
                       help="events timed from 201 to readable in the read API (default 50; 0: skipped)")
    bench.set_defaults(handler=run_bench_collector)

    bench_sql = groups["bench"].add_parser(
        "sql",
        help="queries/s and p50/p95 through the SQL endpoint (PyHive) beside the same queries in-process, "
        "idle and during a build round",
        description="Starts the SQL endpoint in this process's Spark session (on a free loopback port), builds or "
        "reuses a warehouse of synthetic events on the schema prefix bench_sql_N_, then times a point lookup on "
        "lineage.runs, an aggregate over lineage.dataset_versions and a join of schema versions with their fields, "
        "through the endpoint and in-process: idle, with several clients at once, and while a build round "
        "(ingest a new batch, incremental dbt build) runs in the same session.",
    )
    bench_sql.add_argument("--events", type=int, default=1_000_000, help="synthetic events (default 1000000)")
    bench_sql.add_argument("--queries", type=int, default=100,
                           help="timed queries of each kind, path and condition (default 100)")
    bench_sql.add_argument("--warmup", type=int, default=10, help="untimed queries of each kind first (default 10)")
    bench_sql.add_argument("--clients", type=int, default=2,
                           help="clients at once for the queries/s figure (default 2; below 2: skipped)")
    bench_sql.add_argument("--round-events", type=int, default=10_000,
                           help="synthetic events the build round ingests and builds (default 10000)")
    bench_sql.add_argument("--work-dir", type=Path, default=None, help="generated files (default LINEAGE_HOME/bench)")
    bench_sql.add_argument("--rebuild", action="store_true", help="rebuild the bench warehouse even if it exists")
    bench_sql.set_defaults(handler=run_bench_sql)


def run_serve(args: argparse.Namespace) -> int:
    settings = load_settings()
    layout = LandingLayout((args.landing or default_landing_root(settings.lineage_home)).resolve()).ensure()
    config = CollectorConfig(
        landing=layout,
        max_body_bytes=args.max_body,
        body_timeout_seconds=args.body_timeout,
        fsync=not args.no_fsync,
        rotate_bytes=args.rotate_size,
        rotate_seconds=args.rotate_age,
        api_key=CollectorConfig.api_key_from_env(),
        read_api_key=CollectorConfig.read_api_key_from_env(),
    )
    if config.read_api_key and not config.api_key:
        raise UserFacingError("LINEAGE_READ_API_KEY is set without LINEAGE_API_KEY: set the key that posting "
                              "events needs too (reads take either)")
    if args.body_timeout <= 0:
        raise UserFacingError("--body-timeout must be positive")
    try:
        limits = HttpLimits(
            max_header_bytes=args.max_header_size,
            header_timeout_seconds=args.header_timeout,
            keep_alive_timeout_seconds=args.keep_alive_timeout,
            max_connections=args.max_connections,
        )
    except ValueError as error:
        raise UserFacingError(
            f"--max-header-size, --header-timeout, --keep-alive-timeout, --max-connections: {error}"
        ) from None
    if args.build_every is not None and args.build_every <= 0:
        raise UserFacingError("--build-every must be positive")
    web_ui = _web_ui_folder(args.web_ui)
    if web_ui is not None and args.read_api is False:
        raise UserFacingError("--web-ui needs the read API: drop --no-read-api")
    read_api = args.read_api if args.read_api is not None else args.build_every is not None or web_ui is not None
    sql = args.sql_endpoint if args.sql_endpoint is not None else read_api or args.sql_port is not None
    sql_port = args.sql_port if args.sql_port is not None else DEFAULT_SQL_PORT
    spark = None
    if read_api or sql or args.build_every is not None:
        extra_conf = prepare_spark_conf(settings, target_spark_conf(settings), args.sql_host, sql_port) if sql else {}
        spark = get_spark(settings, extra_conf=extra_conf)
    # Before anything else runs in the session: starting the endpoint registers it as the guard's writer.
    endpoint = SqlEndpoint.start(spark, args.sql_host, sql_port) if spark is not None and sql else None
    extra_routes = []
    api = None
    if read_api:
        # Heavy (pyarrow.compute): imported only when the read API is served, not on every CLI start.
        from python_jobs.marquez_api.api import MarquezReadApi
        from python_jobs.marquez_api.legacy_routes import legacy_write_routes
        from python_jobs.marquez_api.routes import read_routes
        from python_jobs.marquez_api.web_ui import PAGE_PATH_BESIDE_UI, web_ui_routes

        api = MarquezReadApi(spark, settings)
        extra_routes = read_routes(api, PAGE_PATH_BESIDE_UI if web_ui is not None else "/") + legacy_write_routes(api)
        if web_ui is not None:
            extra_routes += web_ui_routes(web_ui)
    build_loop = None
    if args.build_every is not None:
        # On embedded Derby, `ingest lineage` run meanwhile hands its files to this landing folder (see metastore.py).
        advertise_landing(target_metastore(settings), layout.root)
        dbt_command = tuple(shlex.split(args.build_args))
        # The live overlay's round mark comes before the collector seals its open file (create_app
        # adds that hook after these); a round that succeeded takes its events out of the overlay.
        before_round: list[Callable[[], None]] = [api.live.begin_round] if api is not None else []
        after_round: list[Callable[[RoundReport], object]] = (
            [lambda report: api.refresh_after_round(report.ok, log=lambda line: print(line, flush=True))]
            if api is not None else [])
        if endpoint is not None:
            after_round.append(lambda report: endpoint.refresh_readers())
        days = configured_retention_days(args.retention_days)
        retention = RetentionSchedule(days) if days else None
        build_loop = BuildLoop(
            lambda retry_build: locked_round(
                spark, settings, layout, retry_build=retry_build, dbt_command=dbt_command, lock_wait=args.lock_wait,
                retention=retention,
            ),
            args.build_every,
            after_round=after_round,
            before_round=before_round,
        )
    # The endpoint stops after the build loop's last round (the app's shutdown waits for it).
    on_shutdown = [endpoint.stop] if endpoint is not None else []
    app = create_app(config, extra_routes=extra_routes, build_loop=build_loop, on_shutdown=on_shutdown,
                     on_accepted=api.live.accept if api is not None else None)
    auth = ("API key required" + (", read key accepted for reads" if config.read_api_key else "")
            if config.keys.required else "no API key")
    fsync = "fsync on" if config.fsync else "FSYNC OFF (not durable)"
    build = f"build every {args.build_every:g}s" if build_loop else "no build loop"
    reads = "read API and lineage page at /" if api is not None else "no read API"
    if web_ui is not None:
        reads = f"read API, Marquez's web UI at / (from {web_ui}), lineage page at /lineage-page"
    print(
        f"collector: http://{args.host}:{args.port}{LINEAGE_PATH}  landing {layout.root}  "
        f"({auth}, {fsync}, {build}, {reads})",
        flush=True,
    )
    if endpoint is not None:
        print(endpoint.describe(), flush=True)
        warning = exposure_warning(args.sql_host)
        if warning:
            print(warning, flush=True)
    uvicorn.run(
        app, host=args.host, port=args.port, loop="uvloop", **limits.uvicorn_options(),
        log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=30,
    )
    return 0


def _web_ui_folder(option: Path | None) -> Path | None:
    # The marquez_api package imports the read API (pyarrow.compute): only when serve runs.
    from python_jobs.marquez_api.web_ui import WEB_UI_ENV, check_web_ui, web_ui_dir

    folder = web_ui_dir(option)
    if folder is None:
        return None
    try:
        return check_web_ui(folder)
    except ValueError as error:
        raise UserFacingError(f"--web-ui / {WEB_UI_ENV}: {error}") from None


def run_bench_collector(args: argparse.Namespace) -> int:
    # The benchmark needs the dev extras (httpx): imported when it runs, so the CLI starts without them.
    from python_jobs.tools.bench.collector import run_collector_bench

    settings = load_settings()
    clients = [int(n) for n in args.clients.split(",") if n.strip()]
    work_dir = args.work_dir or settings.lineage_home / "bench" / "collector"
    run_collector_bench(
        settings, clients, args.seconds, work_dir,
        freshness=not args.skip_freshness, freshness_every=args.freshness_every,
        freshness_events=args.freshness_events, live_events=args.live_events,
    )
    return 0


def run_bench_sql(args: argparse.Namespace) -> int:
    # The benchmark needs the dev extras (PyHive): imported when it runs, so the CLI starts without them.
    from python_jobs.tools.bench.sql import SqlBenchConfig, run_sql_bench, session_with_endpoint

    if args.queries < 1 or args.warmup < 0 or args.round_events < 2:
        raise UserFacingError("--queries must be at least 1, --warmup at least 0, --round-events at least 2")
    settings = load_settings()
    config = SqlBenchConfig(queries=args.queries, warmup=args.warmup, clients=args.clients,
                            round_events=args.round_events)
    spark, endpoint = session_with_endpoint(settings)
    try:
        run_sql_bench(spark, endpoint, settings, args.events, config, args.work_dir or settings.lineage_home / "bench",
                      rebuild=args.rebuild)
    finally:
        endpoint.stop()
    return 0

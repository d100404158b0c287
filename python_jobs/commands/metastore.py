"""``metastore show``: which metastore the target uses and who holds it; ``metastore postgres start|stop|url``: a
local PostgreSQL server to share the metastore between processes (``LINEAGE_METASTORE_URL``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from python_jobs.metastore import holder_elsewhere
from python_jobs.ops.postgres import DEFAULT_DATABASE, load_server, start_postgres
from python_jobs.settings import load_settings
from python_jobs.spark import target_metastore


def register(groups: dict[str, argparse._SubParsersAction]) -> None:
    parser = groups[""].add_parser("metastore", help="the Hive metastore: which one, who holds it, a local PostgreSQL")
    actions = parser.add_subparsers(dest="metastore_command", required=True, metavar="ACTION")
    show = actions.add_parser("show", help="the target's metastore, and the process holding an embedded one")
    show.set_defaults(handler=run_show)

    postgres = actions.add_parser(
        "postgres", help="a local PostgreSQL server for LINEAGE_METASTORE_URL (as its own OS user when run as root)"
    )
    server_actions = postgres.add_subparsers(dest="postgres_command", required=True, metavar="ACTION")
    start = server_actions.add_parser(
        "start", help="start it (initialised on first use) and print the export line of LINEAGE_METASTORE_URL"
    )
    start.add_argument("--database", default=DEFAULT_DATABASE, help=f"database to create (default {DEFAULT_DATABASE})")
    start.add_argument("--port", type=int, default=None, help="port on 127.0.0.1 (default: a free one)")
    start.add_argument("--no-fsync", action="store_true",
                       help="initialise it with fsync off: faster, NOT crash-safe (tests)")
    stop = server_actions.add_parser("stop", help="stop it (its files stay; start runs it again)")
    url = server_actions.add_parser("url", help="print its JDBC URL, for LINEAGE_METASTORE_URL")
    url.add_argument("--database", default=None, help="another database of the server")
    for action in (start, stop, url):
        action.add_argument(
            "--dir", type=Path, default=None, help="the server's folder (default: $LINEAGE_HOME/metastore-postgres)"
        )
    start.set_defaults(handler=run_start)
    stop.set_defaults(handler=run_stop)
    url.set_defaults(handler=run_url)


def _folder(args: argparse.Namespace) -> Path:
    return (args.dir or load_settings().lineage_home / "metastore-postgres").resolve()


def run_show(args: argparse.Namespace) -> int:
    metastore = target_metastore(load_settings())
    folder = metastore.embedded_dir
    if folder is None:
        print(f"metastore: {metastore.display} (a server: any number of processes)")
        return 0
    holder = holder_elsewhere(metastore)
    state = f"open in {holder.describe()}" if holder else "not open in any process"
    print(f"metastore: embedded Derby {folder} (one process at a time): {state}")
    return 0


def run_start(args: argparse.Namespace) -> int:
    folder = _folder(args)
    server = start_postgres(folder, database=args.database, port=args.port, durable=not args.no_fsync)
    print(f"PostgreSQL on 127.0.0.1:{server.port} as OS user {server.os_user}, files in {folder}; "
          f"stop it with `python -m python_jobs metastore postgres stop --dir {folder}`")
    print(f"export LINEAGE_METASTORE_URL='{server.jdbc_url(args.database)}'")
    return 0


def run_stop(args: argparse.Namespace) -> int:
    server = load_server(_folder(args))
    server.stop()
    print(f"stopped the PostgreSQL server in {server.folder}")
    return 0


def run_url(args: argparse.Namespace) -> int:
    print(load_server(_folder(args)).jdbc_url(args.database))
    return 0

"""How the CLI takes the writer lock: writer sub-commands are marked at registration, and ``run_handler``
holds the lock around a marked command's handler, before Spark starts (a busy lock costs no JVM start).

Before the lock, a writer checks that the embedded metastore is not open in another process: it fails at once
naming that process, or with ``--wait`` (``LINEAGE_LOCK_WAIT``) waits for it to exit, within the same time. A
writer command may offer a hand-off for that case (``set_defaults(hand_off=...)``): ``ingest lineage`` gives its
files to the landing folder of the ``serve --build-every`` holding it.

Plain ``dbt build`` takes it through the adapter: ``hold_for_dbt`` is registered (pyproject.toml) under the
adapter's entry-point group ``dbt_spark_python.before_write``, which the adapter calls before the first
connection of a writing dbt command."""

from __future__ import annotations

import argparse
import os
import threading
from collections.abc import Callable, Sequence

from python_jobs.metastore import Holder, MetastoreBusy, check_free, wait_until_free
from python_jobs.ops.lock import hold_until_exit, writer_lock
from python_jobs.settings import load_settings
from python_jobs.spark import target_metastore

# A writer's way to finish without the warehouse when another process holds its embedded metastore: an exit
# code, or None to fail with the one-line MetastoreBusy error.
HandOff = Callable[[argparse.Namespace, Holder], "int | None"]

# dbt sub-commands that write the warehouse; docs, compile, ls, show, parse, debug and test only read it.
DBT_WRITING_COMMANDS = frozenset({"build", "run", "seed", "snapshot", "run-operation", "clone", "retry"})


def add_wait_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait", type=float, default=None, metavar="SECONDS",
        help="when another writer holds the warehouse writer lock, wait up to SECONDS for it (default: fail at once)",
    )


def mark_writer(parser: argparse.ArgumentParser, command: str) -> None:
    """Makes ``run_handler`` hold the writer lock around this sub-command; adds ``--wait SECONDS``."""
    add_wait_option(parser)
    parser.set_defaults(writer_command=command)


def dbt_writer_command(dbt_args: Sequence[str]) -> str | None:
    """``dbt build`` for a writing dbt invocation, ``None`` for a reading one."""
    verb = next((arg for arg in dbt_args if not arg.startswith("-")), None)
    return f"dbt {verb}" if verb in DBT_WRITING_COMMANDS else None


def split_wait_option(dbt_args: Sequence[str], wait: float | None) -> tuple[list[str], float | None]:
    """``dbt build --wait 60`` works like ``dbt --wait 60 build``: dbt has no ``--wait`` of its own."""
    rest: list[str] = []
    items = iter(dbt_args)
    for arg in items:
        if arg == "--wait":
            wait = float(next(items, "0"))
        elif arg.startswith("--wait="):
            wait = float(arg.split("=", 1)[1])
        else:
            rest.append(arg)
    return rest, wait


def run_handler(args: argparse.Namespace) -> int:
    command = getattr(args, "writer_command", None)
    if not command:
        return int(args.handler(args) or 0)
    settings = load_settings()
    wait: float | None = getattr(args, "wait", None)
    metastore = target_metastore(settings)
    try:
        check_free(metastore)
    except MetastoreBusy as busy:
        hand_off: HandOff | None = getattr(args, "hand_off", None)
        handed = hand_off(args, busy.holder) if hand_off is not None and busy.holder is not None else None
        if handed is not None:
            return handed
        if wait is None:
            raise
        wait = max(0.0, wait - wait_until_free(metastore, wait))
    with writer_lock(settings, command, wait):
        return int(args.handler(args) or 0)


# dbt opens its threads' connections at once, each running the hook: the first takes the lock, the others
# must then find it held by this process (re-entrant) rather than race it.
_hook_guard = threading.Lock()


def hold_for_dbt(dbt_command: str) -> None:
    """The adapter's ``before_write`` hook: takes the writer lock for the rest of the process (a no-op when
    ``python -m python_jobs`` holds it already). ``LINEAGE_LOCK_WAIT`` (seconds) makes plain dbt wait for it
    like ``--wait``; a busy lock fails the run before any model."""
    with _hook_guard:
        configured = os.environ.get("LINEAGE_LOCK_WAIT", "").strip()
        wait = float(configured) if configured else None
        settings = load_settings()
        metastore = target_metastore(settings)
        if wait is None:
            check_free(metastore)
        else:
            wait = max(0.0, wait - wait_until_free(metastore, wait))
        hold_until_exit(settings, f"dbt {dbt_command}", wait)

"""The warehouse writer lock: a second writer fails fast naming the holder, or waits; a dead holder's lock
is taken over with a message; the cluster lock keeps a heartbeat. Holders are small Python processes
(no Spark), and the CLI and plain ``dbt build`` are checked against them as real subprocesses."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from python_jobs.ops.cli_lock import dbt_writer_command, split_wait_option
from python_jobs.ops.lock import (
    LocalFileLock,
    LockHolder,
    SharedFileLock,
    WriterLockBusy,
    acquire,
    release,
    writer_lock,
)
from python_jobs.settings import PROJECT_DIR, Settings

HOLDER_SCRIPT = """
import sys, time
from python_jobs.ops.lock import writer_lock
from python_jobs.settings import load_settings
with writer_lock(load_settings(), sys.argv[1]):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, LINEAGE_HOME=str(home), LINEAGE_TARGET="local")
    env.pop("LINEAGE_SHARED_WAREHOUSE", None)
    env.update(extra)
    return env


def _start_holder(env: dict[str, str], command: str, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER_SCRIPT, command, str(seconds)],
        cwd=PROJECT_DIR, env=env, stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def _local(home: Path) -> Settings:
    return Settings(PROJECT_DIR, home, "local", "")


def test_second_writer_fails_fast_naming_the_holder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    holder = _start_holder(_env(home), "ingest lineage", 120)
    try:
        with pytest.raises(WriterLockBusy) as busy, writer_lock(_local(home), "warehouse compact"):
            pass
        message = str(busy.value)
        assert f"`ingest lineage` (host {socket.gethostname()}, pid {holder.pid}) since 20" in message
        assert "--wait SECONDS" in message

        # The CLI refuses before it starts Spark, so it answers within seconds.
        started = time.monotonic()
        cli = subprocess.run(
            [sys.executable, "-m", "python_jobs", "warehouse", "compact"],
            cwd=PROJECT_DIR, env=_env(home), capture_output=True, text=True, timeout=60,
        )
        assert cli.returncode == 2, cli.stderr
        assert f"held by `ingest lineage` (host {socket.gethostname()}, pid {holder.pid})" in cli.stderr
        assert time.monotonic() - started < 30

        # Plain dbt through the adapter: the first connection of a writing command takes the lock.
        dbt = subprocess.run(
            [str(Path(sys.executable).with_name("dbt")), "build", "--project-dir", str(PROJECT_DIR),
             "--profiles-dir", str(PROJECT_DIR), "--target-path", str(tmp_path / "target"),
             "--log-path", str(tmp_path / "logs")],
            cwd=PROJECT_DIR, env=_env(home), capture_output=True, text=True, timeout=300,
        )
        assert dbt.returncode != 0
        assert f"held by `ingest lineage` (host {socket.gethostname()}, pid {holder.pid})" in dbt.stdout + dbt.stderr
    finally:
        holder.kill()
        holder.wait()


def test_waiting_writer_proceeds_when_the_holder_finishes(tmp_path: Path, capfd) -> None:
    home = tmp_path / "home"
    holder = _start_holder(_env(home), "dbt build", 2)
    started = time.monotonic()
    with writer_lock(_local(home), "ingest lineage", wait_seconds=60) as me:
        waited = time.monotonic() - started
        record = json.loads((home / "writer.lock").read_text())
        assert record["command"] == "ingest lineage" and record["pid"] == os.getpid() == me.pid
    holder.wait()
    assert 0.5 < waited < 60
    assert "waiting up to 60s for `dbt build`" in capfd.readouterr().err
    assert (home / "writer.lock").read_text() == ""  # a clean release leaves no record behind


def test_lock_left_by_a_killed_process_is_taken_over_with_a_message(tmp_path: Path, capfd) -> None:
    home = tmp_path / "home"
    holder = _start_holder(_env(home), "dbt build", 120)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with writer_lock(_local(home), "ingest lineage"):
        pass
    err = capfd.readouterr().err
    assert f"took over the lock left by `dbt build` (host {socket.gethostname()}, pid {holder.pid})" in err
    assert "that process is gone" in err


def test_lock_is_reentrant_within_a_process(tmp_path: Path) -> None:
    settings = _local(tmp_path)
    with writer_lock(settings, "main"), writer_lock(settings, "dbt build") as inner:
        assert inner.command == "main"  # the outer holder's record stays
        assert json.loads((tmp_path / "writer.lock").read_text())["command"] == "main"
    assert (tmp_path / "writer.lock").read_text() == ""


def test_dbt_commands_that_need_the_lock() -> None:
    assert dbt_writer_command(["build", "--select", "x"]) == "dbt build"
    assert dbt_writer_command(["--quiet", "run"]) == "dbt run"
    for reader in (["docs", "generate"], ["compile"], ["ls"], ["show"], ["test"], []):
        assert dbt_writer_command(reader) is None
    assert split_wait_option(["build", "--wait", "60", "-s", "x"], None) == (["build", "-s", "x"], 60.0)
    assert split_wait_option(["build", "--wait=5"], None) == (["build"], 5.0)
    assert split_wait_option(["run"], 3.0) == (["run"], 3.0)


def test_cluster_lock_heartbeat_and_stale_takeover(tmp_path: Path, capfd) -> None:
    shared = tmp_path / "shared-warehouse"
    env = _env(tmp_path / "home", LINEAGE_TARGET="cluster", LINEAGE_SHARED_WAREHOUSE=str(shared),
               LINEAGE_LOCK_HEARTBEAT_SECONDS="0.2", LINEAGE_LOCK_STALE_SECONDS="1.5")
    holder = _start_holder(env, "dbt build", 120)
    lock_file = shared / "_writer.lock"
    try:
        first = LockHolder.from_json(lock_file.read_text())
        time.sleep(2.0)  # longer than the stale timeout: only the heartbeat keeps it alive
        beaten = LockHolder.from_json(lock_file.read_text())
        assert first is not None and beaten is not None
        assert beaten.token == first.token and beaten.heartbeat_at > first.heartbeat_at

        contender = SharedFileLock(shared, heartbeat_seconds=0.2, stale_after_seconds=1.5)
        with pytest.raises(WriterLockBusy, match=rf"`dbt build` \(host .*, pid {holder.pid}\) since"):
            acquire(contender, "ingest lineage")
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()

    time.sleep(2.0)
    contender = SharedFileLock(shared, heartbeat_seconds=0.2, stale_after_seconds=1.5)
    me = acquire(contender, "ingest lineage")
    try:
        err = capfd.readouterr().err
        assert f"took over the lock left by `dbt build` (host {socket.gethostname()}, pid {holder.pid})" in err
        assert "no heartbeat since" in err
        assert LockHolder.from_json(lock_file.read_text()).token == me.token  # type: ignore[union-attr]
        assert [p.name for p in shared.iterdir()] == ["_writer.lock"]  # the stale record is gone
        # A holder whose file was taken over notices at its next heartbeat.
        lock_file.write_text(LockHolder.for_this_process("someone else").to_json())
        assert contender.heartbeat() is False and contender.lost
    finally:
        release(contender)


def test_local_lock_record_names_the_holder(tmp_path: Path) -> None:
    lock = LocalFileLock(tmp_path / "writer.lock")
    me = LockHolder.for_this_process("warehouse compact")
    assert acquire(lock, me.command) is not None
    try:
        other = LocalFileLock(tmp_path / "writer.lock")
        seen = other.try_acquire(LockHolder.for_this_process("x"))
        assert isinstance(seen, LockHolder) and seen.command == "warehouse compact" and seen.pid == os.getpid()
    finally:
        release(lock)


def test_unfinished_writes_are_removed_when_the_lock_is_taken_not_when_reentered(tmp_path: Path, capfd) -> None:
    settings = _local(tmp_path)
    warehouse = tmp_path / "warehouse"
    table = warehouse / "staging.db" / "revisions"
    kept = [table / "part-00000.parquet", warehouse / "raw.db" / "lineage_events" / "_compacted-ingest_block=3" / "x"]
    left = [table / "_temporary" / "0" / "task_1_m_000000" / "part-1.parquet",
            warehouse / "raw.db" / "lineage_events" / "ingest_block=4" / "_temporary" / "0" / "p.parquet",
            warehouse / "changelog.db" / "accounts" / ".spark-staging-42" / "p.parquet"]
    for path in kept + left:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")

    with writer_lock(settings, "dbt build"):
        assert "removed 3 unfinished write folder(s)" in capfd.readouterr().err
        # A write of this process's own, in progress: the re-entrant acquisition must leave it alone.
        (table / "_temporary").mkdir()
        with writer_lock(settings, "ingest lineage"):
            assert (table / "_temporary").is_dir()
    assert all(path.exists() for path in kept)
    assert not any(path.exists() for path in left)

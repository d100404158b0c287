"""One writer at a time: the warehouse writer lock.

Ingest, dbt builds (through ``python -m python_jobs`` or plain ``dbt build`` through the adapter),
``warehouse compact`` and the serve loop write the warehouse; readers never take this lock.

Two implementations, chosen by the target:

- embedded (the default): ``fcntl.flock`` on ``<LINEAGE_HOME>/writer.lock``. The OS drops the lock when
  its process dies, so a crashed writer never blocks the next one. The file holds a JSON record of the
  holder (command, host, pid, since), so a second writer can say who holds it; a clean release empties the
  file, so a record found by the process that gets the lock was left by a process that died.
- cluster (``LINEAGE_TARGET`` other than ``local`` with ``LINEAGE_SHARED_WAREHOUSE`` set): a lock file
  ``_writer.lock`` created with create-if-absent in the shared warehouse, whose record a heartbeat thread
  refreshes. A record whose heartbeat is older than the stale timeout belongs to a holder that died (or lost
  the shared folder): the next writer renames it to a unique name (only one contender's rename can succeed)
  and creates the lock afresh, and says so.

The lock is re-entrant per process: ``python -m python_jobs dbt build`` holds it, and the adapter inside
the same process finds it held and does not take it again.

A fresh acquisition first removes the unfinished writes a killed writer left; the last release first removes
the retired folders whose grace is over, when the process has a Spark session (``ops/leftovers.py``).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from python_jobs.errors import UserFacingError
from python_jobs.ops.leftovers import remove_expired_retired, remove_stale_writes
from python_jobs.settings import Settings

LOCAL_LOCK_NAME = "writer.lock"
SHARED_LOCK_NAME = "_writer.lock"
HEARTBEAT_SECONDS = 10.0
STALE_AFTER_SECONDS = 120.0
POLL_SECONDS = 0.5


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_iso(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


@dataclass(frozen=True)
class LockHolder:
    """Who holds (or held) the lock; ``heartbeat_at`` is refreshed by the cluster lock only."""

    command: str
    host: str
    pid: int
    started_at: str
    heartbeat_at: str
    token: str

    @staticmethod
    def for_this_process(command: str) -> LockHolder:
        now = _now_iso()
        return LockHolder(command, socket.gethostname(), os.getpid(), now, now, uuid.uuid4().hex)

    def describe(self) -> str:
        return f"`{self.command}` (host {self.host}, pid {self.pid}) since {self.started_at}"

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> LockHolder | None:
        """``None`` for an empty or unreadable record (a holder between create and write)."""
        try:
            data = json.loads(text)
            return LockHolder(
                str(data["command"]), str(data["host"]), int(data["pid"]), str(data["started_at"]),
                str(data.get("heartbeat_at", data["started_at"])), str(data.get("token", "")),
            )
        except (ValueError, KeyError, TypeError):
            return None


class WriterLockBusy(UserFacingError):
    """Another writer holds the lock (and we were not asked to wait, or waited long enough)."""

    def __init__(self, holder: LockHolder | None, location: str, waited: float | None) -> None:
        self.holder = holder
        who = holder.describe() if holder else "another process (its record is not written yet)"
        waited_text = f" after waiting {waited:.0f}s" if waited else ""
        super().__init__(
            f"the warehouse writer lock is held by {who}{waited_text}; lock file {location}. "
            "Only one ingest, dbt build, compaction or serve loop writes at a time: "
            "retry when it is done, or pass --wait SECONDS to queue behind it."
        )


@dataclass(frozen=True)
class Acquired:
    """A successful attempt; ``taken_over`` is the dead holder whose leftover lock was replaced."""

    taken_over: LockHolder | None
    reason: str = ""


class LockBackend(Protocol):
    location: str

    def try_acquire(self, me: LockHolder) -> Acquired | LockHolder | None:
        """``Acquired`` on success, else the current holder (``None`` when its record is unreadable)."""

    def release(self) -> None: ...


class LocalFileLock:
    """``flock`` on a file under the warehouse home: one host, released by the OS when the holder dies."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.location = str(path)
        self._fd: int | None = None

    def try_acquire(self, me: LockHolder) -> Acquired | LockHolder | None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = LockHolder.from_json(read_record(fd))
            os.close(fd)
            return holder
        left_behind = LockHolder.from_json(read_record(fd))
        write_record(fd, me.to_json())
        self._fd = fd
        if left_behind is None:
            return Acquired(None)
        return Acquired(left_behind, "that process is gone (the OS released its file lock)")

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            write_record(self._fd, "")
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None


def read_record(fd: int) -> str:
    """The whole text of a record file open at ``fd`` (a lock or holder record), from its start."""
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", errors="replace")


def write_record(fd: int, text: str) -> None:
    """Replaces the text of a record file open at ``fd``, durably."""
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, text.encode("utf-8"))
    os.fsync(fd)


class SharedFileLock:
    """Create-if-absent lock file in a shared folder, kept alive by a heartbeat, taken over when stale.

    Works across hosts on any filesystem where ``O_EXCL`` create and rename are atomic (local disks, NFSv3+,
    a shared mount). Hosts' clocks must roughly agree (NTP): staleness compares the record's heartbeat with
    the contender's clock, with a timeout far above the heartbeat interval.
    """

    def __init__(
        self,
        folder: Path,
        heartbeat_seconds: float = HEARTBEAT_SECONDS,
        stale_after_seconds: float = STALE_AFTER_SECONDS,
    ) -> None:
        self.path = folder / SHARED_LOCK_NAME
        self.location = str(self.path)
        self.heartbeat_seconds = heartbeat_seconds
        self.stale_after_seconds = stale_after_seconds
        self._me: LockHolder | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost = False

    def try_acquire(self, me: LockHolder) -> Acquired | LockHolder | None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self._create(me):
            return Acquired(None)
        holder = self._read()
        if holder is None or not self._is_stale(holder):
            return holder
        # Only one contender's rename of this file succeeds; the others find it gone and retry as usual.
        parked = self.path.with_name(f"{SHARED_LOCK_NAME}.stale-{me.token}")
        try:
            os.rename(self.path, parked)
        except FileNotFoundError:
            return self._read()
        parked_holder = LockHolder.from_json(parked.read_text(errors="replace"))
        if parked_holder is None or parked_holder.token != holder.token:
            # The holder refreshed between our read and our rename: give its record back (link never
            # replaces a lock another contender created meanwhile).
            with contextlib.suppress(OSError):
                os.link(parked, self.path)
            parked.unlink(missing_ok=True)
            return parked_holder
        parked.unlink(missing_ok=True)
        if not self._create(me):
            return self._read()
        stale_note = f"no heartbeat since {holder.heartbeat_at} (stale after {self.stale_after_seconds:.0f}s)"
        return Acquired(holder, stale_note)

    def _create(self, me: LockHolder) -> bool:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        try:
            os.write(fd, me.to_json().encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        self._me = me
        self._stop.clear()
        self._thread = threading.Thread(target=self._beat, name="writer-lock-heartbeat", daemon=True)
        self._thread.start()
        return True

    def _read(self) -> LockHolder | None:
        try:
            return LockHolder.from_json(self.path.read_text(errors="replace"))
        except FileNotFoundError:
            return None

    def _is_stale(self, holder: LockHolder) -> bool:
        age = (datetime.now(UTC) - _parse_iso(holder.heartbeat_at)).total_seconds()
        return age > self.stale_after_seconds

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_seconds):
            self.heartbeat()

    def heartbeat(self) -> bool:
        """Refreshes our record; ``False`` (and ``lost``) when the file is no longer ours."""
        me = self._me
        if me is None:
            return False
        current = self._read()
        if current is None or current.token != me.token:
            self.lost = True
            print(f"warning: the writer lock {self.location} was taken over by "
                  f"{current.describe() if current else 'nobody'}; this process no longer holds it",
                  file=sys.stderr, flush=True)
            self._stop.set()
            return False
        refreshed = LockHolder(me.command, me.host, me.pid, me.started_at, _now_iso(), me.token)
        staging = self.path.with_name(f"{SHARED_LOCK_NAME}.beat-{me.token}")
        staging.write_text(refreshed.to_json())
        os.replace(staging, self.path)
        return True

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.heartbeat_seconds + 1)
            self._thread = None
        me, self._me = self._me, None
        if me is not None:
            current = self._read()
            if current is not None and current.token == me.token:
                self.path.unlink(missing_ok=True)


def backend_for(settings: Settings) -> LockBackend:
    """The cluster lock when the target writes a shared warehouse, else the embedded one."""
    shared = os.environ.get("LINEAGE_SHARED_WAREHOUSE", "").strip()
    if settings.target != "local" and shared:
        if "://" in shared and not shared.startswith("file://"):
            raise UserFacingError(
                f"the writer lock needs a shared warehouse on a mounted filesystem; {shared} is not one "
                "(HDFS and object stores are not supported by the lock yet)"
            )
        return SharedFileLock(
            Path(shared.removeprefix("file://")),
            heartbeat_seconds=float(os.environ.get("LINEAGE_LOCK_HEARTBEAT_SECONDS", HEARTBEAT_SECONDS)),
            stale_after_seconds=float(os.environ.get("LINEAGE_LOCK_STALE_SECONDS", STALE_AFTER_SECONDS)),
        )
    return LocalFileLock(settings.lineage_home / LOCAL_LOCK_NAME)


@dataclass
class _Held:
    backend: LockBackend
    holder: LockHolder
    depth: int


_held: dict[str, _Held] = {}
_held_guard = threading.Lock()


def acquire(backend: LockBackend, command: str, wait_seconds: float | None = None) -> LockHolder:
    """Takes the lock (re-entrant per process), waiting up to ``wait_seconds``; raises ``WriterLockBusy``."""
    with _held_guard:
        held = _held.get(backend.location)
        if held is not None:
            held.depth += 1
            return held.holder
    me = LockHolder.for_this_process(command)
    started = time.monotonic()
    announced = False
    while True:
        outcome = backend.try_acquire(me)
        if isinstance(outcome, Acquired):
            break
        waited = time.monotonic() - started
        if wait_seconds is None or waited >= wait_seconds:
            raise WriterLockBusy(outcome, backend.location, waited if wait_seconds else None)
        if not announced:
            who = outcome.describe() if outcome else "another process"
            print(f"writer lock: waiting up to {wait_seconds:.0f}s for {who}", file=sys.stderr, flush=True)
            announced = True
        time.sleep(min(POLL_SECONDS, max(0.0, wait_seconds - waited)))
    if outcome.taken_over is not None:
        print(f"writer lock: took over the lock left by {outcome.taken_over.describe()}: {outcome.reason}",
              file=sys.stderr, flush=True)
    with _held_guard:
        _held[backend.location] = _Held(backend, me, 1)
    return me


def release(backend: LockBackend) -> None:
    with _held_guard:
        held = _held.get(backend.location)
        if held is None:
            return
        held.depth -= 1
        if held.depth > 0:
            return
        del _held[backend.location]
    held.backend.release()


def held_by_this_process(location: str) -> LockHolder | None:
    with _held_guard:
        held = _held.get(location)
        return held.holder if held else None


@contextlib.contextmanager
def writer_lock(settings: Settings, command: str, wait_seconds: float | None = None) -> Iterator[LockHolder]:
    """Holds the warehouse writer lock for the ``with`` block (re-entrant within this process)."""
    backend = backend_for(settings)
    holder = _acquire_and_sweep(settings, backend, command, wait_seconds)
    try:
        yield holder
    finally:
        _sweep_and_release(settings, backend)


def hold_until_exit(settings: Settings, command: str, wait_seconds: float | None = None) -> LockHolder:
    """Takes the lock for the rest of the process (plain ``dbt build`` through the adapter).

    A no-op when this process already holds it, e.g. ``python -m python_jobs dbt build``.
    """
    backend = backend_for(settings)
    already = held_by_this_process(backend.location)
    if already is not None:
        return already
    holder = _acquire_and_sweep(settings, backend, command, wait_seconds)
    atexit.register(_sweep_and_release, settings, backend)
    return holder


def _acquire_and_sweep(
    settings: Settings, backend: LockBackend, command: str, wait_seconds: float | None
) -> LockHolder:
    """Takes the lock; on a fresh (not re-entrant) acquisition, first removes the unfinished writes that a
    killed writer left in table folders, which the next write would otherwise merge (ops/leftovers.py)."""
    fresh = held_by_this_process(backend.location) is None
    holder = acquire(backend, command, wait_seconds)
    if fresh:
        try:
            remove_stale_writes(settings)
        except BaseException:
            release(backend)
            raise
    return holder


def _sweep_and_release(settings: Settings, backend: LockBackend) -> None:
    """Releases one hold; the last one of this process first removes the retired folders whose grace is over
    (ops/leftovers.py), while no other writer can switch a table."""
    with _held_guard:
        held = _held.get(backend.location)
        last = held is not None and held.depth == 1
    try:
        if last:
            remove_expired_retired(settings)
    finally:
        release(backend)

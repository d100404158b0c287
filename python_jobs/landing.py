"""The landing folder of the collector: NDJSON files written with group commit, sealed by rotation.

Layout under the landing root (default ``<LINEAGE_HOME>/landing/lineage``, or ``LINEAGE_LANDING_DIR``):

    open/<name>.ndjson.open      the file being appended to (at most one per writer); never read by ingest
    sealed/<name>.ndjson         complete files, fsynced, renamed here atomically: what ingest reads
    sealed/handed-...-<file>     an input file handed over by ``ingest lineage`` (``hand_over``), suffix kept
    ingested/<name>.ndjson       sealed files whose batch committed (moved after the commit)
    rejected/open/...            bodies answered 400 or 413, with reason, time, address and size
    rejected/<name>.ndjson       sealed rejection files

``<name>`` is ``events-<UTC time>-<pid>-<counter>``, so names sort in creation order and never repeat.

A writer batches concurrent appends: while one write+fsync runs, new appends queue, and the next
write+fsync covers them all (group commit). ``append`` returns only after the fsync that covers its
line, so a 201 means the line is on disk. The open file is preallocated with zeros (fsynced), so a
batch's fdatasync flushes data blocks only; sealing cuts the file to its data. A file is sealed when
it reaches ``rotate_bytes`` or gets ``rotate_seconds`` old, on demand (``rotate``) and at shutdown;
a file left in ``open/`` by a crash is sealed on the next start, cut after its last complete line
(``complete_prefix``: a torn or zero-filled tail was never acknowledged).

``hand_over`` copies input files into ``sealed/`` the same way (fsynced, renamed in, original suffix kept so
they are framed as ``ingest lineage`` would frame them): ``ingest lineage`` does so when the warehouse's embedded
metastore is open in the ``serve --build-every`` that ingests this folder.

``ingest_sealed`` is how every reader of the landing folder (``ingest lineage``, the serve build loop, the
main job's self-lineage) picks its files: the sealed files of ``sealed/`` (never ``open/``), ingested in one
``ingest_lineage`` batch, then moved to ``ingested/`` only after that batch committed. A crash between the
commit and the move leaves them in ``sealed/``; the next run ingests them again and the dedup on
``event_id`` counts every event as a duplicate, so each event is stored exactly once
(tests/python/test_collector.py checks it).

Landing files (events and rejected bodies alike) are created with mode ``0o640`` (the process
umask may narrow it): they hold what clients sent, so the owner writes, the group
reads (e.g. an ingest job run by another user of the group), and others get nothing.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import SparkSession

from python_jobs.ingest.lineage import IngestReport, ingest_lineage
from python_jobs.lineage.files import discover, framing_of
from python_jobs.settings import Settings

OPEN_SUFFIX = ".ndjson.open"
# Zeros written ahead of the open file's data at a time (see GroupCommitWriter._write_batch).
PREALLOCATE_BYTES = 8 * 1024 * 1024
SEALED_SUFFIX = ".ndjson"


@dataclass(frozen=True)
class LandingLayout:
    root: Path

    @property
    def open_dir(self) -> Path:
        return self.root / "open"

    @property
    def sealed_dir(self) -> Path:
        return self.root / "sealed"

    @property
    def ingested_dir(self) -> Path:
        return self.root / "ingested"

    @property
    def rejected_dir(self) -> Path:
        return self.root / "rejected"

    def ensure(self) -> LandingLayout:
        for folder in (self.open_dir, self.sealed_dir, self.ingested_dir, self.rejected_dir / "open"):
            folder.mkdir(parents=True, exist_ok=True)
        return self

    def sealed_files(self) -> list[Path]:
        """The sealed files not yet ingested, oldest first."""
        if not self.sealed_dir.is_dir():
            return []
        return sorted(
            path for path in self.sealed_dir.iterdir()
            if not path.name.startswith(".") and framing_of(path) is not None and path.is_file()
        )


def is_landing_root(path: Path) -> bool:
    """A collector's landing folder: it holds ``sealed/`` and ``open/``."""
    return path.is_dir() and (path / "sealed").is_dir() and (path / "open").is_dir()


def default_landing_root(lineage_home: Path) -> Path:
    configured = os.environ.get("LINEAGE_LANDING_DIR")
    return Path(configured).resolve() if configured else lineage_home / "landing" / "lineage"


def fsync_dir(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def complete_prefix(data: bytes) -> int:
    """The length of the leading complete lines of a landing file: up to the last newline before
    any NUL byte. A file is preallocated with zeros and written in order, but after a crash the
    pages of an unacknowledged write may be on disk out of order; acknowledged lines were fsynced
    before their answer and all come before such a gap. They hold no NUL: the collector accepts a
    body only when it is one JSON value and nothing else (JSON text has no raw NUL), and
    ``GroupCommitWriter.append`` refuses any line with one."""
    first_nul = data.find(b"\0")
    end = len(data) if first_nul < 0 else first_nul
    return data.rfind(b"\n", 0, end) + 1


def seal_leftovers(open_dir: Path, sealed_dir: Path) -> list[Path]:
    """Seals the files a crashed writer left open: cut after the last complete line, fsync, rename."""
    sealed: list[Path] = []
    if not open_dir.is_dir():
        return sealed
    for path in sorted(open_dir.glob(f"*{OPEN_SUFFIX}")):
        data = path.read_bytes()
        complete = complete_prefix(data)
        if not complete:
            path.unlink()
            continue
        if complete != len(data):
            with path.open("r+b") as handle:
                handle.truncate(complete)
                os.fsync(handle.fileno())
        target = sealed_dir / (path.name[: -len(OPEN_SUFFIX)] + SEALED_SUFFIX)
        os.replace(path, target)
        sealed.append(target)
    if sealed:
        fsync_dir(sealed_dir)
        fsync_dir(open_dir)
    return sealed


_file_counter = itertools.count(1)


def _new_name(prefix: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return f"{prefix}-{stamp}-{os.getpid()}-{next(_file_counter):06d}"


class GroupCommitWriter:
    """Appends lines to the open file of ``open_dir``; see the module docstring."""

    def __init__(
        self,
        open_dir: Path,
        sealed_dir: Path,
        prefix: str = "events",
        *,
        fsync: bool = True,
        rotate_bytes: int = 64 * 1024 * 1024,
        rotate_seconds: float = 60.0,
        on_seal: Callable[[Path, int], None] | None = None,
    ):
        self.open_dir, self.sealed_dir, self.prefix = open_dir, sealed_dir, prefix
        self.fsync, self.rotate_bytes, self.rotate_seconds = fsync, rotate_bytes, rotate_seconds
        self.on_seal = on_seal
        self._pending: list[tuple[bytes, asyncio.Future[None]]] = []
        self._wakeup: asyncio.Event | None = None
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"landing-{prefix}")
        self._task: asyncio.Task[None] | None = None
        self._timer: asyncio.Task[None] | None = None
        self._closing = False
        self._rotate_requested: list[asyncio.Future[None]] = []
        # Only the I/O thread touches these.
        self._descriptor: int | None = None
        self._path: Path | None = None
        self._opened_at = 0.0
        self._size = 0
        self._lines = 0
        self._allocated = 0

    async def start(self) -> None:
        self.open_dir.mkdir(parents=True, exist_ok=True)
        self.sealed_dir.mkdir(parents=True, exist_ok=True)
        await asyncio.get_running_loop().run_in_executor(self._io, seal_leftovers, self.open_dir, self.sealed_dir)
        self._wakeup = asyncio.Event()
        self._task = asyncio.create_task(self._commit_loop())
        self._timer = asyncio.create_task(self._age_timer())

    async def append(self, line: bytes) -> None:
        """Returns once ``line`` (ending with a newline) is written, and fsynced when ``fsync`` is on."""
        if self._closing or self._wakeup is None:
            raise RuntimeError("the landing writer is not running")
        if b"\0" in line or not line.endswith(b"\n") or b"\n" in line[:-1]:
            # Recovery after a crash cuts an open file at its first NUL and keeps whole lines only: a
            # line that broke either rule would cost the acknowledged lines after it.
            raise ValueError("a landing line must be one line without NUL bytes")
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((line, done))
        self._wakeup.set()
        await done

    async def rotate(self) -> None:
        """Seals the open file (if any) after the appends queued so far."""
        if self._wakeup is None:
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._rotate_requested.append(done)
        self._wakeup.set()
        await done

    async def close(self) -> None:
        """Commits what is queued, seals the open file and stops."""
        if self._task is None or self._wakeup is None:
            return
        self._closing = True
        self._wakeup.set()
        await self._task
        if self._timer:
            self._timer.cancel()
        self._io.shutdown(wait=True)
        self._task = None

    async def _age_timer(self) -> None:
        while True:
            await asyncio.sleep(min(1.0, self.rotate_seconds / 4))
            if self._wakeup is not None:
                self._wakeup.set()

    async def _commit_loop(self) -> None:
        assert self._wakeup is not None
        loop = asyncio.get_running_loop()
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            batch, self._pending = self._pending, []
            rotations, self._rotate_requested = self._rotate_requested, []
            closing = self._closing
            try:
                await loop.run_in_executor(
                    self._io, self._write_batch, [line for line, _ in batch], bool(rotations) or closing
                )
            except BaseException as error:  # every waiter learns that its line is not durable
                for _, done in batch:
                    if not done.done():
                        done.set_exception(error if isinstance(error, Exception) else RuntimeError(str(error)))
                for done in rotations:
                    if not done.done():
                        done.set_exception(RuntimeError(f"landing write failed: {error}"))
                if closing:
                    return
                continue
            for _, done in batch:
                if not done.done():
                    done.set_result(None)
            for done in rotations:
                if not done.done():
                    done.set_result(None)
            if closing and not self._pending:
                return

    def _write_batch(self, lines: list[bytes], seal: bool) -> None:
        if lines:
            if self._descriptor is None:
                self._open()
            data = b"".join(lines)
            assert self._descriptor is not None
            if self.fsync and self._size + len(data) > self._allocated:
                self._preallocate(self._size + len(data))
            view = memoryview(data)
            offset = self._size
            while view:
                written = os.pwrite(self._descriptor, view, offset)
                view, offset = view[written:], offset + written
            if self.fsync:
                # The blocks and the file size were made durable by _preallocate, so this only
                # flushes data: no journal commit per batch (measured ten times cheaper than an
                # fdatasync that extends the file).
                os.fdatasync(self._descriptor)
            self._size += len(data)
            self._lines += len(lines)
        if self._descriptor is not None and (
            seal
            or self._size >= self.rotate_bytes
            or time.monotonic() - self._opened_at >= self.rotate_seconds
        ):
            self._seal()

    def _preallocate(self, needed: int) -> None:
        """Writes zeros ahead of the data, up to ``needed`` plus a chunk, and makes them durable."""
        assert self._descriptor is not None
        target = max(needed, self._allocated) + PREALLOCATE_BYTES
        zeros = bytes(min(target - self._allocated, 1024 * 1024))
        offset = self._allocated
        while offset < target:
            offset += os.pwrite(self._descriptor, zeros[: target - offset], offset)
        os.fdatasync(self._descriptor)
        self._allocated = target

    def _open(self) -> None:
        self._path = self.open_dir / (_new_name(self.prefix) + OPEN_SUFFIX)
        self._descriptor = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)  # see the module docstring
        if self.fsync:
            fsync_dir(self.open_dir)
        self._opened_at = time.monotonic()
        self._size = 0
        self._lines = 0
        self._allocated = 0

    def _seal(self) -> None:
        assert self._descriptor is not None and self._path is not None
        os.ftruncate(self._descriptor, self._size)
        os.fsync(self._descriptor)
        os.close(self._descriptor)
        target = self.sealed_dir / (self._path.name[: -len(OPEN_SUFFIX)] + SEALED_SUFFIX)
        os.replace(self._path, target)
        fsync_dir(self.sealed_dir)
        fsync_dir(self.open_dir)
        lines = self._lines
        self._descriptor, self._path = None, None
        if self.on_seal is not None:
            self.on_seal(target, lines)


HANDED_PREFIX = "handed"


def hand_over(layout: LandingLayout, paths: Sequence[Path]) -> tuple[list[Path], list[str]]:
    """Copies the input files under ``paths`` (found as ``ingest lineage`` finds them) into ``sealed/``, named
    ``handed-<time>-<pid>-<n>-<file name>``: each written beside as a dot file, fsynced, then renamed in, so the
    folder's reader sees whole files only. Returns the files handed over and the files of folders skipped."""
    files, skipped = discover(paths)
    layout.ensure()
    handed: list[Path] = []
    for input_file in files:
        source = Path(input_file.path)
        target = layout.sealed_dir / f"{_new_name(HANDED_PREFIX)}-{source.name}"
        staging = target.with_name(f".{target.name}.part")
        descriptor = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)  # see the module docstring
        with source.open("rb") as reader, os.fdopen(descriptor, "wb") as writer:
            shutil.copyfileobj(reader, writer, 1024 * 1024)
            writer.flush()
            os.fsync(writer.fileno())
        os.replace(staging, target)
        handed.append(target)
    if handed:
        fsync_dir(layout.sealed_dir)
    return handed, skipped


@dataclass(frozen=True)
class LandingIngest:
    files: list[Path]
    report: IngestReport | None


def ingest_sealed(spark: SparkSession, settings: Settings, layout: LandingLayout) -> LandingIngest:
    """Ingests every sealed landing file once: one batch, then each file moves to ``ingested/``."""
    files = layout.sealed_files()
    if not files:
        return LandingIngest([], None)
    report = ingest_lineage(spark, settings, files)
    layout.ingested_dir.mkdir(parents=True, exist_ok=True)
    for path in files:
        os.replace(path, layout.ingested_dir / path.name)
    fsync_dir(layout.ingested_dir)
    fsync_dir(layout.sealed_dir)
    return LandingIngest(files, report)

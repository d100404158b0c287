"""The Hive metastore of a target: which one it is, its JDBC driver, and who holds the embedded one.

``profiles.yml`` configures it (``LINEAGE_METASTORE_URL``, unset by default: embedded Derby under
``LINEAGE_HOME``); ``python_jobs.spark.get_spark`` calls this module before and after starting the JVM:

- a URL that needs a JDBC driver (PostgreSQL) must find its jar on ``spark.driver.extraClassPath``
  (``LINEAGE_JDBC_JARS``, default Debian's ``/usr/share/java/postgresql.jar``), checked before the JVM starts;
- embedded Derby admits one process. The process that opens Spark on it claims it first: an exclusive
  ``flock`` on ``metastore_db.holder`` beside ``metastore_db``, holding a JSON record of the command line, host,
  pid and time (the OS drops the lock when the process dies, so a record left by a dead process never blocks).
  A second process finds the lock taken and stops before its JVM starts, with one line naming the holder and
  the ways out (``MetastoreBusy``). A process that opened Derby without this module (a notebook, plain dbt) is
  found through the lock Derby itself holds on ``metastore_db/dbex.lck`` (Linux ``/proc/locks``), and a Derby
  boot failure that still happens (two starts racing) is mapped to the same line (``explain_open_failure``), as
  is any other failure to open a metastore (one line with its cause). Writers check before taking the writer
  lock, and with ``--wait`` wait for the holder to exit (``wait_until_free``).

``serve --build-every`` adds its landing folder to its record (``advertise_landing``): ``ingest lineage``
started while it runs hands its files to that folder instead of failing.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shlex
import socket
import sys
import time
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from python_jobs.errors import UserFacingError
from python_jobs.ops.lock import read_record, write_record

URL_KEY = "spark.hadoop.javax.jdo.option.ConnectionURL"
CLASS_PATH_KEY = "spark.driver.extraClassPath"
URL_ENV = "LINEAGE_METASTORE_URL"
JARS_ENV = "LINEAGE_JDBC_JARS"
USER_ENV = "LINEAGE_METASTORE_USER"
HOLDER_SUFFIX = ".holder"
DERBY_LOCK_FILE = "dbex.lck"
# Java's text for a Derby database another JVM has booted (other Derby failures are reported as they are).
DERBY_BUSY_MARKERS = ("Another instance of Derby may have already booted", "XSDB6")
COMMAND_WIDTH = 160
DERBY_EXIT_GRACE_SECONDS = 3.0
_PASSWORD = re.compile(r"(password=)[^&;]*", re.IGNORECASE)
_CREDENTIALS = re.compile(r"(//)[^/@]*@")


@dataclass(frozen=True)
class Metastore:
    """The metastore a target's Spark settings name."""

    url: str
    class_path: tuple[str, ...]

    @staticmethod
    def from_conf(conf: dict[str, str]) -> Metastore:
        class_path = tuple(entry for entry in conf.get(CLASS_PATH_KEY, "").split(os.pathsep) if entry.strip())
        return Metastore(conf.get(URL_KEY, ""), class_path)

    @property
    def embedded_dir(self) -> Path | None:
        """The Derby database folder when the metastore is embedded Derby on disk, else ``None``."""
        if not self.url.startswith("jdbc:derby:") or self.url.startswith("jdbc:derby://"):
            return None
        rest = self.url.removeprefix("jdbc:derby:")
        parts = rest.split(";")
        name = parts[0]
        for part in parts[1:]:
            key, _, value = part.partition("=")
            if key.strip() == "databaseName":
                name = value
        if not name or name.startswith("memory:"):
            return None
        return Path(name).resolve()

    @property
    def display(self) -> str:
        """The URL without its password, for messages."""
        return _CREDENTIALS.sub(r"\1***@", _PASSWORD.sub(r"\1***", self.url))

    def check_driver(self) -> None:
        """A server URL needs its JDBC driver on the driver's class path; say how to get it when it is missing."""
        if not self.url.startswith("jdbc:") or self.url.startswith("jdbc:derby:"):
            return
        if any(Path(entry).exists() for entry in self.class_path):
            return
        looked = ", ".join(self.class_path) or "nothing"
        hint = ("apt-get install libpostgresql-jdbc-java (Debian's PostgreSQL JDBC driver), or "
                if self.url.startswith("jdbc:postgresql:") else "")
        raise UserFacingError(
            f"the metastore {self.display} needs its JDBC driver jar, which is not on the driver class path "
            f"(looked at {looked}): {hint}set {JARS_ENV} to the jar(s), ':'-separated"
        )

    def check_credentials(self) -> None:
        if (self.url.startswith("jdbc:postgresql:") and not re.search(r"[?&]user=", self.url)
                and not os.environ.get(USER_ENV, "").strip()):
            raise UserFacingError(
                f"the metastore {self.display} names no user: add ?user=...&password=... to {URL_ENV}, or set "
                f"{USER_ENV} and LINEAGE_METASTORE_PASSWORD"
            )


@dataclass(frozen=True)
class Holder:
    """The process that has the embedded metastore open."""

    command: str
    host: str
    pid: int
    since: str
    jvm_pid: int | None = None
    landing: str | None = None  # serve --build-every: the landing folder its rounds ingest

    def describe(self) -> str:
        jvm = f", its Spark JVM pid {self.jvm_pid}" if self.jvm_pid else ""
        return f"`{self.command}` (host {self.host}, pid {self.pid}{jvm}) since {self.since}"

    def to_json(self) -> str:
        return json.dumps({key: value for key, value in asdict(self).items() if value is not None}, sort_keys=True)

    @staticmethod
    def from_json(text: str) -> Holder | None:
        try:
            data = json.loads(text)
            return Holder(str(data["command"]), str(data["host"]), int(data["pid"]), str(data["since"]),
                          int(data["jvm_pid"]) if data.get("jvm_pid") else None, data.get("landing"))
        except (ValueError, KeyError, TypeError):
            return None


class MetastoreBusy(UserFacingError):
    """Embedded Derby is open in another process: one line naming it, and the ways out."""

    def __init__(self, metastore_dir: Path, holder: Holder | None) -> None:
        self.holder = holder
        who = holder.describe() if holder else "another process"
        if holder is not None and holder.landing:
            events = (f"land events in its landing folder {holder.landing}/sealed (`ingest lineage` hands its files "
                      "there by itself) or POST them to its collector")
        else:
            events = "land events with a collector (`serve` needs no metastore without --build-every) to ingest later"
        super().__init__(
            f"the warehouse metastore (embedded Derby, {metastore_dir}) is open in {who}; embedded Derby admits "
            f"one process at a time. Ways out: query through that process's SQL endpoint (`serve --sql-port`); "
            f"{events}; or share the metastore between processes with {URL_ENV}=jdbc:postgresql://... "
            "(README: \"A shared metastore\")"
        )


# This process's claims: metastore folder -> the descriptor holding the flock, open until the process exits.
_claims: dict[Path, int] = {}


def holder_file(metastore_dir: Path) -> Path:
    return metastore_dir.with_name(metastore_dir.name + HOLDER_SUFFIX)


def this_process(landing: str | None = None) -> Holder:
    since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Holder(command_line(sys.orig_argv), socket.gethostname(), os.getpid(), since, None, landing)


def claim(metastore: Metastore) -> None:
    """Before this process starts Spark on embedded Derby: take the holder lock and write our record, or raise
    ``MetastoreBusy`` naming the process that has the metastore open. Idempotent within a process."""
    folder = metastore.embedded_dir
    if folder is None or folder in _claims:
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(holder_file(folder), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = Holder.from_json(read_record(descriptor))
        os.close(descriptor)
        raise MetastoreBusy(folder, holder) from None
    foreign = derby_lock_holder(folder)
    if foreign is not None:
        fcntl.flock(descriptor, fcntl.LOCK_UN)
        os.close(descriptor)
        raise MetastoreBusy(folder, foreign)
    write_record(descriptor, this_process().to_json())
    _claims[folder] = descriptor


def advertise_landing(metastore: Metastore, landing: Path) -> None:
    """Adds the landing folder this process ingests (``serve --build-every``) to its holder record."""
    folder = metastore.embedded_dir
    descriptor = _claims.get(folder) if folder is not None else None
    if descriptor is None:
        return
    current = Holder.from_json(read_record(descriptor)) or this_process()
    write_record(descriptor, replace(current, landing=str(landing)).to_json())


def holder_elsewhere(metastore: Metastore) -> Holder | None:
    """The other process that has the embedded metastore open, or ``None`` (free, a server metastore, or this
    process's own). Takes no lock: the holder lock's record, checked alive, then Derby's own lock."""
    folder = metastore.embedded_dir
    if folder is None or folder in _claims:
        return None
    try:
        recorded = Holder.from_json(holder_file(folder).read_text(errors="replace"))
    except OSError:
        recorded = None
    if (recorded is not None and recorded.host == socket.gethostname() and recorded.pid != os.getpid()
            and _alive_since(recorded)):
        return recorded
    return derby_lock_holder(folder)


def check_free(metastore: Metastore) -> None:
    """Raises ``MetastoreBusy`` when another process has the embedded metastore open."""
    holder = holder_elsewhere(metastore)
    if holder is not None and metastore.embedded_dir is not None:
        raise MetastoreBusy(metastore.embedded_dir, holder)


def wait_until_free(metastore: Metastore, wait_seconds: float, poll_seconds: float = 0.5) -> float:
    """Waits up to ``wait_seconds`` for the process holding the embedded metastore to exit (a writer's ``--wait``
    covers the metastore as well as the writer lock: on Derby the writer before it holds both); returns the
    seconds waited, or raises ``MetastoreBusy`` naming the holder when it is still there."""
    started = time.monotonic()
    announced = False
    while True:
        holder = holder_elsewhere(metastore)
        waited = time.monotonic() - started
        if holder is None or metastore.embedded_dir is None:
            return waited
        if waited >= wait_seconds:
            raise MetastoreBusy(metastore.embedded_dir, holder)
        if not announced:
            print(f"metastore: waiting up to {wait_seconds:.0f}s for {holder.describe()} to close the embedded "
                  "metastore", file=sys.stderr, flush=True)
            announced = True
        time.sleep(min(poll_seconds, max(0.0, wait_seconds - waited)))


def explain_open_failure(metastore: Metastore, java_text: str) -> UserFacingError:
    """The one-line error for a failure to open the metastore, from the Java exception's text with its causes:
    ``MetastoreBusy`` for a Derby database another JVM has booted, else the root cause (password masked)."""
    folder = metastore.embedded_dir
    if folder is not None and any(marker in java_text for marker in DERBY_BUSY_MARKERS):
        return MetastoreBusy(folder, holder_elsewhere(metastore))
    return UserFacingError(f"the metastore {metastore.display} cannot be opened: {root_cause(java_text)}")


def root_cause(java_text: str) -> str:
    """The line of a Java exception text that says what went wrong: the database driver's own message when
    there is one (``PSQLException: Connection to db:5432 refused...``), else the deepest cause."""
    lines = [line.strip() for line in java_text.splitlines() if line.strip() and not line.strip().startswith("at ")]
    driver = [line for line in lines if "PSQLException" in line or "SQLException" in line]
    causes = [line for line in lines if line.startswith("Caused by: ")]
    chosen = driver[0] if driver else causes[-1] if causes else lines[0] if lines else "unknown error"
    return _PASSWORD.sub(r"\1***", chosen.removeprefix("Caused by: "))[:400]


def derby_lock_holder(metastore_dir: Path, grace_seconds: float = DERBY_EXIT_GRACE_SECONDS) -> Holder | None:
    """The process whose JVM holds Derby's lock on ``metastore_dir`` (Linux), unless it is this process's JVM.
    A JVM left without its Python parent (just killed) is given ``grace_seconds`` to exit and release it."""
    deadline = time.monotonic() + grace_seconds
    while True:
        pid = _derby_lock_pid(metastore_dir)
        if pid is None:
            return None
        if not _orphaned_jvm(pid) or time.monotonic() >= deadline:
            return _describe_process(pid)
        time.sleep(0.1)


def _derby_lock_pid(metastore_dir: Path) -> int | None:
    lock_file = metastore_dir / DERBY_LOCK_FILE
    try:
        stat = lock_file.stat()
        table = Path("/proc/locks").read_text()
    except OSError:
        return None
    wanted = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    for line in table.splitlines():
        fields = line.split()
        if len(fields) < 6 or fields[1] == "->" or fields[5] != wanted:
            continue
        pid = int(fields[4])
        if pid <= 0 or pid == os.getpid() or _own_jvm(pid):
            continue
        return pid
    return None


def _own_jvm(pid: int) -> bool:
    """This process's Spark JVM (PySpark starts it as a child)."""
    return _parent(pid) == os.getpid() and _read_proc(pid, "comm").strip() == "java"


def _orphaned_jvm(pid: int) -> bool:
    parent = _parent(pid)
    return _read_proc(pid, "comm").strip() == "java" and not (parent and "python" in _read_proc(parent, "comm"))


def _describe_process(pid: int) -> Holder:
    """A JVM started by PySpark is described by its Python parent (the command a user typed)."""
    jvm_pid = None
    parent = _parent(pid)
    if _read_proc(pid, "comm").strip() == "java" and parent and "python" in _read_proc(parent, "comm"):
        jvm_pid, pid = pid, parent
    argv = [part for part in _read_proc(pid, "cmdline").split("\0") if part]
    started = _started_at(pid)
    since = started.strftime("%Y-%m-%dT%H:%M:%SZ") if started else "an unknown time"
    return Holder(command_line(argv) if argv else "?", socket.gethostname(), pid, since, jvm_pid)


def command_line(argv: list[str]) -> str:
    """``python -m python_jobs serve --port 5000``, ``dbt docs generate``: programs by their base name, the
    interpreter left out before a script; shortened to one line of ``COMMAND_WIDTH`` characters."""
    if not argv:
        return "?"
    parts = [Path(argv[0]).name, *argv[1:]]
    if len(parts) > 1 and "python" in parts[0] and not parts[1].startswith("-"):
        parts = [Path(parts[1]).name, *parts[2:]]
    text = shlex.join(parts).replace("\n", " ")
    return text if len(text) <= COMMAND_WIDTH else text[: COMMAND_WIDTH - 3] + "..."


def _alive_since(holder: Holder) -> bool:
    """The record's process still runs, and is the same process (a reused pid started after the record)."""
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    started = _started_at(holder.pid)
    try:
        recorded = datetime.strptime(holder.since, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return True
    return started is None or started.timestamp() <= recorded.timestamp() + 1


def _read_proc(pid: int, name: str) -> str:
    try:
        return Path(f"/proc/{pid}/{name}").read_text(errors="replace")
    except OSError:
        return ""


def _parent(pid: int) -> int | None:
    stat = _read_proc(pid, "stat")
    fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
    return int(fields[1]) if len(fields) > 1 else None


def _started_at(pid: int) -> datetime | None:
    stat = _read_proc(pid, "stat")
    fields = stat[stat.rfind(")") + 2:].split()
    if len(fields) < 20:
        return None
    try:
        boot = next(line.split()[1] for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime"))
    except (OSError, StopIteration):
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    return datetime.fromtimestamp(int(boot) + int(fields[19]) / ticks, UTC)

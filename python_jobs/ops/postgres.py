"""A throwaway PostgreSQL server for a shared Hive metastore: for the tests, and for trying
``LINEAGE_METASTORE_URL`` on one machine (``python -m python_jobs metastore postgres start|stop|url``).

The server is PostgreSQL's own binaries (``initdb``, ``pg_ctl``, ``createdb``; found on ``PATH``, through
``pg_config --bindir``, under ``/usr/lib/postgresql/<version>/bin``, or in ``LINEAGE_POSTGRES_BIN``), run in a
folder of its own:

    <folder>/data/           the database cluster (initdb)
    <folder>/postgres.log    the server's log
    <folder>/server.json     port, role, password, database: what ``url`` and ``stop`` read (mode 0600)

PostgreSQL refuses to run as root. Run by root, the server runs as an unprivileged OS user of its own
(``lineage-pg``, or ``LINEAGE_POSTGRES_OS_USER``), created with ``useradd`` when absent; the folder is handed
to that user, so every folder above it must be searchable by others (``/tmp`` is). Run by anyone else, it runs
as that user.

It listens on 127.0.0.1 only, on a free port, with no Unix socket; the role ``lineage`` logs in with a random
password (SCRAM), which the JDBC URL carries. ``durable=False`` (the tests, ``--no-fsync``) turns fsync off: a
crash of the machine may lose the metastore, nothing else changes.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from python_jobs.errors import UserFacingError
from python_jobs.ports import free_port
from python_jobs.settings import PROJECT_DIR

OS_USER_ENV = "LINEAGE_POSTGRES_OS_USER"
BIN_ENV = "LINEAGE_POSTGRES_BIN"
DEFAULT_OS_USER = "lineage-pg"
ROLE = "lineage"
DEFAULT_DATABASE = "metastore"
STATE_FILE = "server.json"
START_ATTEMPTS = 3
TIMEOUT_SECONDS = 120
_DATABASE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def find_bin_dir() -> Path:
    """The folder of PostgreSQL's server binaries; ``UserFacingError`` when there is none."""
    configured = os.environ.get(BIN_ENV, "").strip()
    candidates: list[Path] = [Path(configured)] if configured else []
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    pg_config = shutil.which("pg_config")
    if pg_config:
        result = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        if result.returncode == 0 and result.stdout.strip():
            candidates.append(Path(result.stdout.strip()))
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: _version_key(p.parent.name))
    candidates.extend(reversed(versions))
    for folder in candidates:
        if all((folder / name).is_file() for name in ("initdb", "pg_ctl", "postgres")):
            return folder
    raise UserFacingError(
        "PostgreSQL's server binaries (initdb, pg_ctl) were not found on PATH, through pg_config or under "
        f"/usr/lib/postgresql: install PostgreSQL (Debian: apt-get install postgresql) or set {BIN_ENV}"
    )


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", name)) or (0,)


@dataclass(frozen=True)
class OsUser:
    """Whom the server runs as: ``None`` ids mean this process's own user (not root)."""

    name: str
    uid: int | None
    gid: int | None

    def popen_options(self) -> dict[str, object]:
        if self.uid is None:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


def server_os_user() -> OsUser:
    """This process's user, or, as root, the unprivileged user the server runs as (created when absent)."""
    if os.geteuid() != 0:
        return OsUser(pwd.getpwuid(os.geteuid()).pw_name, None, None)
    name = os.environ.get(OS_USER_ENV, "").strip() or DEFAULT_OS_USER
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        entry = _create_os_user(name)
    if entry.pw_uid == 0:
        raise UserFacingError(f"{OS_USER_ENV}={name} is root; PostgreSQL needs an unprivileged user")
    return OsUser(name, entry.pw_uid, entry.pw_gid)


def _create_os_user(name: str) -> pwd.struct_passwd:
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    result = subprocess.run(
        [useradd, "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
         "--shell", "/usr/sbin/nologin", "--comment", "lineage-warehouse PostgreSQL", name],
        capture_output=True, text=True, check=False,
    )
    try:
        # Created now, or by another process at the same moment (a second test worker; useradd then exits 9).
        return pwd.getpwnam(name)
    except KeyError:
        raise UserFacingError(
            f"PostgreSQL refuses to run as root, and creating its OS user {name} failed: {result.stderr.strip()}; "
            f"create an unprivileged user and name it in {OS_USER_ENV}"
        ) from None


@dataclass(frozen=True)
class PostgresServer:
    """A server started by ``start_postgres`` (or read back from its folder by ``load_server``)."""

    folder: Path
    port: int
    role: str
    password: str
    database: str
    os_user: str
    bin_dir: Path

    @property
    def data_dir(self) -> Path:
        return self.folder / "data"

    @property
    def log_file(self) -> Path:
        return self.folder / "postgres.log"

    def jdbc_url(self, database: str | None = None) -> str:
        """The URL for ``LINEAGE_METASTORE_URL``, with the role and its password."""
        return (f"jdbc:postgresql://127.0.0.1:{self.port}/{database or self.database}"
                f"?user={self.role}&password={self.password}")

    def create_database(self, name: str) -> str:
        """Creates database ``name`` (a metastore per warehouse) and returns its JDBC URL."""
        if not _DATABASE_NAME.fullmatch(name):
            raise UserFacingError(f"database name {name!r}: use lower-case letters, digits and _ (at most 63)")
        result = subprocess.run(
            [str(self.bin_dir / "createdb"), "--host", "127.0.0.1", "--port", str(self.port),
             "--username", self.role, "--no-password", name],
            env={**_client_env(), "PGPASSWORD": self.password},
            capture_output=True, text=True, check=False, timeout=TIMEOUT_SECONDS,
        )
        if result.returncode != 0 and "already exists" not in result.stderr:
            raise UserFacingError(f"createdb {name} failed on port {self.port}: {result.stderr.strip()}")
        return self.jdbc_url(name)

    def is_running(self) -> bool:
        status = _run_as(self._os_user(), [str(self.bin_dir / "pg_ctl"), "status", "-D", str(self.data_dir)])
        return status.returncode == 0

    def stop(self) -> None:
        """A fast shutdown (open sessions are ended), waiting until the server is gone; a no-op when stopped."""
        if not self.data_dir.is_dir() or not (self.data_dir / "postmaster.pid").exists():
            return
        result = _run_as(
            self._os_user(),
            [str(self.bin_dir / "pg_ctl"), "stop", "-D", str(self.data_dir), "-m", "fast", "-w",
             "-t", str(TIMEOUT_SECONDS)],
        )
        if result.returncode != 0 and self.is_running():
            raise UserFacingError(f"pg_ctl stop failed for {self.data_dir}: {result.stderr.strip()}")

    def _os_user(self) -> OsUser:
        if os.geteuid() != 0:
            return OsUser(self.os_user, None, None)
        entry = pwd.getpwnam(self.os_user)
        return OsUser(self.os_user, entry.pw_uid, entry.pw_gid)

    def save(self) -> None:
        state = {key: str(value) if isinstance(value, Path) else value for key, value in asdict(self).items()}
        path = self.folder / STATE_FILE
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            json.dump(state, handle, indent=2, sort_keys=True)


def load_server(folder: Path) -> PostgresServer:
    """The server whose state ``start_postgres`` wrote in ``folder``."""
    path = folder / STATE_FILE
    if not path.is_file():
        raise UserFacingError(f"no PostgreSQL server was started in {folder} (no {STATE_FILE})")
    state = json.loads(path.read_text())
    return PostgresServer(
        folder=Path(state["folder"]), port=int(state["port"]), role=str(state["role"]),
        password=str(state["password"]), database=str(state["database"]), os_user=str(state["os_user"]),
        bin_dir=Path(state["bin_dir"]),
    )


def start_postgres(folder: Path, database: str = DEFAULT_DATABASE, port: int | None = None,
                   durable: bool = True) -> PostgresServer:
    """Initialises a cluster in ``folder`` (or reuses the one there), starts it on ``port`` (default: a free
    one) and creates ``database``. A server already running there is returned as it is."""
    folder = folder.resolve()
    if (folder / STATE_FILE).is_file():
        server = load_server(folder)
        if server.is_running():
            server.create_database(database)
            return server
    bin_dir = find_bin_dir()
    user = server_os_user()
    _check_reachable(folder, user)
    folder.mkdir(parents=True, exist_ok=True)
    _hand_over(folder, user)
    data_dir = folder / "data"
    previous = load_server(folder) if (folder / STATE_FILE).is_file() else None
    if previous is not None and (data_dir / "PG_VERSION").is_file():
        password = previous.password
    else:
        password = secrets.token_urlsafe(24)
        _initdb(bin_dir, user, folder, data_dir, password, durable)
    server: PostgresServer | None = None
    for attempt in range(START_ATTEMPTS):
        # A restart keeps its port when it is free, so the URLs handed out stay valid.
        chosen = port or (previous.port if previous is not None and attempt == 0 else free_port())
        server = PostgresServer(folder, chosen, ROLE, password, database, user.name, bin_dir)
        if _start(server, user):
            break
        if port is not None or attempt == START_ATTEMPTS - 1:
            raise UserFacingError(
                f"PostgreSQL did not start in {folder} on port {chosen}: {_log_tail(server.log_file)}"
            )
    assert server is not None
    server.save()
    server.create_database(database)
    return server


def _check_reachable(folder: Path, user: OsUser) -> None:
    """As root: every existing folder above ``folder`` must be searchable by the server's user."""
    if user.uid is None:
        return
    for parent in (path for path in folder.parents if path.exists()):
        mode = parent.stat().st_mode
        if not mode & 0o001:
            raise UserFacingError(
                f"PostgreSQL runs as OS user {user.name}, which cannot reach {folder}: {parent} is not searchable "
                f"by other users (mode {mode & 0o777:04o}); use a folder under /tmp or /var/tmp"
            )


def _hand_over(folder: Path, user: OsUser) -> None:
    """As root: the folder becomes the server user's, mode 0700."""
    if user.uid is None:
        return
    os.chown(folder, user.uid, user.gid if user.gid is not None else -1)
    folder.chmod(0o700)


def _initdb(bin_dir: Path, user: OsUser, folder: Path, data_dir: Path, password: str, durable: bool) -> None:
    password_file = folder / ".initdb-password"
    descriptor = os.open(password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(password + "\n")
    if user.uid is not None:
        os.chown(password_file, user.uid, user.gid if user.gid is not None else -1)
    try:
        command = [str(bin_dir / "initdb"), "-D", str(data_dir), "--username", ROLE, "--pwfile", str(password_file),
                   "--auth-host", "scram-sha-256", "--auth-local", "scram-sha-256", "--encoding", "UTF8",
                   "--locale", "C"]
        if not durable:
            command.append("--no-sync")
        result = _run_as(user, command, cwd=folder)
    finally:
        password_file.unlink(missing_ok=True)
    if result.returncode != 0:
        raise UserFacingError(f"initdb failed in {data_dir}: {(result.stderr or result.stdout).strip()}")
    settings = [
        "listen_addresses = '127.0.0.1'",
        "unix_socket_directories = ''",
        "max_connections = 200",
        "shared_buffers = '32MB'",
    ]
    if not durable:
        settings += ["fsync = off", "synchronous_commit = off", "full_page_writes = off"]
    with (data_dir / "postgresql.conf").open("a") as conf:
        conf.write("\n# lineage-warehouse (python_jobs/ops/postgres.py)\n" + "\n".join(settings) + "\n")


def _start(server: PostgresServer, user: OsUser) -> bool:
    """Starts the server on its port; ``False`` when it did not come up (e.g. the port was taken meanwhile)."""
    result = _run_as(
        user,
        [str(server.bin_dir / "pg_ctl"), "start", "-D", str(server.data_dir), "-l", str(server.log_file), "-w",
         "-t", str(TIMEOUT_SECONDS), "-o", f"-p {server.port}"],
        cwd=server.folder,
    )
    if result.returncode == 0:
        return True
    # pg_ctl may give up while the postmaster still lingers: make sure nothing is left running.
    server.stop()
    return False


def _log_tail(log_file: Path, lines: int = 5) -> str:
    try:
        return " | ".join(log_file.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return f"no log at {log_file}"


def _client_env() -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TZ")
    return {key: os.environ[key] for key in keep if key in os.environ}


def _run_as(user: OsUser, command: Sequence[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**_client_env(), "LC_ALL": "C"}
    if user.uid is not None:
        env.update(HOME=str(cwd or "/"), USER=user.name, LOGNAME=user.name)
    # The server's stdout and stderr go to its log file (pg_ctl -l); the child pipes close when pg_ctl exits.
    return subprocess.run(
        list(command), cwd=cwd or "/", env=env, capture_output=True, text=True, check=False,
        timeout=TIMEOUT_SECONDS + 30, **user.popen_options(),  # type: ignore[arg-type]
    )


def stop_and_remove(server: PostgresServer) -> None:
    server.stop()
    shutil.rmtree(server.folder, ignore_errors=True)


def watch_owner(server: PostgresServer, owner_pid: int, remove: bool) -> subprocess.Popen[bytes]:
    """A detached process that stops the server (and removes its folder when ``remove``) once ``owner_pid`` is
    gone: ``pg_ctl`` runs the server as a daemon, which would outlive an owner killed before its clean-up."""
    code = ("import sys; from pathlib import Path; from python_jobs.ops.postgres import stop_when_gone; "
            "stop_when_gone(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == 'remove')")
    return subprocess.Popen(
        [sys.executable, "-c", code, str(server.folder), str(owner_pid), "remove" if remove else "keep"],
        cwd=PROJECT_DIR, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def stop_when_gone(folder: Path, owner_pid: int, remove: bool, poll_seconds: float = 1.0) -> None:
    """Waits for ``owner_pid`` to exit, then stops the server in ``folder`` (see ``watch_owner``)."""
    while True:
        try:
            os.kill(owner_pid, 0)
        except ProcessLookupError:
            break
        except PermissionError:
            pass
        time.sleep(poll_seconds)
    if (folder / STATE_FILE).is_file():
        server = load_server(folder)
        if remove:
            stop_and_remove(server)
        else:
            server.stop()


@contextmanager
def postgres_server(folder: Path | None = None, database: str = DEFAULT_DATABASE,
                    durable: bool = False) -> Iterator[PostgresServer]:
    """A server for the ``with`` block, stopped at its end; a temporary ``folder`` (the default) is removed. It is
    stopped even if this process is killed before the end of the block (``watch_owner``)."""
    temporary = folder is None
    where = Path(tempfile.mkdtemp(prefix="lineage-postgres-")) if folder is None else folder
    server = start_postgres(where, database=database, durable=durable)
    watcher = watch_owner(server, os.getpid(), remove=temporary)
    try:
        yield server
    finally:
        watcher.kill()
        watcher.wait()
        if temporary:
            stop_and_remove(server)
        else:
            server.stop()

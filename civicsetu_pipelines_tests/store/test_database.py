"""Database layer against real Postgres servers (no mocks)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from civicsetu_pipelines.base.settings import REPO_ROOT, Settings
from civicsetu_pipelines.store.database import (
    MIGRATIONS_DIR,
    EmbeddedPostgres,
    MigrationChecksumError,
    apply_migrations,
    connect,
    dagster_storage_url,
    discover_migrations,
    ensure_database,
    resolve_database_url,
    with_database,
)

_START_IN_CHILD = """
import json, logging, os, sys
logging.basicConfig(level=logging.WARNING)
from civicsetu_pipelines.store.database import EmbeddedPostgres
server = EmbeddedPostgres(sys.argv[1])
uri = server.start()
print(json.dumps({"uri": uri, "pid": server.status()["pid"], "me": os.getpid()}))
"""


def _start_in_child(state_dir: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _START_IN_CHILD, str(state_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _select_one(url: str) -> int:
    with connect(url) as conn:
        row = conn.execute("SELECT 1").fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def scratch_db(pg_url: str) -> Iterator[str]:
    """A fresh, empty database on the session server, dropped afterwards."""
    name = f"scratch_{uuid.uuid4().hex[:12]}"
    assert ensure_database(pg_url, name) is True
    yield with_database(pg_url, name)
    with connect(pg_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# -- embedded server --------------------------------------------------------------------------


def test_embedded_start_status_stop_round_trip(pg_state_dir: Path) -> None:
    server = EmbeddedPostgres(pg_state_dir)
    before = server.status()
    assert before["running"] is False
    assert before["pid"] is None and before["uri"] is None
    with pytest.raises(RuntimeError):
        _ = server.url

    uri = server.start()
    try:
        assert uri.startswith("postgresql://postgres:@/postgres?host=")
        assert uri == server.url
        status = server.status()
        assert status["running"] is True
        assert status["initialized"] is True
        assert status["data_dir"] == str(pg_state_dir / "pgdata")
        assert status["uri"] == uri
        assert str(status["server_version"]).startswith("18.")
        pid = status["pid"]
        assert isinstance(pid, int)

        assert server.start() == uri  # idempotent: same server
        assert server.status()["pid"] == pid
        assert _select_one(uri) == 1
        # nothing of the package's runtime state may land in /tmp
        assert (pg_state_dir / "run" / "python_PostgresServer" / ".lockfile").exists()
    finally:
        assert server.stop() is True
    assert server.stop() is False  # idempotent
    after = server.status()
    assert after["running"] is False and after["pid"] is None

    # restart on the existing data directory
    assert server.start() == uri
    try:
        assert _select_one(uri) == 1
        assert server.status()["pid"] != pid
    finally:
        server.stop()


def test_server_outlives_the_process_that_started_it(pg_state_dir: Path) -> None:
    state = pg_state_dir
    # Two processes race to start the same server: one starts it, the other reuses it.
    children = [_start_in_child(state), _start_in_child(state)]
    outputs = [child.communicate(timeout=120) for child in children]
    assert all(child.returncode == 0 for child in children), [err for _, err in outputs]
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    server = EmbeddedPostgres(state)
    try:
        assert results[0]["uri"] == results[1]["uri"]
        assert results[0]["pid"] == results[1]["pid"]
        # both starters have exited; the server is still up and usable
        status = server.status()
        assert status["running"] is True
        assert status["pid"] == results[0]["pid"]
        assert status["pid"] not in {r["me"] for r in results}
        assert _select_one(status["uri"]) == 1
        # a later process reuses it rather than restarting it
        out, err = _start_in_child(state).communicate(timeout=120)
        assert json.loads(out.strip().splitlines()[-1])["pid"] == status["pid"], err
    finally:
        server.stop()
    assert server.status()["running"] is False


def test_start_recovers_after_the_postmaster_was_killed(pg_state_dir: Path) -> None:
    server = EmbeddedPostgres(pg_state_dir)
    uri = server.start()
    try:
        pid = server.status()["pid"]
        assert isinstance(pid, int)
        os.kill(pid, signal.SIGKILL)  # leaves a stale postmaster.pid (and a zombie until reaped)
        assert server.start() == uri
        assert server.status()["pid"] != pid
        assert _select_one(uri) == 1
    finally:
        server.stop()


def test_resolve_database_url_passes_external_url_through(tmp_path: Path) -> None:
    external = "postgresql://civic:s3cret@db.example.org:5433/civicsetu?sslmode=require"
    settings = dataclasses.replace(
        Settings.from_env(), state_dir=tmp_path / "state", database_url=external
    )
    assert resolve_database_url(settings) == external
    assert not (tmp_path / "state" / "pgdata").exists()  # nothing was started


# -- URLs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "postgresql://postgres:@/postgres?host=/srv/state/pgdata",
            "postgresql+psycopg2://postgres:@/dagster?host=/srv/state/pgdata",
        ),
        (
            "postgresql://civic:p%40ss@db.example.org:5433/civicsetu?sslmode=require",
            "postgresql+psycopg2://civic:p%40ss@db.example.org:5433/dagster?sslmode=require",
        ),
        ("postgres://u@localhost/app", "postgresql+psycopg2://u@localhost/dagster"),
        ("postgresql+psycopg://u@h:5432/app", "postgresql+psycopg2://u@h:5432/dagster"),
        ("postgresql://u@h", "postgresql+psycopg2://u@h/dagster"),
        (
            "postgresql://u@/app?host=/run/pg&dbname=app",
            "postgresql+psycopg2://u@/dagster?host=/run/pg",
        ),
    ],
)
def test_dagster_storage_url(url: str, expected: str) -> None:
    assert dagster_storage_url(url) == expected


def test_dagster_storage_url_rejects_other_schemes() -> None:
    with pytest.raises(ValueError):
        dagster_storage_url("mysql://u@h/db")


def test_ensure_database_is_idempotent(pg_url: str) -> None:
    name = f"ensure_{uuid.uuid4().hex[:12]}"
    try:
        assert ensure_database(pg_url, name) is True
        assert ensure_database(pg_url, name) is False
        assert _select_one(with_database(pg_url, name)) == 1
        # the psycopg2 flavour of the URL connects too (the +driver is dropped for libpq)
        assert _select_one(dagster_storage_url(pg_url, name)) == 1
    finally:
        with connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


# -- migrations ---------------------------------------------------------------------------------


def test_session_database_is_migrated(pg_url: str) -> None:
    assert apply_migrations(pg_url) == []  # the fixture applied everything already
    expected = {m.name: m.sha256 for m in discover_migrations()}
    assert "0001_core.sql" in expected
    with connect(pg_url) as conn:
        rows = conn.execute("SELECT filename, sha256, applied_at FROM schema_migrations").fetchall()
        recorded = {name: digest for name, digest, _ in rows}
        assert recorded == expected
        assert all(applied_at is not None for _, _, applied_at in rows)
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            ).fetchall()
        }
        assert {"documents", "document_units", "schema_migrations"} <= tables
        assert conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()


def test_migrations_apply_once_then_nothing(scratch_db: str, tmp_path: Path) -> None:
    migrations = tmp_path / "sql"
    shutil.copytree(MIGRATIONS_DIR, migrations)
    (migrations / "9001_extra.sql").write_text(
        "CREATE TABLE extra (id int primary key);\nINSERT INTO extra VALUES (1), (2);\n"
    )
    names = sorted(p.name for p in migrations.glob("*.sql"))

    assert apply_migrations(scratch_db, migrations) == names
    assert apply_migrations(scratch_db, migrations) == []
    with connect(scratch_db) as conn:
        rows = conn.execute("SELECT filename, sha256 FROM schema_migrations ORDER BY 1").fetchall()
        assert [r[0] for r in rows] == names
        extra_sha = hashlib.sha256((migrations / "9001_extra.sql").read_bytes()).hexdigest()
        assert dict(rows)["9001_extra.sql"] == extra_sha
        count = conn.execute("SELECT count(*) FROM extra").fetchone()
        assert count is not None and count[0] == 2


def test_changed_migration_checksum_raises(scratch_db: str, tmp_path: Path) -> None:
    migrations = tmp_path / "sql"
    shutil.copytree(MIGRATIONS_DIR, migrations)
    apply_migrations(scratch_db, migrations)
    target = migrations / "0001_core.sql"
    target.write_text(target.read_text() + "\n-- edited after it was applied\n")
    with pytest.raises(MigrationChecksumError, match=r"0001_core\.sql"):
        apply_migrations(scratch_db, migrations)


def test_failed_migration_rolls_back(scratch_db: str, tmp_path: Path) -> None:
    migrations = tmp_path / "sql"
    migrations.mkdir()
    (migrations / "0001_ok.sql").write_text("CREATE TABLE ok_table (id int);")
    (migrations / "0002_bad.sql").write_text("CREATE TABLE half (id int);\nSELECT no_such_col;")
    with pytest.raises(Exception, match="0002_bad.sql"):
        apply_migrations(scratch_db, migrations)
    with connect(scratch_db) as conn:
        rows = conn.execute("SELECT filename FROM schema_migrations").fetchall()
        assert [r[0] for r in rows] == ["0001_ok.sql"]
        assert conn.execute("SELECT to_regclass('half')").fetchone() == (None,)


def test_concurrent_migration_runs_apply_each_file_once(scratch_db: str, tmp_path: Path) -> None:
    migrations = tmp_path / "sql"
    migrations.mkdir()
    (migrations / "0001_slow.sql").write_text("SELECT pg_sleep(0.3); CREATE TABLE slow (id int);")
    (migrations / "0002_next.sql").write_text("CREATE TABLE next_one (id int);")
    results: list[list[str]] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(apply_migrations(scratch_db, migrations))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert sorted(name for r in results for name in r) == ["0001_slow.sql", "0002_next.sql"]


# -- Dagster on Postgres --------------------------------------------------------------------------


def test_dagster_instance_on_postgres_stores_a_run(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dagster as dg
    from dagster_postgres import PostgresEventLogStorage, PostgresRunStorage

    from civicsetu_pipelines.operate.instance import (
        ENV_DAGSTER_ARTIFACTS,
        ENV_DAGSTER_HOME,
        ENV_DAGSTER_PG_URL,
        prepare_dagster_home,
    )

    for key in (ENV_DAGSTER_HOME, ENV_DAGSTER_PG_URL, ENV_DAGSTER_ARTIFACTS):
        monkeypatch.setenv(key, "")  # restored (or removed) when the test ends
    settings = dataclasses.replace(
        Settings.from_env(), state_dir=tmp_path / "state", database_url=pg_url
    )
    home = prepare_dagster_home(settings)
    assert home == settings.dagster_home
    assert os.environ[ENV_DAGSTER_HOME] == str(home)
    assert os.environ[ENV_DAGSTER_PG_URL] == dagster_storage_url(pg_url)
    assert (home / "dagster.yaml").read_bytes() == (
        REPO_ROOT / "deploy" / "dagster.yaml"
    ).read_bytes()
    mtime = (home / "dagster.yaml").stat().st_mtime_ns
    assert prepare_dagster_home(settings) == home
    assert (home / "dagster.yaml").stat().st_mtime_ns == mtime  # unchanged: not rewritten

    @dg.asset
    def trivial() -> int:
        return 42

    with dg.DagsterInstance.get() as instance:
        assert isinstance(instance.run_storage, PostgresRunStorage)
        assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
        queue = instance.get_concurrency_config().run_queue_config
        assert queue is not None and queue.max_concurrent_runs == 2
        result = dg.materialize([trivial], instance=instance)
        assert result.success
        run_id = result.run_id

    # a fresh instance (as another process would build) reads it back from Postgres
    with dg.DagsterInstance.get() as instance:
        run = instance.get_run_by_id(run_id)
        assert run is not None and run.is_success
        assert instance.get_latest_materialization_event(dg.AssetKey("trivial")) is not None

    with connect(with_database(pg_url, "dagster")) as conn:
        row = conn.execute("SELECT status FROM runs WHERE run_id = %s", (run_id,)).fetchone()
    assert row == ("SUCCESS",)

    # the instance a process runs jobs on holds its connections: not one per event written
    # (dagster-postgres' NullPool opened 5,564 in a cold materialization; issue 40)
    import sqlalchemy

    from civicsetu_pipelines.operate.runs import POOL_OVERFLOW, open_instance

    opened: list[int] = []
    with open_instance() as instance:
        for storage in (instance.run_storage, instance.event_log_storage):
            engine = storage._engine  # type: ignore[attr-defined]
            sqlalchemy.event.listen(engine, "connect", lambda *_: opened.append(1))
        events_before = len(instance.get_records_for_run(run_id).records)
        assert dg.materialize([trivial], instance=instance).success
    assert events_before > 10  # a run writes many events ...
    assert 0 < len(opened) <= 2 * (1 + POOL_OVERFLOW)  # ... over a few held connections

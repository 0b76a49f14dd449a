"""Celery workers over a real Redis (issue 17): `civicsetu workers start/stop/status` and
`civicsetu materialize --executor celery`. Real processes: the embedded Redis (Debian's
redis-server), dagster-celery workers, the embedded Postgres of a fresh state directory.

* two jurisdictions materialized on two workers give the rows (ids and text hashes) of the
  in-process run of the same jurisdictions, their steps ran on both workers, and a worker's
  process killed in the middle of a step makes the step run again and the run complete;
* SIGTERM to `workers start` stops the workers, the Redis and the Postgres it started, and it
  exits 0, within 30 s; `workers stop` does the same from another shell;
* a broker that cannot be reached is one clear error naming its URL, and no run hangs.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from civicsetu_pipelines.base.settings import DEFAULT_MIRROR
from civicsetu_pipelines_tests.conftest import cli_env

BIN = Path(sys.executable).parent
STOP_WITHIN_S = 30.0
# Two jurisdictions prove what every one would (steps on both workers, a killed step run again,
# the rows of the in-process run): the two with the fewest chunks, 60 and 109 (the second the UP
# scan, read from the tests' parse cache), so that the embedding step killed one second in is
# still running. The test alone took 69 s on Gujarat and Chandigarh (176 and 227 chunks), 50 s
# on these (BENCHMARKS.md, stop 64).
CELERY_JURISDICTIONS = ("KARNATAKA", "UTTAR_PRADESH")

pytestmark = [
    pytest.mark.skipif(
        shutil.which("redis-server") is None and not os.environ.get("CI"),
        reason="redis-server is not installed (scripts/setup.sh installs it)",
    ),
    pytest.mark.usefixtures("processes"),
]


def _civicsetu(
    env: dict[str, str], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "civicsetu"), *args], env=env, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


def _status(env: dict[str, str]) -> dict[str, Any]:
    done = _civicsetu(env, "workers", "status", "--json")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def _wait_answering(
    env: dict[str, str], count: int, proc: subprocess.Popen[bytes]
) -> dict[str, Any]:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert proc.poll() is None, "workers start exited early"
        status = _status(env)
        if sum(w["answers"] for w in status["workers"]) == count:
            return status
        time.sleep(1)
    raise AssertionError(f"{count} workers did not answer: {_status(env)}")


def _postgres_pids(state: Path) -> set[int]:
    pids = set()
    for process in psutil.process_iter(["pid", "cmdline"]):
        with_state = " ".join(process.info["cmdline"] or [])
        if "postgres" in with_state and str(state / "pgdata") in with_state:
            pids.add(process.info["pid"])
    return pids


def _all_gone(pids: set[int], within: float) -> set[int]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        left = {p for p in pids if psutil.pid_exists(p)
                and psutil.Process(p).status() != psutil.STATUS_ZOMBIE}  # fmt: skip
        if not left:
            return set()
        time.sleep(0.2)
    return left


def test_sigterm_to_workers_start_stops_everything_it_started(
    tmp_path: Path, pg_state_dir: Path
) -> None:
    state = pg_state_dir  # not under tmp_path: see conftest.pg_state_root
    env = cli_env(state)
    log = (tmp_path / "workers.log").open("w")
    proc = subprocess.Popen([str(BIN / "civicsetu"), "workers", "start", "-n", "2"], env=env,
                            stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        status = _wait_answering(env, 2, proc)
        assert status["embedded_broker"] is True
        started = {proc.pid} | {c.pid for c in psutil.Process(proc.pid).children(recursive=True)}
        started |= {w["pid"] for w in status["workers"]}
        for worker in status["workers"]:  # their pool processes
            started |= {c.pid for c in psutil.Process(worker["pid"]).children(recursive=True)}
        redis = json.loads((state / "run" / "redis.json").read_text())["pid"]
        started |= {redis} | _postgres_pids(state)
        assert len(started) >= 6  # command, Redis, 2 workers, 2 pool processes, Postgres
        began = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=STOP_WITHIN_S) == 0
        left = _all_gone(started, STOP_WITHIN_S - (time.monotonic() - began))
        assert not left, f"still running after SIGTERM: {left}"
        assert not (state / "run" / "workers.json").exists()
        assert _status(env)["running"] is False
        assert json.loads(_civicsetu(env, "db", "status", "--json").stdout)["running"] is False
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
    text = (tmp_path / "workers.log").read_text()
    assert "stopped by SIGTERM" in text and "embedded Redis stopped" in text, text


def test_unreachable_broker_is_one_clear_error(pg_state_dir: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"redis://127.0.0.1:{port}/0"  # nothing listens there
    env = {**cli_env(pg_state_dir), "CIVICSETU_CELERY_BROKER_URL": url}
    began = time.monotonic()
    done = _civicsetu(env, "materialize", "-j", "KARNATAKA", "--executor", "celery",
                      timeout=120)  # fmt: skip
    assert done.returncode == 1
    assert f"the Celery broker {url} cannot be reached" in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr
    assert time.monotonic() - began < 60
    # workers refuse to start on it too, naming it
    start = _civicsetu(env, "workers", "start", "-n", "1", timeout=120)
    assert start.returncode == 1 and url in " ".join(start.stderr.split()), start.stderr
    _civicsetu(env, "db", "stop")  # materialize leaves the embedded Postgres running, by design


def _rows(url: str, jurisdictions: tuple[str, ...]) -> set[tuple[str, str, str, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT jurisdiction, chunk_id::text, row_sha256, content_sha256 FROM legal_chunks "
            "WHERE status = %s AND jurisdiction = ANY(%s)",
            ("current", list(jurisdictions)),
        ).fetchall()
    return {(str(a), str(b), str(c), str(d)) for a, b, c, d in rows}


def _step_starts(url: str, step: str) -> list[tuple[str, int]]:
    """(run id, pid) of every STEP_START of ``step`` in Dagster's event log, oldest first."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT run_id, event FROM event_logs WHERE dagster_event_type = %s AND step_key = %s "
            "ORDER BY id",
            ("STEP_START", step),
        ).fetchall()
    return [(str(run), int(json.loads(event)["dagster_event"]["pid"])) for run, event in rows]


def test_celery_materialization_matches_in_process_and_survives_a_killed_worker(
    tmp_path: Path, pg_state_dir: Path, corpus_store: Any, packaged_models_dir: Path
) -> None:
    if not DEFAULT_MIRROR.is_dir():
        pytest.fail(f"corpus missing at {DEFAULT_MIRROR}")
    state = pg_state_dir  # not under tmp_path: see conftest.pg_state_root
    env = cli_env(state)
    started = _civicsetu(env, "workers", "start", "-n", "2", "--detach", timeout=240)
    assert started.returncode == 0, started.stderr
    names = sorted(w["name"] for w in _status(env)["workers"])
    try:
        log = (tmp_path / "materialize.log").open("w")
        selected = [arg for name in CELERY_JURISDICTIONS for arg in ("-j", name)]
        run = subprocess.Popen(
            [str(BIN / "civicsetu"), "materialize", *selected, "--executor", "celery", "--json",
             "--no-reports"],
            env=env, stdout=subprocess.PIPE, stderr=log, text=True,
        )  # fmt: skip
        db = _civicsetu(env, "db", "url").stdout.strip()
        dagster_db = make_conninfo(db, dbname="dagster")  # Dagster's runs and events
        # Kill the process running the first embedding step, in the middle of it.
        deadline = time.monotonic() + 600
        killed = None
        while killed is None and time.monotonic() < deadline and run.poll() is None:
            try:
                starts = _step_starts(dagster_db, "chunk_embeddings")
            except psycopg.Error:
                starts = []
            if starts:
                killed = starts[0]
                time.sleep(1.0)
                os.kill(killed[1], signal.SIGKILL)
            time.sleep(0.2)
        assert killed is not None, "no embedding step started"
        out, _ = run.communicate(timeout=1800)
        log.close()
        assert run.returncode == 0, (tmp_path / "materialize.log").read_text()[-3000:]
        outcomes = json.loads(out)
        assert all(o["status"] == "ok" and o["executor"] == "celery" for o in outcomes), outcomes
        assert sorted({w for o in outcomes for w in o["workers"]}) == names
        # the killed step ran again in the same run, on a live process, and the run completed
        again = [pid for run_id, pid in _step_starts(dagster_db, "chunk_embeddings")
                 if run_id == killed[0]]  # fmt: skip
        assert len(again) == 2 and again[0] == killed[1] and again[1] != killed[1], again
        assert sorted(o["jurisdiction"] for o in outcomes) == sorted(CELERY_JURISDICTIONS)
        mine = _rows(db, CELERY_JURISDICTIONS)
        assert {row[0] for row in mine} == set(CELERY_JURISDICTIONS)
        assert mine == _rows(corpus_store.database_url, CELERY_JURISDICTIONS)
        reports = state / "reports"
        assert not (reports / "answers.json").exists()  # --no-reports: ingestion only
        assert not (reports / "eval" / "report.html").exists()
    finally:
        stopped = _civicsetu(env, "workers", "stop", timeout=STOP_WITHIN_S + 30)
    assert stopped.returncode == 0, stopped.stderr
    assert _status(env)["running"] is False
    assert not (state / "run" / "redis.json").exists()
    _civicsetu(env, "db", "stop")

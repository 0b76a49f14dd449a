"""Faults survived, nothing lost (issue 17), with real processes and the embedded Postgres of a
state directory of their own (shared by the scenarios, as a user's is):

* `civicsetu materialize` killed with SIGKILL while its load step runs: the rows served before
  are still served; its run, left STARTED, is marked failed (with the reason in its event log)
  by the next `materialize`, which repairs the jurisdiction; ``orphaned_runs_sensor`` does the
  same from the daemon;
* two `materialize` of the same jurisdiction at once: both end, the rows are those of one run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from civicsetu_pipelines.base.settings import DEFAULT_MIRROR
from civicsetu_pipelines_tests.conftest import Processes, cli_env

BIN = Path(sys.executable).parent
JURISDICTION = "KARNATAKA"


@pytest.fixture(scope="module")
def env(
    pg_state_root: Path, packaged_models_dir: Path, processes: Processes
) -> Iterator[dict[str, str]]:
    """One state directory for the fault scenarios: each starts from whatever the one before
    left, which is what a user's state directory sees too (every run below forces its run)."""
    if not DEFAULT_MIRROR.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"corpus missing at {DEFAULT_MIRROR} (CI must have ../shared)")
        pytest.skip(f"corpus missing at {DEFAULT_MIRROR}")
    values = cli_env(pg_state_root / "faults")  # not under tmp_path: see pg_state_root
    yield values
    subprocess.run([str(BIN / "civicsetu"), "db", "stop"], env=values, capture_output=True,
                   timeout=300)  # fmt: skip


def _materialize(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "civicsetu"), "materialize", "-j", JURISDICTION, "--json", "--no-reports",
         *args],
        env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip


def _urls(env: dict[str, str]) -> tuple[str, str]:
    url = subprocess.run([str(BIN / "civicsetu"), "db", "url"], env=env, capture_output=True,
                         text=True, timeout=60).stdout.strip()  # fmt: skip
    return url, make_conninfo(url, dbname="dagster")


def _rows(url: str) -> list[tuple[str, str]]:
    """The jurisdiction's current rows (chunk id, row hash), sorted; a duplicate stays."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT chunk_id::text, row_sha256 FROM legal_chunks "
            "WHERE jurisdiction = %s AND status = %s ORDER BY 1, 2",
            (JURISDICTION, "current"),
        ).fetchall()
    return [(str(a), str(b)) for a, b in rows]


def _run_status(dagster_url: str, run_id: str) -> str:
    with psycopg.connect(dagster_url) as conn:
        row = conn.execute("SELECT status FROM runs WHERE run_id = %s", (run_id,)).fetchone()
    assert row is not None, run_id
    return str(row[0])


def _step_started(dagster_url: str, step: str, after: float) -> str | None:
    with psycopg.connect(dagster_url) as conn:
        row = conn.execute(
            "SELECT run_id FROM event_logs WHERE dagster_event_type = %s AND step_key = %s "
            "AND timestamp > to_timestamp(%s) AT TIME ZONE 'UTC' ORDER BY id DESC LIMIT 1",
            ("STEP_START", step, after),
        ).fetchone()
    return None if row is None else str(row[0])


def test_materialize_killed_mid_load_loses_nothing_and_its_run_is_marked_failed(
    env: dict[str, str], tmp_path: Path
) -> None:
    first = _materialize(env)
    assert first.returncode == 0, first.stderr[-2000:]
    url, dagster_url = _urls(env)
    before = _rows(url)
    assert before

    began = time.time()
    log = tmp_path / "killed.log"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [str(BIN / "civicsetu"), "materialize", "-j", JURISDICTION, "--force",
             "--no-reports"],
            env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
        )  # fmt: skip
    run_id = None
    deadline = time.monotonic() + 600
    while run_id is None and time.monotonic() < deadline:
        ended = proc.poll() is not None
        run_id = _step_started(dagster_url, "legal_chunks", began)
        if ended:
            break
        time.sleep(0.05)
    assert run_id is not None, f"the load step never started: {log.read_text()[-3000:]}"
    os.killpg(proc.pid, signal.SIGKILL)  # the CLI and its model process, mid-load
    proc.wait(timeout=30)
    assert _run_status(dagster_url, run_id) == "STARTED"  # what Dagster alone would keep showing
    assert _rows(url) == before  # the rows served before are still served

    repair = _materialize(env)
    assert repair.returncode == 0, repair.stderr[-2000:]
    said = " ".join(repair.stderr.split())
    assert f"run {run_id} marked failed" in said and "is gone" in said, said[-2000:]
    assert _run_status(dagster_url, run_id) == "FAILURE"
    with psycopg.connect(dagster_url) as conn:
        events = [json.loads(e)["dagster_event"] for (e,) in conn.execute(
            "SELECT event FROM event_logs WHERE run_id = %s AND dagster_event_type = %s",
            (run_id, "PIPELINE_FAILURE"),
        ).fetchall()]  # fmt: skip
    assert events and "is gone" in json.dumps(events)
    outcome = json.loads(repair.stdout)[0]
    assert outcome["status"] == "ok"  # not "up to date": its last run failed, so it runs again
    assert _rows(url) == before


def test_two_materializations_of_one_jurisdiction_at_once(env: dict[str, str]) -> None:
    runs = [
        subprocess.Popen(
            [
                str(BIN / "civicsetu"),
                "materialize",
                "-j",
                JURISDICTION,
                "--json",
                "--force",
                "--no-reports",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for _ in range(2)
    ]
    results = [run.communicate(timeout=900) for run in runs]
    for run, (_out, err) in zip(runs, results, strict=True):
        assert run.returncode == 0, err[-2000:]
    url, _ = _urls(env)
    rows = _rows(url)
    assert rows and len({chunk for chunk, _ in rows}) == len(rows)  # one current row a chunk
    again = _materialize(env, "--force")  # a third, alone, changes nothing
    assert again.returncode == 0
    assert _rows(url) == rows

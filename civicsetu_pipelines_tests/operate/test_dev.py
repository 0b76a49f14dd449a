"""`civicsetu dev` starts the embedded Postgres, the webserver and the daemon together and stops
them together on Ctrl-C (issue 7), leaving no process it started -- not ``dg dev``, the
webserver, the daemon, the code servers, nor the embedded Postgres (issue 17). Real processes, a
real embedded Postgres, a real port. SIGTERM (systemd, ``docker stop``, Kubernetes) and SIGHUP
(the terminal closed) take the same path, ``operate.run_until_stopped``: ``test_services.py``
sends each of them to a command's own pid, which costs a second, not a Dagster start."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from civicsetu_pipelines.base.settings import (
    ENV_ENABLE_SEED_STATES,
    ENV_MIRROR_DIRS,
    ENV_OFFLINE,
    ENV_STATE_DIR,
)
from civicsetu_pipelines.store.database import EmbeddedPostgres

pytestmark = pytest.mark.usefixtures("processes")

BIN = Path(sys.executable).parent
DAEMON_HEALTH = (
    "{ instance { daemonHealth { allDaemonStatuses { daemonType healthy required } } } }"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _postgres_running(env: dict[str, str]) -> bool:
    out = subprocess.run([str(BIN / "civicsetu"), "db", "status", "--json"], env=env,
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    return bool(json.loads(out.stdout)["running"])


STARTUP_S = 240.0
STOP_S = 30.0  # the bound


def _alive(pids: list[int]) -> list[str]:
    out = []
    for pid in pids:
        try:
            process = psutil.Process(pid)
            if process.status() != psutil.STATUS_ZOMBIE:
                out.append(f"{pid} {' '.join(process.cmdline())[:120]}")
        except psutil.NoSuchProcess:
            continue
    return out


def test_dev_starts_everything_and_ctrl_c_stops_everything(
    tmp_path: Path, pg_state_dir: Path
) -> None:
    # The state (its embedded Postgres) outside tmp_path: see conftest.pg_state_root.
    state, mirror = pg_state_dir, tmp_path / "mirror"
    mirror.mkdir()
    env = {**os.environ, ENV_STATE_DIR: str(state), ENV_MIRROR_DIRS: str(mirror),
           ENV_OFFLINE: "1", ENV_ENABLE_SEED_STATES: "0", "HF_HUB_OFFLINE": "1"}  # fmt: skip
    env.pop("CIVICSETU_DATABASE_URL", None)  # its own embedded Postgres, started by dev
    env.pop("DAGSTER_HOME", None)
    port = _free_port()
    log = (tmp_path / "dev.log").open("w")
    command = [str(BIN / "civicsetu"), "dev", "--port", str(port)]
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    started: list[int] = []
    try:
        deadline = time.monotonic() + STARTUP_S
        healthy: set[str] = set()
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                reply = httpx.post(f"{base}/graphql", json={"query": DAEMON_HEALTH}, timeout=10)
                statuses = reply.json()["data"]["instance"]["daemonHealth"]["allDaemonStatuses"]
                healthy = {s["daemonType"] for s in statuses if s["healthy"]}
                if {"SCHEDULER", "SENSOR", "QUEUED_RUN_COORDINATOR"} <= healthy:
                    break
            except (httpx.HTTPError, KeyError, TypeError, ValueError):
                pass
            time.sleep(2)
        log.flush()
        assert {"SCHEDULER", "SENSOR", "QUEUED_RUN_COORDINATOR"} <= healthy, (
            tmp_path / "dev.log"
        ).read_text()[-2000:]
        assert _postgres_running(env)
        # Everything it started: dg dev, the webserver, the daemon, the code servers.
        started = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
        names = " ".join(" ".join(psutil.Process(p).cmdline()) for p in started
                         if psutil.pid_exists(p))  # fmt: skip
        assert "dagster._daemon" in names and "dagster_webserver" in names, names
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal sends
        try:
            code = proc.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        finally:
            log.close()
            left = _alive(started)  # asserted below, once nothing is left running
            for pid in started:
                with contextlib.suppress(psutil.NoSuchProcess):
                    psutil.Process(pid).kill()
    assert code == 0, (tmp_path / "dev.log").read_text()[-2000:]
    assert not left, left
    text = (tmp_path / "dev.log").read_text()
    assert "stopped by SIGINT" in text and "embedded Postgres stopped" in text, text[-2000:]
    assert not _postgres_running(env)
    assert not EmbeddedPostgres(state).status()["running"]
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0  # the webserver is gone

"""`civicsetu dev` starts the embedded Postgres, the webserver and the daemon together and stops
them together on Ctrl-C (issue 7)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

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


def test_dev_starts_everything_and_ctrl_c_stops_everything(tmp_path: Path) -> None:
    env = {**os.environ, "CIVICSETU_STATE_DIR": str(tmp_path / "state"), "CIVICSETU_OFFLINE": "1"}
    env.pop("CIVICSETU_DATABASE_URL", None)
    env.pop("DAGSTER_HOME", None)
    port = _free_port()
    log = (tmp_path / "dev.log").open("w")
    command = [str(BIN / "civicsetu"), "dev", "--port", str(port)]
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
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
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal sends
        try:
            code = proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        log.close()
    assert code == 0, (tmp_path / "dev.log").read_text()[-2000:]
    text = (tmp_path / "dev.log").read_text()
    assert "embedded Postgres stopped" in text
    assert not _postgres_running(env)
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0  # the webserver is gone

"""`run_until_stopped`, which `civicsetu dev` and `civicsetu workers start` wait in: each stop
signal a supervisor or a terminal sends (SIGTERM, SIGINT, SIGHUP) to the command's own pid stops
the service's whole session, grandchildren included, and is named back. Real processes, no
Dagster: what `test_dev.py` proves once for the whole `civicsetu dev`, here for every signal."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

# A service that starts a child of its own, then waits: what `dg dev` is to its webserver.
SERVICE = (
    "import subprocess, sys, time; "
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
    "time.sleep(600)"
)
# The command: runs the service until stopped, then says what it saw.
COMMAND = """
import json, sys
from civicsetu_pipelines.operate import run_until_stopped
code, stopped_by = run_until_stopped([sys.executable, "-c", sys.argv[1]], cwd=sys.argv[2],
                                     grace=5.0)
print(json.dumps({"code": code, "stopped_by": stopped_by}), flush=True)
"""


def _session(leader: int) -> list[int]:
    """The pids of the live processes the command started (its service's session)."""
    out = []
    for child in psutil.Process(leader).children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                out.append(child.pid)
        except psutil.NoSuchProcess:
            continue
    return out


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP],
                         ids=["SIGTERM", "SIGINT", "SIGHUP"])  # fmt: skip
def test_each_stop_signal_stops_the_service_and_every_process_it_started(
    tmp_path: Path, stop: signal.Signals
) -> None:
    command = subprocess.Popen([sys.executable, "-c", COMMAND, SERVICE, str(tmp_path)],
                               stdout=subprocess.PIPE, text=True)  # fmt: skip
    started: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while len(started := _session(command.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(started) == 2, started  # the service and its child
        command.send_signal(stop)
        out, _ = command.communicate(timeout=30)
        assert json.loads(out)["stopped_by"] == int(stop), out
        left = [pid for pid in started if psutil.pid_exists(pid)
                and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]  # fmt: skip
        assert not left, left
    finally:
        if command.poll() is None:
            command.kill()
        for pid in started:
            if psutil.pid_exists(pid):
                psutil.Process(pid).kill()

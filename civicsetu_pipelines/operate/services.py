"""Services this process starts, stopped together: nothing started here outlives it.

A service (``dg dev``, which starts the webserver, the daemon and their code servers; a Celery
worker; the embedded Redis) runs
in a session of its own, so a signal meant for the whole of it reaches every process of it and
nothing else. :func:`run_until_stopped` waits until the service exits or this process receives
SIGTERM (systemd, ``docker stop``, Kubernetes), SIGINT (Ctrl-C) or SIGHUP (the terminal closed),
then stops the service: SIGINT first (``dg dev``'s own graceful shutdown), SIGTERM after
``grace`` seconds, SIGKILL after as many again, and finally any process still in the service's
session (a code server whose parent died first) is killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def session_processes(session_id: int) -> list[int]:
    """The pids of the live processes in session ``session_id`` (zombies left out)."""
    import psutil

    pids = []
    for process in psutil.process_iter(["pid", "status"]):
        try:
            if process.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if os.getsid(process.info["pid"]) == session_id:
                pids.append(process.info["pid"])
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return pids


@contextlib.contextmanager
def stop_signals(on_stop: Callable[[int], None]) -> Iterator[None]:
    """Call ``on_stop(signum)`` on SIGTERM, SIGINT or SIGHUP inside the block; the previous
    handlers are restored after it."""
    previous = {sig: signal.signal(sig, lambda signum, _frame: on_stop(signum))
                for sig in STOP_SIGNALS}  # fmt: skip
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def stop_session(process: subprocess.Popen[bytes], grace: float = 20.0) -> None:
    """Stop ``process`` (a session leader) and everything in its session: SIGINT, then SIGTERM,
    then SIGKILL, each given ``grace`` seconds; then any straggler of the session is killed."""
    session = process.pid
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(session, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=grace)
        if process.poll() is not None and not session_processes(session):
            return
    deadline = time.monotonic() + grace
    while (left := session_processes(session)) and time.monotonic() < deadline:
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)


def stop_sessions(processes: Sequence[subprocess.Popen[bytes]], grace: float = 20.0) -> None:
    """:func:`stop_session` for each of ``processes``, side by side: stopping N services takes
    the time of the slowest, not the sum."""
    threads = [
        threading.Thread(target=stop_session, args=(process, grace)) for process in processes
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def run_until_stopped(
    command: Sequence[str],
    cwd: Path,
    grace: float = 20.0,
    env: Mapping[str, str] | None = None,
) -> tuple[int, int | None]:
    """Run ``command`` in a session of its own until it exits or this process is asked to stop;
    stop the whole session either way. Returns the service's exit code and the signal that
    stopped this process (None when the service ended on its own)."""
    process = subprocess.Popen(list(command), cwd=cwd, start_new_session=True,
                               env=None if env is None else dict(env))  # fmt: skip
    asked = threading.Event()
    received: list[int] = []

    def on_stop(signum: int) -> None:
        received.append(signum)
        asked.set()

    try:
        with stop_signals(on_stop):
            while process.poll() is None and not asked.wait(0.2):
                pass
    finally:
        stop_session(process, grace)
    return int(process.returncode or 0), (received[0] if received else None)

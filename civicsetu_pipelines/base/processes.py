"""Whether a process runs: one answer for the embedded Postgres, Redis, workers and runs."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path


def process_exists(pid: int) -> bool:
    """Whether the kernel still has process ``pid``, a zombie (exited, not yet reaped) included:
    what Postgres itself checks before it discards a ``postmaster.pid``."""
    if pid <= 0:
        raise ValueError(f"not a process id: {pid}")  # os.kill would address a process group
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it runs, as another user
    return True


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host: it exists and is not a zombie."""
    if not process_exists(pid):
        return False
    with contextlib.suppress(OSError, IndexError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return False
    return True


def ended_within(pid: int, seconds: float, poll: float = 0.05) -> bool:
    """Whether process ``pid`` has ended (a zombie counts as ended), waiting up to ``seconds``
    for it: a killed process's pipes and sockets close a moment before the kernel marks it."""
    deadline = time.monotonic() + seconds
    while process_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll)
    return True

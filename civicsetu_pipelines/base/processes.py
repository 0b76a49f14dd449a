"""Whether a process runs: one answer for the embedded Postgres, Redis, workers and runs."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host; a zombie (exited, not yet reaped) does not."""
    if pid <= 0:
        raise ValueError(f"not a process id: {pid}")  # os.kill would address a process group
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it runs, as another user
    with contextlib.suppress(OSError, IndexError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return False
    return True

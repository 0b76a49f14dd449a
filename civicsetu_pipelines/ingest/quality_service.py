"""The checks' validator shared by the commands of one state directory: where it listens, how a
command starts it, connects to it or stops it (:mod:`~civicsetu_pipelines.ingest.quality_process`
is the validator itself and the client that asks it).

Apart from the validator so that ``civicsetu documents add``, which only starts it, imports
neither pandas nor the rules: a few standard modules, no more.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from civicsetu_pipelines.base import ended_within, process_alive

log = logging.getLogger(__name__)

VALIDATOR_MODULE = "civicsetu_pipelines.ingest.quality_process"
_CONNECT_WAIT_S = 30.0  # its interpreter and pandas import before it listens (~1 s here)
_STOP_WAIT_S = 5.0
_SOCKET_PATH_MAX = 100  # a Unix socket's path: 108 bytes with its NUL on Linux; a margin


class ValidatorError(RuntimeError):
    """The validator process ended, did not start, or answered with an error."""


def code_fingerprint() -> str:
    """This code's version, as far as a validator's answers go: the rules' interpreter, the
    validator and this module (their sources), the kinds the labels are read by, the library's
    version and the interpreter running them. A validator started by other code is never
    asked: it idles out."""
    from importlib import metadata

    here = Path(__file__)
    digest = hashlib.sha256(sys.executable.encode())
    digest.update(metadata.version("great_expectations").encode())
    for path in (*(here.with_name(n) for n in ("quality.py", "quality_process.py", here.name)),
                 here.parents[1] / "data" / "kinds.yaml"):  # fmt: skip
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def shared_paths(run_dir: Path) -> tuple[Path, Path, Path]:
    """The shared validator's socket, pid file and log (the last two under ``run_dir``)."""
    fingerprint = code_fingerprint()
    stem = run_dir / f"validator-{fingerprint}"
    return socket_path(run_dir, fingerprint), stem.with_suffix(".pid"), stem.with_suffix(".log")


def socket_path(run_dir: Path, fingerprint: str) -> Path:
    """Where the validator of ``fingerprint`` listens: under ``run_dir``, unless that path is
    longer than a Unix socket's may be (~107 bytes; a deep state directory, a test's), then in
    the user's own directory under the system's temporary one, named by ``run_dir``'s hash."""
    sock = run_dir / f"validator-{fingerprint}.sock"
    if len(os.fsencode(sock)) <= _SOCKET_PATH_MAX:
        return sock
    short = Path(tempfile.gettempdir()) / f"civicsetu-{os.getuid()}"
    short.mkdir(mode=0o700, exist_ok=True)
    mode = short.lstat()
    if mode.st_uid != os.getuid() or mode.st_mode & 0o077 or not stat.S_ISDIR(mode.st_mode):
        raise ValidatorError(f"{short} is not this user's private directory: no socket there")
    digest = hashlib.sha256(os.fsencode(run_dir.resolve())).hexdigest()[:16]
    return short / f"validator-{digest}-{fingerprint}.sock"


def connect(run_dir: Path, idle_s: float) -> tuple[socket.socket, int, Path]:
    """A connection to ``run_dir``'s shared validator (started now if none listens: it imports
    the library while the command goes on, and its first answer waits for that), its pid and
    its log."""
    sock, pid_file, log = shared_paths(run_dir)
    found = _reach(sock, pid_file)
    if found is None:
        with _spawn_lock(run_dir):
            found = _reach(sock, pid_file)
            if found is None:
                proc = _spawn(run_dir, idle_s)
                found = _wait_for(sock, proc, log), proc.pid
    return (*found, log)


def warm_shared_validator(run_dir: Path, idle_s: float) -> None:
    """Start ``run_dir``'s shared validator unless one listens (or ``idle_s`` is 0); do not
    wait for it. Never the caller's failure: one that cannot start is logged, and the command
    that needs it starts its own."""
    if idle_s <= 0:
        return
    try:
        sock, pid_file, _ = shared_paths(run_dir)
        if _listening(sock, pid_file):
            return
        with _spawn_lock(run_dir):
            if not _listening(sock, pid_file):
                _spawn(run_dir, idle_s)
    except (OSError, ValidatorError) as exc:
        log.warning("the shared checks' validator was not started: %s", exc)


def stop_shared_validators(run_dir: Path) -> list[int]:
    """Stop every shared validator of ``run_dir`` (of any code's version): their pids."""
    stopped = []
    for pid_file in sorted(run_dir.glob("validator-*.pid")):
        try:
            pid = int(pid_file.read_text())
        except (OSError, ValueError):
            pid = -1
        if pid > 0 and process_alive(pid) and VALIDATOR_MODULE in _cmdline(pid):
            os.kill(pid, signal.SIGTERM)
            if not ended_within(pid, _STOP_WAIT_S):
                os.kill(pid, signal.SIGKILL)
            stopped.append(pid)
        pid_file.unlink(missing_ok=True)
        with contextlib.suppress(ValidatorError):  # no private directory: no socket there
            socket_path(run_dir, pid_file.stem.removeprefix("validator-")).unlink(missing_ok=True)
    return stopped


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _connect(sock: Path) -> socket.socket | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(sock))
    except (FileNotFoundError, ConnectionRefusedError):
        conn.close()
        return None
    return conn


def _reach(sock: Path, pid_file: Path) -> tuple[socket.socket, int] | None:
    """A connection to the validator listening on ``sock`` and its pid; None when none does.
    A validator killed a moment ago may still accept on its socket while the kernel closes it:
    one whose pid is no longer alive is not reached."""
    conn = _connect(sock)
    if conn is None:
        return None
    try:
        pid = int(pid_file.read_text())
    except (OSError, ValueError):
        pid = -1
    if pid > 0 and process_alive(pid):
        return conn, pid
    conn.close()
    return None


def _listening(sock: Path, pid_file: Path) -> bool:
    found = _reach(sock, pid_file)
    if found is None:
        return False
    found[0].close()
    return True


@contextlib.contextmanager
def _spawn_lock(run_dir: Path) -> Iterator[None]:
    """One command at a time decides whether to start the validator (and waits for it)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / "validator.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _spawn(run_dir: Path, idle_s: float) -> subprocess.Popen[bytes]:
    sock, pid_file, log = shared_paths(run_dir)
    sock.unlink(missing_ok=True)  # a socket nothing listens on: its validator is gone
    with open(log, "ab") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", VALIDATOR_MODULE, "--shared", str(sock), str(pid_file),
             str(idle_s)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
            start_new_session=True,  # not in the command's terminal: Ctrl-C stops the command
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip


def _wait_for(sock: Path, proc: subprocess.Popen[bytes], log: Path) -> socket.socket:
    """A connection to the validator just started, once it listens."""
    deadline = time.monotonic() + _CONNECT_WAIT_S
    while time.monotonic() < deadline:
        conn = _connect(sock)
        if conn is not None:
            return conn
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    try:
        said = " | ".join(log.read_text(errors="replace").strip().splitlines()[-5:])
    except OSError:
        said = "no log"
    raise ValidatorError(
        f"the shared checks' validator (pid {proc.pid}) did not listen on {sock} "
        f"(exit code {proc.poll()}): {said or 'nothing in its log'}"
    )

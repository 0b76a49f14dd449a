"""The checks' validator in a process of its own, importing Great Expectations while the run works.

Great Expectations takes ~4.4 s to import here (its expectation classes, scipy's statistics,
altair, SQLAlchemy), paid by every ``civicsetu materialize`` process at its first check: a third
of a one-document run. ``civicsetu materialize`` starts this validator first thing
(:func:`start_validator`); it imports the library and opens its context on the other core while
the command imports the definitions and the run reads and parses the documents, and every
:func:`~civicsetu_pipelines.ingest.quality.validate` of the process is then answered by it. A run
launched by the daemon or the UI needs none: its step processes fork from a server that imported
the library once (``defs/executors.py``); a process that never starts it validates in itself.

**Shared between commands.** On two cores the import is not free even on the other core: it is
four of the ~25 CPU-seconds of a one-document ``materialize``, taken from the model's encoding
and the run. So the validator outlives the command that started it: one per state directory and
version of this code, listening on a Unix socket under the state's ``run/`` directory (its pid
file and log beside it; :mod:`~civicsetu_pipelines.ingest.quality_service` starts, reaches and
stops it, and places the socket elsewhere for a state too deep for a socket's path), it answers
the commands that come after and exits after ``CIVICSETU_VALIDATOR_IDLE_S`` seconds (default
600) without one, when its socket or pid file is removed, or at ``civicsetu db stop``.
``civicsetu documents add`` starts it, so that it imports while the document is read and the
user turns to ``materialize``.
``CIVICSETU_VALIDATOR_IDLE_S=0``: each ``materialize`` starts a validator of its own (a child)
and stops it at its end, as before.

The protocol is one pickled ``(schema, frame)`` request and one pickled reply (on a child's
stdin and stdout, or on the socket): the rules' results, or the error the validation raised
(raised again here, with its traceback's text). Only the columns the schema's rules read are
sent, and only a frame of at most :data:`IN_PROCESS_ROWS` rows (a larger one is validated where
it is). A validator that ends early (killed, or the library failing to import) fails the check
that asked, naming the process and its last words; a child is stopped with the command (killed
and reaped), a shared one by its idle time, never left behind for good. The socket is the user's
alone (mode 0600, in the state directory or the user's 0700 one): only the user's own commands
send it pickles.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

import pandas as pd

from civicsetu_pipelines.base import ended_within
from civicsetu_pipelines.ingest import quality
from civicsetu_pipelines.ingest.quality import RuleResult, TableSchema
from civicsetu_pipelines.ingest.quality_service import ValidatorError, connect

log = logging.getLogger(__name__)

_EXIT_WAIT_S = 2.0
# A frame of more rows is validated in the asking process: sent, it would be a second copy in
# the validator, held there for the rest of the run (a 10,000-document state's chunks, ~1 GiB),
# and a run that large does not notice the library's import.
IN_PROCESS_ROWS = 20_000


class Validator:
    """A validator: :meth:`validate` asks it, :meth:`stop` lets it go. This class starts a child
    process at construction (killed and reaped by :meth:`stop`); :class:`SharedValidator` talks
    to the state directory's shared one."""

    def __init__(self) -> None:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop())
        self._proc = subprocess.Popen(
            [sys.executable, "-m", __name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._requests: IO[bytes] = self._proc.stdin
        self._replies: IO[bytes] = self._proc.stdout
        self._lock = threading.Lock()  # one request and its reply at a time

    @property
    def pid(self) -> int:
        return self._proc.pid

    def validate(self, schema: TableSchema, frame: pd.DataFrame) -> list[RuleResult]:
        if len(frame) > IN_PROCESS_ROWS:
            return quality.validate_here(schema, frame)
        columns = [c for c in dict.fromkeys(r.column for r in schema.rules) if c in frame.columns]
        try:
            with self._lock:
                pickle.dump((schema, frame[columns]), self._requests,
                            protocol=pickle.HIGHEST_PROTOCOL)  # fmt: skip
                self._requests.flush()
                reply = pickle.load(self._replies)
        except (BrokenPipeError, ConnectionError, EOFError, pickle.UnpicklingError) as exc:
            raise ValidatorError(
                f"the checks' validator process (pid {self.pid}) ended before it answered "
                f"for {schema.name}: {self._last_words()}"
            ) from exc
        kind, value = reply
        if kind == "error":
            raise ValidatorError(f"validating {schema.name} failed in the validator: {value}")
        results: list[RuleResult] = value
        return results

    def _last_words(self) -> str:
        try:  # its pipes close as it exits, a moment before its exit code is there to read
            code: int | None = self._proc.wait(timeout=_EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            code = None
        self._stderr.seek(0)
        said = _tail(self._stderr.read())
        return f"exit code {code}; {said}" if code is not None else said

    def stop(self) -> None:
        """End it now: it holds nothing to save, and an interpreter that imported Great
        Expectations takes ~0.8 s to tear itself down, which the command would wait for."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        for pipe in (self._proc.stdin, self._proc.stdout):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()
        self._stderr.close()


class SharedValidator(Validator):
    """A connection to the state directory's shared validator (``quality_service.connect``);
    :meth:`stop` closes the connection and leaves the validator to the next command."""

    def __init__(self, conn: socket.socket, pid: int, log: Path) -> None:
        self._conn = conn
        self._pid = pid
        self._log = log
        self._requests = conn.makefile("wb")
        self._replies = conn.makefile("rb")
        self._lock = threading.Lock()

    @property
    def pid(self) -> int:
        return self._pid

    def _last_words(self) -> str:
        # its socket closes as it exits, a moment before the kernel marks it ended
        alive = "gone" if ended_within(self._pid, _EXIT_WAIT_S, poll=0.02) else "still running"
        try:
            said = _tail(self._log.read_bytes())
        except OSError:
            said = "no log"
        return f"{alive}; {said} (log {self._log})"

    def stop(self) -> None:
        for stream in (self._requests, self._replies, self._conn):
            with contextlib.suppress(OSError):
                stream.close()


def _tail(said: bytes) -> str:
    lines = said.decode("utf-8", "replace").strip().splitlines()[-5:]
    return " | ".join(lines) or "nothing on stderr"


_ACTIVE: list[Validator] = []


def start_validator(run_dir: Path | None = None, idle_s: float = 0.0) -> Validator:
    """Start this process's validator (once) and route :func:`quality.validate` to it until
    :func:`stop_validator` or the process's exit: the shared one of ``run_dir`` (started if
    none answers) when ``idle_s`` > 0, else a child of this process. A shared one that cannot be
    started or reached (a validator that exits at once, no private directory for its socket) is
    reported in the log and a child serves instead."""
    if not _ACTIVE:
        validator: Validator | None = None
        if run_dir and idle_s > 0:
            try:
                validator = SharedValidator(*connect(run_dir, idle_s))
            except (ValidatorError, OSError) as exc:
                log.warning("the shared checks' validator is not available (%s); this command "
                            "starts its own", exc)  # fmt: skip
        validator = validator or Validator()
        _ACTIVE.append(validator)
        quality.route_validation(validator.validate)
        atexit.register(stop_validator)
    return _ACTIVE[0]


def stop_validator() -> None:
    """Stop the validator, if one runs; validation goes back to this process."""
    quality.route_validation(None)
    while _ACTIVE:
        _ACTIVE.pop().stop()


def serve(requests: IO[bytes], replies: IO[bytes], lock: threading.Lock | None = None) -> None:
    """The validator's loop: the library imported and its context opened first, then one reply
    per request until the end of ``requests`` (each validation under ``lock``, when given)."""
    quality.warm_up()
    while True:
        try:
            schema, frame = pickle.load(requests)
        except EOFError:
            return
        reply: tuple[str, Any]
        try:
            with lock or contextlib.nullcontext():
                reply = ("ok", quality.validate_here(schema, frame))
        except Exception as exc:  # answered, then raised again in the asking process
            import traceback

            reply = ("error", "".join(traceback.format_exception_only(exc)).strip())
        pickle.dump(reply, replies, protocol=pickle.HIGHEST_PROTOCOL)
        replies.flush()


def serve_shared(sock: Path, pid_file: Path, idle_s: float) -> None:
    """The shared validator: listening at once (a command connects and its first validation
    waits while the library imports), one thread per command, one validation at a time; it ends
    after ``idle_s`` seconds without a command, or when its socket or pid file is removed (its
    state directory gone)."""
    pid_file.write_text(str(os.getpid()))  # before it listens: a command reads it on connecting
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(sock))
    os.chmod(sock, 0o600)
    server.listen(16)
    bound = os.stat(sock).st_ino
    signal.signal(signal.SIGTERM, lambda *_: _leave(sock, pid_file, bound))
    ready = threading.Event()  # the library imported (by this thread, once)
    validating = threading.Lock()
    counting = threading.Lock()
    busy = [0, time.monotonic()]  # open connections, the last one's end

    def answer(conn: socket.socket) -> None:
        try:
            ready.wait()
            with conn, conn.makefile("rb") as requests, conn.makefile("wb") as replies:
                serve(requests, replies, validating)
        except OSError:
            pass  # the command went away mid-reply: its own error, not ours
        finally:
            with counting:
                busy[0] -= 1
                busy[1] = time.monotonic()

    def accept() -> None:
        while True:
            conn, _ = server.accept()
            with counting:
                busy[0] += 1
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    quality.warm_up()
    ready.set()
    while True:
        time.sleep(min(1.0, idle_s))
        try:
            ours = os.stat(sock).st_ino == bound and int(pid_file.read_text()) == os.getpid()
        except (OSError, ValueError):
            ours = False
        with counting:
            idle = busy[0] == 0 and time.monotonic() - busy[1] > idle_s
        if not ours or idle:
            _leave(sock, pid_file, bound)


def _leave(sock: Path, pid_file: Path, bound: int) -> None:
    """Remove this validator's socket and pid file (those still its own) and exit at once."""
    with contextlib.suppress(OSError):
        if os.stat(sock).st_ino == bound:
            sock.unlink()
    with contextlib.suppress(OSError, ValueError):
        if int(pid_file.read_text()) == os.getpid():
            pid_file.unlink()
    os._exit(0)  # the library's teardown (~0.8 s) saves nothing


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--shared":  # --shared SOCKET PID_FILE IDLE_S
        serve_shared(Path(sys.argv[2]), Path(sys.argv[3]), float(sys.argv[4]))
        return
    # the replies own the real stdout; anything the library prints goes to stderr
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    main()

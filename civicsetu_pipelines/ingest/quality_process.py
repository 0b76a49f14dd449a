"""The checks' validator in a process of its own, importing Great Expectations while the run works.

Great Expectations takes ~4.4 s to import here (its expectation classes, scipy's statistics,
altair, SQLAlchemy), paid by every ``civicsetu materialize`` process at its first check: a third
of a one-document run. ``civicsetu materialize`` starts this validator first thing
(:func:`start_validator`); it imports the library and opens its context on the other core while
the command imports the definitions and the run reads and parses the documents, and every
:func:`~civicsetu_pipelines.ingest.quality.validate` of the process is then answered by it. A run
launched by the daemon or the UI needs none: its step processes fork from a server that imported
the library once (``defs/executors.py``); a process that never starts it validates in itself.

The protocol is one pickled ``(schema, frame)`` request on the validator's stdin and one pickled
reply on its stdout: the rules' results, or the error the validation raised (raised again here,
with its traceback's text). Only the columns the schema's rules read are sent, and only a frame
of at most :data:`IN_PROCESS_ROWS` rows (a larger one is validated where it is). A validator that
ends early (killed, or the library failing to import) fails the check that asked, naming the
process and its last words; it is stopped with the command (killed and reaped), never left
behind.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import subprocess
import sys
import tempfile
import threading
from typing import IO, Any

import pandas as pd

from civicsetu_pipelines.ingest import quality
from civicsetu_pipelines.ingest.quality import RuleResult, TableSchema

_EXIT_WAIT_S = 2.0
# A frame of more rows is validated in the asking process: sent, it would be a second copy in
# the validator, held there for the rest of the run (a 10,000-document state's chunks, ~1 GiB),
# and a run that large does not notice the library's import.
IN_PROCESS_ROWS = 20_000


class ValidatorError(RuntimeError):
    """The validator process ended or answered with an error."""


class Validator:
    """One validator process, started at construction; :meth:`validate` asks it, :meth:`stop`
    ends it."""

    def __init__(self) -> None:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop())
        self._proc = subprocess.Popen(
            [sys.executable, "-m", __name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self._lock = threading.Lock()  # one request and its reply at a time on the pipes

    @property
    def pid(self) -> int:
        return self._proc.pid

    def validate(self, schema: TableSchema, frame: pd.DataFrame) -> list[RuleResult]:
        if len(frame) > IN_PROCESS_ROWS:
            return quality.validate_here(schema, frame)
        columns = [c for c in dict.fromkeys(r.column for r in schema.rules) if c in frame.columns]
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None and stdout is not None
        try:
            with self._lock:
                pickle.dump((schema, frame[columns]), stdin, protocol=pickle.HIGHEST_PROTOCOL)
                stdin.flush()
                reply = pickle.load(stdout)
        except (BrokenPipeError, EOFError, pickle.UnpicklingError) as exc:
            raise ValidatorError(
                f"the checks' validator process (pid {self._proc.pid}) ended before it answered "
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
        tail = self._stderr.read().decode("utf-8", "replace").strip().splitlines()[-5:]
        said = " | ".join(tail) or "nothing on stderr"
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


_ACTIVE: list[Validator] = []


def start_validator() -> Validator:
    """Start this process's validator (once) and route :func:`quality.validate` to it until
    :func:`stop_validator` or the process's exit."""
    if not _ACTIVE:
        validator = Validator()
        _ACTIVE.append(validator)
        quality.route_validation(validator.validate)
        atexit.register(stop_validator)
    return _ACTIVE[0]


def stop_validator() -> None:
    """Stop the validator, if one runs; validation goes back to this process."""
    quality.route_validation(None)
    while _ACTIVE:
        _ACTIVE.pop().stop()


def serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    """The validator's loop: the library imported and its context opened first, then one reply
    per request until the end of ``requests``."""
    quality.warm_up()
    while True:
        try:
            schema, frame = pickle.load(requests)
        except EOFError:
            return
        reply: tuple[str, Any]
        try:
            reply = ("ok", quality.validate_here(schema, frame))
        except Exception as exc:  # answered, then raised again in the asking process
            import traceback

            reply = ("error", "".join(traceback.format_exception_only(exc)).strip())
        pickle.dump(reply, replies, protocol=pickle.HIGHEST_PROTOCOL)
        replies.flush()


def main() -> None:
    # the replies own the real stdout; anything the library prints goes to stderr
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    main()

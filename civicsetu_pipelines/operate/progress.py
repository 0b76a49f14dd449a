"""What a run this process started is doing now, read from the Dagster event log while it runs.

``civicsetu materialize`` runs jobs in its own process (``execute_in_process``) and keeps the
console logger at WARNING, so without this a long run printed nothing between its first and
last line. :class:`RunWatcher` polls the instance (the command's own, from a thread: each read a
connection of its own, as the webserver's threads share one instance) for
the newest run this process started (its ``civicsetu/pid`` tag) and reports, through a
callback, each step as it starts (``step n/N``) and, every ``every_s`` seconds of a long step,
the step's last log message (a document n/N, a batch of embeddings), repeated with the step's
elapsed time after ``3 * every_s`` seconds without a new one.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

import dagster as dg

from civicsetu_pipelines.operate.runs import PID_TAG, open_instance

STEP_EVENTS = {"STEP_START", "STEP_SUCCESS", "STEP_FAILURE", "STEP_SKIPPED"}


@dataclass
class RunState:
    """The watched run as last read: the step running, steps started, its last message."""

    run_id: str = ""
    job: str = ""
    partition: str = ""
    step: str = ""
    started: int = 0
    message: str = ""
    step_since: float = 0.0


def step_of(key: str) -> str:
    """``section_chunks`` of a step key (an op name; a multi-asset's step key is its op's)."""
    return key.split("[", 1)[0]


class RunWatcher:
    """A thread that reports what this process's current run is doing (see the module).

    ``say(line, new_step)`` gets a line at every step start (``new_step`` True) and, while one
    step lasts, its newest log message at most every ``every_s`` seconds. ``steps`` is how many
    steps a run of the job takes (for ``n/N``); 0 when unknown."""

    def __init__(
        self,
        say: Callable[[str, bool], None],
        *,
        steps: Callable[[str], int] = lambda _job: 0,
        every_s: float = 10.0,
        poll_s: float = 1.0,
        instance: dg.DagsterInstance | None = None,
    ) -> None:
        self._say = say
        self._instance = instance  # None: one opened by the thread (its own connections)
        self._steps = steps
        self._every_s = every_s
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="civicsetu-progress", daemon=True)
        self.state = RunState()

    def __enter__(self) -> RunWatcher:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        try:
            with contextlib.ExitStack() as stack:
                instance = self._instance or stack.enter_context(open_instance())
                cursor: str | None = None
                said_at = 0.0
                said = ""
                while not self._stop.wait(self._poll_s):
                    cursor, said_at, said = self._poll(instance, cursor, said_at, said)
        except Exception as exc:  # progress is a courtesy: never the run's failure
            self._say(f"(progress unavailable: {type(exc).__name__}: {exc})", False)

    def _poll(
        self, instance: dg.DagsterInstance, cursor: str | None, said_at: float, said: str
    ) -> tuple[str | None, float, str]:
        runs = instance.get_runs(
            filters=dg.RunsFilter(
                tags={PID_TAG: str(os.getpid())}, statuses=[dg.DagsterRunStatus.STARTED]
            ),
            limit=1,
        )
        if not runs:
            return cursor, said_at, said
        run = runs[0]
        state = self.state
        if run.run_id != state.run_id:
            self.state = state = RunState(
                run.run_id, run.job_name, run.tags.get("dagster/partition", "")
            )
            cursor = None
        connection = instance.get_records_for_run(run.run_id, cursor=cursor, limit=500)
        new_step = False
        for record in connection.records:
            entry = record.event_log_entry
            event = entry.dagster_event
            if event is not None and event.event_type_value == "STEP_START":
                state.step = step_of(event.step_key or "")
                state.started += 1
                state.step_since = time.monotonic()
                state.message = ""
                new_step = True
            elif event is None and entry.user_message:
                state.message = entry.user_message
        now = time.monotonic()
        if new_step:
            self._say(self.line(), True)
            return connection.cursor, now, state.message
        quiet = now - said_at
        # a new message every every_s at most; the same one again after 3x that (a heartbeat
        # with the step's elapsed time: a scan's OCR logs nothing for minutes)
        if (
            state.step
            and quiet >= self._every_s
            and (state.message != said or quiet >= 3 * self._every_s)
        ):
            self._say(self.line(), False)
            return connection.cursor, now, state.message
        return connection.cursor, said_at, said

    def line(self) -> str:
        """``ingest_job GUJARAT: step 4/11 section_chunks (12 s): <its last message>``."""
        s = self.state
        total = self._steps(s.job)
        where = f"{s.job} {s.partition}".strip()
        count = f"{s.started}/{total}" if total else str(s.started)
        elapsed = time.monotonic() - s.step_since
        took = f" ({elapsed:.0f} s)" if elapsed >= 1 else ""
        message = f": {s.message}" if s.message else ""
        return f"{where}: step {count} {s.step}{took}{message}"

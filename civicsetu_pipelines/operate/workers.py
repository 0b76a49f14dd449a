"""Celery workers that run the steps of ``--executor celery`` runs: started, supervised and
stopped together with the broker this process started.

``serve_workers`` is what ``civicsetu workers start`` runs: the embedded Redis (unless
``CIVICSETU_CELERY_BROKER_URL`` names a broker), then N workers, each a session of its own
(``celery -A civicsetu_pipelines.operate.celery_app worker``, one step at a time). A worker that
dies is started again. SIGTERM, SIGINT or SIGHUP stops the workers (a running step is put back
on the queue: messages are acknowledged when a step ends), then the Redis and the Postgres this
process started, and returns. ``<state>/run/workers.json`` records who runs, for ``status`` and
``stop`` in another shell.

A step's message is acknowledged only when the step has ended (``task_acks_late``) and is put
back when the process running it dies (``task_reject_on_worker_lost``), so a worker killed
mid-step makes the step run again on a live worker. Every hand-off between steps goes through
Postgres or the storage directory, so a worker on another host with the same settings (shared
Postgres, shared ``CIVICSETU_STATE_DIR/storage``, the broker URL) runs any step.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from civicsetu_pipelines.base import (
    ENV_CELERY_BROKER_URL,
    Settings,
    ended_within,
    env_value,
    process_alive,
    write_atomic,
)
from civicsetu_pipelines.operate.broker import (
    BrokerError,
    EmbeddedRedis,
    broker_url,
    reachable,
    redact,
)
from civicsetu_pipelines.operate.runs import RemoteExecution
from civicsetu_pipelines.operate.services import stop_session, stop_sessions, stop_signals

CELERY_APP = "civicsetu_pipelines.operate.celery_app"
QUEUE = "dagster"  # dagster-celery's queue
# A message not acknowledged within this time (its worker host vanished) is delivered again. It
# must exceed the longest step: a cold embedding of a large jurisdiction takes minutes here.
VISIBILITY_TIMEOUT_S = 3600
WORKER_GRACE_S = 10.0  # a stopping worker may finish its step this long before it is killed
RESTART_BACKOFF_S = 2.0


def celery_settings() -> dict[str, Any]:
    """The Celery settings shared by the workers and the executor of a run (its
    ``config_source``)."""
    return {
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": {
            "visibility_timeout": VISIBILITY_TIMEOUT_S,
            # a broker that is down fails the hand-off in about a second, not after minutes
            "max_retries": 3,
            "interval_start": 0,
            "interval_step": 0.2,
            "interval_max": 0.5,
        },
        "result_expires": 86400,
    }


def celery_app_args(url: str) -> dict[str, Any]:
    """``make_app``'s arguments for the workers' app: the broker as broker and result backend."""
    from dagster_celery.config import DEFAULT_CONFIG, dict_wrapper

    return {
        "broker": url,
        "backend": url,
        "include": [],
        "config_source": dict_wrapper(dict(DEFAULT_CONFIG, **celery_settings())),
    }


def celery_run_config(url: str) -> dict[str, Any]:
    """The run config that sends a run's steps to the workers on ``url`` (the definitions'
    executor, its ``celery`` mode). A URL from ``CIVICSETU_CELERY_BROKER_URL`` goes in as a
    reference to the variable, so a password in it is not stored with the run."""
    from_env = url == env_value(ENV_CELERY_BROKER_URL, "")
    source: str | dict[str, str] = {"env": ENV_CELERY_BROKER_URL} if from_env else url
    return {
        "execution": {
            "config": {
                "celery": {
                    "broker": source,
                    "backend": source,
                    "config_source": celery_settings(),
                }
            }
        }
    }


def ping(url: str, timeout: float = 2.0) -> list[str]:
    """The names of the workers on ``url`` that answer within ``timeout`` seconds."""
    from dagster_celery.make_app import make_app

    app = make_app(celery_app_args(url))
    try:
        replies = app.control.ping(timeout=timeout) or []
    finally:
        app.close()
    return sorted(name for reply in replies for name in reply)


def celery_remote(
    settings: Settings,
    job_module: str = "civicsetu_pipelines.definitions",
    job_fn: str = "ingest_job",
) -> RemoteExecution:
    """The ingest job's runs sent to the Celery workers, as many runs at once as workers answer,
    after checking that the broker answers and at least one worker listens (else
    :class:`BrokerError`, naming the broker URL: a run would otherwise wait for ever)."""
    import dagster as dg

    url = broker_url(settings)
    if not reachable(url):
        raise BrokerError(f"the Celery broker {redact(url)} cannot be reached")
    workers = ping(url)
    if not workers:
        raise BrokerError(f"no Celery worker answers on {redact(url)}: start them with "
                          "`civicsetu workers start -n 2 --detach`")  # fmt: skip
    return RemoteExecution(dg.build_reconstructable_job(job_module, job_fn),
                           celery_run_config(url), concurrency=len(workers))  # fmt: skip


def worker_name(index: int) -> str:
    return f"civicsetu-{index}@{socket.gethostname()}"


def worker_command(name: str, log_file: Path) -> list[str]:
    """One worker: one step at a time, in a pool process of its own (its death is noticed by the
    worker, which puts the step back)."""
    return [
        sys.executable, "-m", "celery", "-A", CELERY_APP, "worker",
        "-n", name, "-Q", QUEUE, "--concurrency", "1", "--pool", "prefork",
        "--prefetch-multiplier", "1", "--without-gossip", "--without-mingle",
        "--loglevel", "INFO", "--logfile", str(log_file),
    ]  # fmt: skip


@dataclass
class WorkerRecord:
    """What ``<state>/run/workers.json`` holds."""

    supervisor: int
    broker: str  # redacted
    embedded_broker: bool
    workers: dict[str, int] = field(default_factory=dict)  # name -> pid
    started: float = field(default_factory=time.time)


def record_path(settings: Settings) -> Path:
    return settings.run_dir / "workers.json"


def log_dir(settings: Settings) -> Path:
    return settings.state_dir / "logs"


def read_record(settings: Settings) -> WorkerRecord | None:
    """The record of the supervisor of this state directory, if it still runs."""
    try:
        data = json.loads(record_path(settings).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    record = WorkerRecord(**data)
    return record if process_alive(record.supervisor) else None


def _write_record(settings: Settings, record: WorkerRecord) -> None:
    write_atomic(record_path(settings), json.dumps(asdict(record)).encode())


def serve_workers(
    count: int,
    settings: Settings,
    *,
    say: Callable[[str], None] = print,
) -> int:
    """Run the broker (unless one is configured) and ``count`` workers until SIGTERM, SIGINT or
    SIGHUP; then stop all of them. Returns the signal that stopped them."""
    if count < 1:
        raise ValueError(f"at least one worker is needed, not {count}")
    if read_record(settings) is not None:
        raise BrokerError(f"workers already run for {settings.state_dir} (civicsetu workers "
                          "status); stop them first")  # fmt: skip
    received: list[int] = []
    asked = threading.Event()

    def on_stop(signum: int) -> None:
        received.append(signum)
        asked.set()

    redis_process: subprocess.Popen[bytes] | None = None
    workers: dict[str, subprocess.Popen[bytes]] = {}
    redis = EmbeddedRedis.from_settings(settings)
    logs = log_dir(settings)
    logs.mkdir(parents=True, exist_ok=True)
    with stop_signals(on_stop):
        try:
            url = env_value(ENV_CELERY_BROKER_URL, "")
            if url:
                if not reachable(url):
                    raise BrokerError(f"the Celery broker {redact(url)} cannot be reached")
            else:
                redis_process, url = redis.start()
                say(f"embedded Redis on {url} (pid {redis_process.pid})")
            env = {**os.environ, ENV_CELERY_BROKER_URL: url}
            record = WorkerRecord(os.getpid(), redact(url), redis_process is not None)

            def start(name: str) -> None:
                log_file = logs / f"{name.split('@')[0]}.log"
                workers[name] = subprocess.Popen(
                    worker_command(name, log_file), env=env, start_new_session=True,
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=open(log_file, "ab"),  # noqa: SIM115 - the child holds it
                )  # fmt: skip
                record.workers[name] = workers[name].pid
                _write_record(settings, record)
                say(f"worker {name} started (pid {workers[name].pid}, log {log_file})")

            for index in range(1, count + 1):
                start(worker_name(index))
            while not asked.wait(0.5):
                for name, process in list(workers.items()):
                    if process.poll() is not None and not asked.is_set():
                        say(f"worker {name} exited with {process.returncode}: starting it again")
                        stop_session(process, grace=1.0)  # its pool processes, if any remain
                        time.sleep(RESTART_BACKOFF_S)
                        start(name)
        finally:
            stop_sessions(list(workers.values()), grace=WORKER_GRACE_S)  # all at once
            say(f"worker(s) {', '.join(workers) or 'none'} stopped")
            if redis_process is not None:
                stop_session(redis_process, grace=5.0)
                redis.forget()
                say("embedded Redis stopped")
            current = read_record(settings)  # ours, another's, or a dead supervisor's
            if current is None or current.supervisor == os.getpid():
                record_path(settings).unlink(missing_ok=True)
    return received[0] if received else 0


def stop_workers(settings: Settings, timeout: float = 30.0) -> WorkerRecord | None:
    """Ask the supervisor of this state directory to stop (SIGTERM) and wait until it has gone;
    returns its record, or None when none runs."""
    record = read_record(settings)
    if record is None:
        return None
    with contextlib.suppress(ProcessLookupError):
        os.kill(record.supervisor, signal.SIGTERM)
    if not ended_within(record.supervisor, timeout, poll=0.1):
        raise TimeoutError(
            f"the workers' supervisor (pid {record.supervisor}) did not stop within {timeout:.0f} s"
        )
    return record

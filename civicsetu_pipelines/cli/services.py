"""The long-running services: ``civicsetu workers`` (Celery workers and their Redis broker) and
``civicsetu dev`` (the Dagster webserver and daemon), each with the embedded Postgres."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from civicsetu_pipelines.base import REPO_ROOT, Settings, process_alive
from civicsetu_pipelines.cli.common import bin_path, console, out, print_json

workers_app = typer.Typer(
    help="Celery workers (and their Redis broker) for `materialize --executor celery`."
)


@workers_app.command("start")
def workers_start(
    count: Annotated[int, typer.Option("--count", "-n", help="How many worker processes")] = 2,
    detach: Annotated[
        bool,
        typer.Option("--detach", "-d", help="Run them in the background; return once they answer"),
    ] = False,
) -> None:
    """Start the embedded Redis (unless CIVICSETU_CELERY_BROKER_URL names a broker) and N Celery
    workers, each running one step at a time. In the foreground until SIGTERM, SIGINT or SIGHUP,
    which stop the workers, the Redis and the Postgres this command started, and exit 0."""
    from civicsetu_pipelines.operate import serve_workers

    settings = Settings.from_env()
    if detach:
        _start_detached(settings, count)
        return
    # The workers' Dagster instance; serve_workers refuses when workers already run here.
    with _dagster_home_for_service(settings):
        stopped_by = serve_workers(count, settings, say=console.print)
    if stopped_by:
        console.print(f"stopped by {signal.Signals(stopped_by).name}")


@contextlib.contextmanager
def _dagster_home_for_service(
    settings: Settings, keep_db: bool = False
) -> Iterator[tuple[Path, bool]]:
    """Prepare the Dagster home for a long-running service (``dev``, ``workers start``), which
    starts the embedded Postgres when it is not running; on leaving, stop that Postgres if this
    command started it (and not ``keep_db``). Yields the home and whether the Postgres will be
    stopped (not when it ran before, with ``keep_db``, or when it is an external one)."""
    from civicsetu_pipelines.operate import prepare_dagster_home
    from civicsetu_pipelines.store import EmbeddedPostgres

    embedded = None if settings.database_url else EmbeddedPostgres.from_settings(settings)
    stop_it = embedded is not None and not embedded.status()["running"] and not keep_db
    home = prepare_dagster_home(settings)
    try:
        yield home, stop_it
    finally:
        if stop_it and embedded is not None:
            embedded.stop()
            console.print("embedded Postgres stopped")


def _start_detached(settings: Settings, count: int) -> None:
    """``workers start`` in a session of its own, its output in the state dir's log; returns
    once every worker answers a ping (or fails with the log's tail)."""
    import time

    from civicsetu_pipelines.operate import log_dir, ping, read_record

    if read_record(settings) is not None:
        console.print("workers already run: `civicsetu workers status`")
        return
    log = log_dir(settings) / "workers.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "civicsetu_pipelines.cli", "workers", "start", "-n", str(count)],
            stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + 120
    with console.status(f"starting {count} worker(s) ..."):
        while True:
            record = read_record(settings)
            if record is not None and len(record.workers) == count:
                from civicsetu_pipelines.operate import broker_url

                if len(ping(broker_url(settings), timeout=1.0)) >= count:
                    break
            if not process_alive(process.pid) or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-1500:]
                console.print(f"[red]the workers did not start; {log}:[/red]\n{tail}")
                raise typer.Exit(1)
            time.sleep(0.5)
    console.print(f"{count} worker(s) running (supervisor pid {process.pid}, log {log}); "
                  "`civicsetu workers stop` stops them")  # fmt: skip


@workers_app.command("stop")
def workers_stop() -> None:
    """Stop the workers of this state directory (and the Redis and Postgres their start
    started); waits until they are gone."""
    from civicsetu_pipelines.operate import stop_workers

    record = stop_workers(Settings.from_env())
    if record is None:
        console.print("no workers run for this state directory")
        return
    console.print(f"stopped {len(record.workers)} worker(s) and their supervisor "
                  f"(pid {record.supervisor})")  # fmt: skip


@workers_app.command("status")
def workers_status(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """The supervisor, its workers and which of them answer on the broker."""
    from civicsetu_pipelines.operate import ping, read_record

    settings = Settings.from_env()
    record = read_record(settings)
    data: dict[str, Any] = {"running": record is not None, "workers": []}
    if record is not None:
        from civicsetu_pipelines.operate import broker_url

        answering = set(ping(broker_url(settings), timeout=1.0))
        data.update(supervisor=record.supervisor, broker=record.broker,
                    embedded_broker=record.embedded_broker)  # fmt: skip
        data["workers"] = [
            {"name": name, "pid": pid, "alive": process_alive(pid), "answers": name in answering}
            for name, pid in sorted(record.workers.items())
        ]
    if as_json:
        print_json(data)
        return
    if record is None:
        out.print("no workers run for this state directory")
        return
    out.print(f"supervisor pid {record.supervisor}, broker {record.broker}"
              + (" (embedded Redis)" if record.embedded_broker else ""))  # fmt: skip
    for worker in data["workers"]:
        out.print(f"  {worker['name']}  pid {worker['pid']}  "
                  f"{'answers' if worker['answers'] else 'NOT answering'}")  # fmt: skip


# dg dev's webserver and code servers outlive SIGINT here (the daemon stops at once): SIGTERM
# follows after this long, then SIGKILL, so everything is gone well within 30 s.
DEV_STOP_GRACE_S = 8.0


def dev(
    port: Annotated[int, typer.Option(help="Webserver port")] = 3000,
    host: Annotated[str, typer.Option(help="Webserver host")] = "127.0.0.1",
    keep_db: Annotated[
        bool, typer.Option("--keep-db", help="Leave the embedded Postgres running on exit")
    ] = False,
) -> None:
    """Start the embedded Postgres, the Dagster webserver and the daemon together; Ctrl-C,
    SIGTERM or SIGHUP stops them all and exits 0 (the Postgres only if this command started it,
    and not with --keep-db)."""
    from civicsetu_pipelines.operate import run_until_stopped

    settings = Settings.from_env()
    # `dg dev`, Dagster's documented entry point, on the dg project of pyproject.toml ([tool.dg]).
    cmd = [bin_path("dg"), "dev", "--target-path", str(REPO_ROOT), "--host", host,
           "--port", str(port)]  # fmt: skip
    with _dagster_home_for_service(settings, keep_db) as (home, stops_postgres):
        from civicsetu_pipelines.defs.partitions import add_jurisdiction_partitions
        from civicsetu_pipelines.operate import open_instance

        with open_instance() as instance:  # the registry's jurisdictions, as the UI's partitions
            added = add_jurisdiction_partitions(instance)
        if added:
            console.print(f"partitions added for {', '.join(added)}")
        console.print(f"Dagster UI on http://{host}:{port}, with the daemon (Ctrl-C, SIGTERM or "
                      "SIGHUP stops both" + (" and the Postgres" if stops_postgres else "")
                      + ")")  # fmt: skip
        # The instance is DAGSTER_HOME's (the repository's deploy/dagster.yaml is a template
        # copied there). dg dev runs in a session of its own, stopped whole (webserver, daemon,
        # code servers) however this process is asked to stop. VIRTUAL_ENV: this environment
        # is the project's.
        code, stopped_by = run_until_stopped(
            cmd, cwd=home, grace=DEV_STOP_GRACE_S, env={**os.environ, "VIRTUAL_ENV": sys.prefix}
        )
    if stopped_by is not None:
        console.print(f"stopped by {signal.Signals(stopped_by).name}")
    raise typer.Exit(0 if stopped_by is not None or code == 0 else code)

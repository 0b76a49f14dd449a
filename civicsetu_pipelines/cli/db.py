"""``civicsetu db``: the embedded Postgres (start, stop, status, url)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from civicsetu_pipelines.base import Settings
from civicsetu_pipelines.cli.common import console, out, print_json

db_app = typer.Typer(help="The embedded Postgres (or the external one in CIVICSETU_DATABASE_URL).")


@db_app.command("start")
def db_start() -> None:
    """Start the embedded Postgres (idempotent) and apply migrations."""
    from civicsetu_pipelines.store import (
        apply_migrations,
        redact_url,
        resolve_database_url,
    )

    url = resolve_database_url(Settings.from_env())
    applied = apply_migrations(url)
    console.print(
        f"Postgres ready at {redact_url(url)}; migrations applied now: {applied or 'none'}"
    )


@db_app.command("stop")
def db_stop() -> None:
    """Stop the embedded Postgres cleanly, and the checks' validator the commands share."""
    from civicsetu_pipelines.ingest import stop_shared_validators
    from civicsetu_pipelines.store import EmbeddedPostgres

    settings = Settings.from_env()
    for pid in stop_shared_validators(settings.run_dir):
        console.print(f"stopped the checks' validator (pid {pid})")
    if settings.database_url:
        console.print("CIVICSETU_DATABASE_URL is set: the external server is not ours to stop.")
        return
    stopped = EmbeddedPostgres.from_settings(settings).stop()
    console.print("stopped" if stopped else "not running")


@db_app.command("status")
def db_status(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Show whether the embedded Postgres is running."""
    from civicsetu_pipelines.store import EmbeddedPostgres

    settings = Settings.from_env()
    if settings.database_url:
        from civicsetu_pipelines.store import redact_url

        status: dict[str, Any] = {"external": True, "url": redact_url(settings.database_url)}
    else:
        status = EmbeddedPostgres.from_settings(settings).status()
    if as_json:
        print_json(status)
    else:
        for key, value in status.items():
            out.print(f"{key}: {value}")
    raise typer.Exit(0 if status.get("running", True) else 3)


@db_app.command("url")
def db_url() -> None:
    """Print the database URL (starting the embedded server if needed)."""
    from civicsetu_pipelines.store import resolve_database_url

    out.print(resolve_database_url(Settings.from_env()), soft_wrap=True)

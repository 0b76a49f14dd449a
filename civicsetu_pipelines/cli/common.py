"""What the command modules share: the two consoles (messages on stderr, results on stdout),
JSON on stdout, this environment's commands, the store's connection and figures."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape

from civicsetu_pipelines.base import Settings

# Messages are never hard-wrapped: a path or a file:line in an error stays whole (copyable,
# searchable) whatever the terminal's width.
console = Console(stderr=True, soft_wrap=True)
out = Console(width=max(Console().width, 120))


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def bin_path(name: str) -> str:
    """The ``name`` command (``dagster``, ``dg``) of this environment."""
    return os.path.join(os.path.dirname(sys.executable), name)


def connect_store() -> Any:
    """A connection to the store, its migrations applied (the embedded server started if need
    be)."""
    from civicsetu_pipelines.store import apply_migrations, connect, resolve_database_url

    url = resolve_database_url(Settings.from_env())
    apply_migrations(url)
    return connect(url)


def store_if_any() -> Any:
    """A connection to the store, or None when this state directory never had one (no
    ``CIVICSETU_DATABASE_URL`` and no embedded data directory: nothing to retire); raises when
    the configured database cannot be reached."""
    from civicsetu_pipelines.store import EmbeddedPostgres

    settings = Settings.from_env()
    if not settings.database_url and not EmbeddedPostgres.from_settings(settings).data_dir.is_dir():
        return None
    return connect_store()


def one_line(exc: BaseException) -> str:
    """An exception as one line of at most 300 characters (its type when it says nothing)."""
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def sync_mirror(conn: Any, jurisdiction: str, say: Callable[[str], None]) -> None:
    """After a retirement committed: sync ``jurisdiction``'s Neo4j mirror to Postgres (when one
    is configured) and ``say`` what it removed; when the sync fails, say that the mirror is
    behind and which command syncs it (Postgres, what ``ask`` serves, is done either way)."""
    from civicsetu_pipelines.operate import mirror_jurisdiction

    try:
        mirrored = mirror_jurisdiction(conn, jurisdiction)
    except Exception as exc:  # noqa: BLE001 - Postgres is done; say the mirror is behind
        console.print(f"[yellow]the Neo4j mirror of {jurisdiction} was not updated "
                      f"({escape(one_line(exc))}):"
                      f" `civicsetu materialize -j {jurisdiction}` syncs it[/yellow]")  # fmt: skip
        return
    if mirrored is not None:
        say(f"Neo4j mirror of {jurisdiction}: {mirrored['documents_removed']} document(s), "
            f"{mirrored['units_removed']} unit(s) and {mirrored['edges_removed']} edge(s) "
            "removed")  # fmt: skip


def read_all_stats() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per-document catalog rows and per-jurisdiction store rows."""
    from civicsetu_pipelines.store import read_stats, store_stats

    with connect_store() as conn:
        return read_stats(conn), store_stats(conn)

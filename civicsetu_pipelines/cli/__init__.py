"""The ``civicsetu`` command line.

The root app is built here from the command modules, one a group: ``runs`` (materialize,
backfill), ``answers`` (ask, eval), ``corpus`` (stats, inspect, sections, history, changes),
``akn`` (resolve, and the ``akn`` group: export), ``services`` (dev, and the ``workers``
group), ``db``, ``documents``, ``sources`` (and ``watch``) and ``graph`` (each a group);
``common`` holds what they share. The commands are registered below in the order
``civicsetu --help`` lists them; each imports its heavy libraries inside itself, so that
``--help`` stays fast."""

from __future__ import annotations

import gc
import sys

import typer

from civicsetu_pipelines.cli import (
    akn,
    answers,
    corpus,
    db,
    documents,
    graph,
    provisions,
    runs,
    services,
    sources,
)
from civicsetu_pipelines.cli.common import console

app = typer.Typer(
    help="CivicSetu: RERA gazettes to a cited legal knowledge base.", no_args_is_help=True
)
app.add_typer(db.db_app, name="db")
app.add_typer(graph.graph_app, name="graph")
app.add_typer(documents.documents_app, name="documents")
app.add_typer(sources.sources_app, name="sources")
app.command()(sources.watch)
app.add_typer(services.workers_app, name="workers")
app.command()(runs.materialize)
app.command("backfill")(runs.backfill)
app.command("teach-encoder")(runs.teach_encoder)
app.command("ask")(answers.ask)
app.command("eval")(answers.eval_command)
app.command()(corpus.stats)
app.command()(corpus.inspect)
app.command()(corpus.sections)
app.command()(corpus.history)
app.command()(corpus.changes)
app.command("resolve")(akn.resolve)
app.add_typer(akn.akn_app, name="akn")
app.command("compare")(provisions.compare)
app.command("divergences")(provisions.divergences_command)
app.command()(services.dev)


# The failures the console entry point prints as one line (module, class). Each is looked up
# only in a module already loaded: an error of a module never imported was never raised, and
# `ask` does not pay for importing the registry, the broker or the migrations to catch them.
EXPECTED_FAILURES = (
    ("civicsetu_pipelines.ingest.registry", "RegistryError"),
    ("civicsetu_pipelines.base.errors", "DocumentError"),
    ("civicsetu_pipelines.store.database", "MigrationChecksumError"),
    ("civicsetu_pipelines.store.database", "StoreNotReady"),
    ("civicsetu_pipelines.operate.broker", "BrokerError"),
    ("psycopg", "OperationalError"),
)


def expected_failures() -> tuple[type[BaseException], ...]:
    """The classes of :data:`EXPECTED_FAILURES` whose modules are loaded."""
    loaded = (sys.modules.get(module) for module, _ in EXPECTED_FAILURES)
    return tuple(getattr(m, name) for m, (_, name) in zip(loaded, EXPECTED_FAILURES, strict=True)
                 if m is not None)  # fmt: skip


def main() -> None:
    """The console entry point: expected failures print one clear line and exit 1, never a
    stack trace (bad registry, a document error, a migration edited after it was applied, a
    database that cannot be reached, a question asked of a store nothing was materialized into).

    On its way out, every object left is moved out of the collector's reach (``gc.freeze``):
    the interpreter's teardown then frees them without the full collections it would otherwise
    run over a heap of Dagster, pandas and PyMuPDF objects (0.3-0.8 s of every command, measured
    on ``materialize``). The exit handlers and the teardown itself run as before."""
    try:
        app()
    except Exception as exc:
        if not isinstance(exc, expected_failures()):
            raise
        console.print(f"[red]{type(exc).__name__}: {exc}[/red]")
        sys.exit(1)
    finally:
        gc.freeze()

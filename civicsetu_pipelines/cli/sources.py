"""``civicsetu sources`` (add, list, remove) and ``civicsetu watch``: gazette listing pages and
drop folders watched for new PDFs, registered as data (issue 37)."""

from __future__ import annotations

import contextlib
import io
import json
import time
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from civicsetu_pipelines.base import Settings
from civicsetu_pipelines.cli.common import console, out, print_json

sources_app = typer.Typer(
    help="The sources `civicsetu watch` reads: gazette listing pages and drop folders."
)


def _say(text: str) -> None:
    """A line of results, as it is (no markup, no wrapping)."""
    out.print(text, markup=False, highlight=False, soft_wrap=True)


@sources_app.command("add")
def sources_add(
    location: Annotated[
        str,
        typer.Argument(
            help="A listing page (http(s) URL) whose PDF links are the jurisdiction's "
            "gazettes, or a local folder a person or a script drops PDFs into"
        ),
    ],
    jurisdiction: Annotated[
        str | None,
        typer.Option(
            "--jurisdiction",
            "-j",
            help="Code, ISO code or name: BIHAR, IN-BR, Bihar (default: a source serving "
            "several; each PDF's jurisdiction read from its own words)",
        ),
    ] = None,  # fmt: skip
) -> None:
    """Watch a listing page or a drop folder: each `civicsetu watch --once` (and the sensor)
    registers the PDFs it has not seen yet."""
    from civicsetu_pipelines.operate import SEVERAL, SourceError, add_source

    try:
        source = add_source(location, jurisdiction=jurisdiction,
                            state_dir=Settings.from_env().state_dir)  # fmt: skip
    except SourceError as exc:
        console.print(f"[red]not added: {escape(str(exc))}[/red]")
        raise typer.Exit(2) from None
    several = source.jurisdiction == SEVERAL
    serves = "several jurisdictions, each PDF's read from it" if several else source.jurisdiction
    _say(f"added source {source.id!r}: {source.kind} {source.location} ({serves})")
    out.print("next: civicsetu watch --once" + ("" if several else f" -j {source.jurisdiction}"))


@sources_app.command("list")
def sources_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Every source, with when it was last read and what it has seen."""
    from civicsetu_pipelines.operate import source_summaries

    rows = source_summaries(Settings.from_env().state_dir)
    if as_json:
        print_json(rows)
        return
    table = Table(title=f"{len(rows)} sources")
    columns = ("id", "jurisdiction", "kind", "checked_at", "seen", "registered", "failing",
               "location")  # fmt: skip
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(escape(str(row[c] if row[c] is not None else "never")) for c in columns))
    out.print(table)


@sources_app.command("remove")
def sources_remove(
    source: Annotated[str, typer.Argument(help="The source's id, URL or folder")],
) -> None:
    """Stop watching a source; the documents it registered stay registered."""
    from civicsetu_pipelines.operate import SourceError, remove_source

    try:
        removed = remove_source(source, state_dir=Settings.from_env().state_dir)
    except SourceError as exc:
        console.print(f"[red]not removed: {escape(str(exc))}[/red]")
        raise typer.Exit(2) from None
    _say(f"removed source {removed.id!r} ({removed.location}); the documents it registered "
         "stay registered (`civicsetu documents remove KEY` removes one)")  # fmt: skip


def watch(
    once: Annotated[
        bool, typer.Option("--once", help="One tick, then exit (else one every --interval)")
    ] = False,
    jurisdiction: Annotated[
        list[str] | None,
        typer.Option("--jurisdiction", "-j", help="Only the sources of these (repeatable)"),
    ] = None,
    materialize: Annotated[
        bool,
        typer.Option(
            "--materialize/--no-materialize",
            help="Materialize the jurisdictions that got a document (as `civicsetu materialize "
            "-j J --no-reports`); --no-materialize only registers",
        ),
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print each tick as JSON")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds a request may wait")] = 30.0,
    delay: Annotated[
        float, typer.Option(help="Seconds at least between two requests to one host")
    ] = 1.0,
    interval: Annotated[float, typer.Option(help="Seconds between ticks without --once")] = 900.0,
) -> None:
    """Read every source once (as the sensor does on its interval): download the PDFs not seen
    yet, register those identified from their own words, set the others pending (`civicsetu
    documents pending`), then materialize the jurisdictions that changed. Exit 1 when a link or
    a run failed (each is named)."""
    from civicsetu_pipelines.operate import SourceError, WatchLimits, watch_once

    limits = WatchLimits(timeout=timeout, delay=delay)
    while True:
        try:
            tick = watch_once(Settings.from_env(), jurisdictions=jurisdiction, limits=limits,
                              progress=None if as_json else _progress)  # fmt: skip
        except SourceError as exc:
            console.print(f"[red]{escape(str(exc))}[/red]")
            raise typer.Exit(2) from None
        result = tick.to_dict()
        runs_failed = False
        if not as_json:
            _print_tick(tick)  # what the tick found, before the runs it asks for
        unretired = _removed_but_served(jurisdiction) if materialize else {}
        result["unretired"] = unretired
        changed = sorted({*tick.changed, *unretired})
        if materialize and changed:
            for code, keys in unretired.items():
                _note(f"{code}: {', '.join(keys)} removed from the registry but still served: "
                      "its run retires them", as_json)  # fmt: skip
            result["materialized"], runs_failed = _materialize(changed, as_json)
        if as_json:
            print_json(result)
        failed = bool(tick.failed) or any(s.status == "failed" for s in tick.sources)
        if once:
            if failed or runs_failed:
                raise typer.Exit(1)
            return
        time.sleep(interval)


def _removed_but_served(jurisdictions: list[str] | None) -> dict[str, list[str]]:
    """The documents the store still serves that the registry no longer holds (removed while
    the database could not be reached, or by hand), by jurisdiction (of ``jurisdictions``, when
    given): the jurisdictions whose run retires them. Empty when nothing was ever stored."""
    from civicsetu_pipelines.base import jurisdiction_code
    from civicsetu_pipelines.cli.common import one_line, store_if_any
    from civicsetu_pipelines.ingest import load_registry
    from civicsetu_pipelines.store import documents_served

    try:
        conn = store_if_any()
    except Exception as exc:  # noqa: BLE001 - the tick goes on; its runs will say more
        console.print(f"[yellow]the store was not read for removed documents: "
                      f"{escape(one_line(exc))}[/yellow]")  # fmt: skip
        return {}
    if conn is None:
        return {}
    with conn:
        served = documents_served(conn)
    registered = set(load_registry().keys())
    wanted = {jurisdiction_code(j) for j in jurisdictions} if jurisdictions else None
    return {code: gone for code, keys in sorted(served.items())
            if (wanted is None or code in wanted)
            and (gone := [k for k in keys if k not in registered])}  # fmt: skip


def _note(line: str, as_json: bool) -> None:
    if not as_json:
        _say(line)


def _progress(line: str) -> None:
    console.print(escape(line), style="dim", highlight=False)


def _materialize(changed: list[str], as_json: bool) -> tuple[Any, bool]:
    """``civicsetu materialize -j J ... --no-reports``: its JSON records (under ``--json``),
    and whether a run failed."""
    from civicsetu_pipelines.cli.runs import materialize

    def run() -> None:
        materialize(jurisdiction=changed, force=False, executor="in_process", as_json=as_json,
                    reports=False)  # fmt: skip

    if not as_json:
        try:
            run()
        except typer.Exit as exc:
            return None, bool(exc.exit_code)
        return None, False
    captured = io.StringIO()  # its JSON goes into the tick's, stdout holds one document
    failed = False
    with contextlib.redirect_stdout(captured):
        try:
            run()
        except typer.Exit as exc:
            failed = bool(exc.exit_code)
    text = captured.getvalue().strip()
    try:
        return (json.loads(text) if text else []), failed
    except ValueError:
        return text, failed


def _print_tick(tick: Any) -> None:
    for check in tick.sources:
        if check.status == "failed":
            console.print(f"[red]{escape(check.source)}: {escape(str(check.error))}[/red]")
        elif check.status == "offline":
            _say(f"{check.source}: {check.error}")
        else:
            state = "unchanged (HTTP 304)" if check.status == "not_modified" else "read"
            _say(f"{check.source} ({check.jurisdiction}): {state}, {check.links} PDF link(s), "
                 f"{check.new} new")  # fmt: skip
    for outcome in tick.outcomes:
        key = f" {outcome.key}" if outcome.key else ""
        line = f"  {outcome.outcome}{key}: {outcome.url}: {outcome.reason}"
        if outcome.outcome == "failed":
            console.print(f"[red]{escape(line)}[/red]")
        else:
            _say(line)
    if tick.pending:
        _say("pending: `civicsetu documents pending`, then `civicsetu documents accept KEY "
             "--title ... --effective-from ...`")  # fmt: skip
    _say(f"{len(tick.registered)} registered, {len(tick.pending)} pending, "
         f"{len(tick.skipped)} skipped, {len(tick.failed)} failed in {tick.seconds:.1f}s; "
         f"changed: {', '.join(tick.changed) or 'nothing'}")  # fmt: skip

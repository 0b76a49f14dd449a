"""``civicsetu documents``: the registered documents (add, list, remove) and those a watched
source found but could not identify (pending, accept, reject)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from civicsetu_pipelines.cli.common import (
    connect_store,
    console,
    one_line,
    out,
    print_json,
    store_if_any,
    sync_mirror,
)

documents_app = typer.Typer(
    help="The registered documents: add your own, list, remove; and those a watched source "
    "could not identify: pending, accept, reject."
)


@documents_app.command("add")
def documents_add(
    path: Annotated[Path, typer.Argument(help="The PDF to register")],
    jurisdiction: Annotated[
        str | None,
        typer.Option(
            "--jurisdiction",
            "-j",
            help="Code, ISO code or name: BIHAR, IN-BR, Bihar (default: the issuer its first "
            "page names: 'GOVERNMENT OF BIHAR', 'THE GAZETTE OF INDIA')",
        ),
    ] = None,  # fmt: skip
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind",
            help="act, rules, regulations, faq, order, notification, circular "
            "or judgment (default: read from its first pages, as `inspect` does)",
        ),
    ] = None,  # fmt: skip
    title: Annotated[
        str | None,
        typer.Option(
            "--title",
            help="The official title (default: read from its first page: "
            "its short title, heading, abstract or subject, number, or parties)",
        ),
    ] = None,  # fmt: skip
    key: Annotated[str | None, typer.Option(help="Document key (default: from the title)")] = None,
    effective_from: Annotated[
        str | None,
        typer.Option(
            "--effective-from",
            help="YYYY-MM-DD (default: the date it says it comes "
            "into force on, else its own date: 'Dated: ...', the place-date line)",
        ),
    ] = None,  # fmt: skip
    first_of_month: Annotated[
        bool,
        typer.Option(
            "--first-of-month",
            help="When its date is printed to the month only (the day left blank for a hand to "
            "write), take the month's first day",
        ),
    ] = False,  # fmt: skip
    status: Annotated[str, typer.Option(help="in_force or draft")] = "in_force",
    pages: Annotated[str | None, typer.Option(help="Pages to ingest, e.g. 3-40,42")] = None,
    language: Annotated[str, typer.Option(help="Tesseract language: eng, hin, kan ...")] = "eng",
    source_url: Annotated[
        str | None, typer.Option("--source-url", help="Where to cite it (default: the file)")
    ] = None,
    amends: Annotated[
        list[str] | None,
        typer.Option(
            "--amends",
            help="Key of a document it amends (repeatable; default: the registered documents "
            "its enacting formula names): its instructions apply from --effective-from, or the "
            "date it names",
        ),
    ] = None,  # fmt: skip
    repeals: Annotated[
        list[str] | None,
        typer.Option(
            "--repeals",
            help="Key of a document it repeals whole (repeatable; "
            "default: those it says are hereby repealed)",
        ),
    ] = None,  # fmt: skip
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Print what was read from the document, and from which "
            "words and page, and what would be added; write nothing",
        ),
    ] = False,  # fmt: skip
) -> None:
    """Register a PDF: copy it into the content-addressed store and add it to the user registry.
    Its kind, title, date and what it amends or repeals are read from its own words unless
    given. Then `civicsetu materialize -j J` ingests it end to end."""
    import datetime as dt

    from civicsetu_pipelines.ingest import AddError, add_document

    try:
        date = dt.date.fromisoformat(effective_from) if effective_from else None
    except ValueError:
        console.print(f"[red]--effective-from {effective_from!r} is not a date YYYY-MM-DD[/red]")
        raise typer.Exit(2) from None
    if status not in {"in_force", "draft"}:
        console.print(f"[red]--status {status!r}: expected in_force or draft[/red]")
        raise typer.Exit(2)
    if not dry_run:  # the checks' validator imports its library while the PDF is read
        from civicsetu_pipelines.base import Settings
        from civicsetu_pipelines.ingest import warm_shared_validator

        settings = Settings.from_env()
        warm_shared_validator(settings.run_dir, settings.validator_idle_s)
    try:
        added = add_document(path, jurisdiction=jurisdiction, kind=kind, title=title, key=key,
                             effective_from=date, first_of_month=first_of_month,
                             status=status, pages=pages,
                             language=language, source_url=source_url, amends=amends or (),
                             repeals=repeals or (), dry_run=dry_run,
                             progress=lambda line: console.print(escape(line)))  # fmt: skip
    except AddError as exc:
        if dry_run and exc.detection is not None:
            _print_detection(path, exc.detection, ())
        console.print(f"[red]not added: {escape(str(exc))}[/red]")
        raise typer.Exit(2) from None
    spec = added.spec
    layer = "has a text layer" if added.text_layer else "is scanned (no text layer)"
    what = (f"{spec.doc_type} of {spec.jurisdiction}, effective from "
            f"{spec.effective_date.isoformat()}, {added.pages} page(s), {layer}")  # fmt: skip
    if dry_run and added.detection is not None:
        _print_detection(path, added.detection, added.given)
        _say(f"would add {spec.key!r}: {what}; nothing written (--dry-run)")
        for note in added.notes:
            _say(f"  {note}")
        return
    _say(f"added {spec.key!r}: {what}; sha256 {spec.sha256}")
    if added.detection is not None:
        for found in _read(added.detection, added.given):
            _say(f"  {_LABELS[found.name]} read from the document: {_shown(found.value)} "
                 f"({found.why()})")  # fmt: skip
    for note in added.notes:
        _say(f"  {note}")
    out.print(f"next: civicsetu materialize -j {spec.jurisdiction}")


def _say(text: str) -> None:
    """A line of results, as it is (no markup, no wrapping: words and paths stay whole)."""
    out.print(text, markup=False, highlight=False, soft_wrap=True)


_LABELS = {"jurisdiction": "jurisdiction", "kind": "kind", "title": "title", "date": "date",
           "in_force": "in force from", "amends": "amends", "repeals": "repeals"}  # fmt: skip
_GIVEN = {"jurisdiction": "jurisdiction", "kind": "kind", "title": "title", "date": "date",
          "in_force": "date", "amends": "amends", "repeals": "repeals"}  # fmt: skip


def _shown(value: object) -> str:
    if isinstance(value, tuple):
        return ", ".join(str(v) for v in value)
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _read(detection: Any, given: tuple[str, ...]) -> list[Any]:
    """The fields ``add`` took from the document (not given): kind, title, the date it took
    effect from (its commencement, else its own date), amends, repeals."""
    issuer = (detection.jurisdiction,) if detection.jurisdiction is not None else ()
    fields = (*issuer, detection.kind, detection.title, detection.effective_from,
              detection.amends, detection.repeals)  # fmt: skip
    return [f for f in fields if f.found and _GIVEN[f.name] not in given]


def _print_detection(path: Path, detection: Any, given: tuple[str, ...]) -> None:
    """Every field as read from the document: its value, the confidence, the page and words."""
    _say(f"read from {path}:")
    for found in detection.fields():
        label = f"{_LABELS[found.name]}:"
        use = " (overridden: given)" if _GIVEN[found.name] in given else ""
        if found.found:
            _say(f"  {label:<15} {_shown(found.value)}  [{found.confidence}{use}]")
            _say(f"  {'':<15} {found.why()}")
        else:
            _say(f"  {label:<15} not found{use}: {found.words}")


@documents_app.command("list")
def documents_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Every registered document: shipped and added, and how its last run went (``ingest``: ok,
    failed, set_aside with why, or not_materialized) when the store can be read."""
    from civicsetu_pipelines.ingest import load_registry, user_keys
    from civicsetu_pipelines.store import read_stats

    added = user_keys()
    runs: dict[str, dict[str, Any]] = {}
    try:
        with connect_store() as conn:
            runs = {str(r["key"]): r for r in read_stats(conn)}
    except Exception as exc:  # noqa: BLE001 - the registry is listed anyway; say why not its runs
        console.print(f"[yellow]how each document's last run went is not shown: {exc}[/yellow]")
    rows = [
        {"key": s.key, "jurisdiction": s.jurisdiction, "kind": s.doc_type, "title": s.title,
         "effective_date": s.effective_date.isoformat(), "status": str(s.status),
         "language": s.language, "origin": "added" if s.key in added else "shipped",
         "ingest": runs[s.key]["ingest_status"] if s.key in runs else "not_materialized",
         "error": runs[s.key]["error"] if s.key in runs else None}
        for s in load_registry().documents()
    ]  # fmt: skip
    if as_json:
        print_json(rows)
        return
    table = Table(title=f"{len(rows)} documents")
    columns = ("key", "jurisdiction", "kind", "effective_date", "origin", "ingest", "title")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(escape(str(row[c])[:70]) for c in columns))
    out.print(table)
    for row in rows:
        if row["ingest"] in ("failed", "set_aside"):
            console.print(f"[red]{escape(str(row['error']))}[/red]")


@documents_app.command("remove")
def documents_remove(
    keys: Annotated[
        list[str], typer.Argument(help="Keys added with `add` (an amendment with what it amends)")
    ],
) -> None:
    """Take added documents out of the registry and retire their rows at once, in one
    transaction per jurisdiction (units, catalog entries, graph edges and provisions: nothing of
    them is served afterwards; `history` still shows them, with an end), and the Neo4j mirror
    when one is configured. When the database cannot be reached, the next `civicsetu materialize
    -j J` (or `civicsetu watch --once`) retires them. A document another one left registered
    amends is removed with it or after it. Warns with the citations from other documents that
    become unresolved."""
    from civicsetu_pipelines.ingest import AddError, remove_documents

    try:
        specs = remove_documents(keys)
    except AddError as exc:
        console.print(f"[red]not removed: {exc}[/red]")
        raise typer.Exit(2) from None
    by_jurisdiction: dict[str, list[str]] = {}
    for spec in specs:
        _say(f"removed {spec.key!r} ({spec.jurisdiction}) from the registry")
        by_jurisdiction.setdefault(str(spec.jurisdiction), []).append(spec.key)
    try:
        conn = store_if_any()
    except Exception as exc:  # noqa: BLE001 - the registry changed; say what is left to do
        for jurisdiction in by_jurisdiction:
            _say(f"the database is not running or cannot be reached ({one_line(exc)}): "
                 f"{_later(jurisdiction)}")  # fmt: skip
        return
    if conn is None:
        _say("nothing was ever stored in this state directory: no rows to retire")
        return
    with conn:
        for jurisdiction, removed in by_jurisdiction.items():
            _retire_removed(conn, jurisdiction, removed)


def _later(jurisdiction: str) -> str:
    return f"its rows will be retired by the next `civicsetu materialize -j {jurisdiction}`"


def _retire_removed(conn: Any, jurisdiction: str, removed: list[str]) -> None:
    """Retire ``removed`` (just taken out of the registry) of ``jurisdiction`` in one
    transaction, sync the Neo4j mirror, and warn of the citations left unresolved."""
    from civicsetu_pipelines.graph import citations_of
    from civicsetu_pipelines.ingest import load_registry
    from civicsetu_pipelines.operate import retire_jurisdiction_documents

    registered = [s.key for s in load_registry().documents(jurisdiction)]
    named = ", ".join(repr(k) for k in removed)
    cited = [edge for key in removed for edge in citations_of(conn, key)
             if edge["source_document"] not in removed]  # fmt: skip
    try:
        retired = retire_jurisdiction_documents(conn, jurisdiction, registered=registered,
                                                only=removed)  # fmt: skip
        conn.commit()
    except Exception as exc:  # noqa: BLE001 - rolled back whole; say what is left to do
        console.print(f"[red]the rows of {named} were not retired ({one_line(exc)}): "
                      f"{_later(jurisdiction)}[/red]")  # fmt: skip
        raise typer.Exit(1) from None
    left = ("; it was the last document of " + jurisdiction + ": nothing of it is served"
            if not registered else
            f"; the next `civicsetu materialize -j {jurisdiction}` agrees")  # fmt: skip
    _say(f"{named}: {retired.summary()}{left}")
    sync_mirror(conn, jurisdiction, _say)
    if cited:
        console.print(f"[yellow]warning: {len(cited)} citation(s) of {named} by other documents "
                      "are now unresolved:[/yellow]")  # fmt: skip
        for edge in cited:
            console.print(f"[yellow]  {edge['source_document']} {edge['source_label']} -> "
                          f"{edge['target_label']} ({edge['edge_type']})[/yellow]")  # fmt: skip


@documents_app.command("pending")
def documents_pending(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """The PDFs `civicsetu watch` found but could not identify with confidence: each with its
    key, where it came from and why it waits; `documents accept KEY` registers one."""
    from civicsetu_pipelines.base import Settings
    from civicsetu_pipelines.operate import load_pending

    pending = load_pending(Settings.from_env().state_dir)
    if as_json:
        print_json([
            {"key": p.key, "jurisdiction": p.jurisdiction, "source_url": p.source_url,
             "reason": p.reason, "source": p.source, "sha256": p.sha256,
             "found_at": p.found_at, "read": p.read}
            for p in pending
        ])  # fmt: skip
        return
    if not pending:
        _say("nothing pending")
        return
    for p in pending:
        _say(f"{p.key}  {p.jurisdiction}  {p.source_url}")
        _say(f"  why: {p.reason}")
        if p.read:
            _say("  read: " + "; ".join(f"{k} {v}" for k, v in p.read.items()))
    _say("register one: civicsetu documents accept KEY [--kind K] [--title TITLE] "
         "[--effective-from YYYY-MM-DD]; drop one: civicsetu documents reject KEY")  # fmt: skip


@documents_app.command("accept")
def documents_accept(
    pending_key: Annotated[str, typer.Argument(help="The key `documents pending` shows")],
    kind: Annotated[str | None, typer.Option("--kind", help="As for `documents add`")] = None,
    title: Annotated[str | None, typer.Option("--title", help="The official title")] = None,
    effective_from: Annotated[
        str | None, typer.Option("--effective-from", help="YYYY-MM-DD")
    ] = None,
    key: Annotated[str | None, typer.Option(help="Document key (default: from the title)")] = None,
    amends: Annotated[
        list[str] | None, typer.Option("--amends", help="Key of a document it amends")
    ] = None,
    repeals: Annotated[
        list[str] | None, typer.Option("--repeals", help="Key of a document it repeals")
    ] = None,
    pages: Annotated[str | None, typer.Option(help="Pages to ingest, e.g. 3-40,42")] = None,
    status: Annotated[str, typer.Option(help="in_force or draft")] = "in_force",
    jurisdiction: Annotated[
        str | None,
        typer.Option(
            "--jurisdiction",
            "-j",
            help="Its jurisdiction (default: its source's, or the one read from it)",
        ),
    ] = None,  # fmt: skip
) -> None:
    """Register a pending document (from the PDF store: no network) with what it could not
    be read with; what is not given is read from its own words, as `documents add` does."""
    import datetime as dt

    from civicsetu_pipelines.base import Settings
    from civicsetu_pipelines.ingest import AddError
    from civicsetu_pipelines.operate import SourceError, accept_pending

    try:
        date = dt.date.fromisoformat(effective_from) if effective_from else None
    except ValueError:
        console.print(f"[red]--effective-from {effective_from!r} is not a date YYYY-MM-DD[/red]")
        raise typer.Exit(2) from None
    try:
        added = accept_pending(pending_key, state_dir=Settings.from_env().state_dir, kind=kind,
                               title=title, effective_from=date, document_key=key,
                               amends=amends or (), repeals=repeals or (), pages=pages,
                               status=status, jurisdiction=jurisdiction)  # fmt: skip
    except (AddError, SourceError) as exc:
        console.print(f"[red]not accepted: {escape(str(exc))}[/red]")
        raise typer.Exit(2) from None
    spec = added.spec
    _say(f"added {spec.key!r}: {spec.doc_type} of {spec.jurisdiction}, effective from "
         f"{spec.effective_date.isoformat()}; sha256 {spec.sha256}")  # fmt: skip
    for note in added.notes:
        _say(f"  {note}")
    out.print(f"next: civicsetu materialize -j {spec.jurisdiction}")


@documents_app.command("reject")
def documents_reject(
    pending_key: Annotated[str, typer.Argument(help="The key `documents pending` shows")],
) -> None:
    """Drop a pending document: it is not registered, and its source does not offer it again."""
    from civicsetu_pipelines.base import Settings
    from civicsetu_pipelines.operate import SourceError, reject_pending

    try:
        entry = reject_pending(pending_key, state_dir=Settings.from_env().state_dir)
    except SourceError as exc:
        console.print(f"[red]not rejected: {escape(str(exc))}[/red]")
        raise typer.Exit(2) from None
    _say(f"rejected {entry.key!r} ({entry.source_url})")

"""``civicsetu documents``: the registered documents (add, list, remove)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from civicsetu_pipelines.cli.common import connect_store, console, out, print_json

documents_app = typer.Typer(help="The registered documents: add your own, list, remove.")


@documents_app.command("add")
def documents_add(
    path: Annotated[Path, typer.Argument(help="The PDF to register")],
    jurisdiction: Annotated[
        str,
        typer.Option("--jurisdiction", "-j", help="Code, ISO code or name: BIHAR, IN-BR, Bihar"),
    ],  # fmt: skip
    kind: Annotated[
        str,
        typer.Option(
            "--kind", help="act, rules, regulations, faq, order, notification, circular or judgment"
        ),
    ],  # fmt: skip
    title: Annotated[str, typer.Option("--title", help="The official title")],
    key: Annotated[str | None, typer.Option(help="Document key (default: from the title)")] = None,
    effective_from: Annotated[
        str | None, typer.Option("--effective-from", help="YYYY-MM-DD (default: today)")
    ] = None,
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
            help="Key of a document it amends (repeatable): its "
            "instructions apply from --effective-from, or the date it names",
        ),
    ] = None,  # fmt: skip
    repeals: Annotated[
        list[str] | None,
        typer.Option("--repeals", help="Key of a document it repeals whole (repeatable)"),
    ] = None,
) -> None:
    """Register a PDF: copy it into the content-addressed store and add it to the user registry.
    Then `civicsetu materialize -j J` ingests it end to end."""
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
    try:
        added = add_document(path, jurisdiction=jurisdiction, kind=kind, title=title, key=key,
                             effective_from=date, status=status, pages=pages,
                             language=language, source_url=source_url, amends=amends or (),
                             repeals=repeals or ())  # fmt: skip
    except AddError as exc:
        console.print(f"[red]not added: {exc}[/red]")
        raise typer.Exit(2) from None
    spec = added.spec
    layer = "has a text layer" if added.text_layer else "is scanned (no text layer)"
    out.print(f"added {spec.key!r}: {spec.doc_type} of {spec.jurisdiction}, {added.pages} "
              f"page(s), {layer}; sha256 {spec.sha256}")  # fmt: skip
    for note in added.notes:
        out.print(f"  {note}")
    out.print(f"next: civicsetu materialize -j {spec.jurisdiction}")


@documents_app.command("list")
def documents_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Every registered document: shipped and added."""
    from civicsetu_pipelines.ingest import load_registry, user_keys

    added = user_keys()
    rows = [
        {"key": s.key, "jurisdiction": s.jurisdiction, "kind": s.doc_type, "title": s.title,
         "effective_date": s.effective_date.isoformat(), "status": str(s.status),
         "language": s.language, "origin": "added" if s.key in added else "shipped"}
        for s in load_registry().documents()
    ]  # fmt: skip
    if as_json:
        print_json(rows)
        return
    table = Table(title=f"{len(rows)} documents")
    columns = ("key", "jurisdiction", "kind", "effective_date", "origin", "title")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(str(row[c])[:70] for c in columns))
    out.print(table)


@documents_app.command("remove")
def documents_remove(key: Annotated[str, typer.Argument(help="A key added with `add`")]) -> None:
    """Take an added document out of the registry; the next run of its jurisdiction retires its
    rows. Warns with the citations from other documents that will become unresolved."""
    from civicsetu_pipelines.graph import citations_of
    from civicsetu_pipelines.ingest import AddError, remove_document

    try:
        spec = remove_document(key)
    except AddError as exc:
        console.print(f"[red]not removed: {exc}[/red]")
        raise typer.Exit(2) from None
    out.print(f"removed {key!r} ({spec.jurisdiction}); run `civicsetu materialize -j "
              f"{spec.jurisdiction}` to retire its rows")  # fmt: skip
    try:
        with connect_store() as conn:
            cited = citations_of(conn, key)
    except Exception as exc:  # noqa: BLE001 - the warning is best effort; say why it is missing
        console.print(f"[yellow]citations of {key!r} not checked: {exc}[/yellow]")
        return
    if cited:
        console.print(f"[yellow]warning: {len(cited)} citation(s) of {key!r} by other documents "
                      "will become unresolved:[/yellow]")  # fmt: skip
        for edge in cited:
            console.print(f"[yellow]  {edge['source_document']} {edge['source_label']} -> "
                          f"{edge['target_label']} ({edge['edge_type']})[/yellow]")  # fmt: skip

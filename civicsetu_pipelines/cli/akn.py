"""``civicsetu resolve`` and ``civicsetu akn export``: Akoma Ntoso addresses (issue 39). A URI
prints the unit it names verbatim with its citation; a document exports as one AKN 3.0 XML
file per expression, validated against the schema."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from civicsetu_pipelines.base import Settings
from civicsetu_pipelines.cli.common import connect_store, console, out, print_json

akn_app = typer.Typer(help="Akoma Ntoso: the AKN 3.0 XML of the stored documents.")


def resolve(
    uri: Annotated[
        str,
        typer.Argument(
            help="An AKN URI: /akn/in/act/2016/16/~sec_18 (as in force today) or "
            "/akn/in/act/2016/16/eng@2017-05-01/!main~sec_18 (as on that date)"
        ),
    ],  # fmt: skip
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Print the unit an Akoma Ntoso URI names, verbatim, with its citation (a work URI: as in
    force today; an expression URI: as on its date; without a ~portion: the document's units).
    Exit 2 when the URI names nothing stored."""
    from civicsetu_pipelines.ingest import AknError
    from civicsetu_pipelines.store import fill_eids, resolve_uri

    with connect_store() as conn:
        fill_eids(conn)  # rows loaded before sql/0017 (a no-op once loaded again)
        try:
            found = resolve_uri(conn, uri)
        except AknError as exc:
            if as_json:
                print_json({"status": "error", "error": {"code": "not_found", "message": str(exc)}})
            else:
                console.print(f"[red]{exc}[/red]")
            raise typer.Exit(2) from None
    doc = found.document
    units: list[dict[str, Any]] = [{**found.citation(r), "text": r["text"]} for r in found.rows]
    if as_json:
        print_json({"status": "ok", "uri": uri, "document": doc.key, "work": str(doc.work),
                    "as_of": str(found.day) if found.day else None, "eid": found.eid,
                    "within": found.within, "units": units})  # fmt: skip
        return
    when = f"as on {found.day}" if found.day else "as in force today"
    out.print(f"{doc.title} ({doc.work}), {when}", markup=False, highlight=False)
    if found.within:
        out.print(f"{found.eid} is printed within {found.within}, whose text follows",
                  markup=False, highlight=False)  # fmt: skip
    for unit in units:
        if found.eid is None:  # a document: its units, each at its address
            out.print(f"  {unit['label']}: {unit['uri']}", markup=False, highlight=False)
            continue
        out.print("")
        out.print(unit["text"], markup=False, highlight=False)
        out.print(f"-- {unit['jurisdiction']} {unit['label']}, {unit['document_title']}, page "
                  f"{unit['page']} - {unit['source_url']}", markup=False, highlight=False,
                  soft_wrap=True)  # fmt: skip
        out.print(f"   {unit['uri']}", markup=False, highlight=False, soft_wrap=True)


@akn_app.command("export")
def export(
    document: Annotated[
        list[str] | None,
        typer.Option("--document", "-d", help="Document key (repeatable); all when omitted"),
    ] = None,
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Directory (default <state>/reports/akn)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Write one AKN 3.0 XML file per document and expression (a point in time), validated
    against the official schema. Exit 1 if a file does not validate, 2 for an unknown key."""
    from civicsetu_pipelines.base import reports_dir
    from civicsetu_pipelines.graph import reference_links
    from civicsetu_pipelines.store import akn_documents, export_document, fill_eids

    target = out_dir or reports_dir(Settings.from_env().state_dir) / "akn"
    with connect_store() as conn:
        fill_eids(conn)
        docs = akn_documents(conn, document)
        missing = sorted(set(document or ()) - {d.key for d in docs})
        if missing:
            console.print(f"[red]Not in the store: {', '.join(missing)}[/red]")
            raise typer.Exit(2)
        references = reference_links(conn, [d.key for d in docs])
        catalog = {d.key: d for d in (docs if document is None else akn_documents(conn))}
        records = [r for d in docs for r in export_document(conn, d, target, references, catalog)]
    if as_json:
        print_json({"out": str(target), "files": records})
    else:
        for r in records:
            state = "valid" if not r["errors"] else f"INVALID: {r['errors'][0]}"
            out.print(f"{r['expression']}  {r['units']} units  {r['refs']} refs  {state}  "
                      f"{r['path']}",
                      markup=False, highlight=False)  # fmt: skip
    if any(r["errors"] for r in records):
        raise typer.Exit(1)

"""``civicsetu stats``, ``civicsetu inspect``, ``civicsetu sections``, ``civicsetu history`` and
``civicsetu changes``: what the corpus holds, one PDF parsed as the pipeline would, a unit's
versions and what each run changed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from civicsetu_pipelines.cli.common import connect_store, console, out, print_json, read_all_stats


def stats(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Per document: jurisdiction, pages, OCR pages, sections, chunks, coverage; per
    jurisdiction: current, superseded and embedded rows of the store, model id, dimension."""
    rows, store = read_all_stats()
    data = [
        {
            "document": r["key"],
            "jurisdiction": r["jurisdiction"],
            "doc_type": r["doc_type"],
            "status": r["status"],
            "pages": r["pages"],
            "pages_ingested": r["pages_ingested"],
            "ocr_pages": r["ocr_pages"],
            "needs_ocr_pages": r["needs_ocr_pages"],
            "sections": r["sections"],
            "chunks": r["chunks"],
            "coverage": r["coverage"],
            "ingest_status": r["ingest_status"],
            "error": r["error"],
        }
        for r in rows
    ]
    if as_json:
        print_json({"documents": data, "store": store})
        return
    if not data:
        console.print("Nothing materialized yet: run `civicsetu materialize`.")
        return
    table = Table()
    for column in ("document", "jurisdiction", "pages", "ocr_pages", "sections", "chunks",
                   "coverage", "ingest_status"):  # fmt: skip
        table.add_column(column)
    for d in data:
        table.add_row(
            *(
                str(d[c])
                for c in (
                    "document",
                    "jurisdiction",
                    "pages",
                    "ocr_pages",
                    "sections",
                    "chunks",
                    "coverage",
                    "ingest_status",
                )
            )
        )
    out.print(table)
    if store:
        store_table = Table(title="Store (legal_chunks)")
        columns = ("jurisdiction", "current_rows", "superseded_rows", "embedded_rows", "model_id",
                   "dimension")  # fmt: skip
        for column in columns:
            store_table.add_column(column)
        for s in store:
            store_table.add_row(*(str(s[c]) for c in columns))
        out.print(store_table)


def inspect(
    path: Annotated[Path, typer.Argument(help="A PDF (not registered, not stored)")],
    kind: Annotated[
        str,
        typer.Option(help="auto|act|rules|regulations|faq|order|notification|circular|judgment"),
    ] = "auto",
    language: Annotated[str, typer.Option(help="eng|hin|kan: the text's language (OCR)")] = "eng",
    pages: Annotated[
        str | None, typer.Option(help="Pages to read, e.g. 42-80 or 1-3,7 (default: all)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Parse one PDF as the pipeline would, without registering it: its kind (detected, and
    why), its units (label, number, title, first and last page), coverage and every structure
    check. Exit 0 when the structure is sound, 1 when an error check fails, 2 for bad input."""
    from civicsetu_pipelines.base import DocumentError, Settings
    from civicsetu_pipelines.ingest import KINDS, inspect_pdf, parse_page_ranges

    if kind != "auto" and kind not in KINDS:
        console.print(f"[red]Unknown kind {kind!r}; one of auto, {', '.join(KINDS)}[/red]")
        raise typer.Exit(2)
    if not path.is_file():
        console.print(f"[red]No such file: {path}[/red]")
        raise typer.Exit(2)
    try:
        indexes = parse_page_ranges(pages) if pages else None
    except ValueError as exc:
        console.print(f"[red]--pages {pages!r}: {exc}[/red]")
        raise typer.Exit(2) from None
    with console.status(f"parsing {path.name} ..."):
        try:
            # The pipeline's parse cache: a scanned PDF inspected again (or ingested after) is
            # not OCR'd again.
            found = inspect_pdf(path, kind=kind, language=language, pages=indexes,
                                parse_cache=Settings.from_env().parse_cache)  # fmt: skip
        except DocumentError as exc:
            console.print(f"[red]{exc}[/red]")
            raise typer.Exit(2) from None
    if as_json:
        print_json(found)
    else:
        out.print(f"{path}: [bold]{found['kind']}[/bold] ({found['kind_reason']}); "
                  f"{found['pages']} pages, {found['ocr_pages']} OCR'd")  # fmt: skip
        if found["ocr_unread_pages"]:
            pages = ", ".join(str(page) for page in found["ocr_unread_pages"])
            out.print(f"[yellow]OCR left text-like ink unread on page(s) {pages}[/yellow]")
        for skipped in found["ocr_skipped_budget_pages"]:
            out.print(f"[yellow]page {skipped['page']}: not OCR'd: {skipped['why']}[/yellow]")
        if found["ocr_downscaled_pages"]:
            pages = ", ".join(str(page) for page in found["ocr_downscaled_pages"])
            out.print(f"[yellow]page(s) {pages} OCR'd at a lower resolution: too many pixels "
                      "(CIVICSETU_OCR_MAX_PIXELS)[/yellow]")  # fmt: skip
        if found["doubled_glyph_pages"]:
            pages = ", ".join(f"{d['page']} ({d['glyphs']})" for d in found["doubled_glyph_pages"])
            out.print(f"glyphs drawn twice, read once, on page(s) {pages}")
        for judged in found["text_layers_not_trusted"]:
            out.print(f"[yellow]page {judged['page']}: {judged['why']}[/yellow]")
        table = Table(title=f"{len(found['units'])} units")
        for column in ("label", "title", "first_page", "last_page"):
            table.add_column(column)
        for unit in found["units"]:
            table.add_row(unit["label"], unit["title"][:80], str(unit["first_page"]),
                          str(unit["last_page"]))  # fmt: skip
        out.print(table)
        if found["ocr_number_reads"]:  # never silent: each number read through OCR's confusions
            reads = ", ".join(f"{r['label']} ('{r['printed']}' as '{r['read']}')"
                              for r in found["ocr_number_reads"])  # fmt: skip
            out.print(f"[yellow]numbers read through OCR's confusions: {reads}[/yellow]")
        out.print(f"coverage {found['coverage']:.4f}")
        for check in found["checks"]:
            if check["passed"]:
                state = "[green]pass[/green]"
            else:
                state = (
                    "[red]FAIL[/red]" if check["severity"] == "error" else "[yellow]warn[/yellow]"
                )
            out.print(f"  {state} {check['name']}: {check['message']}")
    if not found["structure_ok"]:
        raise typer.Exit(1)


def sections(
    document: Annotated[str, typer.Option("--document", "-d", help="Document key")],
    as_of: Annotated[
        str | None, typer.Option("--as-of", help="YYYY-MM-DD: the units in force on that date")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List label, title and first page of each top-level unit of a document as printed; with
    --as-of, the units in force on that date, each amended one with the instrument that amended
    it."""
    from civicsetu_pipelines.answer import QuestionError, parse_as_of
    from civicsetu_pipelines.store import read_sections, units_in_force

    try:
        day = parse_as_of(as_of) if as_of else None
    except QuestionError as exc:
        console.print(f"[red]--as-of: {exc}[/red]")
        raise typer.Exit(2) from None
    with connect_store() as conn:
        try:
            units = read_sections(conn, document)
        except KeyError:
            console.print(
                f"[red]No document {document!r} in the catalog. Materialize it first, or check "
                "the key with `civicsetu stats`.[/red]"
            )
            raise typer.Exit(2) from None
        if day is not None:
            units = units_in_force(conn, document, day)
    rows = [
        {"label": u["label"], "title": u["title"], "page_start": u["page_start"],
         **({"in_force_from": str(u["valid_from"]), "in_force_until":
             str(u["valid_to"]) if u["valid_to"] else None,
             "amended_by": (u["amendment"] or {}).get("by")} if day is not None else {})}
        for u in units
    ]  # fmt: skip
    if as_json:
        print_json({"document": document, "as_of": as_of, "units": rows})
        return
    table = Table(title=f"{document} in force on {day}" if day else document)
    columns = ["label", "title", "page_start"] + (["in_force_from", "amended_by"] if day else [])
    for column in columns:
        table.add_column(column)
    for r in rows:
        table.add_row(*(str(r[c] or "") for c in columns))
    out.print(table)


def history(
    document: Annotated[str, typer.Argument(help="Document key")],
    label: Annotated[str, typer.Argument(help='The unit, e.g. "Rule 18(2)"')],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Every version of a unit: its dates, status and source (the document, or the amending
    instrument with its instruction)."""
    from civicsetu_pipelines.store import unit_history

    with connect_store() as conn:
        versions = unit_history(conn, document, label)
    if not versions:
        console.print(f"[red]No unit {label!r} in {document!r}: check the labels with "
                      f"`civicsetu sections -d {document}`[/red]")  # fmt: skip
        raise typer.Exit(2)
    rows = [
        {"label": v["label"], "chunk_id": v["chunk_id"], "valid_from": str(v["valid_from"]),
         "valid_to": str(v["valid_to"]) if v["valid_to"] else None, "status": v["status"],
         "source": (f"{v['amendment']['kind']} by {v['amendment']['by']} (page "
                    f"{v['amendment']['page']})" if v["amendment"] else
                    f"{document} (sha256 {str(v['sha256'])[:12]}…)"),
         "instruction": (v["amendment"] or {}).get("instruction"), "text": v["text"]}
        for v in versions
    ]  # fmt: skip
    if as_json:
        print_json({"document": document, "label": label, "versions": rows})
        return
    table = Table(title=f"{label} of {document}: every version")
    for column in ("label", "from", "to", "status", "source", "text"):
        table.add_column(column)
    for r in rows:
        table.add_row(r["label"], r["valid_from"], r["valid_to"] or "", r["status"], r["source"],
                      " ".join(r["text"].split())[:200])  # fmt: skip
    out.print(table)


def changes(
    jurisdiction: Annotated[
        list[str] | None,
        typer.Option("--jurisdiction", "-j", help="Only these jurisdictions (repeatable)"),
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="YYYY-MM-DD: changes recorded on or after it")
    ] = None,
    kind: Annotated[
        list[str] | None,
        typer.Option("--kind", help="Only these kinds: added, changed, ended, provision, citation"),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many, newest first")] = 200,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """What changed, recorded by each run, newest first: units added, changed (the sha256 of
    their text before and after, and the amending instrument, if any) and ended; provision
    values that moved; golden questions whose governing citations changed."""
    import datetime as dt

    from civicsetu_pipelines.store import CHANGE_KINDS, change_detail, change_hashes, read_changes

    try:
        day = dt.date.fromisoformat(since) if since else None
    except ValueError:
        console.print(f"[red]--since: not a date (YYYY-MM-DD): {since!r}[/red]")
        raise typer.Exit(2) from None
    unknown = sorted(set(kind or ()) - set(CHANGE_KINDS))
    if unknown or limit < 1:
        console.print(f"[red]--kind: one of {', '.join(CHANGE_KINDS)} (not {unknown})[/red]"
                      if unknown else "[red]--limit: at least 1[/red]")  # fmt: skip
        raise typer.Exit(2)
    wanted = [j.upper() for j in jurisdiction or ()]
    with connect_store() as conn:
        rows = read_changes(conn, jurisdictions=wanted, since=day, kinds=kind or (), limit=limit)
    data = [{**{k: v for k, v in r.items() if k != "recorded_at"},
             "recorded_at": r["recorded_at"].isoformat()} for r in rows]  # fmt: skip
    if as_json:
        print_json({"changes": data})
        return
    if not data:
        console.print("No change recorded" + (f" since {since}" if since else "") + ".")
        return
    table = Table(title="What changed, newest first")
    for column in ("recorded", "jurisdiction", "kind", "document", "unit", "text sha256",
                   "instrument", "detail"):  # fmt: skip
        table.add_column(column)
    for r in data:
        table.add_row(r["recorded_at"][:19], r["jurisdiction"], r["kind"], r["document_key"] or "",
                      r["unit_label"] or "", change_hashes(r), r["instrument"] or "",
                      change_detail(r))  # fmt: skip
    out.print(table)

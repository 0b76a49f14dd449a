"""``civicsetu graph``: the legal graph (stats, export, neighbours)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from civicsetu_pipelines.base import Settings
from civicsetu_pipelines.cli.common import connect_store, console, out, print_json

graph_app = typer.Typer(help="The legal graph: cross-references and rule-to-Act derivation.")


@graph_app.command("stats")
def graph_stats_command(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Edges by type and jurisdiction."""
    from civicsetu_pipelines.graph import graph_stats

    with connect_store() as conn:
        stats = graph_stats(conn)
    if as_json:
        print_json(stats)
        return
    table = Table(title="Graph edges")
    for column in ("jurisdiction", "edge_type", "edges"):
        table.add_column(column)
    for row in stats["edges"]:
        table.add_row(row["jurisdiction"], row["edge_type"], str(row["edges"]))
    out.print(table)
    # column -> header (the JSON keeps the full names)
    columns = {"internal_references": "references", "unresolved": "unresolved",
               "unresolved_rate": "rate", "substantive_rules": "rules",
               "substantive_derived": "derived", "derived_share": "share"}  # fmt: skip
    for title, rows, keys in (
        ("References and derivations by jurisdiction", stats["jurisdictions"], ("jurisdiction",)),
        ("References and derivations by document", stats["documents"],
         ("jurisdiction", "document_key")),
    ):  # fmt: skip
        table = Table(title=title)
        for column in keys:
            table.add_column(column)
        for header in columns.values():
            table.add_column(header, justify="right")
        for row in rows:
            table.add_row(*("-" if row[c] is None else str(row[c]) for c in (*keys, *columns)))
        out.print(table)
    out.print(
        "references: internal references made, of which unresolved (rate: their share); "
        "rules: substantive rules (all but definitions and short title), of which derived "
        "from an Act section (share; the derivation_coverage check wants 0.9)"
    )


@graph_app.command("export")
def graph_export_command(
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Directory (default: reports/neo4j_import/all)")
    ] = None,
    jurisdiction: Annotated[
        str | None, typer.Option("--jurisdiction", "-j", help="One jurisdiction (default: all)")
    ] = None,
) -> None:
    """Write the graph as CSV for `neo4j-admin database import full`, with an import.sh."""
    from civicsetu_pipelines.base import reports_dir
    from civicsetu_pipelines.graph import export_csv, read_snapshot

    target = out_dir or reports_dir(Settings.from_env().state_dir) / "neo4j_import" / "all"
    with connect_store() as conn:
        snapshot = read_snapshot(conn, jurisdiction)
    if not snapshot.edges:
        console.print("[red]The graph is empty: materialize it first (civicsetu materialize)[/red]")
        raise typer.Exit(2)
    files = export_csv(snapshot, target)
    console.print(
        f"{len(snapshot.documents)} documents, {len(snapshot.units)} units, "
        f"{len(snapshot.edges)} edges -> {target}"
    )
    for name in sorted(files):
        console.print(f"  {files[name].name}")
    console.print(f"Load into a stopped Neo4j: cd {target} && ./import.sh")


@graph_app.command("neighbours")
def graph_neighbours(
    label: Annotated[str, typer.Argument(help='A unit label, e.g. "Rule 9" or "Section 13"')],
    jurisdiction: Annotated[str, typer.Option("--jurisdiction", "-j")],
    document: Annotated[str | None, typer.Option("--document", "-d")] = None,
    depth: Annotated[int, typer.Option(min=1, max=2)] = 1,
    direction: Annotated[str, typer.Option(help="out, in or both")] = "both",
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Edges around a unit (REFERENCES and DERIVED_FROM, depth 1 or 2)."""
    from civicsetu_pipelines.graph import neighbours

    with connect_store() as conn:
        query = (
            "SELECT chunk_id::text, document_key FROM legal_chunks WHERE status = 'current' "
            "AND jurisdiction = %s AND label = %s"
        )
        params: list[Any] = [jurisdiction.upper(), label]
        if document:
            query += " AND document_key = %s"
            params.append(document)
        matches = conn.execute(query, params).fetchall()
        if len(matches) != 1:
            found = sorted({m[1] for m in matches})
            console.print(
                f"[red]{label!r} in {jurisdiction.upper()}: "
                + (f"in several documents {found}; pass --document" if found else "not found")
                + "[/red]"
            )
            raise typer.Exit(2)
        rows = neighbours(conn, matches[0][0], depth=depth, direction=direction)
    if as_json:
        print_json({"label": label, "document": matches[0][1], "edges": rows})
        return
    table = Table(title=f"{label} ({matches[0][1]})")
    for column in ("edge_type", "source_label", "target_label", "evidence_phrase", "depth"):
        table.add_column(column)
    for row in rows:
        table.add_row(*(str(row[c]) for c in ("edge_type", "source_label", "target_label",
                                              "evidence_phrase", "depth")))  # fmt: skip
    out.print(table)

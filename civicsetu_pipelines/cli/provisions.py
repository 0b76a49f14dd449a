"""``civicsetu compare`` and ``civicsetu divergences``: what each state fixed for each matter the
Act leaves to its rules, side by side, and where the states depart."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer
from rich.table import Table

from civicsetu_pipelines.cli.common import connect_store, console, out, print_json

DISCLAIMER = ("Values read from the stored rules, each with its verbatim quote; a flag is a "
              "pointer for a person to read both texts, not legal advice.")  # fmt: skip


def compare(
    matter: Annotated[
        str,
        typer.Option(
            "--matter",
            "-m",
            help="A matter of data/matters.yaml (e.g. interest_rate); 'all' every one; "
            "'list' names them",
        ),
    ],  # fmt: skip
    jurisdiction: Annotated[
        list[str] | None, typer.Option("--jurisdiction", "-j", help="Jurisdiction(s); default: all")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """What each jurisdiction's rules fix for one matter (or ``all``), side by side, each value
    with its verbatim quote, rule and page (as materialized: state_provisions)."""
    from civicsetu_pipelines.provisions import load_matter_specs, stored_provisions

    specs = {s.key: s for s in load_matter_specs()}
    if matter == "list" or matter not in {*specs, "all"}:
        if matter != "list":
            console.print(f"[red]Unknown matter {matter!r}[/red]; one of: {', '.join(specs)}")
        for spec in specs.values():
            out.print(f"{spec.key}: {spec.name}")
        raise typer.Exit(0 if matter == "list" else 2)
    with connect_store() as conn:
        rows = stored_provisions(
            conn, [j.upper() for j in jurisdiction or []], None if matter == "all" else matter
        )
    if not rows:
        console.print("[red]No provisions stored yet: materialize the jurisdictions first "
                      "(civicsetu materialize)[/red]")  # fmt: skip
        raise typer.Exit(1)
    if as_json:
        print_json([dataclasses.asdict(r) for r in rows])
        return
    for key in dict.fromkeys(r.matter for r in rows):  # rows come ordered by matter
        table = Table(title=specs[key].name if key in specs else key)
        for column in ("jurisdiction", "value", "rule", "page", "quote"):
            table.add_column(column)
        for r in rows:
            if r.matter == key:
                table.add_row(r.jurisdiction, r.value or "not found", f"{r.label or ''} "
                              f"({r.document_key})" if r.label else "", str(r.page or ""),
                              r.quote or "")  # fmt: skip
        out.print(table)
    out.print(DISCLAIMER, style="dim")


def divergences_command(
    jurisdiction: Annotated[
        str | None, typer.Option("--jurisdiction", "-j", help="One jurisdiction; default: all")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Where the states depart, matter by matter: a value that differs from the others, a rate
    left to the contract, a matter left unfilled, a draft rule; each flag with its quotes."""
    from civicsetu_pipelines.provisions import stored_divergences

    with connect_store() as conn:
        flags = stored_divergences(conn, jurisdiction.upper() if jurisdiction else None)
    if as_json:
        print_json(flags)
        return
    if not flags:
        console.print("No divergence flagged (or none computed yet: civicsetu materialize runs "
                      "state_divergences after the partitions)")  # fmt: skip
        return
    for f in flags:
        out.print(f"[bold]{f['matter']}[/bold] {f['jurisdiction']} ({f['kind']}): {f['message']}")
        for e in f["evidence"]:
            out.print(f"    {e['jurisdiction']} {e['label']}, page {e['page']}: \"{e['quote']}\"",
                      markup=False)  # fmt: skip
    out.print(DISCLAIMER, style="dim")

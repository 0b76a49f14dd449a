"""The edges of dated law: AMENDED_BY (a unit an amending instrument changed -> the instrument,
the instruction's words as evidence) and REPEALED_BY (a repealed instrument -> the one that
repealed it). Pure domain code (no Dagster, no database).

They are read from the chunk rows :mod:`civicsetu_pipelines.ingest.amendments` dated: a point
in time an amendment made carries its evidence (``amendment``); a unit an instruction ended with
no successor (omitted) and a repealed document's units end on their instrument's date.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from civicsetu_pipelines.graph.edges import Edge


def _amendment(row: dict[str, Any]) -> dict[str, Any] | None:
    value = row.get("amendment")  # JSON text from Parquet (None, or NaN, when not amended)
    if isinstance(value, str):
        return dict(json.loads(value)) if value else None
    return dict(value) if isinstance(value, dict) else None


def _flags(row: dict[str, Any]) -> list[str]:
    flags = row.get("flags") or []
    return [str(f) for f in (json.loads(flags) if isinstance(flags, str) else flags)]


def amendment_edges(rows: Sequence[dict[str, Any]]) -> list[Edge]:
    """AMENDED_BY from every point in time an amendment made and from every unit an
    instruction ended (flag ``ended_by:<key>``); REPEALED_BY once per repealed document (its
    units flagged ``repealed_by:<key>``)."""
    edges = []
    repealed: dict[tuple[str, str], None] = {}
    for row in rows:
        document, chunk, label = str(row["document_key"]), str(row["chunk_id"]), str(row["label"])
        amendment = _amendment(row)
        if amendment:
            by = str(amendment["by"])
            edges.append(Edge(
                "AMENDED_BY", document, chunk, label, by, by, str(amendment.get("title") or by),
                evidence_phrase=str(amendment.get("instruction") or "")[:500] or None,
                note=f"{amendment.get('kind')}: this text from {amendment.get('date')}",
            ))  # fmt: skip
        for flag in _flags(row):
            kind, _, by = flag.partition(":")
            if kind == "ended_by" and by:
                until = row.get("in_force_to")  # set where a flag is (an ISO day)
                edges.append(Edge("AMENDED_BY", document, chunk, label, by, by, by,
                                  note=f"this text until {until}"))  # fmt: skip
            elif kind == "repealed_by" and by:
                repealed[(document, by)] = None
    for document, by in repealed:
        edges.append(Edge("REPEALED_BY", document, document, document, by, by, by,
                          note="every unit ends on the repealing instrument's date"))  # fmt: skip
    return edges

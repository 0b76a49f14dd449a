"""The legal graph: edges from chunks, stored in Postgres, and neighbourhood queries.

Pure domain code over psycopg (no Dagster). Nodes are documents (by key) and chunks (by id).
Edges: ``HAS_PART`` (document -> top-level unit -> sub-unit), ``REFERENCES`` (unit -> the finest
existing unit it cites), ``DERIVED_FROM`` (a state rule -> the Act section it implements, from
the rule's own words) and ``EXTERNAL_REFERENCE`` (unit -> another enactment, by name). Every
reference edge keeps its evidence: the chunk, character offsets and the quoted phrase.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

from civicsetu_pipelines.references import (
    UnitIndex,
    derivation,
    extract_references,
    resolve,
)

EDGE_FIELDS = (
    "edge_type", "source_document", "source_id", "source_label", "target_document", "target_id",
    "target_label", "evidence_chunk", "evidence_start", "evidence_end", "evidence_phrase",
    "confidence",
)  # fmt: skip


@dataclass(frozen=True)
class Edge:
    edge_type: str
    source_document: str
    source_id: str
    source_label: str
    target_document: str | None
    target_id: str | None
    target_label: str
    evidence_chunk: str | None = None
    evidence_start: int | None = None
    evidence_end: int | None = None
    evidence_phrase: str | None = None
    confidence: float = 1.0


@dataclass
class GraphBuild:
    edges: list[Edge] = field(default_factory=list)
    unresolved: list[dict[str, Any]] = field(default_factory=list)
    internal: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # per document

    def unresolved_rate(self, document_key: str) -> float:
        total = self.internal.get(document_key, 0)
        missing = sum(1 for u in self.unresolved if u["document"] == document_key)
        return missing / total if total else 0.0


def build_edges(
    chunks: Sequence[Mapping[str, Any]],
    *,
    doc_types: Mapping[str, str],
    act_key: str,
    indexes: Mapping[str, UnitIndex],
) -> GraphBuild:
    """Edges of one jurisdiction's chunks. ``indexes`` must hold every document referred to
    (the jurisdiction's own and the Act's)."""
    build = GraphBuild()
    by_doc: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for chunk in chunks:
        by_doc[str(chunk["document_key"])].append(chunk)
    for key, doc_chunks in sorted(by_doc.items()):
        doc_type = doc_types[key]
        labels = {str(c["chunk_id"]): str(c["label"]) for c in doc_chunks}
        rule_text: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for chunk in sorted(doc_chunks, key=lambda c: int(c["ordinal"])):
            cid, label = str(chunk["chunk_id"]), str(chunk["label"])
            parent = chunk.get("parent_id")
            if isinstance(parent, str) and parent in labels:
                parent_label = labels[str(parent)]
                build.edges.append(
                    Edge("HAS_PART", key, str(parent), parent_label, key, cid, label)
                )
            else:
                build.edges.append(Edge("HAS_PART", key, key, key, key, cid, label))
            if chunk["unit"] == "rule":
                rule_text[str(chunk["section_label"])].append(chunk)
            for ref in extract_references(str(chunk["text"])):
                if ref.kind == "external":
                    build.edges.append(
                        Edge(
                            "EXTERNAL_REFERENCE",
                            key,
                            cid,
                            label,
                            None,
                            None,
                            str(ref.external),
                            cid,
                            ref.start,
                            ref.end,
                            ref.phrase,
                        )  # fmt: skip
                    )
                    continue
                res = resolve(ref, document_key=key, doc_type=doc_type, act_key=act_key,
                              indexes=indexes)  # fmt: skip
                if res is None:
                    continue
                build.internal[key] += 1
                if not res.resolved:
                    build.unresolved.append(
                        {
                            "document": key,
                            "chunk": cid,
                            "label": label,
                            "reference": ref.label,
                            "phrase": ref.phrase,
                        }  # fmt: skip
                    )
                    continue
                if res.target_chunk == cid:
                    continue  # a unit citing itself ("this section") is no edge
                build.edges.append(
                    Edge(
                        "REFERENCES",
                        key,
                        cid,
                        label,
                        res.target_document,
                        res.target_chunk,
                        str(res.target_label),
                        cid,
                        ref.start,
                        ref.end,
                        ref.phrase,
                    )  # fmt: skip
                )
        for rule_label, parts in rule_text.items():
            head = parts[0]
            for part in parts:
                derived = derivation(str(part["text"]))
                if derived is None:
                    continue
                res = resolve(derived, document_key=key, doc_type=doc_type, act_key=act_key,
                              indexes=indexes)  # fmt: skip
                if res is not None and res.resolved:
                    build.edges.append(
                        Edge(
                            "DERIVED_FROM",
                            key,
                            str(head["chunk_id"]),
                            rule_label,
                            res.target_document,
                            res.target_chunk,
                            str(res.target_label),
                            str(part["chunk_id"]),
                            derived.start,
                            derived.end,
                            derived.phrase,
                        )  # fmt: skip
                    )
                break
    return build


def replace_edges(conn: psycopg.Connection[Any], jurisdiction: str, edges: Iterable[Edge]) -> int:
    """Replace a jurisdiction's edges in one transaction under its advisory lock."""
    rows = [(jurisdiction, *(getattr(e, f) for f in EDGE_FIELDS)) for e in edges]
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"graph:{jurisdiction}",))
        cur.execute("DELETE FROM graph_edges WHERE jurisdiction = %s", (jurisdiction,))
        cur.executemany(
            f"INSERT INTO graph_edges (jurisdiction, {', '.join(EDGE_FIELDS)}) "
            f"VALUES (%s, {', '.join(['%s'] * len(EDGE_FIELDS))})",
            rows,
        )
    return len(rows)


_NEIGHBOURS = """
WITH RECURSIVE walk(node, depth, path) AS (
    SELECT %(start)s::text, 0, ARRAY[%(start)s::text]
  UNION ALL
    SELECT CASE WHEN e.source_id = w.node THEN e.target_id ELSE e.source_id END,
           w.depth + 1,
           w.path || CASE WHEN e.source_id = w.node THEN e.target_id ELSE e.source_id END
    FROM walk w
    JOIN graph_edges e
      ON e.edge_type = ANY(%(types)s)
     AND ((%(outgoing)s AND e.source_id = w.node) OR (%(incoming)s AND e.target_id = w.node))
    WHERE w.depth < %(depth)s AND e.target_id IS NOT NULL
      AND NOT (CASE WHEN e.source_id = w.node THEN e.target_id ELSE e.source_id END
               = ANY(w.path))
)
SELECT DISTINCT ON (e.edge_id) e.edge_type, e.source_label, e.source_document, e.target_label,
       e.target_document, e.evidence_phrase, w.depth + 1 AS depth
FROM walk w
JOIN graph_edges e
  ON e.edge_type = ANY(%(types)s)
 AND ((%(outgoing)s AND e.source_id = w.node) OR (%(incoming)s AND e.target_id = w.node))
WHERE w.depth < %(depth)s
ORDER BY e.edge_id
"""


def neighbours(
    conn: psycopg.Connection[Any],
    node_id: str,
    *,
    types: Sequence[str] = ("REFERENCES", "DERIVED_FROM"),
    direction: str = "both",
    depth: int = 1,
) -> list[dict[str, Any]]:
    """Edges within ``depth`` (at most 2) of a node, following ``types`` in ``direction``."""
    if direction not in {"out", "in", "both"}:
        raise ValueError(f"direction must be out, in or both, not {direction!r}")
    params = {
        "start": node_id,
        "types": list(types),
        "outgoing": direction in {"out", "both"},
        "incoming": direction in {"in", "both"},
        "depth": max(1, min(int(depth), 2)),
    }
    with conn.cursor() as cur:
        cur.execute(_NEIGHBOURS, params)
        names = [d.name for d in cur.description or []]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def graph_stats(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    with conn.cursor() as cur:
        cur.execute(
            "SELECT jurisdiction, edge_type, count(*) FROM graph_edges "
            "GROUP BY jurisdiction, edge_type ORDER BY jurisdiction, edge_type"
        )
        return [{"jurisdiction": j, "edge_type": t, "edges": n} for j, t, n in cur.fetchall()]

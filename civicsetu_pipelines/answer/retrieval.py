"""Hybrid retrieval over the materialized stores: pgvector, full text, explicit references, the
family of strong hits and the legal graph, fused by reciprocal rank and reranked.

Pure domain code over psycopg (no Dagster). Every SQL statement is a parameterized constant.
Stages (each timed by the caller):

1. explicit references ("Section 18(2)", "rule 16 of the Gujarat rules", "Form N") resolve
   directly to their unit (the finest existing one) in the right jurisdiction and document;
2. pgvector HNSW cosine top-N (``ef_search`` a setting; iterative scans keep filtered queries
   full) and Postgres full text (``websearch_to_tsquery`` over the question's terms joined with
   ``or``, so long questions still match), fused by reciprocal rank fusion (k = 60);
3. family expansion (parent and sibling units of the strongest hits) and, for questions about
   cross-references, penalties or how a rule implements the Act, graph expansion through
   REFERENCES and DERIVED_FROM edges (depth <= 2);
4. reranking (:class:`Reranker`: the deterministic default, or a cross-encoder when configured)
   and per-document diversity.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import psycopg

from civicsetu_pipelines.answer.questions import ExplicitReference, Query
from civicsetu_pipelines.store.legal_chunks import in_force_clause, prepare

ACT_JURISDICTION = "CENTRAL"
GRAPH_INTENTS = frozenset({"cross_reference", "penalty", "implementation"})

_COLUMNS = (
    "c.chunk_id::text AS chunk_id, c.document_key, c.jurisdiction, c.doc_type, c.unit, c.label, "
    "c.section_label, c.title, c.text, c.page_start, c.page_end, c.parent_id::text AS parent_id, "
    "c.ordinal, c.level, v.sha256, d.title AS document_title, d.source_url"
)
_FROM = (
    "FROM legal_chunks c JOIN document_versions v ON v.version_id = c.version_id "
    "LEFT JOIN documents d ON d.key = c.document_key"
)


@dataclass(frozen=True)
class RetrievalSettings:
    candidates: int = 40  # rows taken from each of pgvector and full text
    ef_search: int = 100  # hnsw.ef_search
    rrf_k: int = 60
    per_document: int = 3  # at most this many units of one document in the final list
    family_of: int = 3  # expand parent and siblings of this many top hits
    graph_depth: int = 2
    graph_of: int = 5  # expand the graph around this many top hits


@dataclass
class Candidate:
    """A unit that may answer the question, with where it came from and its scores."""

    row: dict[str, Any]
    ranks: dict[str, int] = field(default_factory=dict)  # retriever -> 1-based rank
    distance: float | None = None  # cosine distance to the question, when vector-ranked
    fused: float = 0.0
    score: float = 0.0
    exact: bool = False  # an explicit reference in the question names this unit
    via: str | None = None  # "family" / "graph:REFERENCES" ... for expanded units

    @property
    def chunk_id(self) -> str:
        return str(self.row["chunk_id"])

    @property
    def label(self) -> str:
        return str(self.row["label"])

    def summary(self) -> dict[str, Any]:
        return {
            "jurisdiction": self.row["jurisdiction"],
            "document": self.row["document_key"],
            "label": self.label,
            "section": self.row["section_label"],
            "chunk_id": self.chunk_id,
            "score": round(self.score, 4),
        }


@dataclass
class ReferenceResolution:
    reference: ExplicitReference
    candidates: list[dict[str, Any]]  # the units found (one per jurisdiction/document)

    @property
    def ambiguous(self) -> bool:
        """The same label in several documents and nothing in the question to choose."""
        return len({(r["jurisdiction"], r["document_key"]) for r in self.candidates}) > 1


def _rows(cur: psycopg.Cursor[Any]) -> list[dict[str, Any]]:
    names = [d.name for d in cur.description or []]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _filters(jurisdictions: Sequence[str] | None, as_of: dt.date | None) -> tuple[str, list[Any]]:
    where, params = in_force_clause(as_of, alias="c")
    clauses = [where]
    values: list[Any] = list(params)
    if jurisdictions:
        clauses.append("c.jurisdiction = ANY(%s)")
        values.append(list(jurisdictions))
    return " AND ".join(clauses), values


def prepare_session(conn: psycopg.Connection[Any], ef_search: int = 100) -> None:
    """Set a connection up for repeated queries: pgvector types, iterative index scans (so a
    filtered query still returns k rows) and ``hnsw.ef_search``, once for the session."""
    prepare(conn)
    with conn.cursor() as cur:
        cur.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', false), "
            "set_config('hnsw.ef_search', %s, false)",
            (str(int(ef_search)),),
        )


def vector_candidates(
    conn: psycopg.Connection[Any],
    vector: np.ndarray,
    limit: int,
    *,
    jurisdictions: Sequence[str] | None = None,
    as_of: dt.date | None = None,
) -> list[dict[str, Any]]:
    """Top ``limit`` units by cosine distance through the HNSW index, on a connection set up
    by :func:`prepare_session` (one round trip)."""
    where, values = _filters(jurisdictions, as_of)
    query = (
        f"SELECT {_COLUMNS}, c.embedding <=> %s AS distance {_FROM} "
        f"WHERE {where} AND c.embedding IS NOT NULL ORDER BY c.embedding <=> %s LIMIT %s"
    )
    vec = np.asarray(vector, dtype=np.float32)
    with conn.cursor() as cur:
        cur.execute(query, (vec, *values, vec, int(limit)))
        rows = _rows(cur)
    rows.sort(key=lambda r: r["distance"])  # relaxed order: re-sort exactly
    return rows


# Everything but letters (with Indic vowel signs and other combining marks), digits and "-".
_TSQUERY_UNSAFE = re.compile(r"[^\w\u0300-\u036f\u0900-\u0dff-]")


def fulltext_query(terms: Sequence[str]) -> str:
    """websearch syntax with OR semantics: every term may match, more matches rank higher."""
    safe = [_TSQUERY_UNSAFE.sub("", t).lstrip("-") for t in terms]
    return " or ".join(t for t in safe if t)


def fulltext_candidates(
    conn: psycopg.Connection[Any],
    terms: Sequence[str],
    limit: int,
    *,
    jurisdictions: Sequence[str] | None = None,
    as_of: dt.date | None = None,
) -> list[dict[str, Any]]:
    """Top ``limit`` units by ``ts_rank_cd`` for the question's terms (OR semantics)."""
    text = fulltext_query(with_synonyms(terms))
    if not text:
        return []
    where, values = _filters(jurisdictions, as_of)
    query = (
        f"SELECT {_COLUMNS}, ts_rank_cd(c.tsv, q, 1) AS rank {_FROM}, "
        f"websearch_to_tsquery('english', %s) q WHERE c.tsv @@ q AND {where} "
        "ORDER BY rank DESC, c.ordinal LIMIT %s"
    )
    with conn.cursor() as cur:
        cur.execute(query, (text, *values, int(limit)))
        return _rows(cur)


def _label_chain(label: str) -> list[str]:
    """``Section 18(2)(a)`` -> [``Section 18(2)(a)``, ``Section 18(2)``, ``Section 18``]."""
    chain = [label]
    while True:
        shorter = re.sub(r"\([^()]*\)$", "", chain[-1])
        if shorter == chain[-1]:
            return chain
        chain.append(shorter)


def resolve_references(
    conn: psycopg.Connection[Any],
    references: Sequence[ExplicitReference],
    *,
    jurisdictions: Sequence[str] | None = None,
    as_of: dt.date | None = None,
    context: str = "",
) -> list[ReferenceResolution]:
    """Each explicit reference to the finest existing unit of the right document.

    A section is the Act's (CENTRAL); a rule, form or annexure belongs to the rules of the
    jurisdiction the question attaches to it, else of the filter's jurisdictions, else of any
    state (then it may be ambiguous, unless ``context``, the question, names one document's
    title). A label that does not exist resolves to nothing.
    """
    out: list[ReferenceResolution] = []
    for ref in references:
        chain = _label_chain(ref.label)
        if ref.kind == "section":
            scope: Sequence[str] | None = [ACT_JURISDICTION]
        elif ref.jurisdiction:
            scope = [ref.jurisdiction]
        else:
            scope = [j for j in (jurisdictions or []) if j != ACT_JURISDICTION] or None
        where, values = _filters(scope, as_of)
        kind_clause = "c.doc_type = 'act'" if ref.kind == "section" else "c.doc_type <> 'act'"
        if ref.kind == "question":
            kind_clause = "c.doc_type = 'faq'"
        query = (
            f"SELECT {_COLUMNS} {_FROM} WHERE {where} AND {kind_clause} "
            "AND c.label = ANY(%s) ORDER BY c.jurisdiction, c.document_key, length(c.label) DESC"
        )
        with conn.cursor() as cur:
            cur.execute(query, (*values, chain))
            rows = _rows(cur)
        finest: dict[tuple[str, str], dict[str, Any]] = {}
        for row in rows:  # longest label first within each document
            finest.setdefault((row["jurisdiction"], row["document_key"]), row)
        out.append(ReferenceResolution(ref, _by_document_title(list(finest.values()), context)))
    return out


def _by_document_title(rows: list[dict[str, Any]], context: str) -> list[dict[str, Any]]:
    """Of the same label in several documents, the one whose title the question echoes
    ("Gujarat General Rule 9": the General Rules), when exactly one does best."""
    if len(rows) < 2 or not context:
        return rows
    asked = _stems(context)
    generic = {"rule", "real", "estate", "regulation", "development", "the", "of", "and"}
    scores = [len((_stems(str(r.get("document_title") or "")) & asked) - generic) for r in rows]
    best = max(scores)
    if best > 0 and scores.count(best) == 1:
        return [rows[scores.index(best)]]
    return rows


def family_rows(
    conn: psycopg.Connection[Any], hits: Sequence[Mapping[str, Any]], *, as_of: dt.date | None
) -> list[dict[str, Any]]:
    """Parent and sibling units (same document and section) of ``hits``."""
    if not hits:
        return []
    where, values = _filters(None, as_of)
    pairs = sorted({(str(h["document_key"]), str(h["section_label"])) for h in hits})
    query = (
        f"SELECT {_COLUMNS} {_FROM} WHERE {where} AND (c.document_key, c.section_label) IN "
        "(SELECT * FROM unnest(%s::text[], %s::text[])) ORDER BY c.document_key, c.ordinal"
    )
    with conn.cursor() as cur:
        cur.execute(query, (*values, [p[0] for p in pairs], [p[1] for p in pairs]))
        return _rows(cur)


_GRAPH = """
WITH RECURSIVE walk(node, depth, edge_type) AS (
    SELECT unnest(%(start)s::text[]), 0, NULL::text
  UNION
    SELECT CASE WHEN e.source_id = w.node THEN e.target_id ELSE e.source_id END, w.depth + 1,
           e.edge_type
    FROM walk w
    JOIN graph_edges e ON e.edge_type = ANY(%(types)s)
     AND (e.source_id = w.node OR e.target_id = w.node)
    WHERE w.depth < %(depth)s AND e.target_id IS NOT NULL
)
SELECT node, min(depth) AS depth, min(edge_type) AS edge_type FROM walk
WHERE depth > 0 GROUP BY node ORDER BY min(depth), node LIMIT %(limit)s
"""


def graph_rows(
    conn: psycopg.Connection[Any],
    chunk_ids: Sequence[str],
    *,
    depth: int = 2,
    as_of: dt.date | None = None,
    limit: int = 40,
) -> list[dict[str, Any]]:
    """Units within ``depth`` (<= 2) REFERENCES / DERIVED_FROM edges of ``chunk_ids``, either
    direction, nearest first; each row carries ``graph_depth`` and ``graph_edge``."""
    if not chunk_ids:
        return []
    params = {
        "start": list(chunk_ids),
        "types": ["REFERENCES", "DERIVED_FROM"],
        "depth": max(1, min(int(depth), 2)),
        "limit": int(limit),
    }
    with conn.cursor() as cur:
        cur.execute(_GRAPH, params)
        found = {str(node): (int(d), str(t)) for node, d, t in cur.fetchall()}
    ids = [n for n in found if n not in set(chunk_ids) and _looks_like_uuid(n)]
    if not ids:
        return []
    where, values = _filters(None, as_of)
    with conn.cursor() as cur:
        cur.execute(
            f"SELECT {_COLUMNS} {_FROM} WHERE {where} AND c.chunk_id = ANY(%s::uuid[])",
            (*values, ids),
        )
        rows = _rows(cur)
    for row in rows:
        row["graph_depth"], row["graph_edge"] = found[row["chunk_id"]]
    rows.sort(key=lambda r: (r["graph_depth"], r["chunk_id"]))
    return rows


_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _looks_like_uuid(value: str) -> bool:
    return bool(_UUID.match(value))


def fuse(ranked: Mapping[str, Sequence[Mapping[str, Any]]], k: int = 60) -> list[Candidate]:
    """Reciprocal rank fusion: score = sum over retrievers of 1 / (k + rank)."""
    by_id: dict[str, Candidate] = {}
    for source, rows in ranked.items():
        for rank, row in enumerate(rows, start=1):
            cid = str(row["chunk_id"])
            candidate = by_id.setdefault(cid, Candidate(dict(row)))
            if source not in candidate.ranks:
                candidate.ranks[source] = rank
                candidate.fused += 1.0 / (k + rank)
            if "distance" in row and row["distance"] is not None:
                candidate.distance = float(row["distance"])
    return sorted(by_id.values(), key=lambda c: (-c.fused, c.chunk_id))


# ---------------------------------------------------------------------------------------------
# Reranking


class Reranker(Protocol):
    name: str

    def rerank(self, query: Query, candidates: list[Candidate]) -> list[Candidate]: ...


_WORD = re.compile(r"[a-z0-9]+")

# Everyday words for the statute's own terms (a general legal thesaurus, not tuned to any
# question): a question about a "buyer" and a "builder" is about an allottee and a promoter.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "buyer": ("allottee",), "buyers": ("allottees",), "purchaser": ("allottee",),
    "homebuyer": ("allottee",), "builder": ("promoter",), "builders": ("promoters",),
    "developer": ("promoter",), "developers": ("promoters",), "flat": ("apartment",),
    "flats": ("apartments",), "punishment": ("penalty", "punishable"),
    "penalty": ("punishment", "punishable"), "fine": ("penalty",), "refund": ("return",),
    "force": ("commencement",), "commence": ("commencement",), "start": ("commencement",),
    "broker": ("agent",), "brokers": ("agents",), "tribunal": ("appellate",),
    "regulator": ("authority",), "deadline": ("within", "period"),
}  # fmt: skip


def with_synonyms(terms: Iterable[str]) -> list[str]:
    """The terms followed by the statute's words for them (no duplicates, order kept)."""
    out: dict[str, None] = {}
    for term in terms:
        out[term] = None
        for synonym in SYNONYMS.get(term.lower(), ()):
            out[synonym] = None
    return list(out)


@functools.lru_cache(maxsize=8192)
def _stems(text: str) -> frozenset[str]:
    """The stemmed words of a text (memoized: unit texts are scored for many questions)."""
    return frozenset(_stem(w) for w in _WORD.findall(text.lower()))


def _stem(word: str) -> str:
    """A light English stemmer: plurals to the singular (allottees -> allottee, penalties ->
    penalty), then -ation, -ment, -ing, -ed off words that keep 4 letters."""
    if len(word) <= 4:
        return word
    if word.endswith("ies"):
        word = word[:-3] + "y"
    elif word.endswith(("sses", "shes", "ches", "xes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ation", "ment", "ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def term_overlap(terms: Iterable[str], text: str | None) -> float:
    """Share of the question's terms (stemmed) present in ``text``."""
    have = _stems(text or "")
    wanted = [t.lower() for t in terms if t]
    if not wanted:
        return 0.0
    found = sum(
        1 for t in dict.fromkeys(wanted)
        if _stem(t) in have or any(_stem(s) in have for s in SYNONYMS.get(t, ()))
    )  # fmt: skip
    return found / len(dict.fromkeys(wanted))


@dataclass
class DeterministicReranker:
    """The default: fused rank, exact reference matches, title and text term matches.

    score = fused / max_fused + 1.0 * exact + 0.35 * title overlap + 0.25 * text overlap
            - 0.15 for a unit only reached by expansion
            + intent: 0.3 for a penalty provision (its title or label says penalty,
              punishment, fine or compounding) when the question is about penalties;
              0.5 for a unit one DERIVED_FROM step from a hit when it asks how a rule
              implements the Act; 0.3 for one REFERENCES step when it asks about
              cross-references; 0.3 for a definition (Section 2) when it asks what a word means;
              0.25 for a unit of a state the question names; 0.3 for a commencement provision
              when it asks when something comes into force
    """

    name: str = "deterministic"

    def rerank(self, query: Query, candidates: list[Candidate]) -> list[Candidate]:
        top = max((c.fused for c in candidates), default=0.0) or 1.0
        for c in candidates:
            title = term_overlap(query.terms, f"{c.row.get('title') or ''} {c.label}")
            text = term_overlap(query.terms, c.row.get("text"))
            c.score = c.fused / top + (1.0 if c.exact else 0.0) + 0.35 * title + 0.25 * text
            if c.via and not c.ranks:
                c.score -= 0.15
            c.score += _intent_bonus(query, c)
        return sorted(candidates, key=lambda c: (-c.score, c.chunk_id))


_PENALTY = re.compile(r"\b(?:penalt|punish|fine\b|fines\b|imprison|compound)", re.IGNORECASE)


def _intent_bonus(query: Query, c: Candidate) -> float:
    bonus = 0.0
    depth = c.row.get("graph_depth")
    if "penalty" in query.intents and _PENALTY.search(f"{c.row.get('title') or ''} {c.label}"):
        bonus += 0.3
    if "implementation" in query.intents and c.via == "graph:DERIVED_FROM" and depth == 1:
        bonus += 0.5
    if "cross_reference" in query.intents and c.via == "graph:REFERENCES" and depth == 1:
        bonus += 0.3
    if "definition" in query.intents and str(c.row.get("section_label")) == "Section 2":
        bonus += 0.3
    if c.row.get("jurisdiction") in query.jurisdictions and c.row.get("jurisdiction") != (
        ACT_JURISDICTION
    ):
        bonus += 0.25  # the question names this state: its own provisions first
    asks_commencement = {"force", "commence", "commencement", "effect"} & set(query.terms)
    if (
        "temporal" in query.intents
        and asks_commencement
        and _COMMENCEMENT.search(str(c.row.get("title") or ""))
    ):
        bonus += 0.3
    return bonus


_COMMENCEMENT = re.compile(r"commencement", re.IGNORECASE)


@dataclass
class CrossEncoderReranker:
    """A sentence-transformers cross-encoder (a local path or a hub name where one is reachable),
    blended with exact reference matches so a named unit is never pushed down."""

    model_path: str
    name: str = "cross-encoder"
    _model: Any = None

    def rerank(self, query: Query, candidates: list[Candidate]) -> list[Candidate]:
        if self._model is None:
            from sentence_transformers import CrossEncoder

            self._model = CrossEncoder(self.model_path, device="cpu")
        pairs = [(query.text, f"{c.label} {c.row.get('title') or ''}\n{c.row['text']}")
                 for c in candidates]  # fmt: skip
        scores = self._model.predict(pairs) if pairs else []
        for c, s in zip(candidates, scores, strict=True):
            c.score = float(s) + (10.0 if c.exact else 0.0)
        return sorted(candidates, key=lambda c: (-c.score, c.chunk_id))


def make_reranker(cross_encoder: str | None) -> Reranker:
    """The cross-encoder when one is configured and present on disk, else the default.

    A configured path that does not exist falls back to the default (and says so via the
    returned reranker's name), so a missing model never breaks answering.
    """
    if cross_encoder and Path(cross_encoder).exists():
        return CrossEncoderReranker(cross_encoder)
    return DeterministicReranker()


def diversify(candidates: Sequence[Candidate], k: int, per_document: int) -> list[Candidate]:
    """The top ``k`` with at most ``per_document`` units of one document (exact matches always
    kept); if the cap leaves fewer than ``k``, the rest fill in by score."""
    chosen: list[Candidate] = []
    counts: dict[str, int] = {}
    for c in candidates:
        doc = str(c.row["document_key"])
        if c.exact or counts.get(doc, 0) < per_document:
            chosen.append(c)
            counts[doc] = counts.get(doc, 0) + 1
        if len(chosen) == k:
            return chosen
    for c in candidates:
        if c not in chosen:
            chosen.append(c)
            if len(chosen) == k:
                break
    return chosen

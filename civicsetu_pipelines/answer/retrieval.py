"""The retrieval stage: pgvector, full text, explicit references, the family of strong hits and
the legal graph over the materialized stores, fused by reciprocal rank.

Pure domain code over psycopg (no Dagster). Every SQL statement is a parameterized constant.
:class:`Retriever` runs the stage for one question (:meth:`Retriever.find`), each step timed
on the caller's :class:`~civicsetu_pipelines.answer.timing.Timer`:

1. explicit references ("Section 18(2)", "rule 16 of the Gujarat rules", "Form N") resolve
   directly to their unit (the finest existing one) in the right jurisdiction and document;
2. pgvector cosine top-N (through the HNSW index, ``ef_search`` a setting, iterative scans
   keeping filtered queries full; exact for a filter on jurisdictions with few rows) and
   full text ranked by Okapi BM25 over the full-text index's lexemes (each word weighed by its
   rarity among the units searched, :func:`term_weights`; a unit holding any word matches, so
   long questions still match), for the question as asked and, when it holds lay terms, for
   its reformulation in the statute's words (``data/vocabulary.yaml``), and the statute's
   phrases alone matched as phrases ("fails to complete or is unable to give possession"), all
   fused by reciprocal rank fusion (k = 10, :attr:`RetrievalSettings.rrf_k`);
3. family expansion (parent and sibling units of the strongest hits) and, for questions about
   cross-references, penalties or how a rule implements the Act, graph expansion through
   REFERENCES and DERIVED_FROM edges (depth <= 2).

What it finds (:class:`Found`) goes to the ranking stage
(:mod:`~civicsetu_pipelines.answer.ranking`: reranking and diversity) with the diversity rule its
settings give the question.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from civicsetu_pipelines.answer.candidates import (
    Candidate,
    TermWeights,
    scoring_terms,
    search_terms,
)
from civicsetu_pipelines.answer.legal_references import ExplicitReference
from civicsetu_pipelines.answer.places import ACT_JURISDICTION
from civicsetu_pipelines.answer.questions import Query
from civicsetu_pipelines.answer.timing import Timer
from civicsetu_pipelines.answer.vocabulary import stems
from civicsetu_pipelines.ingest import paragraph_word, whole_form
from civicsetu_pipelines.store import (
    EmbeddingConfig,
    KnnStrategy,
    absent_terms,
    chunk_filters,
    knn_query,
    prepare,
)

# ts_rank_cd's normalization (the statute's phrases): 1 divides the rank by 1 + log(length), so
# a long model agreement that repeats a word does not outrank the short section that governs.
RANK_NORMALIZATION = 1
# Okapi BM25's constants at their textbook values (Robertson and Zaragoza, 2009), not tuned
# here: k1 how soon a word's repeats stop counting, b how far a unit's length discounts them.
# ts_rank_cd weighed every word alike, so a question about the seal of a State's Appellate
# Tribunal found the Act's sections that repeat "Real Estate Appellate Tribunal" and never the
# regulation on the seal (dev: governing MRR 0.733 -> 0.80; BENCHMARKS.md "Words weighed").
BM25_K1 = 1.2
BM25_B = 0.75
GRAPH_INTENTS = frozenset({"cross_reference", "penalty", "implementation"})

_COLUMNS = (
    "c.chunk_id::text AS chunk_id, c.document_key, c.jurisdiction, c.doc_type, c.unit, c.label, "
    "c.section_label, c.title, c.text, c.page_start, c.page_end, c.parent_id::text AS parent_id, "
    "c.ordinal, c.level, v.sha256, d.title AS document_title, d.source_url, c.amendment, "
    "c.valid_from, c.valid_to, c.eid, c.legal_path, d.effective_date AS document_date, "
    "d.language AS document_language"
)
_JOINS = (
    "JOIN document_versions v ON v.version_id = c.version_id "
    "LEFT JOIN documents d ON d.key = c.document_key"
)
_FROM = f"FROM legal_chunks c {_JOINS}"


@dataclass(frozen=True)
class RetrievalSettings:
    candidates: int = 40  # rows taken from each of pgvector and full text
    ef_search: int = 100  # hnsw.ef_search
    # Reciprocal rank fusion's k: 1 / (k + rank) from each list. The literature's 60 lets a unit
    # that every list holds at a middling rank (a tribunal's definitions, a preamble) outrank the
    # unit one list puts second for the question's rarest word ("Marathi"); chosen on the dev
    # half with BM25's lists: governing MRR 0.786 at 120, 0.805 at 60, 0.818 at 30, 0.814 at
    # 20, 0.820 at 10, 0.814 at 5, 0.810 at 2 (BENCHMARKS.md "Words weighed by their rarity").
    rrf_k: int = 10
    per_document: int = 3  # at most this many units of one provision (or document) in the list
    # what the cap counts units of (ranking.DIVERSITY_RULES): "provision" -- a section or rule
    # of an Act, rules or regulations, the document for any other unit; "legislation" -- no
    # cap on legislation, the document for the rest; "document" -- the document for every unit
    # (the default before issue 36, which buried the governing section of the Act, one
    # document of 92 provisions, under lower-scoring units). Chosen on the dev half, with the
    # verdict reading the evidence, not its places: "provision" for every question raised
    # governing MRR and lowered neither answered nor refusal correctness (BENCHMARKS.md).
    diversity: str = "provision"
    # the rule for a question that names a state (None: ``diversity``)
    named_state_diversity: str | None = None

    family_of: int = 3  # expand parent and siblings of this many top hits
    graph_depth: int = 2
    graph_of: int = 5  # expand the graph around this many top hits

    def diversity_for(self, query: Query) -> str:
        """The diversity rule for ``query``: ``named_state_diversity`` when it names a state."""
        if self.named_state_diversity and set(query.jurisdictions) - {ACT_JURISDICTION}:
            return self.named_state_diversity
        return self.diversity


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


def prepare_session(conn: psycopg.Connection[Any], ef_search: int = 100) -> None:
    """Set a connection up for repeated queries: pgvector types, iterative index scans (so a
    filtered query still returns k rows), ``hnsw.ef_search`` and custom plans (every execution
    planned with its parameters' values, so a jurisdiction's partial HNSW index is matched even
    once psycopg has prepared the statement: a generic plan cannot prove ``jurisdiction = $n``
    implies an index's predicate), once for the session."""
    prepare(conn)
    with conn.cursor() as cur:
        cur.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', false), "
            "set_config('hnsw.ef_search', %s, false), "
            "set_config('plan_cache_mode', 'force_custom_plan', false)",
            (str(int(ef_search)),),
        )


def vector_statement(
    conn: psycopg.Connection[Any],
    limit: int,
    *,
    jurisdictions: Sequence[str] | None = None,
    as_of: dt.date | None = None,
    strategy: KnnStrategy | None = None,
) -> tuple[str, list[Any], KnnStrategy]:
    """The statement :func:`vector_candidates` runs, its parameters after the query vector, and
    its strategy: exact for a filter on few rows, the jurisdictions' own partial HNSW indexes
    where they have them, else the whole table's HNSW index (``store.knn_query``, which chooses
    with ``store.knn_strategy`` unless ``strategy`` says which)."""
    return knn_query(
        conn, _COLUMNS, _JOINS, limit, jurisdictions=jurisdictions, as_of=as_of, strategy=strategy
    )


def vector_candidates(
    conn: psycopg.Connection[Any],
    vector: np.ndarray,
    limit: int,
    *,
    jurisdictions: Sequence[str] | None = None,
    as_of: dt.date | None = None,
    strategy: KnnStrategy | None = None,
) -> list[dict[str, Any]]:
    """Top ``limit`` units by cosine distance, on a connection set up by
    :func:`prepare_session`: a filter on jurisdictions with at most
    ``store.EXACT_SCAN_MAX_ROWS`` rows is searched exactly, jurisdictions with their own partial
    HNSW index through it, anything else through the whole table's HNSW index
    (:func:`vector_statement`; two round trips with a filter, the catalog and the search, one
    without)."""
    query, values, _ = vector_statement(
        conn, limit, jurisdictions=jurisdictions, as_of=as_of, strategy=strategy
    )
    vec = np.asarray(vector, dtype=np.float32)
    with conn.cursor() as cur:
        cur.execute(query, (vec, *values))
        rows = _rows(cur)
    rows.sort(key=lambda r: r["distance"])  # relaxed order: re-sort exactly
    return rows


# Everything but letters (with Indic vowel signs and other combining marks), digits and "-".
_TSQUERY_UNSAFE = re.compile(r"[^\w\u0300-\u036f\u0900-\u0dff-]")


def fulltext_query(terms: Sequence[str]) -> str:
    """websearch syntax with OR semantics: every term may match, more matches rank higher; a
    term of several words ("return the amount") is a quoted phrase."""
    safe = []
    for term in terms:
        words = [w for w in (_TSQUERY_UNSAFE.sub("", p).lstrip("-") for p in term.split()) if w]
        if len(words) > 1:
            safe.append('"' + " ".join(words) + '"')
        elif words:
            safe.append(words[0])
    return " or ".join(safe)


def fulltext_candidates(
    conn: psycopg.Connection[Any],
    terms: Sequence[str],
    limit: int,
    *,
    jurisdictions: Sequence[str] | None = None,
    as_of: dt.date | None = None,
) -> list[dict[str, Any]]:
    """Top ``limit`` units by ``ts_rank_cd`` for ``terms`` (OR semantics)."""
    text = fulltext_query(terms)
    if not text:
        return []
    where, values = chunk_filters(jurisdictions, as_of)
    query = (
        f"SELECT {_COLUMNS}, ts_rank_cd(c.tsv, q, %s) AS rank {_FROM}, "
        f"websearch_to_tsquery('english', %s) q WHERE c.tsv @@ q AND {where} "
        "ORDER BY rank DESC, c.ordinal LIMIT %s"
    )
    with conn.cursor() as cur:
        cur.execute(query, (RANK_NORMALIZATION, text, *values, int(limit)))
        return _rows(cur)


_LEXEMES = (
    "SELECT t, coalesce((SELECT array_agg(DISTINCT u.lexeme ORDER BY u.lexeme) "
    "FROM unnest(to_tsvector('english', t)) u), '{}') FROM unnest(%s::text[]) t"
)


def _quoted(lexeme: str) -> str:
    """``lexeme`` as a tsquery operand (text): quoted, so it is matched as it is and never
    stemmed or parsed again."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


_WEIGHTS = (
    "SELECT n.units, x.lexeme, (SELECT count(*) FROM legal_chunks c WHERE c.tsv @@ "
    "x.operand::tsquery AND {where}) FROM (SELECT count(*) AS units FROM legal_chunks c "
    "WHERE {where}) n LEFT JOIN LATERAL unnest(%s::text[], %s::text[]) x(lexeme, operand) ON true"
)


def term_weights(
    conn: psycopg.Connection[Any],
    terms: Sequence[str],
    *,
    jurisdictions: Sequence[str] | None = None,
    as_of: dt.date | None = None,
) -> TermWeights:
    """What BM25 weighs ``terms`` by among the units a search of ``jurisdictions`` (all when
    empty) on ``as_of`` reads: their number and how many hold each of the terms' lexemes (two
    statements: the lexemes, then the counts, each lexeme's through the full-text index). Read
    within the search's own scope, so an answer depends on the jurisdictions it searched and
    on no other (the evaluation's memo keeps answers by them)."""
    wanted = list(dict.fromkeys(t for t in terms if t))
    with conn.cursor() as cur:
        cur.execute(_LEXEMES, (wanted,))
        lexemes = {str(t).lower(): tuple(str(x) for x in found) for t, found in cur.fetchall()}
        every = sorted({x for found in lexemes.values() for x in found})
        where, values = chunk_filters(jurisdictions, as_of)
        cur.execute(_WEIGHTS.format(where=where),
                    (*values, *values, every, [_quoted(x) for x in every]))  # fmt: skip
        rows = cur.fetchall()
    units = int(rows[0][0]) if rows else 0
    frequency = {str(x): int(held) for _, x, held in rows if x is not None}
    return TermWeights(units, frequency, lexemes)


def bm25_candidates(
    conn: psycopg.Connection[Any],
    terms: Sequence[str],
    weights: TermWeights,
    limit: int,
    *,
    jurisdictions: Sequence[str] | None = None,
    as_of: dt.date | None = None,
) -> list[dict[str, Any]]:
    """Top ``limit`` units holding any of ``terms``' lexemes, by Okapi BM25: each lexeme's idf
    (``weights``) times its saturated count in the unit (a label or title word counts as a
    text word), the count discounted by the unit's length against the mean length of the
    units found (:data:`BM25_K1`, :data:`BM25_B`). A word the scope never holds adds nothing.
    Each unit's counts of the question's lexemes alone are read (``setweight`` marks them,
    ``ts_filter`` keeps them: a third of the time of reading every lexeme)."""
    lexemes = sorted({x for t in terms for x in weights.lexemes.get(t.lower(), ())})
    lexemes = [x for x in lexemes if weights.frequency.get(x)]
    if not lexemes:
        return []
    where, values = chunk_filters(jurisdictions, as_of)
    query = (
        "WITH q(lexeme, idf) AS (SELECT * FROM unnest(%s::text[], %s::float8[])), "
        "hit AS (SELECT c.chunk_id, c.tsv, length(c.tsv) AS dl, avg(length(c.tsv)) OVER () "
        f"AS mean FROM legal_chunks c WHERE c.tsv @@ %s::tsquery AND {where}), "
        "s AS (SELECT h.chunk_id, sum(q.idf * u.tf * (%s + 1) / (u.tf + %s * (1 - %s + %s * "
        "h.dl / h.mean))) AS rank FROM hit h, LATERAL (SELECT lexeme, cardinality(positions) "
        "AS tf FROM unnest(ts_filter(setweight(h.tsv, 'A', %s::text[]), '{a}'))) u "
        "JOIN q ON q.lexeme = u.lexeme GROUP BY h.chunk_id ORDER BY rank DESC, h.chunk_id "
        f"LIMIT %s) SELECT {_COLUMNS}, s.rank {_FROM} JOIN s ON s.chunk_id = c.chunk_id "
        "ORDER BY s.rank DESC, c.ordinal"
    )
    params = (lexemes, [weights.idf(x) for x in lexemes],
              " | ".join(_quoted(x) for x in lexemes), *values,
              BM25_K1, BM25_K1, BM25_B, BM25_B, lexemes, int(limit))  # fmt: skip
    with conn.cursor() as cur:
        cur.execute(query, params)
        return _rows(cur)


def _label_chain(label: str) -> list[str]:
    """``Section 18(2)(a)`` -> [``Section 18(2)(a)``, ``Section 18(2)``, ``Section 18``];
    ``Annexure A para 12`` -> [``Annexure A para 12``, ``Annexure A``]."""
    chain = [label]
    while True:
        shorter = re.sub(r"\([^()]*\)$", "", chain[-1])
        if shorter == chain[-1]:
            form = whole_form(label)
            return chain if form == label else [*chain, form]
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

    A section is the Act's (CENTRAL); a rule, form, annexure or a form's numbered paragraph
    belongs to the rules of the jurisdiction the question attaches to it, else of the filter's
    jurisdictions, else of any state (then it may be ambiguous, unless ``context``, the question,
    names one document's title). A paragraph of a form that has none resolves to the form; a
    clause of the model agreement for sale (``Agreement para 12``) to that paragraph of the form
    whose label or title names an agreement, when one document in scope has it (else it is left
    out, as no reference: :attr:`ExplicitReference.soft`). A label that does not exist resolves
    to nothing.
    """
    out: list[ReferenceResolution] = []
    for ref in references:
        chain = _label_chain(ref.label)
        label_clause = "c.label = ANY(%s)"
        label_values: tuple[Any, ...] = (chain,)
        if ref.soft:  # the model agreement's clause, whatever its form is labelled
            label_clause = "c.unit = 'form' AND c.label = c.section_label AND c.label LIKE %s "
            label_clause += "AND (c.label ILIKE %s OR c.title ILIKE %s)"
            label_values = (f"%{paragraph_word(int(ref.number))}", "%agreement%", "%agreement%")
        if ref.kind == "section":
            scope: Sequence[str] | None = [ACT_JURISDICTION]
        elif ref.jurisdiction:
            scope = [ref.jurisdiction]
        else:
            scope = [j for j in (jurisdictions or []) if j != ACT_JURISDICTION] or None
        where, values = chunk_filters(scope, as_of)
        kind_clause = "c.doc_type = 'act'" if ref.kind == "section" else "c.doc_type <> 'act'"
        if ref.kind == "question":
            kind_clause = "c.doc_type = 'faq'"
        query = (
            f"SELECT {_COLUMNS} {_FROM} WHERE {where} AND {kind_clause} "
            f"AND {label_clause} ORDER BY c.jurisdiction, c.document_key, length(c.label) DESC"
        )
        with conn.cursor() as cur:
            cur.execute(query, (*values, *label_values))
            rows = _rows(cur)
        finest: dict[tuple[str, str], dict[str, Any]] = {}
        for row in rows:  # longest label first within each document
            finest.setdefault((row["jurisdiction"], row["document_key"]), row)
        rows = _by_document_title(list(finest.values()), context)
        if ref.soft and len(rows) != 1:  # names no one model agreement: no reference at all
            continue
        out.append(ReferenceResolution(ref, rows))
    return out


def _by_document_title(rows: list[dict[str, Any]], context: str) -> list[dict[str, Any]]:
    """Of the same label in several documents, the one whose title the question echoes
    ("Gujarat General Rule 9": the General Rules), when exactly one does best. Numbers are no
    echo: the question's "rule 16" is not the "16" of a notification number in a title."""
    if len(rows) < 2 or not context:
        return rows
    asked = {word for word in stems(context) if not any(ch.isdigit() for ch in word)}
    generic = stems("rule real estate regulation development the of and")
    scores = [len((stems(str(r.get("document_title") or "")) & asked) - generic) for r in rows]
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
    where, values = chunk_filters(None, as_of)
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
    where, values = chunk_filters(None, as_of)
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
    """Reciprocal rank fusion: score = sum over retrievers of 1 / (k + rank); a unit's distance
    is its nearest over the vector rankings (the question as asked, and as reformulated)."""
    by_id: dict[str, Candidate] = {}
    for source, rows in ranked.items():
        for rank, row in enumerate(rows, start=1):
            cid = str(row["chunk_id"])
            candidate = by_id.setdefault(cid, Candidate(dict(row)))
            if source not in candidate.ranks:
                candidate.ranks[source] = rank
                candidate.fused += 1.0 / (k + rank)
            if row.get("distance") is not None:
                distance = float(row["distance"])
                if candidate.distance is None or distance < candidate.distance:
                    candidate.distance = distance
    return sorted(by_id.values(), key=lambda c: (-c.fused, c.chunk_id))


# ---------------------------------------------------------------------------------------------
# One question's retrieval, stage by stage


def search_scope(query: Query, wanted: list[str]) -> list[str] | None:
    """The jurisdictions searched: the filter as given; else the states the question names
    plus the Act (which applies in every state); else everything."""
    if wanted:
        return wanted
    if query.jurisdictions:
        return sorted({*query.jurisdictions, ACT_JURISDICTION})
    return None


def _in_scope(row: Mapping[str, Any], scope: Sequence[str] | None) -> bool:
    return scope is None or row["jurisdiction"] in scope


@dataclass(frozen=True)
class Found:
    """What the retrieval stage found for one question."""

    resolutions: list[ReferenceResolution]  # its explicit references, each to its units
    candidates: list[Candidate]  # every candidate unit, by fused rank
    weights: TermWeights  # how rare its words are among the units searched (ranking weighs them)
    diversity: str  # the diversity rule its answer is served under (RetrievalSettings)
    per_document: int  # and that rule's cap


KEEP_VECTORS = 8  # question texts whose vectors a Retriever keeps (a comparison's, a rewrite)


class Retriever:
    """The ranked candidates of questions over one connection (used by one thread at a time),
    which it sets up for repeated queries (:func:`prepare_session`)."""

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        embed_query: Callable[[str], np.ndarray],
        settings: RetrievalSettings,
    ) -> None:
        self._conn = conn
        self._embed_query = embed_query
        # An embedder that encodes several texts in one forward pass says so with ``many``.
        many = getattr(embed_query, "many", None)
        self._embed_many: Callable[[Sequence[str]], Sequence[np.ndarray]] = many or (
            lambda texts: [embed_query(t) for t in texts]
        )
        self.settings = settings
        prepare_session(self._conn, settings.ef_search)
        # The last questions' vectors by text: a comparison retrieves once per state and embeds
        # its question once; a few are kept, never more.
        self._vectors: dict[str, np.ndarray] = {}

    def stored_jurisdictions(self) -> list[str]:
        """Every jurisdiction the store holds units of, sorted."""
        with self._conn.cursor() as cur:
            cur.execute("SELECT DISTINCT jurisdiction FROM legal_chunks ORDER BY 1")
            return [str(r[0]) for r in cur.fetchall()]

    def units(self, chunk_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The current stored units of ``chunk_ids``, by id (an id no longer current is
        absent)."""
        ids = [i for i in chunk_ids if _looks_like_uuid(i)]
        if not ids:
            return {}
        with self._conn.cursor() as cur:
            cur.execute(f"SELECT {_COLUMNS} {_FROM} WHERE c.status = 'current' "
                        "AND c.chunk_id = ANY(%s::uuid[])", (ids,))  # fmt: skip
            return {str(row["chunk_id"]): row for row in _rows(cur)}

    def resolve(
        self, query: Query, scope: Sequence[str] | None, as_of: dt.date | None
    ) -> list[ReferenceResolution]:
        """The question's explicit references, each to its units (:func:`resolve_references`)."""
        return resolve_references(self._conn, query.references, jurisdictions=scope,
                                  as_of=as_of, context=query.text)  # fmt: skip

    def find(
        self,
        query: Query,
        scope: Sequence[str] | None,
        as_of: dt.date | None,
        timer: Timer,
        since: float,
        resolutions: Sequence[ReferenceResolution] | None = None,
    ) -> tuple[Found, float]:
        """The retrieval stage of one question: its references resolved (unless
        ``resolutions`` are given: none for a comparison's state), then every candidate unit
        (:meth:`retrieve`); and the time the stage ended."""
        if resolutions is None:
            resolutions = self.resolve(query, scope, as_of)
            since = timer.stage("references", since)
        exact_rows = [row for r in resolutions for row in r.candidates]
        weights = term_weights(self._conn, [*search_terms(query), *scoring_terms(query)],
                               jurisdictions=scope, as_of=as_of)  # fmt: skip
        since = timer.stage("weights", since)
        candidates, since = self.retrieve(query, scope, as_of, exact_rows, weights, timer, since)
        found = Found(list(resolutions), candidates, weights, self.settings.diversity_for(query),
                      self.settings.per_document)  # fmt: skip
        return found, since

    def retrieve(
        self,
        query: Query,
        scope: Sequence[str] | None,
        as_of: dt.date | None,
        exact_rows: Sequence[Mapping[str, Any]],
        weights: TermWeights,
        timer: Timer,
        since: float,
    ) -> tuple[list[Candidate], float]:
        """Every candidate unit for ``query``, by fused rank, with ``exact_rows`` (the units its
        references name) among them and the units the strongest lead to (family, graph), the
        full-text lists ranked by BM25 under ``weights``; and the time the last step ended.
        Ranking them is the next stage's (:func:`~civicsetu_pipelines.answer.ranking.rank`)."""
        settings = self.settings
        lists: dict[str, Sequence[Mapping[str, Any]]] = {"reference": list(exact_rows)}
        # The question as asked, and (when it holds lay terms) as reformulated in the statute's
        # words (data/vocabulary.yaml): each by meaning and by words, fused by reciprocal rank.
        asked = {"": (query.text, list(query.terms))}
        if query.rewrite:
            asked[":legal"] = (query.rewrite, search_terms(query))
        new = [text for text, _ in asked.values() if text not in self._vectors]
        if len(self._vectors) + len(new) > KEEP_VECTORS:
            self._vectors.clear()
        if new:  # a comparison retrieves once per state: embed once, all texts in one batch
            self._vectors.update(zip(new, self._embed_many(new), strict=True))
            since = timer.stage("embed", since)
        for suffix, (text, terms) in asked.items():
            vector = self._vectors[text]
            lists["vector" + suffix] = vector_candidates(
                self._conn, vector, settings.candidates, jurisdictions=scope, as_of=as_of
            )
            since = timer.stage("vector", since)
            lists["fulltext" + suffix] = bm25_candidates(
                self._conn, terms, weights, settings.candidates, jurisdictions=scope, as_of=as_of
            )
            since = timer.stage("fulltext", since)
        phrases = [t for t in query.legal_terms if len(t.split()) > 1]
        if phrases:  # the statute's own phrases for what the question asks, matched as phrases
            lists["phrases"] = fulltext_candidates(
                self._conn, phrases, settings.candidates, jurisdictions=scope, as_of=as_of
            )
            since = timer.stage("fulltext", since)
        candidates = fuse(lists, k=settings.rrf_k)
        exact_ids = {str(r["chunk_id"]) for r in exact_rows}
        for c in candidates:
            c.exact = c.chunk_id in exact_ids
        known = {c.chunk_id for c in candidates}
        strong = [c.row for c in candidates[: settings.family_of]] + list(exact_rows)
        for row in family_rows(self._conn, strong, as_of=as_of):
            if str(row["chunk_id"]) not in known and _in_scope(row, scope):
                candidates.append(Candidate(row, via="family"))
                known.add(str(row["chunk_id"]))
        if GRAPH_INTENTS & query.intents:
            start = [c.chunk_id for c in candidates[: settings.graph_of]] + list(exact_ids)
            for row in graph_rows(self._conn, start, depth=settings.graph_depth, as_of=as_of):
                if str(row["chunk_id"]) not in known and _in_scope(row, scope):
                    candidates.append(Candidate(row, via=f"graph:{row['graph_edge']}"))
                    known.add(str(row["chunk_id"]))
        since = timer.stage("expand", since)
        return candidates, since

    def unknown_terms(self, terms: Sequence[str]) -> list[str]:
        """The question's terms that occur nowhere in the stored corpus."""
        return absent_terms(self._conn, terms)


class QueryEmbedder:
    """A query embedder: called with one text, its vector; ``many`` encodes several texts (a
    question and its reformulation in the statute's words) in one forward pass."""

    def __init__(self, embedder: Any) -> None:
        self._embedder = embedder

    @property
    def config(self) -> EmbeddingConfig:
        """The model's configuration (its evidence distances among them)."""
        config: EmbeddingConfig = self._embedder.config
        return config

    def __call__(self, text: str) -> np.ndarray:
        return np.asarray(self._embedder.embed_query(text), dtype=np.float32)

    def many(self, texts: Sequence[str]) -> list[np.ndarray]:
        prefix = self._embedder.config.query_prefix
        return list(self._embedder.encode([prefix + t for t in texts]))

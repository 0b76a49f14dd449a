"""Trusted answers: retrieval over the stores, extractive answers built only from verbatim
quotes with their citations, and explicit refusals.

Pure domain code (no Dagster). :class:`QueryEngine` holds a database connection, the query
embedder and the reranker for a process; :func:`answer` uses one per process.

Doctrine: never answer without evidence from the stored corpus; every quote is verbatim in its
chunk and placed on the page it is printed on; legal structure (labels, sections) comes from the
parsed text; a correct refusal beats a partly wrong answer. The extractive answer says nothing
that is not quoted; the optional LLM path (:mod:`civicsetu_pipelines.answer.llm`) must pass the same
verbatim checks or the answer is refused (``validation_failed``).
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from civicsetu_pipelines.answer.citations import quote_in, sentences, split_across_pages
from civicsetu_pipelines.answer.llm import Evidence, LLMSettings, generate_answer
from civicsetu_pipelines.answer.questions import (
    Query,
    is_vague,
    parse_as_of,
    parse_jurisdictions,
    parse_top_k,
    question_hash,
    understand,
)
from civicsetu_pipelines.answer.retrieval import (
    ACT_JURISDICTION,
    GRAPH_INTENTS,
    SYNONYMS,
    Candidate,
    Reranker,
    RetrievalSettings,
    diversify,
    family_rows,
    fulltext_candidates,
    fuse,
    graph_rows,
    make_reranker,
    prepare_session,
    resolve_references,
    term_overlap,
    vector_candidates,
)
from civicsetu_pipelines.base.canonical import canonical_flat
from civicsetu_pipelines.store.database import connect

log = logging.getLogger("civicsetu.answers")

DISCLAIMER = (
    "Extracts quoted from the stored gazette text with their citations; not legal advice. "
    "Check the cited page of the official gazette, and whether the provision has been amended, "
    "before relying on it."
)
# Evidence thresholds: cosine distance from the question to the nearest unit (all-MiniLM-L6-v2;
# in-scope questions measured at 0.21-0.46, out-of-scope ones at 0.52-0.85) and the share of
# the question's terms the best unit holds.
ANSWER_DISTANCE = 0.50
NEAR_DISTANCE = 0.55
NEAR_OVERLAP = 0.67
THIN_OVERLAP = 0.34  # below this share of terms, confidence is low
MAX_QUOTES = 4
QUOTES_PER_UNIT = 2
MAX_QUOTE_CHARS = 600


@dataclass(frozen=True)
class AnswerSettings:
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    cross_encoder: str | None = None
    llm: LLMSettings | None = None


@dataclass
class Timer:
    stages: dict[str, float] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)

    def stage(self, name: str, since: float) -> float:
        now = time.perf_counter()
        self.stages[name] = round(self.stages.get(name, 0.0) + (now - since) * 1000, 2)
        return now

    def finish(self) -> dict[str, float]:
        return {**self.stages, "total": round((time.perf_counter() - self.started) * 1000, 2)}


class QueryEngine:
    """Answers questions from the materialized stores (one connection, used under a lock)."""

    def __init__(
        self,
        database_url: str,
        embed_query: Callable[[str], np.ndarray],
        settings: AnswerSettings | None = None,
    ) -> None:
        self.settings = settings or AnswerSettings()
        self._conn = connect(database_url, autocommit=True)
        self._embed_query = embed_query
        self._lock = threading.Lock()
        self.reranker: Reranker = make_reranker(self.settings.cross_encoder)
        prepare_session(self._conn, self.settings.retrieval.ef_search)
        self._page_cache: dict[tuple[str, str, int], str] = {}
        self._vectors: dict[str, np.ndarray] = {}
        with self._conn.cursor() as cur:
            cur.execute("SELECT DISTINCT jurisdiction FROM legal_chunks ORDER BY 1")
            self.jurisdictions = [str(r[0]) for r in cur.fetchall()]

    @property
    def embed_query(self) -> Callable[[str], np.ndarray]:
        """The query embedder (evaluation uses it for ragas' response relevancy)."""
        return self._embed_query

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> QueryEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the public call ------------------------------------------------------------------

    def answer(
        self,
        question: object,
        *,
        jurisdictions: Sequence[str] | None = None,
        as_of: str | dt.date | None = None,
        top_k: int = 5,
    ) -> dict[str, Any]:
        """Answer ``question`` or refuse with a reason. Bad input raises
        :class:`~civicsetu_pipelines.answer.questions.QuestionError` (a clear message, no traceback
        needed); everything else is a result dict (see the README for the fields)."""
        timer = Timer()
        since = timer.started
        query = understand(question, known_jurisdictions=self.jurisdictions)
        wanted = parse_jurisdictions(jurisdictions, self.jurisdictions)
        date = parse_as_of(as_of)
        k = parse_top_k(top_k)
        since = timer.stage("understand", since)
        with self._lock:
            self._vectors = {}  # the question's vector, once per answer
            result = self._answer(query, wanted, date, k, timer, since)
        result["timings_ms"] = timer.finish()
        log.info(
            "question %s (%d chars): %s%s in %.1f ms",
            question_hash(query.text),
            query.length,
            result["status"],
            f" ({result['refusal_reason']})" if result["refusal_reason"] else "",
            result["timings_ms"]["total"],
        )
        return result

    # -- stages -----------------------------------------------------------------------------

    def _answer(
        self,
        query: Query,
        wanted: list[str],
        as_of: dt.date | None,
        k: int,
        timer: Timer,
        since: float,
    ) -> dict[str, Any]:
        if query.other_places and not query.jurisdictions and not wanted:
            places = ", ".join(query.other_places)
            return refusal(
                "out_of_scope",
                f"The corpus holds no documents of {places}; it covers "
                f"{', '.join(self.jurisdictions)}.",
            )
        scope = self._scope(query, wanted)
        comparing = "comparison" in query.intents and len(
            [j for j in scope or [] if j != ACT_JURISDICTION]
        ) >= 2  # fmt: skip
        resolutions = resolve_references(self._conn, query.references, jurisdictions=scope,
                                         as_of=as_of, context=query.text)  # fmt: skip
        since = timer.stage("references", since)
        ambiguous = [r for r in resolutions if r.ambiguous and not comparing]
        if ambiguous:
            options = [c for r in ambiguous for c in r.candidates]
            return refusal(
                "ambiguous_query",
                f"{ambiguous[0].reference.label} exists in several documents "
                f"({', '.join(sorted({str(c['jurisdiction']) for c in options}))}): "
                "name the jurisdiction (or pass --jurisdiction).",
                related=[_related(row) for row in options],
            )
        missing = [r.reference.label for r in resolutions if not r.candidates]
        if is_vague(query) and not query.references:
            return refusal(
                "ambiguous_query",
                "The question is too vague to answer from the statute: name a provision "
                "(e.g. 'Section 18') or ask about a specific obligation, right or procedure.",
            )
        exact_rows = [row for r in resolutions for row in r.candidates]
        if missing and not exact_rows:  # every unit the question names is absent: never
            # answer it with other provisions
            return refusal(
                "no_relevant_data",
                f"{', '.join(missing)} is not in the stored corpus"
                + (f" of {', '.join(scope)}" if scope else "")
                + (f" in force on {as_of.isoformat()}" if as_of else "")
                + ".",
            )
        if comparing:
            return self._compare(query, scope or [], as_of, k, timer, since)
        ranked, since = self._retrieve(query, scope, as_of, k, exact_rows, timer, since)
        if not ranked:
            return refusal("no_relevant_data", "Nothing in the stored corpus matches the question.")
        verdict = evidence_verdict(query, ranked, self._unknown_terms)
        verdict = verdict or state_verdict(query, ranked, self.jurisdictions)
        verdict = verdict or external_verdict(query, ranked)
        if verdict is not None:
            reason, message = verdict
            return refusal(reason, message, related=[c.summary() for c in ranked[:5]],
                           retrieved=ranked)  # fmt: skip
        result = self._compose(query, ranked, timer, since)
        if missing:
            result["notes"] = [f"{', '.join(missing)} is not in the stored corpus."]
        return result

    def _scope(self, query: Query, wanted: list[str]) -> list[str] | None:
        """The jurisdictions searched: the filter as given; else the states the question names
        plus the Act (which applies in every state); else everything."""
        if wanted:
            return wanted
        if query.jurisdictions:
            return sorted({*query.jurisdictions, ACT_JURISDICTION})
        return None

    def _retrieve(
        self,
        query: Query,
        scope: Sequence[str] | None,
        as_of: dt.date | None,
        k: int,
        exact_rows: Sequence[Mapping[str, Any]],
        timer: Timer,
        since: float,
    ) -> tuple[list[Candidate], float]:
        settings = self.settings.retrieval
        vector = self._vectors.get(query.text)
        if vector is None:  # a comparison retrieves once per state: embed the question once
            vector = self._vectors[query.text] = self._embed_query(query.text)
            since = timer.stage("embed", since)
        by_vector = vector_candidates(
            self._conn, vector, settings.candidates, jurisdictions=scope, as_of=as_of
        )
        since = timer.stage("vector", since)
        by_text = fulltext_candidates(self._conn, query.terms, settings.candidates,
                                      jurisdictions=scope, as_of=as_of)  # fmt: skip
        since = timer.stage("fulltext", since)
        candidates = fuse(
            {"reference": list(exact_rows), "vector": by_vector, "fulltext": by_text},
            k=settings.rrf_k,
        )
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
        ranked = self.reranker.rerank(query, candidates)
        ranked = diversify(ranked, k, settings.per_document)
        since = timer.stage("rerank", since)
        return ranked, since

    def _compose(
        self, query: Query, ranked: list[Candidate], timer: Timer, since: float
    ) -> dict[str, Any]:
        if self.settings.llm is not None:
            return self._generate(query, ranked, timer, since)
        quotes = choose_quotes(query, ranked)
        citations = self._cite(quotes)
        timer.stage("answer", since)
        if not citations:
            return refusal(
                "no_relevant_data",
                "The best matching provisions hold no sentence that can be quoted for this "
                "question.",
                related=[c.summary() for c in ranked[:5]],
                retrieved=ranked,
            )
        return {
            "status": "answered",
            "refusal_reason": None,
            "answer": render_answer(citations),
            "confidence": confidence(query, ranked),
            "citations": citations,
            "retrieved": [c.summary() for c in ranked],
            "related": [],
            "disclaimer": DISCLAIMER,
        }

    def _compare(
        self,
        query: Query,
        scope: Sequence[str],
        as_of: dt.date | None,
        k: int,
        timer: Timer,
        since: float,
    ) -> dict[str, Any]:
        """Each jurisdiction's own provisions side by side (precedence only where quoted)."""
        states = [j for j in scope if j != ACT_JURISDICTION]
        per_state = max(2, k // len(states))
        sides: list[dict[str, Any]] = []
        ranked_all: list[Candidate] = []
        citations: list[dict[str, Any]] = []
        for state in states:
            ranked, since = self._retrieve(query, [state], as_of, per_state, [], timer, since)
            ranked_all += ranked
            if not ranked or evidence_verdict(query, ranked, self._unknown_terms) is not None:
                sides.append({"jurisdiction": state, "status": "no_relevant_data", "citations": []})
                continue
            cited = self._cite(choose_quotes(query, ranked, limit=2), start=len(citations) + 1)
            citations += cited
            sides.append({"jurisdiction": state, "status": "answered" if cited else
                          "no_relevant_data", "citations": cited})  # fmt: skip
        timer.stage("answer", since)
        if not citations:
            return refusal("no_relevant_data", "None of the jurisdictions compared has a "
                           "provision that answers the question.",
                           related=[c.summary() for c in ranked_all[:5]],
                           retrieved=ranked_all)  # fmt: skip
        answered_sides = [side["jurisdiction"] for side in sides if side["citations"]]
        lines = []
        for side in sides:
            lines.append(f"{side['jurisdiction']}:")
            if not side["citations"]:
                lines.append("  (no provision found in the stored corpus)")
            for c in side["citations"]:
                lines.append(f'  {c["label"]} ({c["document_title"]}): "{c["quote"]}" [{c["n"]}]')
        return {
            "status": "answered",
            "refusal_reason": None,
            "answer": "\n".join(lines),
            "confidence": min_confidence(
                [confidence(query, [c for c in ranked_all if c.row["jurisdiction"] == side])
                 for side in answered_sides]
            ),
            "citations": citations,
            "comparison": sides,
            "retrieved": [c.summary() for c in ranked_all],
            "related": [],
            "disclaimer": DISCLAIMER,
        }  # fmt: skip

    def _generate(
        self, query: Query, ranked: list[Candidate], timer: Timer, since: float
    ) -> dict[str, Any]:
        """The LLM path: claims must quote the retrieved evidence verbatim, or refuse."""
        assert self.settings.llm is not None
        evidence = [
            Evidence(f"E{i}", c.chunk_id, str(c.row["jurisdiction"]), str(c.row["document_key"]),
                     c.label, str(c.row["text"]))
            for i, c in enumerate(ranked, start=1)
        ]  # fmt: skip
        result = generate_answer(query.text, evidence, self.settings.llm)
        timer.stage("generate", since)
        if result.status != "answered":
            reason = "validation_failed" if result.status == "validation_failed" else None
            return refusal(
                reason or "validation_failed",
                "The generated answer failed the citation checks"
                if reason
                else "The language model could not be reached; no answer was generated.",
                related=[c.summary() for c in ranked[:5]],
                retrieved=ranked,
                problems=result.problems,
            )
        if not result.claims:
            return refusal("no_relevant_data", "The evidence retrieved does not answer it.",
                           related=[c.summary() for c in ranked[:5]], retrieved=ranked)  # fmt: skip
        by_id = {e.id: c for e, c in zip(evidence, ranked, strict=True)}
        quotes: list[tuple[Candidate, str]] = []
        for claim in result.claims:
            for quote in claim.quotes:
                for cid in claim.citation_ids:
                    if quote_in(quote, str(by_id[cid].row["text"])):
                        quotes.append((by_id[cid], quote))
                        break
        citations = self._cite(quotes)
        if len(citations) < len(quotes):
            return refusal("validation_failed", "A quote could not be placed on a page.",
                           related=[c.summary() for c in ranked[:5]], retrieved=ranked)  # fmt: skip
        text = " ".join(
            f"{claim.text} "
            + "".join(f"[{c['n']}]" for c in citations if c["quote"] in claim.quotes)
            for claim in result.claims
        )
        return {
            "status": "answered",
            "refusal_reason": None,
            "answer": text.strip(),
            "confidence": confidence(query, ranked),
            "citations": citations,
            "retrieved": [c.summary() for c in ranked],
            "related": [],
            "generated": {"attempts": result.attempts, "claims": len(result.claims)},
            "disclaimer": DISCLAIMER,
        }

    def _cite(
        self, quotes: Sequence[tuple[Candidate, str]], start: int = 1
    ) -> list[dict[str, Any]]:
        """Citations for (unit, quote) pairs, each quote placed on the page it is printed on
        (a quote over a page break becomes one citation per page); unplaceable quotes are
        dropped, never cited with a guessed page."""
        citations: list[dict[str, Any]] = []
        for candidate, quote in quotes:
            row = candidate.row
            if not quote_in(quote, str(row["text"])):
                continue
            pages = self._pages(row)
            for page, part in split_across_pages(quote, pages):
                citations.append(
                    {
                        "n": start + len(citations),
                        "jurisdiction": row["jurisdiction"],
                        "document": row["document_key"],
                        "document_title": row.get("document_title") or row["document_key"],
                        "label": row["label"],
                        "section": row["section_label"],
                        "page": page,
                        "quote": canonical_flat(part),
                        "source_url": row.get("source_url"),
                        "chunk_id": candidate.chunk_id,
                    }
                )
        return citations

    def _pages(self, row: Mapping[str, Any]) -> dict[int, str]:
        """The stored body text of the unit's pages (a version's pages never change: cached)."""
        key, sha = str(row["document_key"]), str(row["sha256"])
        wanted = range(int(row["page_start"]), int(row["page_end"]) + 1)
        if any((key, sha, n) not in self._page_cache for n in wanted):
            with self._conn.cursor() as cur:
                cur.execute(
                    "SELECT page, text FROM document_pages WHERE document_key = %s "
                    "AND sha256 = %s AND page BETWEEN %s AND %s",
                    (key, sha, wanted.start, wanted.stop - 1),
                )
                for page, text in cur.fetchall():
                    self._page_cache[(key, sha, int(page))] = str(text)
        return {
            n: self._page_cache[(key, sha, n)] for n in wanted if (key, sha, n) in self._page_cache
        }

    def _unknown_terms(self, terms: Sequence[str]) -> list[str]:
        """The question's terms that occur nowhere in the stored corpus."""
        if not terms:
            return []
        with self._conn.cursor() as cur:
            cur.execute(
                "SELECT t FROM unnest(%s::text[]) t WHERE numnode(plainto_tsquery('english', t)) "
                "> 0 AND NOT EXISTS (SELECT 1 FROM legal_chunks c WHERE c.status = 'current' "
                "AND c.tsv @@ plainto_tsquery('english', t))",
                (list(terms),),
            )
            return [str(r[0]) for r in cur.fetchall()]


# ---------------------------------------------------------------------------------------------
# Pure pieces (unit-tested on their own)


def _in_scope(row: Mapping[str, Any], scope: Sequence[str] | None) -> bool:
    return scope is None or row["jurisdiction"] in scope


def _related(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"jurisdiction": row["jurisdiction"], "document": row["document_key"],
            "label": row["label"], "section": row["section_label"],
            "chunk_id": str(row["chunk_id"])}  # fmt: skip


def refusal(
    reason: str,
    message: str,
    *,
    related: Sequence[Mapping[str, Any]] = (),
    retrieved: Sequence[Candidate] = (),
    problems: Sequence[str] = (),
) -> dict[str, Any]:
    """A refusal: the reason, a message, and related provisions listed as "related, not
    answering" where they exist."""
    out: dict[str, Any] = {
        "status": "refused",
        "refusal_reason": reason,
        "answer": message,
        "confidence": None,
        "citations": [],
        "retrieved": [c.summary() for c in retrieved],
        "related": [{**r, "relation": "related, not answering"} for r in related],
        "disclaimer": DISCLAIMER,
    }
    if problems:
        out["problems"] = list(problems)
    return out


def evidence_verdict(
    query: Query,
    ranked: Sequence[Candidate],
    unknown_terms: Callable[[Sequence[str]], list[str]] = lambda _terms: [],
) -> tuple[str, str] | None:
    """None when the best evidence can answer; else (reason, message).

    An exact reference is always evidence. Otherwise the nearest unit in meaning decides
    (cosine distance of the question's vector; calibrated on the corpus, see BENCHMARKS.md):
    within ANSWER_DISTANCE it can answer; a little farther only when it shares most of the
    question's terms; beyond that the question is out of scope when some of its words occur
    nowhere in the corpus (or nothing matches its words), else the evidence is too thin.
    """
    if any(c.exact for c in ranked):
        return None
    nearest = min((c.distance for c in ranked if c.distance is not None), default=1.0)
    if nearest <= ANSWER_DISTANCE:
        return None
    best_overlap = max((term_overlap(query.terms, c.row.get("text")) for c in ranked), default=0)
    unknown = [t for t in unknown_terms(query.terms) if not SYNONYMS.get(t)]
    if nearest <= NEAR_DISTANCE and best_overlap >= NEAR_OVERLAP and not unknown:
        return None
    if unknown or not any("fulltext" in c.ranks for c in ranked):
        words = f" ({', '.join(unknown)} occur nowhere in it)" if unknown else ""
        return ("out_of_scope", "The stored corpus (the RERA Act, 2016, its FAQ and state RERA "
                f"rules) has nothing on this question{words}.")  # fmt: skip
    return ("no_relevant_data", "The stored provisions that come closest do not answer the "
            "question; they are listed as related.")  # fmt: skip


def state_verdict(
    query: Query, ranked: Sequence[Candidate], stored: Sequence[str]
) -> tuple[str, str] | None:
    """A question about one state whose own documents hold nothing among the best units is not
    answered from another jurisdiction's text: refused, with what was found as related."""
    states = [j for j in query.jurisdictions if j != ACT_JURISDICTION and j in stored]
    if len(states) != 1 or query.references or "comparison" in query.intents:
        return None
    if any(c.row["jurisdiction"] == states[0] for c in ranked):
        return None
    return ("no_relevant_data", f"The stored documents of {states[0]} do not cover this; the "
            "closest provisions of other jurisdictions are listed as related.")  # fmt: skip


_OTHER_ENACTMENT = re.compile(
    r"\b(?:indian\s+penal\s+code|ipc|income[- ]tax|companies\s+act|code\s+of\s+(?:civil|"
    r"criminal)\s+procedure|cr\.?p\.?c|gst|goods\s+and\s+services\s+tax|stamp\s+act|"
    r"transfer\s+of\s+property\s+act|consumer\s+protection\s+act|contract\s+act)\b",
    re.IGNORECASE,
)


def external_verdict(query: Query, ranked: Sequence[Candidate]) -> tuple[str, str] | None:
    """A question about another enactment that none of the best units mentions is out of
    scope (the corpus holds the RERA Act, its FAQ and state RERA rules)."""
    named = _OTHER_ENACTMENT.search(query.text)
    if named is None or query.references:
        return None
    pattern = re.compile(re.escape(named.group(0)).replace("\\ ", r"\s+"), re.IGNORECASE)
    if any(pattern.search(str(c.row.get("text") or "")) for c in ranked[:3]):
        return None
    return ("out_of_scope", f"The corpus holds the RERA Act, 2016, its FAQ and state RERA rules; "
            f"it does not hold the {named.group(0)}.")  # fmt: skip


def choose_quotes(
    query: Query, ranked: Sequence[Candidate], *, limit: int = MAX_QUOTES
) -> list[tuple[Candidate, str]]:
    """Verbatim sentences of the best units: for a unit the question names, its opening
    sentences; otherwise the sentences sharing most of the question's terms (at least one).
    When the question names units, only those units and their parts are quoted."""
    chosen: list[tuple[Candidate, str]] = []
    named = {(c.row["document_key"], c.row["section_label"]) for c in ranked if c.exact}
    if named:
        ranked = [c for c in ranked if (c.row["document_key"], c.row["section_label"]) in named]
    best = ranked[0].score if ranked else 0.0
    for candidate in ranked:
        if len(chosen) >= limit:
            break
        if candidate is not ranked[0] and candidate.score < 0.5 * best and not candidate.exact:
            continue
        spans = sentences(str(candidate.row["text"]))
        if candidate.exact:
            picked = [s.text for s in spans[:QUOTES_PER_UNIT]]
        else:
            scored = [(term_overlap(query.terms, s.text), -i, s.text) for i, s in enumerate(spans)]
            scored = [t for t in scored if t[0] > 0]
            scored.sort(reverse=True)
            picked = [t[2] for t in scored[:QUOTES_PER_UNIT]]
            picked.sort(key=lambda text: str(candidate.row["text"]).find(text))
        for text in picked:
            if len(chosen) < limit:
                chosen.append((candidate, _trim(text)))
    return chosen


def _trim(text: str) -> str:
    """Long sentences are cut at a word boundary (the cut part is still verbatim)."""
    if len(text) <= MAX_QUOTE_CHARS:
        return text
    cut = text[:MAX_QUOTE_CHARS].rsplit(" ", 1)[0]
    return cut


def render_answer(citations: Sequence[Mapping[str, Any]]) -> str:
    """Only quotes, each introduced by its unit's label and marked with its citation number."""
    lines: list[str] = []
    last: tuple[str, str] | None = None
    for c in citations:
        head = (str(c["document"]), str(c["label"]))
        if head != last:
            lines.append(f"{c['label']} ({c['document_title']}):")
            last = head
        lines.append(f'  "{c["quote"]}" [{c["n"]}]')
    return "\n".join(lines)


def confidence(query: Query, ranked: Sequence[Candidate]) -> str:
    """high | medium | low, from the evidence alone (never from a model).

    high: the question names the unit cited, or the best unit is in the top 3 of both the
    vector and full-text rankings and shares at least half of the question's terms;
    medium: the best unit shares a third of the terms or is found by both rankings;
    low: otherwise.
    """
    if not ranked:
        return "low"
    best = ranked[0]
    if best.exact:
        return "high"
    overlap = term_overlap(query.terms, best.row.get("text"))
    both = "vector" in best.ranks and "fulltext" in best.ranks
    if both and best.ranks["vector"] <= 3 and best.ranks["fulltext"] <= 3 and overlap >= 0.5:
        return "high"
    if overlap >= THIN_OVERLAP or both:
        return "medium"
    return "low"


def min_confidence(levels: Sequence[str]) -> str:
    order = ["low", "medium", "high"]
    return min(levels, key=order.index) if levels else "low"


# ---------------------------------------------------------------------------------------------
# One engine per process


_ENGINES: dict[tuple[str, AnswerSettings], QueryEngine] = {}
_ENGINES_LOCK = threading.Lock()


def answer(
    question: object,
    *,
    jurisdictions: Sequence[str] | None = None,
    as_of: str | dt.date | None = None,
    top_k: int = 5,
    database_url: str | None = None,
    settings: AnswerSettings | None = None,
) -> dict[str, Any]:
    """Answer a question from the materialized stores (see :meth:`QueryEngine.answer`).

    The embedded Postgres (or ``CIVICSETU_DATABASE_URL``) and the configured embedding model
    are used; the model is loaded once per process.
    """
    from civicsetu_pipelines.base.settings import Settings
    from civicsetu_pipelines.store.database import resolve_database_url

    url = database_url or resolve_database_url(Settings.from_env())
    settings = settings or settings_from_env()
    with _ENGINES_LOCK:
        engine = _ENGINES.get((url, settings))
        if engine is None:
            engine = QueryEngine(url, default_query_embedder(), settings)
            _ENGINES[(url, settings)] = engine
    return engine.answer(question, jurisdictions=jurisdictions, as_of=as_of, top_k=top_k)


def settings_from_env() -> AnswerSettings:
    """Answer settings from the environment (``CIVICSETU_EF_SEARCH``, ``CIVICSETU_CROSS_ENCODER``,
    ``CIVICSETU_LLM_BASE_URL`` / ``_MODEL`` / ``_API_KEY``)."""
    from civicsetu_pipelines.base.settings import answer_env

    env = answer_env()
    llm = None
    if env.get("llm_base_url"):
        llm = LLMSettings(base_url=env["llm_base_url"], model=env.get("llm_model") or "default",
                          api_key=env.get("llm_api_key") or None)  # fmt: skip
    return AnswerSettings(
        retrieval=RetrievalSettings(ef_search=int(env.get("ef_search") or 100)),
        cross_encoder=env.get("cross_encoder") or None,
        llm=llm,
    )


def default_query_embedder() -> Callable[[str], np.ndarray]:
    """The configured embedding model, in this process (a query is one short text).

    Torch runs on one thread here: a one-sentence query gains nothing from a second one, and on
    a busy 2-core machine two threads oversubscribe the cores (bench/bench_answers.py under
    load: p95 of the answer path 151 ms with 2 threads, 42 ms with 1).
    """
    import torch

    from civicsetu_pipelines.base.settings import Settings
    from civicsetu_pipelines.store.embedding import Embedder, embedding_config_from_env

    torch.set_num_threads(1)
    embedder = Embedder(embedding_config_from_env(), Settings.from_env().state_dir / "models")
    return embedder.embed_query

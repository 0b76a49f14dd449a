"""Trusted answers composed from evidence that passed the verdict
(:mod:`~civicsetu_pipelines.answer.verdict`): extractive answers made only of verbatim quotes
with their citations, and comparisons of jurisdictions.

Pure domain code (no Dagster). The last stage a question passes: the quotes chosen, their
citations placed on pages (:class:`Composer`, which reads the stored page texts), the
confidence and the rendered text; a refusal only when nothing chosen can be quoted.

Doctrine: never answer without evidence from the stored corpus; every quote is verbatim in its
chunk and placed on the page it is printed on; legal structure (labels, sections) comes from the
parsed text; a correct refusal beats a partly wrong answer. The extractive answer says nothing
that is not quoted; the optional LLM path (:mod:`civicsetu_pipelines.answer.llm`) must pass the same
verbatim checks or the answer is refused (``validation_failed``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

from civicsetu_pipelines.answer.candidates import (
    Candidate,
    scoring_terms,
    term_overlap,
    unit_summary,
)
from civicsetu_pipelines.answer.citations import quote_in, sentences, split_across_pages
from civicsetu_pipelines.answer.confidence import LEVELS, ConfidenceModel, confidence
from civicsetu_pipelines.answer.llm import Evidence, LLMSettings, generate_answer
from civicsetu_pipelines.answer.questions import Query
from civicsetu_pipelines.answer.timing import Timer
from civicsetu_pipelines.answer.verdict import (
    ANSWERING_SHARE,
    DISCLAIMER,
    Decision,
    evidence_verdict,
    refusal,
    related_units,
)
from civicsetu_pipelines.answer.vocabulary import content_stems, stems
from civicsetu_pipelines.base import canonical_flat
from civicsetu_pipelines.ingest import authority_of, citation_role, is_case_law, unit_uri
from civicsetu_pipelines.store import EvidenceDistances

MAX_QUOTES = 4
QUOTES_PER_UNIT = 2
MAX_QUOTE_CHARS = 600


# ---------------------------------------------------------------------------------------------
# Composing the answer


class Composer:
    """Answers from ranked units: their verbatim quotes (or, with an LLM configured, its claims
    that pass the same checks), each placed on the page it is printed on. Reads the stored page
    texts over the engine's connection (used by one thread at a time)."""

    def __init__(self, conn: psycopg.Connection[Any], llm: LLMSettings | None) -> None:
        self._conn = conn
        self._llm = llm
        self._page_cache: dict[tuple[str, str, int], str] = {}

    def compose(
        self,
        query: Query,
        ranked: list[Candidate],
        decision: Decision,
        timer: Timer,
        since: float,
    ) -> dict[str, Any]:
        """The last stage: the answer from ``ranked`` (which the ``decision`` passed, with the
        confidence and notes it gives), or a refusal when nothing in it can be quoted."""
        sure = shown_confidence([decision.confidence or ("low", 0.0)], ranked)
        result = (self._generate(query, ranked, sure, timer, since) if self._llm is not None
                  else self._quoted(query, ranked, sure, timer, since))  # fmt: skip
        if decision.notes:
            result["notes"] = list(decision.notes)
        return result

    def _quoted(
        self,
        query: Query,
        ranked: list[Candidate],
        sure: Mapping[str, Any],
        timer: Timer,
        since: float,
    ) -> dict[str, Any]:
        """The answer of verbatim quotes chosen from ``ranked``."""
        quotes = choose_quotes(query, ranked)
        citations = self.cite(quotes)
        timer.stage("answer", since)
        if not citations:
            return refusal(
                "no_relevant_data",
                "The best matching provisions hold no sentence that can be quoted for this "
                "question.",
                related=related_units(ranked),
                retrieved=ranked,
            )
        return answered(render_answer(citations), sure, citations, ranked)

    def _generate(
        self,
        query: Query,
        ranked: list[Candidate],
        sure: Mapping[str, Any],
        timer: Timer,
        since: float,
    ) -> dict[str, Any]:
        """The LLM path: claims must quote the retrieved evidence verbatim, or refuse."""
        assert self._llm is not None
        evidence = [
            Evidence(f"E{i}", c.chunk_id, str(c.row["jurisdiction"]), str(c.row["document_key"]),
                     c.label, str(c.row["text"]))
            for i, c in enumerate(ranked, start=1)
        ]  # fmt: skip
        result = generate_answer(query.text, evidence, self._llm)
        timer.stage("generate", since)
        if result.status != "answered":
            reason = "validation_failed" if result.status == "validation_failed" else None
            return refusal(
                reason or "validation_failed",
                "The generated answer failed the citation checks"
                if reason
                else "The language model could not be reached; no answer was generated.",
                related=related_units(ranked),
                retrieved=ranked,
                problems=result.problems,
            )
        if not result.claims:
            return refusal("no_relevant_data", "The evidence retrieved does not answer it.",
                           related=related_units(ranked), retrieved=ranked)  # fmt: skip
        by_id = {e.id: c for e, c in zip(evidence, ranked, strict=True)}
        quotes: list[tuple[Candidate, str]] = []
        for claim in result.claims:
            for quote in claim.quotes:
                for cid in claim.citation_ids:
                    if quote_in(quote, str(by_id[cid].row["text"])):
                        quotes.append((by_id[cid], quote))
                        break
        citations = self.cite(quotes)
        if len(citations) < len(quotes):
            return refusal("validation_failed", "A quote could not be placed on a page.",
                           related=related_units(ranked), retrieved=ranked)  # fmt: skip
        text = " ".join(
            f"{claim.text} "
            + "".join(f"[{c['n']}]" for c in citations if c["quote"] in claim.quotes)
            for claim in result.claims
        )
        generated = {"attempts": result.attempts, "claims": len(result.claims)}
        return answered(text.strip(), sure, citations, ranked, generated=generated)

    def cite(self, quotes: Sequence[tuple[Candidate, str]], start: int = 1) -> list[dict[str, Any]]:
        """Citations for (unit, quote) pairs, each quote placed on the page it is printed on: a
        quote over a page break is cited by its longest part that lies on one page (one
        citation per quote, each verbatim on its page); unplaceable quotes are dropped, never
        cited with a guessed page."""
        citations: list[dict[str, Any]] = []
        for candidate, quote in quotes:
            row = candidate.row
            if not quote_in(quote, str(row["text"])):
                continue
            pages = self._pages(row)
            parts = split_across_pages(quote, pages)
            amendment = row.get("amendment") or None
            printed_in = None
            if not parts and amendment:  # new words: printed in the amending instrument
                printed_in = self._instrument_pages(amendment)
                parts = split_across_pages(quote, printed_in[1]) if printed_in else []
                if printed_in and not parts:
                    # a text only the amendment's words made (nowhere printed whole): the
                    # instruction itself is cited, verbatim on the instrument's page
                    first = str(amendment.get("instruction") or "").split(" | ")[0]
                    parts = split_across_pages(first, printed_in[1])
            for page, part in sorted(parts, key=lambda p: -len(p[1]))[:1]:
                kind, unit = str(row.get("doc_type") or ""), str(row.get("unit") or "")
                citations.append(
                    {
                        "n": start + len(citations),
                        "jurisdiction": row["jurisdiction"],
                        "document": row["document_key"],
                        "document_title": row.get("document_title") or row["document_key"],
                        # a court's or tribunal's reasoning, not the law itself: labelled so
                        "case_law": is_case_law(kind),
                        # law | case law | guidance (an FAQ) | form (a model agreement ...)
                        "role": citation_role(kind, unit),
                        "label": row["label"],
                        "section": row["section_label"],
                        "page": page,
                        "quote": canonical_flat(part),
                        "source_url": row.get("source_url"),
                        "chunk_id": candidate.chunk_id,
                        # the unit's Akoma Ntoso address: the expression (its point in time,
                        # which is in force on the date asked) and its eId
                        "uri": unit_uri(row),
                        **dated(row, printed_in[0] if printed_in else None),
                    }
                )
        return citations

    def _instrument_pages(
        self, amendment: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[int, str]] | None:
        """The amending instrument's document and the pages where its instruction is printed
        (its page and the next, where a long new text runs on)."""
        key, page = str(amendment.get("by") or ""), int(amendment.get("page") or 0)
        with self._conn.cursor() as cur:
            cur.execute(
                "SELECT d.key, d.title, d.source_url, p.page, p.text FROM documents d "
                "JOIN document_versions v ON v.document_key = d.key AND v.status = 'current' "
                "JOIN document_pages p ON p.document_key = d.key AND p.sha256 = v.sha256 "
                "WHERE d.key = %s AND p.page BETWEEN %s AND %s",
                (key, page, page + 1),
            )
            rows = cur.fetchall()
        if not rows:
            return None
        document = {"key": rows[0][0], "title": rows[0][1], "source_url": rows[0][2]}
        return document, {int(r[3]): str(r[4]) for r in rows}

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


@dataclass
class Comparison:
    """Each jurisdiction's own provisions side by side (precedence only where quoted), built one
    jurisdiction at a time."""

    query: Query
    composer: Composer
    distances: EvidenceDistances
    confidence_model: ConfidenceModel | None = None  # the served ranking's (None: packaged)
    sides: list[dict[str, Any]] = field(default_factory=list)
    ranked_all: list[Candidate] = field(default_factory=list)
    citations: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self,
        state: str,
        ranked: list[Candidate],
        unknown_terms: Callable[[Sequence[str]], list[str]],
        candidates: Sequence[Candidate] | None = None,
    ) -> None:
        """The side of ``state`` from its own units served (``ranked``; ``candidates``: every
        one retrieved, by score): up to two quotes, if its evidence answers."""
        query = self.query
        self.ranked_all += ranked
        verdict = evidence_verdict(query, ranked, self.distances, unknown_terms, candidates)
        if not ranked or verdict:
            self.sides.append(
                {"jurisdiction": state, "status": "no_relevant_data", "citations": []}
            )
            return
        cited = self.composer.cite(choose_quotes(query, ranked, limit=2),
                                   start=len(self.citations) + 1)  # fmt: skip
        self.citations += cited
        self.sides.append({"jurisdiction": state, "status": "answered" if cited else
                           "no_relevant_data", "citations": cited})  # fmt: skip

    def add_provision(
        self, state: str, unit: Candidate | None, quote: str | None, value: str | None
    ) -> None:
        """The side of ``state`` from the provisions table: the value its rule fixes beside
        the verbatim quote it was read from (no citation, and no value, when the table holds
        none for it or the quote is not on the unit's pages)."""
        cited = []
        if unit is not None and quote:
            self.ranked_all.append(unit)
            cited = self.composer.cite([(unit, quote)], start=len(self.citations) + 1)
        self.citations += cited
        self.sides.append({"jurisdiction": state, "status": "answered" if cited else
                           "no_relevant_data", "value": value if cited else None,
                           "citations": cited})  # fmt: skip

    def result(self) -> dict[str, Any]:
        """The sides as one answer, or a refusal when no side has a quote."""
        query, sides, ranked_all, citations = (
            self.query,
            self.sides,
            self.ranked_all,
            self.citations,
        )
        if not citations:
            return refusal("no_relevant_data", "None of the jurisdictions compared has a "
                           "provision that answers the question.",
                           related=related_units(ranked_all),
                           retrieved=ranked_all)  # fmt: skip
        answered_sides = [side["jurisdiction"] for side in sides if side["citations"]]
        lines = []
        for side in sides:
            value = f" {side['value']}" if side.get("value") else ""
            lines.append(f"{side['jurisdiction']}:{value}")
            if not side["citations"]:
                lines.append("  (no provision found in the stored corpus)")
            for c in side["citations"]:
                lines.append(f'  {_heading(c)}: "{c["quote"]}" [{c["n"]}]')
        sure = shown_confidence([confidence(query, [c for c in ranked_all
                                                    if c.row["jurisdiction"] == side],
                                            self.confidence_model)
                                 for side in answered_sides], ranked_all)  # fmt: skip
        return answered("\n".join(lines), sure, citations, ranked_all, comparison=sides)


# ---------------------------------------------------------------------------------------------
# Pure pieces (unit-tested on their own)


_VERBS = {"substitute": "substituted", "substitute_words": "amended", "insert": "inserted",
          "omit_words": "amended", "renumber": "renumbered"}  # fmt: skip


def dated(row: Mapping[str, Any], printed_in: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What a citation says of its unit's point in time: "as substituted by <instrument>, from
    <date>" for a unit an amendment made (and, when the quoted words are the instrument's own,
    the instrument's page is the one cited), "in force until <date>" for a text since
    amended or repealed."""
    out: dict[str, Any] = {}
    amendment = row.get("amendment") or None
    if amendment:
        verb = _VERBS.get(str(amendment.get("kind")), "amended")
        title = amendment.get("title") or amendment.get("by")
        out["amended"] = {
            "by": amendment.get("by"),
            "title": title,
            "kind": amendment.get("kind"),
            "from": amendment.get("date"),
            "instruction": amendment.get("instruction"),
            "note": f"as {verb} by {title}, from {amendment.get('date')}",
            "of": row.get("document_title") or row.get("document_key"),
        }
        if printed_in is not None:
            out.update(document=printed_in["key"], document_title=printed_in["title"],
                       source_url=printed_in["source_url"])  # fmt: skip
    if row.get("valid_to") is not None:
        out["in_force_until"] = str(row["valid_to"])
    return out


def choose_quotes(
    query: Query, ranked: Sequence[Candidate], *, limit: int = MAX_QUOTES
) -> list[tuple[Candidate, str]]:
    """One verbatim quote for each of the best units (never two citations of one unit), the
    governing provision first: the units that answer (the best one and those scoring at least
    half as well) in the order of legal force (the Act, then rules, ... FAQ, forms; by score
    within a tier), so the law leads and guidance that restates it follows.

    For a unit the question names, its opening words (up to two sentences, as one contiguous
    span); otherwise the sentence sharing most of the question's terms, with the next one when
    it shares as many. When the question names units, only those units and their parts are
    quoted."""
    named = {(c.row["document_key"], c.row["section_label"]) for c in ranked if c.exact}
    if named:
        ranked = [c for c in ranked if (c.row["document_key"], c.row["section_label"]) in named]
    best = ranked[0].score if ranked else 0.0
    answering = [c for c in ranked
                 if c is ranked[0] or c.exact or c.score >= ANSWERING_SHARE * best]  # fmt: skip
    seen: set[tuple[str, str]] = set()
    units: list[Candidate] = []
    for candidate in answering:
        key = (str(candidate.row["document_key"]), candidate.label)
        if key not in seen:
            seen.add(key)
            units.append(candidate)
    units = units[:limit]
    order = {id(c): i for i, c in enumerate(units)}
    units.sort(key=lambda c: (_tier(c, query), order[id(c)]))
    chosen: list[tuple[Candidate, str]] = []
    for candidate in units:
        quote = _quote(query, candidate)
        if quote:
            chosen.append((candidate, quote))
    return chosen


def _tier(candidate: Candidate, query: Query) -> int:
    row = candidate.row
    return authority_of(str(row.get("doc_type") or ""), str(row.get("unit")), query.asks_about).tier


def _quote(query: Query, candidate: Candidate) -> str | None:
    """The unit's quote: a contiguous span of at most QUOTES_PER_UNIT sentences (verbatim)."""
    text = str(candidate.row["text"])
    spans = sentences(text)
    if not spans:
        return None
    if candidate.exact:
        picked = list(spans[:QUOTES_PER_UNIT])
    else:
        terms = scoring_terms(query)  # a lay phrase counts where the statute's words for it are
        # the words its heading already says ("Interest payable by promoter") tell what the
        # unit is about, not which of its sentences answers: the sentence holding the asked
        # words its heading lacks ("rate") is the one that does, then the most words overall
        heading = stems(f"{candidate.row.get('title') or ''} {candidate.label}")
        beyond = [t for t in terms if not set(content_stems(t)) <= heading]
        scored = [((term_overlap(beyond, s.text), term_overlap(terms, s.text)), -i)
                  for i, s in enumerate(spans)]  # fmt: skip
        share, first = max(scored)
        if share[1] <= 0:
            return None
        picked = [spans[-first]]
        following = -first + 1
        if following < len(spans) and scored[following][0] >= share:
            picked.append(spans[following])
    return _trim(text[picked[0].start : picked[-1].end])


def _trim(text: str) -> str:
    """Long sentences are cut at a word boundary (the cut part is still verbatim)."""
    if len(text) <= MAX_QUOTE_CHARS:
        return text
    cut = text[:MAX_QUOTE_CHARS].rsplit(" ", 1)[0]
    return cut


def answered(
    answer: str,
    sure: Mapping[str, Any],
    citations: list[dict[str, Any]],
    retrieved: Sequence[Candidate],
    *,
    comparison: list[dict[str, Any]] | None = None,
    generated: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An answer as a result gives it (the twin of the verdict's :func:`refusal`): its text,
    what it shows of its confidence (:func:`shown_confidence`), its citations, a comparison's
    sides, the units it read and, from the LLM path, its attempts."""
    out: dict[str, Any] = {"status": "answered", "refusal_reason": None, "answer": answer,
                           **sure, "citations": citations}  # fmt: skip
    if comparison is not None:
        out["comparison"] = comparison
    out["retrieved"] = [unit_summary(c) for c in retrieved]
    out["related"] = []
    if generated is not None:
        out["generated"] = generated
    out["disclaimer"] = DISCLAIMER
    return out


def render_answer(citations: Sequence[Mapping[str, Any]]) -> str:
    """Only quotes, each introduced by its unit's label and marked with its citation number."""
    lines: list[str] = []
    last: tuple[str, str] | None = None
    for c in citations:
        head = (str(c["document"]), str(c["label"]))
        if head != last:
            lines.append(f"{_heading(c)}:")
            last = head
        lines.append(f'  "{c["quote"]}" [{c["n"]}]')
    return "\n".join(lines)


def not_sure(ranked: Sequence[Candidate]) -> dict[str, Any]:
    """What an answer below ``medium`` says: that it is not sure, the nearest provisions as
    ones that may be relevant, and what to ask instead."""
    seen = dict.fromkeys((str(c.row["jurisdiction"]), c.label, str(c.row["document_key"]))
                         for c in ranked)  # fmt: skip
    return {
        "message": "Not sure: the provisions quoted are the nearest found, but the evidence "
        "does not show that they decide this question.",
        "may_be_relevant": [
            {"jurisdiction": j, "label": label, "document": d} for j, label, d in list(seen)[:5]
        ],  # fmt: skip
        "ask_instead": "Ask again naming the state and what the provision is about (e.g. "
        "'registration of an agent in Gujarat'), or the provision itself (e.g. 'Section 18').",
    }


def shown_confidence(
    sides: Sequence[tuple[str, float]], ranked: Sequence[Candidate]
) -> dict[str, Any]:
    """What an answer shows of its confidence: the level and probability of the least sure of
    ``sides`` (a comparison is as sure as its least sure side; a plain answer has one), and,
    below ``medium``, that it is not sure (:func:`not_sure`)."""
    level = min_confidence([lvl for lvl, _ in sides])
    p = min((p for _, p in sides), default=0.0)
    out: dict[str, Any] = {"confidence": level, "confidence_probability": round(p, 3)}
    if level == "low":
        out["not_sure"] = not_sure(ranked)
    return out


def min_confidence(levels: Sequence[str]) -> str:
    return min(levels, key=LEVELS.index) if levels else "low"


def _heading(citation: Mapping[str, Any]) -> str:
    """``Section 18 (The Real Estate ... Act)``; what is not the law itself says what it is:
    ``Paragraph 12 (Neelkamal ... v. Union of India; case law)``, ``Question 53 (... Frequently
    Asked Questions; guidance)``, ``Annexure A (... Rules, 2017; form or model agreement)``."""
    if citation.get("amended"):  # "Rule 7 (X Rules, 2018, as amended by ..., from ...)"
        return f"{citation['label']} ({citation['amended']['of']}, {citation['amended']['note']})"
    role = citation.get("role") or ("case law" if citation.get("case_law") else "law")
    shown = {"law": "", "case law": "; case law", "guidance": "; guidance",
             "form": "; form or model agreement"}.get(role, "")  # fmt: skip
    return f"{citation['label']} ({citation['document_title']}{shown})"

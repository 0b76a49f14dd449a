"""Trusted answers built from ranked evidence: extractive answers made only of verbatim quotes
with their citations, comparisons of jurisdictions, and explicit refusals.

Pure domain code (no Dagster). The refusals decided before retrieval (:func:`places_refusal`,
:func:`reference_refusal`) and after it (:func:`evidence_refusal`, from the verdicts), the
quotes chosen, their citations placed on pages (:class:`Composer`, which reads the stored page
texts), the confidence and the rendered text.

Doctrine: never answer without evidence from the stored corpus; every quote is verbatim in its
chunk and placed on the page it is printed on; legal structure (labels, sections) comes from the
parsed text; a correct refusal beats a partly wrong answer. The extractive answer says nothing
that is not quoted; the optional LLM path (:mod:`civicsetu_pipelines.answer.llm`) must pass the same
verbatim checks or the answer is refused (``validation_failed``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import psycopg

from civicsetu_pipelines.answer.citations import quote_in, sentences, split_across_pages
from civicsetu_pipelines.answer.llm import Evidence, LLMSettings, generate_answer
from civicsetu_pipelines.answer.other_laws import load_other_laws
from civicsetu_pipelines.answer.places import ACT_JURISDICTION
from civicsetu_pipelines.answer.questions import Query, is_vague
from civicsetu_pipelines.answer.ranking import Candidate, scoring_terms, term_overlap
from civicsetu_pipelines.answer.retrieval import ReferenceResolution
from civicsetu_pipelines.answer.timing import Timer
from civicsetu_pipelines.answer.vocabulary import content_stems, load_vocabulary, stems
from civicsetu_pipelines.base import canonical_flat
from civicsetu_pipelines.ingest import authority_of, citation_role, is_case_law
from civicsetu_pipelines.store import EvidenceDistances

DISCLAIMER = (
    "Extracts quoted from the stored gazette text with their citations; not legal advice. "
    "Check the cited page of the official gazette, and whether the provision has been amended, "
    "before relying on it."
)
# The share of the question's terms the best unit holds for it to answer a little beyond the
# model's answer distance (EvidenceDistances.near).
NEAR_OVERLAP = 0.67
STATE_EVIDENCE_UNITS = 5  # a state question's own evidence is among this many best units
THIN_OVERLAP = 0.34  # below this share of terms, confidence is low
MAX_QUOTES = 4
QUOTES_PER_UNIT = 2
MAX_QUOTE_CHARS = 600


# ---------------------------------------------------------------------------------------------
# Refusals and notes, in the order a question meets them


def places_refusal(
    query: Query, wanted: Sequence[str], stored: Sequence[str]
) -> dict[str, Any] | None:
    """A question that names only places the corpus holds nothing of (and no filter) is out of
    scope; else None."""
    if query.other_places and not query.jurisdictions and not wanted:
        places = ", ".join(query.other_places)
        return refusal(
            "out_of_scope",
            f"The corpus holds no documents of {places}; it covers {', '.join(stored)}. The RERA "
            f"Act applies in every state, but {places}'s own rules, fees and authority are not in "
            "the corpus: ask about the Act without naming the place, or add its gazettes "
            "(civicsetu documents add).",
        )
    return None


def missing_labels(resolutions: Sequence[ReferenceResolution]) -> list[str]:
    """The labels of the question's references that name no stored unit."""
    return [r.reference.label for r in resolutions if not r.candidates]


def reference_refusal(
    query: Query,
    resolutions: Sequence[ReferenceResolution],
    scope: Sequence[str] | None,
    as_of: dt.date | None,
    *,
    comparing: bool,
) -> dict[str, Any] | None:
    """Refused before retrieval: a reference found in several documents (unless comparing), a
    question too vague to answer, or one whose every reference is absent; else None."""
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
    missing = missing_labels(resolutions)
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
    return None


def evidence_refusal(
    evidence: EvidenceReading, distances: EvidenceDistances, stored: Sequence[str]
) -> dict[str, Any] | None:
    """Refused after retrieval: nothing retrieved, or a verdict against the evidence
    (:func:`external_verdict`, :meth:`EvidenceReading.verdict` under the model's ``distances``,
    :func:`state_verdict`); else None."""
    query, ranked = evidence.query, evidence.ranked
    if not ranked:
        return refusal("no_relevant_data", "Nothing in the stored corpus matches the question.")
    verdict = external_verdict(query, ranked)
    verdict = verdict or evidence.verdict(distances)
    verdict = verdict or state_verdict(query, ranked, stored)
    if verdict is not None:
        reason, message = verdict
        return refusal(reason, message, related=[c.summary() for c in ranked[:5]],
                       retrieved=ranked)  # fmt: skip
    return None


def with_notes(
    result: dict[str, Any], resolutions: Sequence[ReferenceResolution]
) -> dict[str, Any]:
    """``result`` noting the question's references that are not in the stored corpus."""
    missing = missing_labels(resolutions)
    if missing:
        result["notes"] = [f"{', '.join(missing)} is not in the stored corpus."]
    return result


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
        self, query: Query, ranked: list[Candidate], timer: Timer, since: float
    ) -> dict[str, Any]:
        """The answer from ``ranked`` (which passed the verdicts), or a refusal when nothing in
        it can be quoted."""
        if self._llm is not None:
            return self._generate(query, ranked, timer, since)
        quotes = choose_quotes(query, ranked)
        citations = self.cite(quotes)
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

    def _generate(
        self, query: Query, ranked: list[Candidate], timer: Timer, since: float
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
        citations = self.cite(quotes)
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
    sides: list[dict[str, Any]] = field(default_factory=list)
    ranked_all: list[Candidate] = field(default_factory=list)
    citations: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self,
        state: str,
        ranked: list[Candidate],
        unknown_terms: Callable[[Sequence[str]], list[str]],
    ) -> None:
        """The side of ``state`` from its own ranked units: up to two quotes, if its evidence
        answers."""
        query = self.query
        self.ranked_all += ranked
        if not ranked or evidence_verdict(query, ranked, self.distances, unknown_terms):
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
                           related=[c.summary() for c in ranked_all[:5]],
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


# ---------------------------------------------------------------------------------------------
# Pure pieces (unit-tested on their own)


def _related(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"jurisdiction": row["jurisdiction"], "document": row["document_key"],
            "label": row["label"], "section": row["section_label"],
            "chunk_id": str(row["chunk_id"])}  # fmt: skip


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


class EvidenceReading:
    """What the verdict on one question's evidence reads from its ranked units, each part
    computed on first use (most questions are decided by the nearest distance alone, before the
    query for words the corpus lacks): :meth:`verdict` decides under given distances, and
    bench/calibrate_refusals.py replays one reading under many."""

    def __init__(
        self,
        query: Query,
        ranked: Sequence[Candidate],
        unknown_terms: Callable[[Sequence[str]], list[str]] = lambda _terms: [],
        candidates: Sequence[Candidate] | None = None,
    ) -> None:
        self.query = query
        self.ranked = ranked
        self._unknown_terms = unknown_terms
        self.exact = any(c.exact for c in ranked)
        # the nearest unit in meaning among every candidate (when given), not only those the
        # diversity pass kept: moving a unit down never changes the verdict
        pool = ranked if candidates is None else candidates
        self.nearest = min((c.distance for c in pool if c.distance is not None), default=1.0)

    @cached_property
    def unknown(self) -> list[str]:
        """The question's words that occur nowhere in the corpus (and the vocabulary does not
        read as a legal term)."""
        vocabulary = load_vocabulary()
        return [t for t in self._unknown_terms(self.query.terms) if not vocabulary.legal_for(t)]

    @cached_property
    def shares_terms(self) -> bool:
        """A unit holds most of the question's terms, and each of its words occurs in the corpus."""
        best = max((term_overlap(self.query.terms, c.row.get("text")) for c in self.ranked),
                   default=0)  # fmt: skip
        return best >= NEAR_OVERLAP and not self.unknown

    @cached_property
    def buyers_matter(self) -> bool:
        """Told in a buyer's words for a matter the statute regulates (the vocabulary reads a
        lay term for one in it: "cracks", "money back"; a word for a party or the property
        alone, "builder", "flat", is not enough), and most of its words occur in the corpus."""
        vocabulary = load_vocabulary()
        in_domain = any(vocabulary.names_a_matter(t) for t in self.query.lay_terms)
        return in_domain and len(self.unknown) < len(self.query.terms) / 2

    def answers(self, distances: EvidenceDistances) -> bool:
        """Whether the evidence can answer under ``distances``."""
        return (
            self.exact
            or self.nearest <= distances.answer
            or (self.nearest <= distances.near and self.shares_terms)
            or (self.nearest <= distances.domain and self.buyers_matter)
        )

    def verdict(self, distances: EvidenceDistances) -> tuple[str, str] | None:
        """None when the evidence can answer; else (reason, message): out of scope when some of
        the question's words occur nowhere in the corpus (or nothing matches its words), else
        the evidence is too thin."""
        if self.answers(distances):
            return None
        if self.unknown or not any("fulltext" in c.ranks for c in self.ranked):
            words = f" ({', '.join(self.unknown)} occur nowhere in it)" if self.unknown else ""
            return ("out_of_scope", "The stored corpus (the RERA Act, 2016, its FAQ and state "
                    f"RERA rules) has nothing on this question{words}.")  # fmt: skip
        return ("no_relevant_data", "The stored provisions that come closest do not answer the "
                "question; they are listed as related.")  # fmt: skip


def evidence_verdict(
    query: Query,
    ranked: Sequence[Candidate],
    distances: EvidenceDistances,
    unknown_terms: Callable[[Sequence[str]], list[str]] = lambda _terms: [],
    candidates: Sequence[Candidate] | None = None,
) -> tuple[str, str] | None:
    """None when the best evidence can answer; else (reason, message).

    An exact reference is always evidence. Otherwise the nearest unit in meaning (among
    ``candidates`` when given: every unit retrieved, before diversity) decides, under
    the model's ``distances``: within ``answer`` it can answer; a little farther when it shares
    most of the question's terms, or, up to ``domain``, when the question is told in a buyer's
    words for a matter the statute regulates (a story of a buyer's own flat strays farther from
    the statute's wording than a question in its terms, without leaving its subject). See
    :class:`EvidenceReading`.
    """
    return EvidenceReading(query, ranked, unknown_terms, candidates).verdict(distances)


def state_verdict(
    query: Query, ranked: Sequence[Candidate], stored: Sequence[str]
) -> tuple[str, str] | None:
    """A question about one state is not answered from another jurisdiction's text, nor from a
    unit of its own that matches it only on the document's name ("Karnataka", "real estate",
    "rules": the short title or preamble of the state's rules, which say nothing of the matter
    asked): refused, with what was found as related. The state's unit must be among the first
    STATE_EVIDENCE_UNITS, whatever top-k was asked (a tenth unit is never quoted, and the
    verdict must not change with top-k)."""
    states = [j for j in query.jurisdictions if j != ACT_JURISDICTION and j in stored]
    if len(states) != 1 or query.references or "comparison" in query.intents:
        return None
    terms = scoring_terms(query)
    if any(c.row["jurisdiction"] == states[0] and speaks_beyond_its_name(terms, c.row)
           for c in ranked[:STATE_EVIDENCE_UNITS]):  # fmt: skip
        return None
    return ("no_relevant_data", f"The stored documents of {states[0]} do not cover this; the "
            "closest provisions are listed as related.")  # fmt: skip


def speaks_beyond_its_name(terms: Sequence[str], row: Mapping[str, Any]) -> bool:
    """Whether a unit holds any of the question's ``terms`` besides the words of its own
    document's title (the state's name and "real estate ... rules" are in every unit's
    document, so they say nothing of what the unit is about)."""
    name = stems(str(row.get("document_title") or ""))
    beyond = [t for t in terms if not set(content_stems(t)) <= name]
    return term_overlap(beyond, _heading_and_text(row)) > 0


def _heading_and_text(row: Mapping[str, Any]) -> str:
    return f"{row.get('title') or ''} {row.get('text') or ''}"


def external_verdict(query: Query, ranked: Sequence[Candidate]) -> tuple[str, str] | None:
    """A question about a subject another enactment governs (``data/other_laws.yaml``: stamp
    duty, GST, income tax, tenancy ...) that none of the best units speaks of is out of scope:
    refused, naming the enactment."""
    laws = load_other_laws()
    law = laws.subject_of(query.text)
    if law is None or query.references:
        return None
    if any(laws.speaks_of(_heading_and_text(c.row), law) for c in ranked[:3]):
        return None
    return ("out_of_scope", f"This is a question of {law.subject}, which {law.governed_by} "
            "governs; the stored corpus holds the RERA Act, 2016 and the rules, regulations, "
            "orders and guidance made under it, not that law.")  # fmt: skip


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
    answering = [c for c in ranked if c is ranked[0] or c.exact or c.score >= 0.5 * best]
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
        scored = [(term_overlap(terms, s.text), -i) for i, s in enumerate(spans)]
        share, first = max(scored)
        if share <= 0:
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

"""The decision stage: a question refused (places the corpus does not hold, read before any
search; a reference that is ambiguous, vague or absent; evidence that does not answer), or
passed on to composition with the confidence its answer is given (:func:`decide`).

Pure domain code (no Dagster, no database). A stage of its own between ranking and composition
(:mod:`~civicsetu_pipelines.answer.answers` walks a question through them once):
the verdict reads the *evidence*, never the places diversity gave the units. The nearest unit
in meaning, the state's own evidence and the subject another enactment governs are read from
every candidate by score (:func:`best_by_score`), so a diversity rule, or any reordering that
keeps the same units, never changes whether a question is answered.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from civicsetu_pipelines.answer.candidates import (
    Candidate,
    scoring_terms,
    term_overlap,
    unit_summary,
)
from civicsetu_pipelines.answer.confidence import ConfidenceModel, confidence
from civicsetu_pipelines.answer.other_laws import load_other_laws
from civicsetu_pipelines.answer.places import ACT_JURISDICTION
from civicsetu_pipelines.answer.questions import Asked, Query
from civicsetu_pipelines.answer.retrieval import ReferenceResolution
from civicsetu_pipelines.answer.vocabulary import content_stems, load_vocabulary, stems
from civicsetu_pipelines.store import EvidenceDistances

DISCLAIMER = (
    "Extracts quoted from the stored gazette text with their citations; not legal advice. "
    "Check the cited page of the official gazette, and whether the provision has been amended, "
    "before relying on it."
)
# The share of the question's terms the best unit holds for it to answer a little beyond the
# model's answer distance (EvidenceDistances.near).
NEAR_OVERLAP = 0.67
# The units that answer a question score at least this share of the best one's score: what the
# state's own evidence must be among (:func:`state_verdict`), and what the answer quotes from
# (compose.choose_quotes).
ANSWERING_SHARE = 0.5
# A subject another enactment governs is answered only when one of this many best-scoring
# units speaks of it.
EXTERNAL_EVIDENCE_UNITS = 3


def best_by_score(units: Sequence[Candidate], n: int | None = None) -> list[Candidate]:
    """The ``n`` best-scoring of ``units`` (all when None), by score then id: what a verdict
    reads, whatever order the units were served in."""
    ordered = sorted(units, key=lambda c: (-c.score, c.chunk_id))
    return ordered if n is None else ordered[:n]


def answering(units: Sequence[Candidate]) -> list[Candidate]:
    """The units of ``units`` that answer, best first: the best-scoring one and every one
    scoring at least ANSWERING_SHARE of its score (a set: the order ``units`` came in does not
    matter)."""
    ordered = best_by_score(units)
    if not ordered:
        return []
    best = ordered[0].score
    return [ordered[0], *(c for c in ordered[1:] if c.score >= ANSWERING_SHARE * best)]


def related_units(ranked: Sequence[Candidate]) -> list[dict[str, Any]]:
    """The best five units served, as a refusal lists them ("related, not answering")."""
    return [unit_summary(c) for c in ranked[:5]]


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
        "retrieved": [unit_summary(c) for c in retrieved],
        "related": [{**r, "relation": "related, not answering"} for r in related],
        "disclaimer": DISCLAIMER,
    }
    if problems:
        out["problems"] = list(problems)
    return out


def _related(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"jurisdiction": row["jurisdiction"], "document": row["document_key"],
            "label": row["label"], "section": row["section_label"],
            "chunk_id": str(row["chunk_id"])}  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Refusals and notes, in the order a question meets them


def places_refusal(asked: Asked, stored: Sequence[str]) -> dict[str, Any]:
    """The refusal of a question that names only places the corpus holds nothing of, and no
    filter (:attr:`~civicsetu_pipelines.answer.questions.Asked.only_unheld_places`): out of
    scope, saying what the corpus covers."""
    places = ", ".join(asked.query.other_places)
    return refusal(
        "out_of_scope",
        f"The corpus holds no documents of {places}; it covers {', '.join(stored)}. The RERA "
        f"Act applies in every state, but {places}'s own rules, fees and authority are not in "
        "the corpus: ask about the Act without naming the place, or add its gazettes "
        "(civicsetu documents add).",
    )


def missing_labels(resolutions: Sequence[ReferenceResolution]) -> list[str]:
    """The labels of the question's references that name no stored unit."""
    return [r.reference.label for r in resolutions if not r.candidates]


def as_named(query: Query, resolutions: Sequence[ReferenceResolution]) -> Query:
    """``query`` with the references it names for certain: a clause of "the agreement"
    (``ExplicitReference.soft``: the buyer's own may be meant) only where it was resolved (to
    one model agreement's paragraph). What the evidence is read against (a named unit spares a
    question the checks of its words)."""
    resolved = {r.reference for r in resolutions}
    kept = tuple(ref for ref in query.references if not ref.soft or ref in resolved)
    if len(kept) == len(query.references):
        return query
    return dataclasses.replace(query, references=kept)


def reference_refusal(
    query: Query,
    resolutions: Sequence[ReferenceResolution],
    scope: Sequence[str] | None,
    as_of: dt.date | None,
    *,
    comparing: bool,
    vague: bool,
) -> dict[str, Any] | None:
    """Refused for its references or its words: a reference found in several documents (unless
    comparing), a question too ``vague`` to answer, or one whose every reference is absent;
    else None."""
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
    if vague and not query.firm_references:
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
    verdict = external_verdict(query, evidence.pool, lambda: evidence.unknown)
    verdict = verdict or evidence.verdict(distances)
    verdict = verdict or state_verdict(query, evidence.pool, stored)
    if verdict is not None:
        reason, message = verdict
        return refusal(reason, message, related=related_units(ranked),
                       retrieved=ranked)  # fmt: skip
    return None


def notes(resolutions: Sequence[ReferenceResolution]) -> list[str]:
    """What an answer notes: the question's references that are not in the stored corpus."""
    missing = missing_labels(resolutions)
    return [f"{', '.join(missing)} is not in the stored corpus."] if missing else []


@dataclass(frozen=True)
class Decision:
    """The decision stage's verdict on one question: a refusal, or the confidence its answer
    is given with; and what it read (the evidence, None when refused before reading it)."""

    refusal: dict[str, Any] | None
    evidence: EvidenceReading | None = None
    confidence: tuple[str, float] | None = None  # (level, probability) of an answer
    notes: tuple[str, ...] = ()


def decide(
    asked: Asked,
    scope: Sequence[str] | None,
    resolutions: Sequence[ReferenceResolution],
    served: Sequence[Candidate],
    candidates: Sequence[Candidate],
    unknown_terms: Callable[[Sequence[str]], list[str]],
    distances: EvidenceDistances,
    stored: Sequence[str],
    confidence_model: ConfidenceModel | None = None,
) -> Decision:
    """The decision stage of one question, after ranking: refused for its references or its
    words (:func:`reference_refusal`), else for its evidence (:func:`evidence_refusal`, read
    from ``served`` and every one of ``candidates``), else answered with the confidence
    :func:`~civicsetu_pipelines.answer.confidence.confidence` gives the units served (with
    ``confidence_model``: the served ranking's; None: the packaged one)."""
    refused = reference_refusal(asked.query, resolutions, scope, asked.as_of, comparing=False,
                                vague=asked.vague)  # fmt: skip
    if refused is not None:
        return Decision(refused)
    query = as_named(asked.query, resolutions)
    evidence = EvidenceReading(query, served, unknown_terms, candidates)
    refused = evidence_refusal(evidence, distances, stored)
    if refused is not None:
        return Decision(refused, evidence)
    return Decision(
        None, evidence, confidence(query, served, confidence_model), tuple(notes(resolutions))
    )


class EvidenceReading:
    """What the verdict on one question's evidence reads from its units, each part computed on
    first use (most questions are decided by the nearest distance alone, before the query for
    words the corpus lacks): :meth:`verdict` decides under given distances, and
    bench/calibrate_refusals.py replays one reading under many.

    ``ranked`` are the units served (what the answer may quote: whether one holds most of the
    question's words, whether words matched any); ``candidates`` every unit retrieved, by score
    before diversity (the pool: the nearest in meaning, and what :func:`state_verdict` and
    :func:`external_verdict` read). Nothing here reads a unit's place in ``ranked``: the
    verdict is the same for any order of the same units."""

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
        # every candidate (when given), not only those the diversity pass kept: moving a unit
        # down never changes the verdict
        self.pool: Sequence[Candidate] = ranked if candidates is None else candidates
        self.nearest = min((c.distance for c in self.pool if c.distance is not None),
                           default=1.0)  # fmt: skip

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
    asked): refused, with what was found as related. The state's unit must be among the units
    that answer (:func:`answering`: scoring at least half as well as the best of ``ranked``,
    every candidate when the caller has them), whatever top-k was asked and wherever diversity
    served it: the verdict reads the evidence and its scores, never its places."""
    states = [j for j in query.jurisdictions if j != ACT_JURISDICTION and j in stored]
    if len(states) != 1 or query.references or "comparison" in query.intents:
        return None
    terms = scoring_terms(query)
    if any(c.row["jurisdiction"] == states[0] and speaks_beyond_its_name(terms, c.row)
           for c in answering(ranked)):  # fmt: skip
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


def external_verdict(
    query: Query,
    ranked: Sequence[Candidate],
    unknown: Callable[[], Sequence[str]] = lambda: (),
) -> tuple[str, str] | None:
    """A question about a subject another enactment governs (``data/other_laws.yaml``: stamp
    duty, GST, income tax, tenancy ...) is out of scope, refused naming the enactment, when none
    of the best units speaks of the subject, or when it asks of a word the stored corpus never
    holds (``unknown``: "the punishment for murder under the Indian Penal Code": the Act names
    that Code where it deems the Tribunal's proceedings judicial, and never murder; with words
    weighed by their rarity such a unit ranks first)."""
    laws = load_other_laws()
    law = laws.subject_of(query.text)
    if law is None or query.references:
        return None
    best = best_by_score(ranked, EXTERNAL_EVIDENCE_UNITS)
    if any(laws.speaks_of(_heading_and_text(c.row), law) for c in best) and not unknown():
        return None
    return ("out_of_scope", f"This is a question of {law.subject}, which {law.governed_by} "
            "governs; the stored corpus holds the RERA Act, 2016 and the rules, regulations, "
            "orders and guidance made under it, not that law.")  # fmt: skip

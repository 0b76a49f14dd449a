"""The values a question's answer passes from stage to stage: candidate units and their words.

Pure domain code (no Dagster, no database). A :class:`Candidate` is a unit that may answer the
question, with the ranks each retriever gave it, its score and its parts; retrieval makes them,
ranking orders them (:class:`GaveWay`: why diversity moved one), the verdict weighs them and the
answer quotes them. :func:`search_terms`, :func:`scoring_terms` and :func:`term_overlap` are the
question's words as every stage reads them (:class:`TermWeights`: how rare each is among the
units searched, read by retrieval and weighed by ranking); :func:`unit_summary` is a unit as a
result lists it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from civicsetu_pipelines.answer.questions import Query
from civicsetu_pipelines.answer.vocabulary import (
    content_stems,
    load_vocabulary,
    stem,
    stem_words,
    stems,
)
from civicsetu_pipelines.ingest import authority_of


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
    why: dict[str, float] = field(default_factory=dict)  # the score's parts, by name
    gave_way: GaveWay | None = None  # why diversity placed it below units that scored less

    @property
    def chunk_id(self) -> str:
        return str(self.row["chunk_id"])

    @property
    def label(self) -> str:
        return str(self.row["label"])

    @property
    def authority(self) -> str:
        """The unit's tier in the order of legal force ("act", "rules", ..., "form")."""
        return authority_of(str(self.row.get("doc_type") or ""), str(self.row.get("unit"))).name


@dataclass(frozen=True)
class GaveWay:
    """Why :func:`diversify` placed a unit below units that scored less: the cap it met, and
    the first unit placed in its stead."""

    rule: str  # "provision" or "document": what the cap counts units of
    cap: int
    unit: str  # the unit it gave way to ("KARNATAKA Rule 4 (karnataka_rera_rules_2017)")

    def __str__(self) -> str:
        return f"gave way to {self.unit}: at most {self.cap} units of one {self.rule}"


@dataclass(frozen=True)
class TermWeights:
    """How rare each of a question's words is among the units its search reads (the current
    units of the jurisdictions searched, in force on its date), for Okapi BM25: ``units`` in
    scope, ``frequency`` (lexeme -> units holding it) and each word's ``lexemes`` (Postgres'
    English stemming, as the full-text index has them). Read once per question by the
    retrieval stage (``retrieval.term_weights``); a word found in every unit weighs little, a
    word of one section much ("seal" against "Real Estate Appellate Tribunal")."""

    units: int
    frequency: Mapping[str, int]
    lexemes: Mapping[str, tuple[str, ...]]  # by the word in lower case
    # each word's weight once worked out: the reranker asks for it twice for every candidate
    _weight: dict[str, float] = field(default_factory=dict, compare=False, repr=False)

    def idf(self, lexeme: str) -> float:
        """BM25's inverse document frequency of ``lexeme``, never below 0 (the +1 form)."""
        held = self.frequency.get(lexeme, 0)
        return math.log((self.units - held + 0.5) / (held + 0.5) + 1.0)

    def of(self, term: str) -> float:
        """A word's weight: the idf of its rarest lexeme (its Snowball stem when it was not
        looked up); 0 for a word of stop words alone."""
        word = term.lower()
        weight = self._weight.get(word)
        if weight is None:
            lexemes = self.lexemes.get(word, (stem(word),))
            weight = self._weight[word] = max(map(self.idf, lexemes), default=0.0)
        return weight


def full_name(jurisdiction: str, document: str, label: str) -> str:
    """A unit's full name: "JURISDICTION:document_key:Label" (what scoring and a learned
    ranker's tables name it by)."""
    return f"{jurisdiction}:{document}:{label}"


def search_terms(query: Query) -> list[str]:
    """The question's terms followed by the statute's words for its lay terms (no duplicates,
    order kept): what full-text search looks for."""
    return list(dict.fromkeys([*query.terms, *query.legal_terms]))


def scoring_terms(query: Query) -> list[str]:
    """What a unit's words are weighed against: the question's terms, with the words of each
    lay phrase it holds ("money back") replaced by the phrase itself, which counts as present
    when the statute's words for it are (:func:`term_overlap`)."""
    if not query.lay_terms:
        return list(query.terms)
    inside = {s for lay in query.lay_terms for s in stem_words(lay)}
    own = [t for t in query.terms if stem(t) not in inside]
    return own + list(query.lay_terms)


def term_overlap(
    terms: Iterable[str], text: str | None, weights: TermWeights | None = None
) -> float:
    """Share of the question's terms present in ``text``, on Snowball stems; a lay term is
    present when one of the statute's words for it is (a phrase: all its words but glue). With
    ``weights``, each term counts by its weight (a rare word more than a common one); without,
    each counts once."""
    have = stems(text or "")
    wanted = list(dict.fromkeys(t.lower() for t in terms if t))
    if not wanted:
        return 0.0
    vocabulary = load_vocabulary()
    total = found = 0.0
    for t in wanted:
        weight = 1.0 if weights is None else weights.of(t)
        total += weight
        if (
            stem(t) in have
            or all(s in have for s in content_stems(t))
            or any(all(s in have for s in content_stems(w)) for w in vocabulary.legal_for(t))
        ):
            found += weight
    return found / total if total else 0.0


def unit_summary(c: Candidate) -> dict[str, Any]:
    """A ranked unit as a result lists it (``retrieved``, ``related``): where it is, its score
    and its parts, and the diversity rule that moved it, if one did."""
    return {
        "jurisdiction": c.row["jurisdiction"],
        "document": c.row["document_key"],
        "label": c.label,
        "section": c.row["section_label"],
        "chunk_id": c.chunk_id,
        "score": round(c.score, 4),
        "authority": c.authority,
        "why": {name: round(value, 4) for name, value in c.why.items() if value},
        **({"moved": str(c.gave_way)} if c.gave_way else {}),
    }

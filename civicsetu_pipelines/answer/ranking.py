"""Ranking the candidates of a question: the candidate itself, reranking and diversity.

Pure domain code (no Dagster, no database). :class:`Candidate` is a unit that may answer the
question with the ranks it got from each retriever; a :class:`Reranker` scores and orders the
candidates (:class:`DeterministicReranker`, the default: fused rank, exact references, term
overlap on Snowball stems with the statute's words for everyday ones (``data/vocabulary.yaml``),
the authority prior (Act > rules > regulations > orders > case law > FAQ > forms) and intent
bonuses, each part kept in :attr:`Candidate.why`; or
:class:`CrossEncoderReranker` when configured, see :func:`make_reranker`), and :func:`diversify`
keeps a few units of each document. :func:`term_overlap` also weighs evidence and quotes when the
answer is built.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from civicsetu_pipelines.answer.places import ACT_JURISDICTION
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

    def summary(self) -> dict[str, Any]:
        return {
            "jurisdiction": self.row["jurisdiction"],
            "document": self.row["document_key"],
            "label": self.label,
            "section": self.row["section_label"],
            "chunk_id": self.chunk_id,
            "score": round(self.score, 4),
            "authority": self.authority,
            "why": {name: round(value, 4) for name, value in self.why.items() if value},
        }


class Reranker(Protocol):
    name: str

    def rerank(self, query: Query, candidates: list[Candidate]) -> list[Candidate]: ...


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


def term_overlap(terms: Iterable[str], text: str | None) -> float:
    """Share of the question's terms present in ``text``, on Snowball stems; a lay term is
    present when one of the statute's words for it is (a phrase: all its words but glue)."""
    have = stems(text or "")
    wanted = list(dict.fromkeys(t.lower() for t in terms if t))
    if not wanted:
        return 0.0
    vocabulary = load_vocabulary()
    found = sum(
        1 for t in wanted
        if stem(t) in have
        or all(s in have for s in content_stems(t))
        or any(all(s in have for s in content_stems(legal)) for legal in vocabulary.legal_for(t))
    )  # fmt: skip
    return found / len(wanted)


# The prior that legal authority adds to a unit's score (data/kinds.yaml, ``authority``):
# AUTHORITY_WEIGHT for the Act down to 0 for forms and model agreements, in even steps. A prior,
# not a filter: guidance still ranks where it alone answers. Tuned on the dev half.
AUTHORITY_WEIGHT = 0.6
STATE_BONUS = 0.5
NATIONAL_BONUS = 0.5


@dataclass
class DeterministicReranker:
    """The default: fused rank, exact reference matches, title and text term matches.

    score = fused / max_fused + 1.0 * exact + 0.35 * title overlap + 0.25 * text overlap
            + authority prior (AUTHORITY_WEIGHT x the unit's strength in the order of legal
              force: the Act 1.0, rules 0.83, ... FAQ 0.17, forms and model agreements 0)
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
        terms = scoring_terms(query)
        for c in candidates:
            title = term_overlap(terms, f"{c.row.get('title') or ''} {c.label}")
            text = term_overlap(terms, c.row.get("text"))
            authority = authority_of(
                str(c.row.get("doc_type") or ""), str(c.row.get("unit")), query.asks_about
            )
            c.why = {
                "fused": c.fused / top,
                "exact": 1.0 if c.exact else 0.0,
                "title": 0.35 * title,
                "text": 0.25 * text,
                "authority": AUTHORITY_WEIGHT * authority.strength,
                "expanded_only": -0.15 if c.via and not c.ranks else 0.0,
                "intent": _intent_bonus(query, c),
            }
            c.score = sum(c.why.values())
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
        bonus += STATE_BONUS  # the question names this state: its own provisions first
    elif c.row.get("jurisdiction") == ACT_JURISDICTION and not (
        set(query.jurisdictions) - {ACT_JURISDICTION}
    ):
        bonus += NATIONAL_BONUS  # no state named: the law of every state (the Act) first
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

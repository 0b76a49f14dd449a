"""Ranking the candidates of a question: the candidate itself, reranking and diversity.

Pure domain code (no Dagster, no database). :class:`Candidate` is a unit that may answer the
question with the ranks it got from each retriever; a :class:`Reranker` scores and orders the
candidates (:class:`DeterministicReranker`, the default: fused rank, exact references, term
overlap with the statute's words for everyday ones (:data:`SYNONYMS`) and intent bonuses; or
:class:`CrossEncoderReranker` when configured, see :func:`make_reranker`), and :func:`diversify`
keeps a few units of each document. :func:`term_overlap` also weighs evidence and quotes when the
answer is built.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from civicsetu_pipelines.answer.places import ACT_JURISDICTION
from civicsetu_pipelines.answer.questions import Query


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
def stems(text: str) -> frozenset[str]:
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
    have = stems(text or "")
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

"""The ranking stage: a question's candidates reranked, and the units served chosen by diversity.

Pure domain code (no Dagster, no database). :func:`rank` is the stage: a :class:`Reranker` scores
and orders the retrieved candidates (:class:`~civicsetu_pipelines.answer.candidates.Candidate`;
:class:`DeterministicReranker`, the default: fused rank, exact references, term
overlap on Snowball stems with the statute's words for everyday ones (``data/vocabulary.yaml``),
the authority prior (Act > rules > regulations > orders > case law > FAQ > forms) and intent
bonuses, each part kept in :attr:`Candidate.why`; or
:class:`CrossEncoderReranker` when configured, see :func:`make_reranker`), and :func:`diversify`
keeps a few units of each provision or document.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from civicsetu_pipelines.answer.candidates import (
    Candidate,
    GaveWay,
    TermWeights,
    full_name,
    scoring_terms,
    term_overlap,
)
from civicsetu_pipelines.answer.confidence import ConfidenceError, model_from
from civicsetu_pipelines.answer.places import ACT_JURISDICTION
from civicsetu_pipelines.answer.questions import Query
from civicsetu_pipelines.answer.timing import Timer
from civicsetu_pipelines.ingest import authority_of


class Reranker(Protocol):
    name: str

    def rerank(
        self, query: Query, candidates: list[Candidate], weights: TermWeights | None = None
    ) -> list[Candidate]: ...


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
            (each overlap the share of the question's words present, a word weighed by its
             rarity among the units searched when retrieval read it: ``TermWeights``)
            + authority prior (AUTHORITY_WEIGHT x the unit's strength in the order of legal
              force: the Act 1.0, rules 0.83, ... FAQ 0.17, forms and model agreements 0)
            - 0.15 for a unit only reached by expansion
            + intent: 0.3 for a penalty provision (its title or label says penalty,
              punishment, fine or compounding) when the question is about penalties;
              0.5 for a unit one DERIVED_FROM step from a hit when it asks how a rule
              implements the Act; 0.3 for one REFERENCES step when it asks about
              cross-references; 0.3 for a definition (Section 2) when it asks what a word means;
              0.5 for a unit of a state the question names, or of the Act when it names none;
              0.3 for a commencement provision when it asks when something comes into force
    """

    name: str = "deterministic"

    def rerank(
        self, query: Query, candidates: list[Candidate], weights: TermWeights | None = None
    ) -> list[Candidate]:
        top = max((c.fused for c in candidates), default=0.0) or 1.0
        terms = scoring_terms(query)
        for c in candidates:
            c.why = hand_parts(candidate_features(query, c, top, terms, weights))
            c.score = sum(c.why.values())
        return sorted(candidates, key=lambda c: (-c.score, c.chunk_id))


# The retrievers whose ranks are features of their own (a unit's reciprocal rank in each).
RETRIEVERS = ("reference", "vector", "fulltext", "vector:legal", "fulltext:legal", "phrases")
# What the deterministic reranker adds for each intent a unit answers (see its docstring).
INTENT_BONUS = {"penalty": 0.3, "implementation": 0.5, "cross_reference": 0.3,
                "definition": 0.3, "named_state": STATE_BONUS, "national": NATIONAL_BONUS,
                "commencement": 0.3}  # fmt: skip
# Every feature of a candidate, in a fixed order (a learned ranker's weights follow it).
FEATURES = ("fused", "exact", "title", "text", "authority", "expanded_only", *INTENT_BONUS,
            *(f"rr_{r}" for r in RETRIEVERS), "closeness", "family", "graph", "hub",
            "hand")  # fmt: skip


def unit_name(row: Mapping[str, Any]) -> str:
    """A unit of the store as a learned ranker's tables name it (:func:`full_name`)."""
    return full_name(str(row.get("jurisdiction")), str(row.get("document_key")),
                     str(row.get("section_label")))  # fmt: skip


def candidate_features(
    query: Query,
    c: Candidate,
    top: float | None = None,
    terms: Sequence[str] | None = None,
    weights: TermWeights | None = None,
    hubs: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """The candidate's features, unweighted, by name (:data:`FEATURES`): its fused rank over
    the best (``top``), an exact reference, the share of the question's terms in its title and
    in its text (each term by its ``weights``, when given), its authority, expansion alone,
    each intent it answers (0/1), its reciprocal rank in each retriever, its closeness to the
    question (1 - cosine distance), how it was reached, and how much of a hub it is (``hubs``
    by :func:`unit_name`: the share of the corpus's own questions whose first three it is among
    whatever they ask, ``rank.train.hubness``; 0 without a table)."""
    terms = scoring_terms(query) if terms is None else terms
    authority = authority_of(
        str(c.row.get("doc_type") or ""), str(c.row.get("unit")), query.asks_about
    )
    out = {
        "fused": c.fused / (top or 1.0),
        "exact": 1.0 if c.exact else 0.0,
        "title": term_overlap(terms, f"{c.row.get('title') or ''} {c.label}", weights),
        "text": term_overlap(terms, c.row.get("text"), weights),
        "authority": authority.strength,
        "expanded_only": 1.0 if c.via and not c.ranks else 0.0,
        **_intents(query, c),
        **{f"rr_{r}": 1.0 / c.ranks[r] if r in c.ranks else 0.0 for r in RETRIEVERS},
        "closeness": 1.0 - c.distance if c.distance is not None else 0.0,
        "family": 1.0 if c.via == "family" else 0.0,
        "graph": 1.0 if c.via and c.via.startswith("graph:") else 0.0,
        "hub": hubs.get(unit_name(c.row), 0.0) if hubs else 0.0,
    }
    out["hand"] = hand_score(out)
    return out


def hand_score(f: Mapping[str, float]) -> float:
    """The hand-set ranking's score of a candidate with features ``f`` (see
    :class:`DeterministicReranker`): a learned ranker may start from it and correct it."""
    return sum(hand_parts(f).values())


def hand_parts(f: Mapping[str, float]) -> dict[str, float]:
    """The hand-set score's parts, by name (what ``--explain`` shows for it)."""
    return {
        "fused": f["fused"],
        "exact": f["exact"],
        "title": 0.35 * f["title"],
        "text": 0.25 * f["text"],
        "authority": AUTHORITY_WEIGHT * f["authority"],
        "expanded_only": -0.15 * f["expanded_only"],
        "intent": sum(weight * f[name] for name, weight in INTENT_BONUS.items()),
    }


_PENALTY = re.compile(r"\b(?:penalt|punish|fine\b|fines\b|imprison|compound)", re.IGNORECASE)
_COMMENCEMENT = re.compile(r"commencement", re.IGNORECASE)


def _intents(query: Query, c: Candidate) -> dict[str, float]:
    """Which of the question's intents the candidate answers, 0 or 1 each."""
    depth = c.row.get("graph_depth")
    jurisdiction = c.row.get("jurisdiction")
    # the question names this state: its own provisions first
    named = jurisdiction in query.jurisdictions and jurisdiction != ACT_JURISDICTION
    # no state named: the law of every state (the Act) first
    national = (
        not named
        and jurisdiction == ACT_JURISDICTION
        and not (set(query.jurisdictions) - {ACT_JURISDICTION})
    )
    asks_commencement = {"force", "commence", "commencement", "effect"} & set(query.terms)
    title = str(c.row.get("title") or "")
    found = {
        "penalty": "penalty" in query.intents and bool(_PENALTY.search(f"{title} {c.label}")),
        "implementation": "implementation" in query.intents
        and c.via == "graph:DERIVED_FROM"
        and depth == 1,
        "cross_reference": "cross_reference" in query.intents
        and c.via == "graph:REFERENCES"
        and depth == 1,
        "definition": "definition" in query.intents
        and str(c.row.get("section_label")) == "Section 2",
        "named_state": named,
        "national": national,
        "commencement": "temporal" in query.intents
        and bool(asks_commencement)
        and bool(_COMMENCEMENT.search(title)),
    }
    return {name: 1.0 if value else 0.0 for name, value in found.items()}


@dataclass
class LinearReranker:
    """A ranker learned from the corpus (``civicsetu_pipelines.rank``): a logistic model whose
    logit is the intercept plus each feature (:func:`candidate_features`) times its learned
    weight; each product is kept in :attr:`Candidate.why`, so ``ask --explain`` shows every
    feature's contribution. The score is the model's probability that the unit answers (0-1),
    plus 1 for an exact reference match, which so stays first whatever the weights say (as the
    deterministic ranker adds 1 for it); the answer keeps the units within half the best score,
    as it does for the deterministic ranker's."""

    weights: dict[str, float]
    intercept: float = 0.0
    version: str = ""
    # "probability": the score is the logistic probability; "score": the sum itself, on the
    # hand-set ranking's scale (a blend of the hand-set score and a learned correction)
    output: str = "probability"
    name: str = "learned"
    # the confidence thresholds chosen on dev under this ranking when it was promoted (None:
    # the packaged model's, chosen under the hand-set ranking): answer.confidence
    confidence_thresholds: dict[str, float] | None = None
    # the confidence model fitted under this ranking on the mined questions when it was
    # promoted, its thresholds chosen on dev (ConfidenceModel.as_yaml; None: the packaged one)
    confidence_model: dict[str, Any] | None = None
    # each unit's "hub" feature (unit_name -> share), measured on the mined questions it was
    # fitted on (rank.train.hubness); None: every unit's is 0
    hubs: dict[str, float] | None = None

    def rerank(
        self, query: Query, candidates: list[Candidate], weights: TermWeights | None = None
    ) -> list[Candidate]:
        top = max((c.fused for c in candidates), default=0.0) or 1.0
        terms = scoring_terms(query)
        for c in candidates:
            f = candidate_features(query, c, top, terms, weights, self.hubs)
            c.why = {name: w * f[name] for name, w in self.weights.items() if name in f}
            c.why["intercept"] = self.intercept
            total = sum(c.why.values())
            if self.output == "score":
                c.score = total  # the hand-set score (with its +1 for an exact match) corrected
            else:
                c.score = 1.0 / (1.0 + math.exp(-total)) + (1.0 if c.exact else 0.0)
        return sorted(candidates, key=lambda c: (-c.score, c.chunk_id))

    def payload(self) -> dict[str, Any]:
        """What is saved and checksummed (:func:`save_ranker`)."""
        payload = {"features": list(self.weights), "weights": self.weights,
                   "intercept": self.intercept, "version": self.version,
                   "output": self.output}  # fmt: skip
        if self.confidence_thresholds:  # absent otherwise: older files keep their checksum
            payload["confidence_thresholds"] = self.confidence_thresholds
        if self.confidence_model:
            payload["confidence_model"] = self.confidence_model
        if self.hubs:
            payload["hubs"] = self.hubs
        return payload


class RankerFileError(ValueError):
    """A learned ranker file that cannot be served (unreadable, tampered with, or for features
    this code does not compute)."""


def _checksum(payload: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def save_ranker(ranker: LinearReranker, path: Path, **provenance: Any) -> str:
    """Write ``ranker`` to ``path`` (JSON: its payload, its sha256 and ``provenance``); returns
    the checksum."""
    payload = ranker.payload()
    digest = _checksum(payload)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"ranker": payload, "sha256": digest, **provenance}, indent=1))
    tmp.replace(path)
    return digest


def load_ranker(path: Path) -> LinearReranker:
    """The learned ranker saved at ``path``, its checksum verified; :class:`RankerFileError`
    naming the file and the fault otherwise."""
    try:
        saved = json.loads(path.read_text())
        payload, digest = saved["ranker"], saved["sha256"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RankerFileError(f"{path}: not a learned ranker file ({exc})") from exc
    if _checksum(payload) != digest:
        raise RankerFileError(f"{path}: checksum mismatch (the file was changed after training)")
    unknown = sorted(set(payload["weights"]) - set(FEATURES))
    if unknown:
        raise RankerFileError(f"{path}: features this code does not compute: {unknown}")
    own = payload.get("confidence_model")
    if own is not None:
        try:
            model_from(own, str(path))
        except ConfidenceError as exc:  # fitted under other features: not served, said why
            raise RankerFileError(str(exc)) from exc
    output = str(payload.get("output", "probability"))
    thresholds = payload.get("confidence_thresholds")
    return LinearReranker(dict(payload["weights"]), float(payload["intercept"]),
                          str(payload["version"]), output,
                          confidence_thresholds={k: float(v) for k, v in thresholds.items()}
                          if thresholds else None,
                          confidence_model=own,
                          hubs={k: float(v) for k, v in payload["hubs"].items()}
                          if payload.get("hubs") else None)  # fmt: skip


@dataclass
class CrossEncoderReranker:
    """A sentence-transformers cross-encoder (a local path or a hub name where one is reachable),
    blended with exact reference matches so a named unit is never pushed down."""

    model_path: str
    name: str = "cross-encoder"
    _model: Any = None

    def rerank(
        self, query: Query, candidates: list[Candidate], weights: TermWeights | None = None
    ) -> list[Candidate]:
        if self._model is None:
            from sentence_transformers import CrossEncoder

            self._model = CrossEncoder(self.model_path, device="cpu")
        pairs = [(query.text, f"{c.label} {c.row.get('title') or ''}\n{c.row['text']}")
                 for c in candidates]  # fmt: skip
        scores = self._model.predict(pairs) if pairs else []
        for c, s in zip(candidates, scores, strict=True):
            c.score = float(s) + (10.0 if c.exact else 0.0)
        return sorted(candidates, key=lambda c: (-c.score, c.chunk_id))


def make_reranker(cross_encoder: str | None, ranker: str | None = None) -> Reranker:
    """The cross-encoder when one is configured and present on disk; else the learned ranker
    at ``ranker`` (the one the ``learned_ranker`` asset promoted) when it exists; else the
    default.

    A configured cross-encoder path that does not exist falls back (and says so via the
    returned reranker's name), so a missing model never breaks answering. A learned ranker file
    that exists but fails its checksum raises :class:`RankerFileError`: it is never served.
    """
    if cross_encoder and Path(cross_encoder).exists():
        return CrossEncoderReranker(cross_encoder)
    if ranker and Path(ranker).exists():
        return load_ranker(Path(ranker))
    return DeterministicReranker()


# How :func:`diversify` keys the units it caps (``RetrievalSettings.diversity``):
#   provision  -- a unit of an Act, rules or regulations counts against its provision (the
#                 document and section or rule: a section and its sub-sections), any other
#                 unit (a judgment's paragraphs, an FAQ's questions, an order) against its document
#   legislation -- the units of an Act, rules or regulations are not capped (each section is a
#                 provision of its own), any other unit is capped by its document
#   document   -- every unit counts against its document (the cap before issue 36)
DIVERSITY_RULES = ("provision", "legislation", "document")
# The kinds of document whose numbered units are separate provisions (data/kinds.yaml).
LEGISLATION_KINDS = frozenset({"act", "rules", "regulations"})


def diversity_key(c: Candidate, rule: str) -> tuple[str, tuple[str, ...]] | None:
    """What ``c`` counts against under ``rule`` (:data:`DIVERSITY_RULES`): ("provision",
    (document, section)) or ("document", (document,)); None when it is not capped."""
    doc = str(c.row["document_key"])
    if rule not in DIVERSITY_RULES:
        raise ValueError(f"diversity {rule!r}: expected one of {', '.join(DIVERSITY_RULES)}")
    if rule == "document" or str(c.row.get("doc_type") or "") not in LEGISLATION_KINDS:
        return ("document", (doc,))
    if rule == "legislation":
        return None
    return ("provision", (doc, str(c.row.get("section_label") or c.row.get("label") or "")))


def _name(c: Candidate) -> str:
    return f"{c.row.get('jurisdiction')} {c.label} ({c.row['document_key']})"


def diversify(
    candidates: Sequence[Candidate], k: int, per_document: int, rule: str = "document"
) -> list[Candidate]:
    """The top ``k`` with at most ``per_document`` units of one document, or of one provision
    (``rule``, see :func:`diversity_key`); exact matches always kept. If the cap leaves fewer
    than ``k``, the rest fill in by score. Each returned unit the cap moved below a unit that
    scored less has :attr:`Candidate.gave_way` set (the rule and the unit placed in its
    stead); every other one has it None."""
    chosen: list[Candidate] = []
    counts: dict[tuple[str, tuple[str, ...]], int] = {}
    waiting: list[tuple[Candidate, str]] = []  # passed over, not yet given way to anyone
    moved: dict[str, GaveWay] = {}
    for c in candidates:
        c.gave_way = None
        key = diversity_key(c, rule)
        if key is None or c.exact or counts.get(key, 0) < per_document:
            chosen.append(c)
            for passed, what in waiting:
                moved[passed.chunk_id] = GaveWay(what, per_document, _name(c))
            waiting = []
            if key is not None:
                counts[key] = counts.get(key, 0) + 1
        else:
            waiting.append((c, key[0]))
        if len(chosen) == k:
            break
    for c in candidates:
        if len(chosen) >= k:
            break
        if c not in chosen:
            chosen.append(c)
    for c in chosen:
        c.gave_way = moved.get(c.chunk_id)
    return chosen


@dataclass(frozen=True)
class Ranked:
    """What the ranking stage made of one question's candidates."""

    candidates: list[Candidate]  # every candidate, by score, before diversity
    served: list[Candidate]  # the units served: the top k under the diversity rule


def rank(
    query: Query,
    candidates: list[Candidate],
    reranker: Reranker,
    k: int,
    diversity: tuple[str, int],
    timer: Timer,
    since: float,
    weights: TermWeights | None = None,
) -> tuple[Ranked, float]:
    """The ranking stage of one question: ``candidates`` scored and ordered by ``reranker``
    (its words weighed by ``weights``, what retrieval read of them), then the ``k`` served
    under ``diversity`` (rule, cap per document or provision: :func:`diversify`); and the time
    the stage ended."""
    ordered = reranker.rerank(query, candidates, weights)
    since = timer.stage("rerank", since)
    rule, per_document = diversity
    served = diversify(ordered, k, per_document, rule)
    since = timer.stage("diversify", since)
    return Ranked(ordered, served), since

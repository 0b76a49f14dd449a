"""Learning the ranking from the corpus's own questions, and choosing it on the dev half.

Pure domain code (no Dagster). Each mined question (:mod:`civicsetu_pipelines.rank.pairs`) is
asked through the query engine, and every candidate the retrievers bring is recorded with its
features (:func:`~civicsetu_pipelines.answer.candidate_features`) and whether it is one of the
question's answers. A logistic model over those features (scikit-learn, standardized, L2) is
fitted for each variant of :data:`VARIANTS`; the variant best on the held-back mined questions
is scored on the golden dev half beside the hand-set ranking, and :func:`promotion` decides
whether it is served. The test half is scored for the report, never for a choice.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from civicsetu_pipelines.answer import (
    FEATURES,
    Candidate,
    DeterministicReranker,
    LinearReranker,
    QueryEngine,
    QuestionError,
    TermWeights,
    candidate_features,
    unit_name,
)
from civicsetu_pipelines.evaluate import ALPHA, ScopedMemo, paired_changes, paired_test, ranking_key
from civicsetu_pipelines.rank.pairs import TrainingQuery

SEED = 0
# The golden-set metrics a ranker is shown and compared by (dev and test).
REPORTED_METRICS = ("governing_hit_at_5", "governing_mrr", "plain_governing_hit_at_3",
                    "plain_answered", "refusal_correctness", "citation_validity")  # fmt: skip
# (name, inverse regularization C, how: "points" (each candidate answers or not) or "pairs"
# (each answer against each of the question's HARD_NEGATIVES best-ranked non-answers), features
# left out)
_RANKS = tuple(f for f in FEATURES if f.startswith("rr_"))
# Measured on dev (bench/bench_ranker.py, BENCHMARKS.md "Ranking learned from the corpus"):
# pairs against hard negatives and a blend weight of 0.5 were worse in every variant, so they are
# no longer tried (bench_ranker.py --all tries them again).
VARIANTS: tuple[tuple[str, float, str, tuple[str, ...]], ...] = (
    ("points-c1", 1.0, "points", ()),
    ("points-c1-balanced", 1.0, "balanced", ()),
    ("points-c1-without-ranks", 1.0, "points", _RANKS),
)
HARD_NEGATIVES = 10
# A learned model used alone forgets what the hand-set ranking knows of the golden questions'
# kind (intents, the named state, the Act first); a blend keeps the hand-set score and adds the
# learned logit times each of these weights.
BLENDS = (0.1, 0.25)
ALL_VARIANTS = (*VARIANTS, ("pairs-c1", 1.0, "pairs", ()))
ALL_BLENDS = (0.1, 0.25, 0.5)
HUB_TOP = 3  # a hub: how often a unit is among the first HUB_TOP the hand-set ranking serves


def blend(learned: LinearReranker, weight: float) -> LinearReranker:
    """The hand-set score plus ``weight`` times ``learned``'s logit, on the hand-set scale."""
    weights = {name: weight * w for name, w in learned.weights.items()}
    weights["hand"] = weights.get("hand", 0.0) + 1.0
    return LinearReranker(weights, weight * learned.intercept, f"{learned.version}+{weight}",
                          output="score", hubs=learned.hubs)  # fmt: skip


@dataclass
class QueryCandidates:
    """One mined question's candidates: features (rows in :data:`FEATURES` order) and labels."""

    query: TrainingQuery
    features: np.ndarray
    labels: np.ndarray


class Collected(NamedTuple):
    """What :func:`collect` records: the questions that teach (an answer among their
    candidates), their ``hub`` feature filled in, and the hub table a ranker fitted on them
    serves (:func:`hubness`)."""

    examples: list[QueryCandidates]
    hubs: dict[str, float]


_HUB = FEATURES.index("hub")
_HAND = FEATURES.index("hand")


def hubness(recorded: Sequence[Sequence[tuple[list[float], str, str, str]]]) -> tuple[
    dict[str, float], list[list[float]]
]:  # fmt: skip
    """How much of a hub each unit is: the share of the questions asked in its jurisdiction
    (those with a candidate of it) whose first :data:`HUB_TOP` units by the hand-set score it
    is among. A long, general provision ("Establishment of Appellate Tribunal", the
    definitions) stands first for questions of every kind (hubness in nearest-neighbour
    retrieval: a few points near everything); the ranker learns from the mined questions'
    answers what that says (measured: such a unit is more often their answer, not less,
    BENCHMARKS.md "How much of a hub a unit is"). No label is read here. ``recorded``: each
    question's candidates (features, jurisdiction, label, :func:`unit_name`). Returns the table
    (what is served) and each candidate's value with its own question left out (what it is
    trained on, as a served question is never in the table)."""
    tops: list[set[str]] = []
    count: Counter[str] = Counter()  # questions whose first HUB_TOP a unit is among
    asked: Counter[str] = Counter()  # questions with a candidate of the jurisdiction
    home: dict[str, str] = {}  # each unit's jurisdiction
    for rows in recorded:
        order = sorted(range(len(rows)), key=lambda k: -rows[k][0][_HAND])
        tops.append({rows[k][3] for k in order[:HUB_TOP]})
        count.update(tops[-1])
        asked.update({j for _, j, _, _ in rows})
        home.update((key, j) for _, j, _, key in rows)
    table = {key: round(n / asked[home[key]], 6) for key, n in sorted(count.items())}
    left_out = [
        [(count[key] - (key in top)) / max(1, asked[j] - 1) for _, j, _, key in rows]
        for rows, top in zip(recorded, tops, strict=True)
    ]
    return table, left_out


class _Recorder:
    """A reranker that records every candidate's features and reranks as ``inner`` does."""

    name = "recorder"

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.last: list[tuple[list[float], str, str, str]] | None = None

    def rerank(
        self, query: Any, candidates: list[Candidate], weights: TermWeights | None = None
    ) -> list[Candidate]:
        top = max((c.fused for c in candidates), default=0.0) or 1.0
        self.last = []
        for c in candidates:
            f = candidate_features(query, c, top, weights=weights)
            self.last.append(([f[name] for name in FEATURES], str(c.row["jurisdiction"]),
                              str(c.row["section_label"]), unit_name(c.row)))  # fmt: skip
        ranked: list[Candidate] = self.inner.rerank(query, candidates, weights)
        return ranked


def collect(
    engine: QueryEngine,
    queries: Sequence[TrainingQuery],
    progress: Callable[[int, int], None] | None = None,
    memo: ScopedMemo | None = None,
) -> Collected:
    """Each question asked once (top 10, as evaluation asks); its candidates recorded. A
    question refused before retrieval, or whose answers no retriever brought, teaches nothing
    and is left out (it still counts in :func:`hubness`). With a ``memo``, a question whose
    jurisdictions serve what they served when it was last asked keeps the candidates it got
    then."""
    recorder = _Recorder(DeterministicReranker())
    previous = engine.use_reranker(recorder)
    ranking = ranking_key(DeterministicReranker())
    asked: list[tuple[TrainingQuery, list[tuple[list[float], str, str, str]]]] = []
    try:
        for i, q in enumerate(queries):
            key = memo.key(q.query, engine.scope_of(q.query), ranking) if memo else ""
            kept = memo.get(key) if memo else None
            if kept is not None:
                recorded = kept[0]
            else:
                recorder.last = None
                try:
                    engine.answer(q.query, top_k=10)
                except QuestionError:
                    recorder.last = None
                recorded = recorder.last
                if memo is not None:
                    memo.put(key, (recorded,))
            if progress is not None and (i + 1) % 100 == 0:
                progress(i + 1, len(queries))
            if recorded:
                asked.append((q, recorded))
    finally:
        engine.use_reranker(previous)
    table, left_out = hubness([recorded for _, recorded in asked])
    out: list[QueryCandidates] = []
    for (q, recorded), hubs in zip(asked, left_out, strict=True):
        wanted = set(q.positives)
        labels = np.array([1.0 if (j, s) in wanted else 0.0 for _, j, s, _ in recorded])
        if labels.sum() == 0:
            continue
        rows = np.array([f for f, _, _, _ in recorded], dtype=np.float64)
        rows[:, _HUB] = hubs
        out.append(QueryCandidates(q, rows, labels))
    return Collected(out, table)


def fit(
    examples: Sequence[QueryCandidates], c: float, how: str = "points",
    leave_out: Sequence[str] = (), version: str = "", hubs: Mapping[str, float] | None = None,
) -> LinearReranker:  # fmt: skip
    """A logistic model over the candidates' features (``how``: "points", "balanced" points, or
    "pairs": an answer's features minus a hard negative's, so the model learns which of two
    units answers), returned as raw-feature weights (a feature's contribution is its weight
    times its value). ``hubs``: the table the examples' ``hub`` values were read from
    (:class:`Collected`), served with the ranker when it weighs that feature."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    keep = [i for i, name in enumerate(FEATURES) if name not in leave_out]
    if how == "pairs":
        x, y = _pairs(examples)
        x = x[:, keep]
    else:
        x = np.vstack([e.features for e in examples])[:, keep]
        y = np.concatenate([e.labels for e in examples])
    scaler = StandardScaler(with_mean=how != "pairs").fit(x)
    scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    mean = scaler.mean_ if how != "pairs" else np.zeros(x.shape[1])
    model = LogisticRegression(C=c, class_weight="balanced" if how == "balanced" else None,
                               fit_intercept=how != "pairs", max_iter=2000,
                               random_state=SEED)  # fmt: skip
    model.fit((x - mean) / scale, y)
    coef = model.coef_[0] / scale
    intercept = float(model.intercept_[0] - np.sum(model.coef_[0] * mean / scale))
    weights = {FEATURES[i]: round(float(w), 6) for i, w in zip(keep, coef, strict=True)}
    served = dict(hubs) if hubs and "hub" in weights else None  # the table its weight reads
    return LinearReranker(weights, round(intercept, 6), version, hubs=served)


def _pairs(examples: Sequence[QueryCandidates]) -> tuple[np.ndarray, np.ndarray]:
    """Each answer against each of its question's HARD_NEGATIVES non-answers ranked best by the
    hand-set score, as differences both ways (answer - other: 1, other - answer: 0)."""
    hand = FEATURES.index("hand")
    rows: list[np.ndarray] = []
    for e in examples:
        order = np.argsort(-e.features[:, hand], kind="stable")
        negatives = [k for k in order if e.labels[k] == 0][:HARD_NEGATIVES]
        for p in np.flatnonzero(e.labels > 0):
            rows += [e.features[p] - e.features[k] for k in negatives]
    if not rows:
        raise ValueError("no pairs: no question had an answer and another candidate")
    diff = np.vstack(rows)
    return np.vstack([diff, -diff]), np.concatenate([np.ones(len(diff)), np.zeros(len(diff))])


def mean_reciprocal_rank(ranker: LinearReranker, examples: Sequence[QueryCandidates]) -> float:
    """MRR of the first answer among each question's candidates, ranked by ``ranker``'s logit
    (exact matches first, as it serves them)."""
    index = {name: i for i, name in enumerate(FEATURES)}
    w = np.zeros(len(FEATURES))
    for name, value in ranker.weights.items():
        w[index[name]] = value
    total = 0.0
    for e in examples:
        scores = e.features @ w + 10.0 * e.features[:, index["exact"]]
        order = np.argsort(-scores, kind="stable")
        first = next(rank for rank, k in enumerate(order, start=1) if e.labels[k] > 0)
        total += 1.0 / first
    return total / len(examples) if examples else 0.0


def examples_sha256(examples: Sequence[QueryCandidates]) -> str:
    """sha256 over what a fit reads: each example's question, features and labels."""
    digest = hashlib.sha256()
    for e in examples:
        digest.update(e.query.query.encode())
        digest.update(np.ascontiguousarray(e.features, dtype=np.float64).tobytes())
        digest.update(np.ascontiguousarray(e.labels, dtype=np.float64).tobytes())
    return digest.hexdigest()


def version_of(*parts: Any) -> str:
    """A version from the training's inputs (hashes, hyperparameters, seed): 16 hex digits."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Verdict:
    promoted: bool
    reason: str
    tests: dict[str, dict[str, Any]] = field(default_factory=dict)  # metric -> PairedTest.as_dict


def promotion(
    learned: Sequence[Mapping[str, Any]], current: Sequence[Mapping[str, Any]]
) -> Verdict:
    """Served only when its improvement over the current ranking on the dev half is outside the
    noise: a paired randomization test on each question's governing reciprocal rank (p <
    ALPHA, the difference positive), and refusal correctness not worse beyond the noise (the
    same test on each question's refusal verdict). ``learned`` and ``current`` are the dev
    half's per-question rows (``evaluate(...).rows``); the tests are seeded, so the same rows
    give the same verdict on any machine. The reason states each difference, its 95% interval
    and its p-value."""
    tests = paired_changes(current, learned)
    none = paired_test([], [])  # no question both runs scored
    mrr = tests.get("governing_mrr", none)
    refusal = tests.get("refusal_correctness", none)
    verdicts = {"governing_mrr": mrr.as_dict(), "refusal_correctness": refusal.as_dict()}
    if refusal.difference < 0 and refusal.significant:
        why = f"dev refusal correctness worse beyond the noise: {refusal}"
        return Verdict(False, why, verdicts)
    if mrr.difference <= 0 or not mrr.significant:
        why = (f"dev governing MRR {mrr}: not an improvement outside the noise (p < {ALPHA} "
               "wanted); the hand-set ranking is served")  # fmt: skip
        return Verdict(False, why, verdicts)
    return Verdict(True, f"dev governing MRR {mrr}; refusal correctness {refusal}", verdicts)

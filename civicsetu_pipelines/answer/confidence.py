"""How sure an answer is: a probability that its governing provision is among the first three
units it serves, from the evidence alone, and the level it is said with (issue 47).

Pure domain code. An answer from the unit the question names ("Section 18") is ``high``: it
is what was asked for. Otherwise the probability is a logistic model over what the ranking read
of the best unit (:func:`evidence_features`): its ranks in the vector and full-text lists, its
distance to the question, its share of the question's terms, its score and its lead over the
best unit of another provision. The model is fitted on questions the corpus itself
teaches (the mined training questions of ``rank.pairs``: FAQ questions, titles, lay rewrites,
judgment sentences, never a golden question), and its two thresholds are chosen on the golden
set's dev half so that ``high`` and ``medium`` answers are right (a governing provision in the
top 3) at least as often as :data:`TARGET_PRECISION` says; below ``medium`` an answer is
``low``: it says it is not sure. The model belongs to the ranking it was fitted under: a
promoted learned ranker carries its own, fitted under it and its thresholds chosen on dev under
it (``rank.calibration``, :func:`served_confidence`). ``bench/calibrate_confidence.py`` fits the
hand-set ranking's and writes ``data/confidence.yaml`` with what it was fitted on (hashes,
counts, the dev and test figures); a missing file is an error naming it, never a silent default.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from civicsetu_pipelines.answer.candidates import Candidate, term_overlap
from civicsetu_pipelines.answer.questions import Query
from civicsetu_pipelines.base import DATA_DIR

CONFIDENCE_YAML = DATA_DIR / "confidence.yaml"
LEVELS = ("low", "medium", "high")
TARGET_PRECISION = {"medium": 0.95, "high": 0.98}  # on dev: right this often, at least
MIN_ANSWERS = 30  # dev answers above a threshold, at least
FEATURES = ("vector_rr", "fulltext_rr", "distance", "overlap", "score", "lead", "lists")
FAR = 1.0  # the distance of a unit no vector list ranked
TOP = 3  # an answer is right when a governing provision is among its first TOP provisions


def evidence_features(query: Query, ranked: Sequence[Candidate]) -> dict[str, float]:
    """What the probability reads of the served units (best first): see the module docstring.
    ``lead``: the best unit's score less that of the first unit of another provision (another
    document or label) below it; ``lists``: how many candidate lists ranked it."""
    best = ranked[0]

    def provision(c: Candidate) -> tuple[Any, Any]:
        return c.row.get("document_key"), c.row.get("section_label")

    other = next((c for c in ranked[1:] if provision(c) != provision(best)), None)
    vector, fulltext = best.ranks.get("vector"), best.ranks.get("fulltext")
    return {
        "vector_rr": 1.0 / vector if vector else 0.0,
        "fulltext_rr": 1.0 / fulltext if fulltext else 0.0,
        "distance": float(best.distance) if best.distance is not None else FAR,
        "overlap": term_overlap(query.terms, best.row.get("text")),
        "score": float(best.score),
        "lead": float(best.score - other.score) if other is not None else float(best.score),
        "lists": float(len(best.ranks)),
    }


@dataclass(frozen=True)
class ConfidenceModel:
    """A logistic model over standardized :data:`FEATURES` and the thresholds of its levels."""

    means: tuple[float, ...]
    scales: tuple[float, ...]
    weights: tuple[float, ...]
    intercept: float
    thresholds: Mapping[str, float]  # "medium", "high": the least probability of each level
    provenance: Mapping[str, Any]

    def probability(self, features: Mapping[str, float]) -> float:
        z = self.intercept + sum(
            w * (features[name] - m) / s
            for name, m, s, w in zip(FEATURES, self.means, self.scales, self.weights, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-z))

    def probability_of(self, row: Sequence[float]) -> float:
        """:meth:`probability` of a :func:`feature_row`."""
        return self.probability(dict(zip(FEATURES, row, strict=True)))

    def with_thresholds(self, thresholds: Mapping[str, float] | None) -> ConfidenceModel:
        """The same model with the thresholds chosen under another ranking (None: as is)."""
        if not thresholds:
            return self
        return dataclasses.replace(self, thresholds={k: float(thresholds[k]) for k in LEVELS[1:]})

    def level(self, p: float) -> str:
        if p >= self.thresholds["high"]:
            return "high"
        return "medium" if p >= self.thresholds["medium"] else "low"

    def as_yaml(self) -> dict[str, Any]:
        return {
            "features": list(FEATURES),
            "means": [round(float(v), 6) for v in self.means],
            "scales": [round(float(v), 6) for v in self.scales],
            "weights": [round(float(v), 6) for v in self.weights],
            "intercept": round(float(self.intercept), 6),
            "thresholds": {k: round(float(v), 6) for k, v in self.thresholds.items()},
            "provenance": dict(self.provenance),
        }


class ConfidenceError(RuntimeError):
    """The confidence model's file is missing or not what this code reads."""


def model_from(raw: Mapping[str, Any], source: str) -> ConfidenceModel:
    """The model of a mapping as :meth:`ConfidenceModel.as_yaml` writes it (``source`` names
    where it was read, in the error when it is not one)."""
    try:
        if list(raw["features"]) != list(FEATURES):
            raise ConfidenceError(f"{source}: its features {raw['features']} are not {FEATURES}; "
                                  "fit it again: bench/calibrate_confidence.py")  # fmt: skip
        return ConfidenceModel(
            tuple(float(v) for v in raw["means"]), tuple(float(v) for v in raw["scales"]),
            tuple(float(v) for v in raw["weights"]), float(raw["intercept"]),
            {k: float(raw["thresholds"][k]) for k in ("medium", "high")},
            dict(raw.get("provenance") or {}),
        )  # fmt: skip
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfidenceError(
            f"{source}: cannot read the confidence model ({exc}); fit it: "
            ".venv/bin/python bench/calibrate_confidence.py --write"
        ) from exc


def read_model(path: Path = CONFIDENCE_YAML) -> ConfidenceModel:
    """The model of ``path`` (default: the packaged one); a clear error naming the file."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfidenceError(
            f"{path}: cannot read the confidence model ({exc}); fit it: "
            ".venv/bin/python bench/calibrate_confidence.py --write"
        ) from exc
    return model_from(raw if isinstance(raw, Mapping) else {}, str(path))


def feature_row(features: Mapping[str, float]) -> list[float]:
    """The values of :func:`evidence_features` in :data:`FEATURES` order (what is fitted)."""
    return [float(features[name]) for name in FEATURES]


def model_of_no_weight() -> ConfidenceModel:
    """A model that weighs nothing and gives no level above ``low``: for answering while the
    ranking's own model is fitted (the level decides nothing else of an answer)."""
    n = len(FEATURES)
    return ConfidenceModel((0.0,) * n, (1.0,) * n, (0.0,) * n, 0.0,
                           {"medium": 1.0, "high": 1.0}, {})  # fmt: skip


def fit_model(
    features: Sequence[Sequence[float]], right: Sequence[bool], seed: int = 47
) -> ConfidenceModel:
    """A logistic regression (scikit-learn, standardized :data:`FEATURES`, seeded) fitted on
    answers to questions the corpus teaches: each answer's features and whether one of its
    provisions was among the first :data:`TOP` served. Its thresholds are still to be chosen
    (:func:`choose_thresholds`): both 1.0 until then."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    x = np.array(features, dtype=float)
    means, scales = x.mean(axis=0), x.std(axis=0)
    scales[scales == 0] = 1.0
    fit = LogisticRegression(C=1.0, random_state=seed, max_iter=2000)
    fit.fit((x - means) / scales, np.array(right, dtype=bool))
    return ConfidenceModel(tuple(float(v) for v in means), tuple(float(v) for v in scales),
                           tuple(float(v) for v in fit.coef_[0]), float(fit.intercept_[0]),
                           {"medium": 1.0, "high": 1.0}, {})  # fmt: skip


@lru_cache(maxsize=1)
def packaged_model() -> ConfidenceModel:
    return read_model()


def served_confidence(reranker: object) -> ConfidenceModel:
    """The confidence model of a ranking: a promoted learned ranker's own (fitted under it on
    the mined questions, its thresholds chosen on dev under it: ``confidence_model``) when it
    carries one; else the packaged one, with the thresholds chosen on dev under the ranking when
    it carries those alone (``confidence_thresholds``, an older promotion)."""
    own = getattr(reranker, "confidence_model", None)
    if own:
        return model_from(own, f"the confidence model of ranker {getattr(reranker, 'version', '')}")
    return packaged_model().with_thresholds(getattr(reranker, "confidence_thresholds", None))


def choose_threshold(p: Sequence[float], right: Sequence[bool], target: float) -> float:
    """The least probability above which at least :data:`MIN_ANSWERS` answers are right at
    least ``target`` of the time (1.0: none): ``p`` and ``right`` are the dev half's answers,
    each answer's probability and whether a governing provision was in its top 3."""
    order = sorted(range(len(p)), key=lambda i: -p[i])
    hits, best = 0, 1.0
    for n, i in enumerate(order, start=1):
        hits += bool(right[i])
        last_of_its_value = n == len(order) or p[order[n]] < p[i]
        if n >= MIN_ANSWERS and hits / n >= target and last_of_its_value:
            best = float(p[i])
    return best


def choose_thresholds(p: Sequence[float], right: Sequence[bool]) -> dict[str, float]:
    """Each level's threshold (:data:`TARGET_PRECISION`) chosen on the dev half's answers;
    ``high`` never below ``medium``."""
    cuts = {level: choose_threshold(p, right, target) for level, target in TARGET_PRECISION.items()}
    cuts["high"] = max(cuts["high"], cuts["medium"])
    return cuts


def confidence(
    query: Query, ranked: Sequence[Candidate], model: ConfidenceModel | None = None
) -> tuple[str, float]:
    """The level an answer from ``ranked`` is given, and the probability it rests on (1.0 for
    the unit the question names); ``model``: the one of the ranking served (default: the
    packaged model, whose thresholds were chosen under the hand-set ranking)."""
    if not ranked:
        return "low", 0.0
    if ranked[0].exact:
        return "high", 1.0
    model = model or packaged_model()
    p = model.probability(evidence_features(query, ranked))
    return model.level(p), p

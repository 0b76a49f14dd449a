"""Confidence chosen under the ranking served (issue 47): a promoted learned ranker carries the
confidence model fitted under it (or, from an older promotion, the thresholds chosen on dev
under it), its file's checksum covers them, and answers ranked with it are given levels by
them; the packaged model serves every other ranking."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from civicsetu_pipelines.answer.confidence import (
    FEATURES,
    MIN_ANSWERS,
    TARGET_PRECISION,
    ConfidenceError,
    choose_threshold,
    choose_thresholds,
    confidence,
    evidence_features,
    fit_model,
    packaged_model,
    served_confidence,
)
from civicsetu_pipelines.answer.ranking import (
    DeterministicReranker,
    LinearReranker,
    RankerFileError,
    load_ranker,
    save_ranker,
)
from civicsetu_pipelines_tests.answer.test_retrieval_units import ask, cand


def _brute_force(p: list[float], right: list[bool], target: float) -> float:
    """The least probability t such that the answers at or above t number at least
    MIN_ANSWERS and are right at least ``target`` of the time (1.0: none)."""
    best = 1.0
    for t in sorted(set(p)):
        above = [r for q, r in zip(p, right, strict=True) if q >= t]
        if len(above) >= MIN_ANSWERS and sum(above) / len(above) >= target:
            best = min(best, t)
    return best


def test_a_threshold_is_the_least_probability_whose_answers_are_right_often_enough() -> None:
    # 60 answers: the 40 most probable right but two, the 20 least probable wrong but five
    p = [round(1.0 - i / 100, 2) for i in range(60)]
    right = [i not in (7, 23) for i in range(40)] + [i % 4 == 0 for i in range(20)]
    for target in (0.9, 0.95, 0.98):
        assert choose_threshold(p, right, target) == _brute_force(p, right, target)
    assert choose_threshold(p, right, 0.95) == p[40]  # 38 of 40 right, 39 of 41: >= 0.95
    assert choose_threshold(p[: MIN_ANSWERS - 1], right[: MIN_ANSWERS - 1], 0.5) == 1.0
    cuts = choose_thresholds(p, right)
    assert set(cuts) == set(TARGET_PRECISION) and cuts["high"] >= cuts["medium"]
    # equal probabilities are taken together or not at all
    tied = [0.9] * 30 + [0.5] * 10
    assert choose_threshold(tied, [True] * 29 + [False] + [True] * 10, 0.95) == 0.5


def test_a_promoted_rankers_thresholds_are_saved_checksummed_and_served(tmp_path: Path) -> None:
    plain = LinearReranker({"hand": 1.0}, 0.0, "v1", output="score")
    path = tmp_path / "ranker.json"
    digest = save_ranker(plain, path)
    assert load_ranker(path).confidence_thresholds is None
    assert "confidence_thresholds" not in json.loads(path.read_text())["ranker"]
    served = LinearReranker({"hand": 1.0}, 0.0, "v1", output="score",
                            confidence_thresholds={"medium": 0.5, "high": 0.99})  # fmt: skip
    promoted = tmp_path / "promoted.json"
    assert save_ranker(served, promoted) != digest  # the checksum covers the thresholds
    loaded = load_ranker(promoted)
    assert loaded.confidence_thresholds == {"medium": 0.5, "high": 0.99}
    saved = json.loads(promoted.read_text())
    saved["ranker"]["confidence_thresholds"]["medium"] = 0.01
    promoted.write_text(json.dumps(saved))
    with pytest.raises(RankerFileError, match="checksum"):
        load_ranker(promoted)

    packaged = packaged_model()
    assert served_confidence(DeterministicReranker()) == packaged
    assert served_confidence(plain) == packaged
    model = served_confidence(loaded)
    assert model.thresholds == {"medium": 0.5, "high": 0.99} and model.weights == packaged.weights
    # the same answer, the same probability; its level is the served ranking's
    query = ask("Can the allottee get a refund with interest?")
    weak = [cand("a", ranks={"vector": 9}, distance=0.6, score=1.2, text="a refund"),
            cand("b", label="Section 19", score=1.19, text="x")]  # fmt: skip
    level, p = confidence(query, weak)
    assert level == "low" and p < packaged.thresholds["medium"]
    lower = served_confidence(
        LinearReranker({"hand": 1.0}, confidence_thresholds={"medium": p / 2, "high": 0.99})
    )
    assert confidence(query, weak, lower) == ("medium", p)
    assert confidence(query, weak, model) == ("low", p)


def test_a_model_fitted_on_answers_weighs_what_separates_right_from_wrong() -> None:
    """fit_model on answers whose rightness follows their score: the score's weight is the
    largest and positive, and a right-looking answer is more probable than a wrong-looking one."""
    rng = random.Random(47)
    rows, right = [], []
    for _ in range(400):
        row = [rng.random() for _ in FEATURES]
        rows.append(row)
        right.append(row[FEATURES.index("score")] + 0.2 * rng.random() > 0.6)
    model = fit_model(rows, right)
    score = FEATURES.index("score")
    assert max(range(len(FEATURES)), key=lambda i: abs(model.weights[i])) == score
    assert model.weights[score] > 0 and model.thresholds == {"medium": 1.0, "high": 1.0}
    high, low = dict(zip(FEATURES, rows[0], strict=True)), dict(zip(FEATURES, rows[0], strict=True))
    high["score"], low["score"] = 0.95, 0.05
    assert model.probability(high) > 0.9 > 0.1 > model.probability(low)


def test_a_promoted_rankers_own_model_is_saved_checksummed_and_served(tmp_path: Path) -> None:
    """The model fitted under a promoted ranker travels in its file, covered by its checksum,
    and gives the levels of the answers it ranks; a model of other features is refused by name."""
    query = ask("Can the allottee get a refund with interest?")
    weak = [cand("a", ranks={"vector": 9}, distance=0.6, score=1.2, text="a refund"),
            cand("b", label="Section 19", score=1.19, text="x")]  # fmt: skip
    features = [evidence_features(query, weak)[f] for f in FEATURES]
    own = fit_model([features, [0.0] * len(FEATURES)] * 20, [True, False] * 20)
    p = own.probability(dict(zip(FEATURES, features, strict=True)))
    chosen = own.with_thresholds({"medium": p, "high": 0.999})
    ranker = LinearReranker({"hand": 1.0}, 0.0, "v2", output="score",
                            confidence_model=chosen.as_yaml())  # fmt: skip
    path = tmp_path / "promoted.json"
    save_ranker(ranker, path)
    loaded = load_ranker(path)
    served = served_confidence(loaded)
    assert served.weights == tuple(round(w, 6) for w in own.weights)
    assert served.thresholds == {"medium": round(p, 6), "high": 0.999}
    assert served != packaged_model()
    level, probability = confidence(query, weak, served)
    assert level == ("medium" if probability >= served.thresholds["medium"] else "low")
    assert abs(probability - p) < 1e-4
    assert confidence(query, weak)[0] == "low"  # the packaged model says this one is a guess
    saved = json.loads(path.read_text())
    saved["ranker"]["confidence_model"]["intercept"] += 1.0
    path.write_text(json.dumps(saved))
    with pytest.raises(RankerFileError, match="checksum"):
        load_ranker(path)
    other = dict(chosen.as_yaml(), features=["distance"])
    save_ranker(LinearReranker({"hand": 1.0}, 0.0, "v3", confidence_model=other), path)
    with pytest.raises(RankerFileError, match=f"{path}: its features"):
        load_ranker(path)
    with pytest.raises(ConfidenceError, match="the confidence model of ranker v3"):
        served_confidence(LinearReranker({"hand": 1.0}, 0.0, "v3", confidence_model=other))

"""Signal from noise (issue 38): intervals beside every headline figure, changes marked only
outside the noise, one identity for what an evaluation was measured on."""

from __future__ import annotations

import dataclasses
from typing import Any

from civicsetu_pipelines.evaluate.identity import EvalIdentity, ranker_identity
from civicsetu_pipelines.evaluate.scoring import (
    EvalResult,
    headline,
    intervals,
    paired_changes,
    summary,
)


def _row(qid: str, rr: float, *, split: str = "dev", refused_ok: bool = True) -> dict[str, Any]:
    return {"question_id": qid, "split": split, "phrasing": "legal", "status": "answered",
            "query_type": "fact_lookup",
            "expect_refusal": False, "refusal_correct": refused_ok, "reciprocal_rank": rr,
            "governing_rr": rr, "governing_hit_at_5": 1.0 if rr > 0 else 0.0,
            "latency_ms": 10.0}  # fmt: skip


IDENTITY = EvalIdentity(store="s" * 64, documents=18, units=1218, ranker="hand-set",
                        model="m", k=5, retrieval="r", golden="g" * 64,
                        golden_file="golden.jsonl")  # fmt: skip


def test_every_headline_metric_has_its_interval_beside_it() -> None:
    rows = [_row(f"q{i}", [1.0, 0.5, 0.0, 0.33][i % 4], split=("dev", "test")[i % 2])
            for i in range(80)]  # fmt: skip
    found = summary(EvalResult(rows, headline(rows), 5), identity=IDENTITY, model_id="m",
                    evidence_distances={"answer": 0.5})  # fmt: skip
    for figures in (found["headline"], *found["by_split"].values()):
        keys = list(figures)
        mrr = keys.index("governing_mrr")
        assert keys[mrr + 1] == "governing_mrr_ci95"  # beside it
        low, high = figures["governing_mrr_ci95"]
        assert low <= figures["governing_mrr"] <= high and high - low < 0.4
    assert found["identity"]["digest"] == IDENTITY.digest
    assert intervals(rows) == intervals(list(rows))  # seeded: the same rows, the same interval
    assert intervals([])["governing_mrr_ci95"] is None


def test_a_change_is_one_only_outside_the_noise() -> None:
    before = [_row(f"q{i}", 0.5) for i in range(60)]
    one = [dict(r) for r in before]
    one[0]["governing_rr"] = 1.0
    assert paired_changes(before, one)["governing_mrr"].p_value > 0.05
    many = [_row(f"q{i}", 1.0 if i % 3 else 0.5) for i in range(60)]
    moved = paired_changes(before, many)["governing_mrr"]
    assert moved.p_value < 0.05 and moved.difference > 0
    # questions only one run scored are not paired
    assert paired_changes(before[:10], many)["governing_mrr"].questions == 10


def test_the_identity_names_what_differs() -> None:
    same = dataclasses.replace(IDENTITY)
    assert same.digest == IDENTITY.digest
    renamed = dataclasses.replace(IDENTITY, golden_file="copy.jsonl")
    assert renamed.digest == IDENTITY.digest  # the same bytes are the same golden file
    for change in ({"store": "t" * 64}, {"ranker": "learned v1"}, {"k": 10},
                   {"golden": "h" * 64}, {"retrieval": "other"}):  # fmt: skip
        assert dataclasses.replace(IDENTITY, **change).digest != IDENTITY.digest

    class Hand:
        name = "deterministic"

    assert ranker_identity(Hand(), None) == "hand-set"

"""The golden set's dev/test split: stratified, stable, and never moving a question that has a
half; the governing provisions annotated and among the expected units; governing metrics."""

from __future__ import annotations

from collections import Counter

import pytest
from pydantic import ValidationError

from civicsetu_pipelines.evaluate.metrics import Judged, governing_scores
from civicsetu_pipelines.evaluate.scoring import (
    GoldenQuestion,
    assign_splits,
    by_kind_and_split,
    by_split,
    load_golden,
)


def question(qid: str, **kw: object) -> GoldenQuestion:
    fields: dict[str, object] = {
        "id": qid, "jurisdiction": "CENTRAL", "query_type": "fact_lookup", "query": "q?",
        "ground_truth": "g", "expected_sections": ["CENTRAL:Section 18"],
        "governing": ["CENTRAL:Section 18"], "expect_refusal": False,
    }  # fmt: skip
    fields.update(kw)
    return GoldenQuestion.model_validate(fields)


def test_the_packaged_golden_set_is_split_and_stratified() -> None:
    golden = load_golden()
    assert all(q.split in ("dev", "test") for q in golden)
    halves = Counter(q.split for q in golden)
    assert abs(halves["dev"] - halves["test"]) <= 1
    per_stratum = Counter((q.stratum, q.split) for q in golden)
    for stratum in {q.stratum for q in golden}:
        assert abs(per_stratum[(stratum, "dev")] - per_stratum[(stratum, "test")]) <= 1, stratum
    plain = [q for q in golden if q.phrasing == "plain"]
    assert len(plain) >= 40
    assert sum(q.expect_refusal for q in plain) >= 5
    # every answerable question but a handful names what governs it
    answerable = [q for q in golden if not q.expect_refusal]
    assert sum(bool(q.governing) for q in answerable) >= len(answerable) - 3
    # what governs is law, never guidance restating it
    assert not [q.id for q in golden for g in q.governing if ":Question " in g]


def test_assign_splits_keeps_existing_halves_and_balances_new_ones() -> None:
    old = [question(f"old-{i}", split="test") for i in range(3)]
    new = [question(f"new-{i}") for i in range(5)]
    out = {q.id: q.split for q in assign_splits(old + new)}
    assert all(out[f"old-{i}"] == "test" for i in range(3))  # never moved
    assert Counter(out.values()) == {"dev": 4, "test": 4}
    # stable: the same input gives the same halves, whatever the order
    again = {q.id: q.split for q in assign_splits(list(reversed(old + new)))}
    assert again == out
    # strata are kept apart: a lone plain question does not unbalance the legal ones
    mixed = assign_splits([question("a"), question("b"), question("p", phrasing="plain")])
    legal = Counter(q.split for q in mixed if q.phrasing == "legal")
    assert legal == {"dev": 1, "test": 1}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"governing": ["CENTRAL:Section 19"]}, "governing units must be among"),
        ({"expect_refusal": True}, "expects no units"),
        ({"split": "train"}, "split"),
        ({"phrasing": "casual"}, "phrasing"),
    ],
)
def test_bad_golden_rows_are_refused(change: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        question("x", **change)


def judged(qid: str, retrieved: tuple[str, ...], *, refused: bool = False) -> Judged:
    return Judged(
        id=qid, expected=("CENTRAL:Section 18", "CENTRAL:Question 53"), retrieved=retrieved,
        expect_refusal=False, refused=refused, citations_total=1, citations_verbatim=1,
        answer="a", ground_truth="g", contexts=(), reference_contexts=(), latency_ms=1.0,
        governing=("CENTRAL:Section 18",),
    )  # fmt: skip


def test_governing_scores_rank_the_law_not_the_guidance() -> None:
    scores = governing_scores(
        [
            judged("first", ("CENTRAL:Section 18", "CENTRAL:Question 53")),
            judged(
                "faq-first", ("CENTRAL:Question 53", "CENTRAL:Question 53", "CENTRAL:Section 18")
            ),
            judged("missing", ("CENTRAL:Question 53",)),
            judged("refused", ("CENTRAL:Section 18",), refused=True),
        ]
    )
    assert scores["first"]["governing_rr"] == 1.0
    assert scores["faq-first"] == {"governing_hit@1": 0.0, "governing_hit@3": 1.0,
                                   "governing_hit@5": 1.0, "governing_rr": 0.5}  # fmt: skip
    assert scores["missing"]["governing_hit@5"] == 0.0
    assert scores["refused"]["governing_rr"] == 0.0  # nothing reached the user


def test_headlines_side_by_side_by_split_and_kind() -> None:
    def row(split: str, kind: str, rr: float, phrasing: str = "legal") -> dict[str, object]:
        metrics = dict.fromkeys(
            ("hit_at_1", "hit_at_3", "hit_at_5", "hit_at_10", "recall_at_5", "recall_at_10",
             "reciprocal_rank", "ndcg_at_10", "citation_validity", "context_precision",
             "context_recall", "answer_similarity", "faithfulness", "response_relevancy"),
        )  # fmt: skip
        return {**metrics, "split": split, "query_type": kind, "phrasing": phrasing,
                "governing_hit_at_1": float(rr == 1), "governing_hit_at_3": float(rr >= 1 / 3),
                "governing_hit_at_5": float(rr >= 0.2), "governing_rr": rr, "status": "answered",
                "expect_refusal": False, "refusal_correct": True, "latency_ms": 1.0}  # fmt: skip

    rows = [row("dev", "fact_lookup", 1.0), row("test", "fact_lookup", 0.5),
            row("test", "temporal", 0.0, "plain")]  # fmt: skip
    halves = by_split(rows)
    assert list(halves) == ["dev", "test", "all"]
    assert halves["dev"]["governing_mrr"] == 1.0
    assert halves["test"]["governing_mrr"] == 0.25
    assert halves["test"]["plain_governing_hit_at_3"] == 0.0
    assert halves["test"]["plain_answered"] == 1.0
    kinds = by_kind_and_split(rows)
    assert set(kinds) == {"fact_lookup", "temporal", "plain language"}
    assert kinds["fact_lookup"]["test"]["governing_mrr"] == 0.5

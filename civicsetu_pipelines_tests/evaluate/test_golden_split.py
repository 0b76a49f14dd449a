"""The golden set's dev/test split: grouped by governing provision (every question of one
provision on one side), stratified, stable, and never moving a question that has a half; the
governing provisions annotated and among the expected units; governing metrics."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from pydantic import ValidationError

from civicsetu_pipelines.evaluate.metrics import Judged, UnitName, governing_scores, scored_name
from civicsetu_pipelines.evaluate.scoring import (
    GoldenQuestion,
    by_kind_and_split,
    by_split,
    load_golden,
)
from civicsetu_pipelines.evaluate.splits import assign_splits, provision_group, split_overlap


def question(qid: str, **kw: object) -> GoldenQuestion:
    fields: dict[str, object] = {
        "id": qid, "jurisdiction": "CENTRAL", "query_type": "fact_lookup", "query": "q?",
        "ground_truth": "g", "expected_sections": ["CENTRAL:Section 18"],
        "governing": ["CENTRAL:Section 18"], "expect_refusal": False,
    }  # fmt: skip
    fields.update(kw)
    return GoldenQuestion.model_validate(fields)


def test_the_packaged_golden_set_is_split_by_provision_and_stratified() -> None:
    golden = load_golden()
    assert all(q.split in ("dev", "test") for q in golden)
    halves = Counter(q.split for q in golden)
    assert abs(halves["dev"] - halves["test"]) <= 1
    # every question of one provision on one side
    sides: dict[str, set[str | None]] = {}
    for q in golden:
        sides.setdefault(provision_group(q), set()).add(q.split)
    assert all(len(s) == 1 for s in sides.values())
    # a stratum is as even as its largest group allows
    per_stratum = Counter((q.stratum, q.split) for q in golden)
    groups = Counter((q.stratum, provision_group(q)) for q in golden)
    for stratum in {q.stratum for q in golden}:
        largest = max(n for (s, _), n in groups.items() if s == stratum)
        gap = abs(per_stratum[(stratum, "dev")] - per_stratum[(stratum, "test")])
        assert gap <= largest + 1, stratum
    # the test half is unseen: few of its answers share a governing provision with dev (by
    # question, 154 of 241 did)
    overlap = split_overlap(golden)
    assert overlap.share_with_dev <= 0.2 * overlap.test_answerable, overlap
    plain = [q for q in golden if q.phrasing == "plain"]
    assert len(plain) >= 40
    assert sum(q.expect_refusal for q in plain) >= 5
    # every answerable question but a handful names what governs it
    answerable = [q for q in golden if not q.expect_refusal]
    assert sum(bool(q.governing) for q in answerable) >= len(answerable) - 3
    # what governs is law, never guidance restating it
    assert not [q.id for q in golden for g in q.governing if ":Question " in g]


def test_assign_splits_keeps_existing_halves_and_balances_new_ones() -> None:
    old = [_governed(f"old-{i}", f"CENTRAL:Section {i + 1}", split="test") for i in range(3)]
    new = [_governed(f"new-{i}", f"CENTRAL:Section {i + 10}") for i in range(5)]
    out = {q.id: q.split for q in assign_splits(old + new)}
    assert all(out[f"old-{i}"] == "test" for i in range(3))  # never moved
    assert Counter(out.values()) == {"dev": 4, "test": 4}
    # stable: the same input gives the same halves, whatever the order
    again = {q.id: q.split for q in assign_splits(list(reversed(old + new)))}
    assert again == out
    # strata are kept apart: a lone plain question does not unbalance the legal ones
    mixed = assign_splits([question("a", governing=["CENTRAL:Section 3"],
                                    expected_sections=["CENTRAL:Section 3"]),
                           question("b"), question("p", phrasing="plain")])  # fmt: skip
    legal = Counter(q.split for q in mixed if q.phrasing == "legal")
    assert legal == {"dev": 1, "test": 1}


def _governed(qid: str, *governing: str, **kw: object) -> GoldenQuestion:
    return question(qid, governing=list(governing), expected_sections=list(governing), **kw)


def test_a_provisions_questions_stay_on_one_side_and_new_ones_join_them() -> None:
    section = [_governed(f"s18-{i}", "CENTRAL:Section 18") for i in range(4)]
    others = [_governed(f"other-{i}", f"CENTRAL:Section {30 + i}") for i in range(4)]
    out = assign_splits(section + others)
    assert len({q.split for q in out if q.id.startswith("s18")}) == 1
    assert Counter(q.split for q in out) == {"dev": 4, "test": 4}
    side = next(q.split for q in out if q.id == "s18-0")
    # a later question of Section 18 joins its side, even when that unbalances the halves
    later = assign_splits([*out, _governed("s18-new", "CENTRAL:Section 18")])
    assert next(q.split for q in later if q.id == "s18-new") == side
    # a question governed by two provisions goes where its others already are
    both = _governed("both", "CENTRAL:Section 50", "CENTRAL:Section 18")
    placed = assign_splits([*out, both])
    assert next(q.split for q in placed if q.id == "both") == side
    # a refusal is a group of its own
    refusal = question("no", expected_sections=[], governing=[], expect_refusal=True)
    assert provision_group(refusal) == "question:no"


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


def test_a_unit_named_with_its_document_is_scored_in_that_document_only() -> None:
    """Gujarat's three rule sets share rule numbers 1-14: "GUJARAT:Rule 3" of the appellate
    tribunal rules is not the general rules' Rule 3. A golden name may say which document
    (``J:document_key:Label``); one without a document is any of the jurisdiction's."""
    general = "GUJARAT:gujarat_general_rules_2017:Rule 3"
    q = _governed("g", general, jurisdiction="GUJARAT")
    assert UnitName.parse(general) == UnitName("GUJARAT", "gujarat_general_rules_2017", "Rule 3")
    assert UnitName.parse("CENTRAL:Section 18") == UnitName("CENTRAL", None, "Section 18")
    tribunal = scored_name(q.governing, "GUJARAT", "gujarat_tribunal_rules_2016", "Rule 3")
    assert tribunal == "GUJARAT:gujarat_tribunal_rules_2016:Rule 3"  # not the golden one
    own = scored_name(q.governing, "GUJARAT", "gujarat_general_rules_2017", "Rule 3")
    assert own == general
    assert scored_name(("GUJARAT:Rule 3",), "GUJARAT", "gujarat_tribunal_rules_2016",
                       "Rule 3") == "GUJARAT:Rule 3"  # fmt: skip
    ranked = judged("g", (tribunal, own))
    ranked = dataclasses.replace(ranked, expected=q.expected_sections, governing=q.governing)
    assert governing_scores([ranked])["g"]["governing_rr"] == 0.5
    with pytest.raises(ValidationError, match="units must look like"):
        question("bad", expected_sections=["GUJARAT:gujarat_general_rules_2017:"], governing=[])


def test_confident_answers_are_measured_by_how_often_they_are_right() -> None:
    """Selective precision: of the answers given with confidence high or medium, the share
    with a governing provision in the top 3; coverage: of the questions with one, the share
    answered so. A low-confidence answer or a refusal counts against coverage only."""

    def row(qid: str, status: str, confidence: str | None, hit: float) -> dict[str, object]:
        return {"question_id": qid, "split": "dev", "phrasing": "legal", "status": status,
                "confidence": confidence, "governing_hit_at_3": hit, "governing_rr": hit,
                "expect_refusal": False, "refusal_correct": True, "latency_ms": 1.0}  # fmt: skip

    rows = [row("a", "answered", "high", 1.0), row("b", "answered", "medium", 0.0),
            row("c", "answered", "medium", 1.0), row("d", "answered", "low", 0.0),
            row("e", "refused", None, 0.0)]  # fmt: skip
    figures = by_split(rows)["dev"]
    assert figures["selective_precision"] == pytest.approx(2 / 3, abs=1e-4)
    assert figures["confident_coverage"] == pytest.approx(3 / 5, abs=1e-4)
    # a row recorded before confidence was has neither figure
    old = [{k: v for k, v in r.items() if k != "confidence"} for r in rows]
    assert by_split(old)["dev"]["selective_precision"] is None

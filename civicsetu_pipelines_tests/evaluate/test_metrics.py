"""Evaluation metrics (pure, no database): retrieval scores from trec_eval on hand-computed cases,
refusals, citation validity, and ragas' non-LLM metrics offline."""

from __future__ import annotations

import math
import socket
import time
from dataclasses import replace

import pytest

from civicsetu_pipelines.answer.candidates import Candidate
from civicsetu_pipelines.answer.llm import LLMSettings
from civicsetu_pipelines.answer.ranking import diversify
from civicsetu_pipelines.evaluate.metrics import (
    Judged,
    citation_validity,
    governing_placement,
    mean_scores,
    ragas_backend,
    ragas_llm,
    ragas_non_llm,
    refusal_correct,
    retrieval_scores,
)


def judged(
    qid: str,
    expected: tuple[str, ...] = (),
    retrieved: tuple[str, ...] = (),
    **changes: object,
) -> Judged:
    base = Judged(
        id=qid,
        expected=expected,
        retrieved=retrieved,
        expect_refusal=False,
        refused=False,
        citations_total=0,
        citations_verbatim=0,
        answer="",
        ground_truth="",
        contexts=(),
        reference_contexts=(),
        latency_ms=1.0,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


A, B, C, D, E, F = (f"CENTRAL:Section {n}" for n in (18, 19, 31, 4, 11, 71))

# expected [A], retrieved [B, A, C]: A at rank 2.
#   hit@1 = 0 (B), hit@3 = hit@5 = hit@10 = 1, recall@5 = recall@10 = 1/1,
#   mrr = 1/2, ndcg@10 = (1/log2(2+1)) / (1/log2(1+1)) = 1/log2(3) = 0.6309.
ONE = judged("one", (A,), (B, A, C))
# expected [A, B], retrieved [A, C, D, E, F, B]: A at rank 1, B at rank 6.
#   hit@1 = 1, recall@5 = 1/2 (only A in the top 5), recall@10 = 2/2, mrr = 1/1,
#   ndcg@10 = (1/log2(2) + 1/log2(7)) / (1/log2(2) + 1/log2(3)) = (1 + 0.35621) / (1 + 0.63093)
#           = 0.83155.
TWO = judged("two", (A, B), (A, C, D, E, F, B))
NDCG_ONE = 1 / math.log2(3)
NDCG_TWO = (1 + 1 / math.log2(7)) / (1 + 1 / math.log2(3))
ALL_METRICS = ["hit@1", "hit@3", "hit@5", "hit@10", "recall@5", "recall@10", "mrr", "ndcg@10"]


@pytest.fixture(scope="module")
def scores() -> dict[str, dict[str, float]]:
    """One trec_eval call for the module."""
    items = [
        ONE,
        TWO,
        judged("empty", (A,), ()),
        # duplicates: [B, B, A] is [B, A] -> same as ONE without C: A at rank 2.
        judged("dups", (A,), (B, B, A, A)),
        # expected [A, B], retrieved [B, B, C, A]: deduplicated [B, C, A] -> ranks 1 and 3;
        #   ndcg@10 = (1 + 1/log2(4)) / (1 + 1/log2(3)) = 1.5 / 1.63093 = 0.91972.
        judged("dups2", (A, B), (B, B, C, A)),
        judged("refusal", (), (A, B), expect_refusal=True),
        judged("refusal-with-expected", (A,), (A,), expect_refusal=True),
        judged("no-expected", (), (A,)),
    ]
    return retrieval_scores(items)


def test_retrieval_one_expected_at_rank_two(scores: dict[str, dict[str, float]]) -> None:
    s = scores["one"]
    assert list(s) == ALL_METRICS
    assert (s["hit@1"], s["hit@3"], s["hit@5"], s["hit@10"]) == (0.0, 1.0, 1.0, 1.0)
    assert s["recall@5"] == 1.0 and s["recall@10"] == 1.0
    assert s["mrr"] == pytest.approx(0.5)
    assert s["ndcg@10"] == pytest.approx(NDCG_ONE) == pytest.approx(0.6309, abs=1e-4)


def test_retrieval_two_expected_one_past_five(scores: dict[str, dict[str, float]]) -> None:
    s = scores["two"]
    assert s["hit@1"] == 1.0
    assert s["recall@5"] == pytest.approx(0.5)
    assert s["recall@10"] == pytest.approx(1.0)
    assert s["mrr"] == pytest.approx(1.0)
    assert s["ndcg@10"] == pytest.approx(NDCG_TWO) == pytest.approx(0.83155, abs=1e-5)


def test_retrieval_empty_retrieved_scores_zero(scores: dict[str, dict[str, float]]) -> None:
    assert scores["empty"] == dict.fromkeys(ALL_METRICS, 0.0)


def test_retrieval_duplicates_count_once(scores: dict[str, dict[str, float]]) -> None:
    s = scores["dups"]
    assert (s["hit@1"], s["hit@3"], s["mrr"]) == (0.0, 1.0, pytest.approx(0.5))
    assert s["ndcg@10"] == pytest.approx(NDCG_ONE)
    s2 = scores["dups2"]
    # Were duplicates kept, A would sit at rank 4 and ndcg@10 would use 1/log2(5).
    assert s2["ndcg@10"] == pytest.approx((1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))
    assert (s2["recall@5"], s2["mrr"]) == (1.0, 1.0)


def test_retrieval_excludes_refusals_and_unlabelled(scores: dict[str, dict[str, float]]) -> None:
    assert set(scores) == {"one", "two", "empty", "dups", "dups2"}


def test_retrieval_custom_ks_and_all_empty() -> None:
    # No trec_eval call at all when nothing was retrieved.
    out = retrieval_scores([judged("e", (A,), ())], ks=(2,))
    assert out == {"e": {"hit@2": 0.0, "recall@5": 0.0, "recall@10": 0.0, "mrr": 0.0,
                         "ndcg@10": 0.0}}  # fmt: skip
    assert retrieval_scores([]) == {}
    with pytest.raises(ValueError, match="k must be"):
        retrieval_scores([ONE], ks=(0,))
    with pytest.raises(ValueError, match="duplicate question id"):
        retrieval_scores([ONE, ONE])


def test_mean_scores_over_questions(scores: dict[str, dict[str, float]]) -> None:
    means = mean_scores({"one": scores["one"], "two": scores["two"], "empty": scores["empty"]})
    # mrr: (0.5 + 1 + 0) / 3 = 0.5; recall@5: (1 + 0.5 + 0) / 3 = 0.5;
    # ndcg@10: (0.63093 + 0.83155 + 0) / 3 = 0.48749.
    assert means["mrr"] == pytest.approx(0.5)
    assert means["recall@5"] == pytest.approx(0.5)
    assert means["ndcg@10"] == pytest.approx((NDCG_ONE + NDCG_TWO) / 3)
    assert list(means) == ALL_METRICS
    # A metric only some questions have is averaged over those: (1 + 0) / 2 and 0.4 / 1.
    assert mean_scores({"a": {"x": 1.0, "y": 0.4}, "b": {"x": 0.0}}) == {"x": 0.5, "y": 0.4}
    assert mean_scores({}) == {}


def test_refusal_correct_both_ways() -> None:
    assert refusal_correct(judged("r1", expect_refusal=True, refused=True))
    assert refusal_correct(judged("r2", expect_refusal=False, refused=False))
    assert not refusal_correct(judged("r3", expect_refusal=True, refused=False))
    assert not refusal_correct(judged("r4", expect_refusal=False, refused=True))


def test_citation_validity() -> None:
    assert citation_validity(judged("c", citations_total=4, citations_verbatim=3)) == 0.75
    assert citation_validity(judged("c", citations_total=2, citations_verbatim=2)) == 1.0
    assert citation_validity(judged("c", citations_total=0, citations_verbatim=0)) is None
    with pytest.raises(ValueError, match="citations_verbatim"):
        citation_validity(judged("c", citations_total=1, citations_verbatim=2))


# --- the governing unit before and after diversity ------------------------------------------


def unit(n: int, document: str, section: str, score: float) -> Candidate:
    """A candidate of the Act (``document``) with its score, as the reranker leaves it."""
    row = {"chunk_id": f"00000000-0000-0000-0000-00000000000{n}", "jurisdiction": "CENTRAL",
           "document_key": document, "doc_type": "act", "unit": "section", "label": section,
           "section_label": section}  # fmt: skip
    return Candidate(row, score=score)


def test_governing_placement_when_diversity_pushes_the_governing_unit_out() -> None:
    # by score: a unit of the Act, the governing Section 18 (the same document), then two of
    # other documents; one unit per document pushes Section 18 below both lower-scored ones
    candidates = [unit(1, "act", "Section 3", 0.9), unit(2, "act", "Section 18", 0.8),
                  unit(3, "rules", "Rule 4", 0.5), unit(4, "faq", "Question 2", 0.4)]  # fmt: skip
    final = diversify(candidates, 3, 1, "document")
    assert [c.label for c in final] == ["Section 3", "Rule 4", "Question 2"]
    placement = governing_placement(["CENTRAL:Section 18"], final, candidates, k=2)
    assert placement == {"unit": "CENTRAL:Section 18", "label": "Section 18", "score": 0.8,
                         "candidate_rank": 2, "final_rank": None, "lower_scored_above": 2,
                         "gave_way": None, "displaced": True}  # fmt: skip
    # a longer list takes it back at the end: in the list, below two units that scored less
    final = diversify(candidates, 4, 1, "document")
    placement = governing_placement(["CENTRAL:Section 18"], final, candidates, k=2)
    assert placement is not None
    assert (placement["final_rank"], placement["lower_scored_above"]) == (4, 2)
    assert placement["displaced"] and "Rule 4" in str(placement["gave_way"])
    # in the top 5 either way (hit@5 lost nothing), another governing unit still in the top
    # 2, no governing unit among the candidates at all, no cap: none is displaced
    at_five = governing_placement(["CENTRAL:Section 18"], final, candidates)
    assert at_five is not None and not at_five["displaced"]
    both = governing_placement(["CENTRAL:Section 18", "CENTRAL:Rule 4"], final, candidates, k=2)
    assert both is not None and both["unit"] == "CENTRAL:Section 18" and not both["displaced"]
    assert governing_placement(["CENTRAL:Section 99"], final, candidates) is None
    free = diversify(candidates, 4, 3, "document")
    assert governing_placement(["CENTRAL:Section 18"], free, candidates, k=2) == {
        "unit": "CENTRAL:Section 18", "label": "Section 18", "score": 0.8, "candidate_rank": 2,
        "final_rank": 2, "lower_scored_above": 0, "gave_way": None, "displaced": False,
    }  # fmt: skip


# --- ragas non-LLM --------------------------------------------------------------------------

REF = "The promoter shall return the amount received with interest at the prescribed rate."
OTHER = "Every real estate agent shall register with the Authority before selling any plot."


def _answered(qid: str, **changes: object) -> Judged:
    return judged(qid, (A,), (A,), **changes)


RAGAS_ITEMS = [
    # Identical answer and ground truth: similarity 1 - 0/len = 1.0.
    # Reference retrieved first: verdicts [1, 0] -> AP = (1/1 * 1) / 1 = 1.0 (ragas adds 1e-10
    # to the denominator); recall: REF's best match is itself (similarity 1 > 0.5) -> 1/1.
    _answered(
        "first", answer=REF, ground_truth=REF, contexts=(REF, OTHER), reference_contexts=(REF,)
    ),
    # Reference retrieved last: verdicts [0, 1] -> AP = (1/2 * 1) / 1 = 0.5; recall still 1.0.
    # Answer "abc" vs ground truth "abd": Levenshtein 1 over max length 3 -> 1 - 1/3.
    _answered(
        "last", answer="abc", ground_truth="abd", contexts=(OTHER, REF), reference_contexts=(REF,)
    ),
    # Reference never retrieved: OTHER vs REF is far below 0.5 -> precision 0, recall 0/1;
    # two references, one retrieved exactly: recall 1/2 (checked in "half").
    _answered("miss", answer="x", ground_truth="y", contexts=(OTHER,), reference_contexts=(REF,)),
    _answered("half", answer="", ground_truth="", contexts=(REF,), reference_contexts=(REF, OTHER)),
    # Nothing retrieved: 0 (ragas itself would fail on max([])); no reference: no context metrics.
    _answered("none", answer="a", ground_truth="a", contexts=(), reference_contexts=(REF,)),
    _answered("noref", answer="a", ground_truth="a", contexts=(REF,), reference_contexts=()),
    # Not scored: a refusal, and an out-of-scope question.
    _answered(
        "refused", refused=True, ground_truth=REF, contexts=(REF,), reference_contexts=(REF,)
    ),
    judged("oos", expect_refusal=True, refused=True, ground_truth="-"),
]


@pytest.fixture(scope="module")
def ragas_scores() -> dict[str, dict[str, float]]:
    return ragas_non_llm(RAGAS_ITEMS)


def test_ragas_identical_answer_and_reference_first(
    ragas_scores: dict[str, dict[str, float]],
) -> None:
    s = ragas_scores["first"]
    assert list(s) == ["context_precision", "context_recall", "answer_similarity"]
    assert s["answer_similarity"] == 1.0
    assert s["context_precision"] == pytest.approx(1.0)
    assert s["context_recall"] == 1.0


def test_ragas_precision_rewards_reference_ranked_first(
    ragas_scores: dict[str, dict[str, float]],
) -> None:
    first, last = ragas_scores["first"], ragas_scores["last"]
    assert last["context_precision"] == pytest.approx(0.5)
    assert first["context_precision"] > last["context_precision"]
    assert last["context_recall"] == 1.0
    assert last["answer_similarity"] == pytest.approx(1 - 1 / 3)


def test_ragas_misses_and_partial_recall(ragas_scores: dict[str, dict[str, float]]) -> None:
    assert ragas_scores["miss"]["context_precision"] == pytest.approx(0.0)
    assert ragas_scores["miss"]["context_recall"] == 0.0
    assert ragas_scores["half"] == {"context_precision": pytest.approx(1.0), "context_recall": 0.5}
    assert ragas_scores["none"] == {"context_precision": 0.0, "context_recall": 0.0,
                                    "answer_similarity": 1.0}  # fmt: skip
    assert ragas_scores["noref"] == {"answer_similarity": 1.0}
    assert set(ragas_scores) == {"first", "last", "miss", "half", "none", "noref"}


def test_ragas_runs_offline_without_hanging(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    started = time.perf_counter()
    out = ragas_non_llm(RAGAS_ITEMS[:2])
    assert time.perf_counter() - started < 10
    assert out["first"]["answer_similarity"] == 1.0


def test_ragas_reimplementation_matches_ragas() -> None:
    """Where ragas imports, its metric objects and the rapidfuzz reimplementation agree."""
    pytest.importorskip("ragas")
    items = RAGAS_ITEMS + [
        _answered("near", answer=REF[:-9], ground_truth=REF, contexts=(OTHER, REF[5:], REF[:40]),
                  reference_contexts=(REF, OTHER[:30])),
    ]  # fmt: skip
    real = ragas_non_llm(items, backend="ragas")
    ours = ragas_non_llm(items, backend="rapidfuzz")
    assert real.keys() == ours.keys()
    for qid in real:
        assert real[qid] == pytest.approx(ours[qid]), qid


def test_ragas_backend_choice() -> None:
    out = ragas_non_llm(RAGAS_ITEMS[:1], backend="rapidfuzz")
    assert out["first"]["answer_similarity"] == 1.0
    if ragas_backend().startswith("rapidfuzz"):
        with pytest.raises(RuntimeError, match="ragas is not importable"):
            ragas_non_llm(RAGAS_ITEMS[:1], backend="ragas")


def test_ragas_llm_none_when_not_configured() -> None:
    assert ragas_llm(RAGAS_ITEMS, None) is None
    # An unreachable judge scores nothing (and raises nothing); see test_ragas_judge.py.
    settings = LLMSettings(base_url="http://127.0.0.1:9/v1", model="m", timeout_s=2)
    assert ragas_llm(RAGAS_ITEMS, settings, runs=1) == {}

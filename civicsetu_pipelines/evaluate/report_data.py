"""The data of the evaluation report, shared by its figures (:mod:`.plots`) and its pages
(:mod:`.report`): the names of the fields and metrics, one golden question as the report reads it
(:class:`Question`, made from a per-question row by :func:`to_question`), the runs of the trend
(:func:`trend_runs`) and the small computations both need (means, groups, labels, natural
order). Pure: no Dagster, no Matplotlib, no HTML.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

HEADLINE = (
    "hit_at_5", "mrr", "ndcg_at_10", "recall_at_5", "citation_validity", "refusal_correctness",
)  # fmt: skip
QUERY_TYPES = (
    "fact_lookup",
    "cross_reference",
    "penalty_lookup",
    "temporal",
    "comparison",
    "out_of_scope",
)
QUESTION_METRICS = (
    "hit_at_1", "hit_at_3", "hit_at_5", "hit_at_10", "recall_at_5", "recall_at_10",
    "reciprocal_rank", "ndcg_at_10", "citation_validity", "context_precision", "context_recall",
    "answer_similarity", "faithfulness", "response_relevancy",
)  # fmt: skip
ROW_FIELDS = (
    "question_id", "jurisdiction", "query_type", "query", "status", "refusal_reason",
    "expect_refusal", "refusal_correct", *QUESTION_METRICS, "latency_ms", "retrieved", "expected",
)  # fmt: skip
LIST_FIELDS = ("retrieved", "expected")
LABELS = {
    "hit_at_1": "hit@1", "hit_at_3": "hit@3", "hit_at_5": "hit@5", "hit_at_10": "hit@10",
    "recall_at_5": "recall@5", "recall_at_10": "recall@10", "reciprocal_rank": "MRR",
    "mrr": "MRR", "ndcg_at_10": "nDCG@10", "citation_validity": "citation validity",
    "context_precision": "context precision", "context_recall": "context recall",
    "answer_similarity": "answer similarity", "faithfulness": "faithfulness",
    "response_relevancy": "response relevancy", "refusal_correct": "refusal correctness",
    "refusal_correctness": "refusal correctness", "latency_p50_ms": "latency p50 (ms)",
    "latency_p95_ms": "latency p95 (ms)", "questions": "questions",
    "governing_hit_at_1": "governing hit@1", "governing_hit_at_3": "governing hit@3",
    "governing_hit_at_5": "governing hit@5", "governing_mrr": "governing MRR",
    "governing_rr": "governing RR", "plain_governing_hit_at_3": "plain: governing in top 3",
    "plain_answered": "plain: answered",
    "selective_precision": "confident answers right (governing in top 3)",
    "confident_coverage": "answered confidently (high or medium)",
    "diversity_displaced": "governing moved out of the top 5 by diversity",
    "diversity_displaced_share": "share moved out of the top 5 by diversity",
}  # fmt: skip
# The per-question field a headline mean is taken over (for its n and its threshold line).
HEADLINE_FIELD = {"mrr": "reciprocal_rank", "refusal_correctness": "refusal_correct"}
BAR_METRICS = (*QUESTION_METRICS[:9], "refusal_correct", *QUESTION_METRICS[9:])
MAX_TREND_RUNS = 30
THRESHOLD_SLACK = 1e-9  # a mean of 0.8999999999 from float sums passes a 0.9 threshold
NONE_TEXT = "—"
NO_JURISDICTION = "(none)"
OVERALL = "overall"


@dataclass(frozen=True)
class Question:
    """One golden question as the report reads it (see :func:`to_question`)."""

    qid: str
    jurisdiction: str  # NO_JURISDICTION when None
    query_type: str
    query: str
    status: str
    refusal_reason: str | None
    expect_refusal: bool
    refusal_correct: bool | None
    metrics: dict[str, float | None]  # QUESTION_METRICS and refusal_correct (1.0 / 0.0)
    latency_ms: float | None
    retrieved: tuple[str, ...]
    expected: tuple[str, ...]
    answer: str | None
    raw: Mapping[str, Any]


@dataclass(frozen=True)
class Run:
    """One point of the trend: its tick label, its headline metrics, whether it is this run."""

    label: str
    metrics: dict[str, float | None]
    current: bool
    # each metric's 95% interval over the run's questions ("<metric>_ci95"), when known
    intervals: dict[str, Sequence[float] | None] = field(default_factory=dict)


def to_number(value: Any) -> float | None:
    """A metric as a float; ``None`` for a missing or non-finite value (None, NaN, "")."""
    if value is None or isinstance(value, str) and not value.strip():
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def to_flag(value: Any) -> bool | None:
    """A yes/no field (bool, "true"/"false", 1/0); ``None`` when missing or unreadable."""
    if value is None or isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in {"true", "t", "1", "yes"}:
            return True
        if text in {"false", "f", "0", "no"}:
            return False
        return None
    return bool(value)


def to_text(value: Any) -> str | None:
    """A text field; ``None`` for a missing one (None or NaN)."""
    if value is None or isinstance(value, float) and math.isnan(value):
        return None
    return str(value)


def to_labels(value: Any) -> tuple[str, ...]:
    """A list of unit labels: a sequence, or one text joined with ``";"``."""
    if value is None or isinstance(value, float) and math.isnan(value):
        return ()
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(";") if part.strip())
    return tuple(str(v) for v in value)


def natural_key(text: str) -> tuple[Any, ...]:
    """Sort key in which runs of digits compare as numbers: "q2" < "q10"."""
    return tuple((0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", text))


def to_question(row: Mapping[str, Any]) -> Question:
    """One per-question row (fields of :data:`ROW_FIELDS`) as a :class:`Question`."""
    metrics = {m: to_number(row.get(m)) for m in QUESTION_METRICS}
    refusal_correct = to_flag(row.get("refusal_correct"))
    metrics["refusal_correct"] = None if refusal_correct is None else float(refusal_correct)
    return Question(
        qid=to_text(row.get("question_id")) or "?",
        jurisdiction=to_text(row.get("jurisdiction")) or NO_JURISDICTION,
        query_type=to_text(row.get("query_type")) or "?",
        query=to_text(row.get("query")) or "",
        status=to_text(row.get("status")) or "?",
        refusal_reason=to_text(row.get("refusal_reason")),
        expect_refusal=bool(to_flag(row.get("expect_refusal"))),
        refusal_correct=refusal_correct,
        metrics=metrics,
        latency_ms=to_number(row.get("latency_ms")),
        retrieved=to_labels(row.get("retrieved")),
        expected=to_labels(row.get("expected")),
        answer=to_text(row.get("answer")),
        raw=row,
    )


def _jurisdiction_key(name: str) -> tuple[int, str]:
    """CENTRAL (the Act) first, then states alphabetically, questions without one last."""
    return (0 if name == "CENTRAL" else 2 if name == NO_JURISDICTION else 1, name)


def query_types(questions: Sequence[Question]) -> list[str]:
    """The query types present: those of :data:`QUERY_TYPES` in that order, then others."""
    present = {q.query_type for q in questions}
    return [t for t in QUERY_TYPES if t in present] + sorted(present - set(QUERY_TYPES))


def scored_types(questions: Sequence[Question], metric: str) -> list[str]:
    """The query types (in :func:`query_types` order) with a value of ``metric``."""
    return [
        t
        for t in query_types(questions)
        if any(q.metrics[metric] is not None for q in questions if q.query_type == t)
    ]


def jurisdictions(questions: Sequence[Question]) -> list[str]:
    """The jurisdictions present: CENTRAL, the states alphabetically, then "(none)"."""
    return sorted({q.jurisdiction for q in questions}, key=_jurisdiction_key)


def groups(questions: Sequence[Question]) -> list[tuple[str, list[Question]]]:
    """All questions ("overall"), then the questions of each jurisdiction."""
    out = [(OVERALL, list(questions))]
    for name in jurisdictions(questions):
        out.append((name, [q for q in questions if q.jurisdiction == name]))
    return out


def mean(values: Sequence[float | None]) -> tuple[float | None, int]:
    """The mean of the values that are not ``None`` (``None`` when there is none), and their
    number."""
    present = [v for v in values if v is not None]
    return (sum(present) / len(present) if present else None), len(present)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile of ``values`` (NumPy's linear interpolation)."""
    return float(np.percentile(np.asarray(values, dtype=float), q))


def label(metric: str) -> str:
    """A metric's name for people: "hit@5", "MRR", "citation validity"."""
    return LABELS.get(metric, metric.replace("_", " "))


def passes(value: float | None, threshold: float) -> bool:
    """Whether ``value`` meets ``threshold`` (up to float rounding)."""
    return value is not None and value >= threshold - THRESHOLD_SLACK


def _when(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return to_text(value) or "?"


def trend_runs(
    history: Sequence[Mapping[str, Any]],
    headline: Mapping[str, float | None],
    run_id: str | None,
) -> tuple[list[Run], Mapping[str, Any] | None]:
    """The runs of the trend (oldest first, the last one this run) and the run before this one.

    This run is the history entry with ``run_id`` or, without one, the last entry when its
    headline metrics equal ``headline``; when it is not in the history it is appended."""

    def same(metrics: Mapping[str, Any]) -> bool:
        return all(to_number(metrics.get(k)) == to_number(headline.get(k)) for k in HEADLINE)

    entries = list(history)
    current = None
    for index, entry in enumerate(entries):
        if run_id is not None and to_text(entry.get("run_id")) == run_id:
            current = index
    if current is None and run_id is None and entries and same(entries[-1].get("metrics") or {}):
        current = len(entries) - 1
    if current is not None:
        entries = entries[: current + 1]
    previous = entries[current - 1] if current is not None and current > 0 else None
    if current is None:
        previous = entries[-1] if entries else None
    runs = [
        Run(
            f"{_when(e.get('started_at'))}\n{(to_text(e.get('run_id')) or '?')[:8]}",
            {k: to_number((e.get("metrics") or {}).get(k)) for k in HEADLINE},
            index == current,
            dict(e.get("intervals") or {}),
        )
        for index, e in enumerate(entries)
    ]
    if current is None:
        runs.append(Run("this run", {k: to_number(headline.get(k)) for k in HEADLINE}, True))
    return runs[-MAX_TREND_RUNS:], previous


def fmt(value: float | None, digits: int = 2) -> str:
    """A figure as the report prints it (NONE_TEXT where it was not computed)."""
    return NONE_TEXT if value is None else f"{value:.{digits}f}"


def with_interval(value: float | None, ci: Sequence[float] | None, digits: int = 3) -> str:
    """A figure with its 95% interval: ``0.787 [0.71, 0.86]``."""
    if value is None:
        return NONE_TEXT
    return fmt(value, digits) + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")

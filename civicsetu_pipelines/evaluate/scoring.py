"""Golden-set evaluation: run every golden question through the answer engine, score retrieval,
citations and refusals, and keep the history in Postgres.

Pure domain code over psycopg (no Dagster). The golden answers never reach retrieval or
ranking: the engine sees only the question text (and nothing else of the golden row).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from civicsetu_pipelines.answer import LLMSettings, QueryEngine, QuestionError, quote_in
from civicsetu_pipelines.base import DATA_DIR
from civicsetu_pipelines.evaluate.metrics import (
    Judged,
    citation_validity,
    ragas_llm,
    ragas_non_llm,
    refusal_correct,
    retrieval_scores,
)

GOLDEN_JSONL = DATA_DIR / "golden.jsonl"
QUERY_TYPES = ("fact_lookup", "cross_reference", "penalty_lookup", "temporal", "comparison",
               "out_of_scope")  # fmt: skip
THRESHOLDS = {"hit_at_5": 0.9, "mrr": 0.75, "citation_validity": 1.0, "refusal_correctness": 0.9}
ROW_METRICS = (
    "hit_at_1", "hit_at_3", "hit_at_5", "hit_at_10", "recall_at_5", "recall_at_10",
    "reciprocal_rank", "ndcg_at_10", "citation_validity", "context_precision", "context_recall",
    "answer_similarity", "faithfulness", "response_relevancy",
)  # fmt: skip


class GoldenError(ValueError):
    """A golden file that cannot be used; the message names the file and the line."""


class GoldenQuestion(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    jurisdiction: str | None
    query_type: str
    query: str = Field(min_length=1)
    ground_truth: str
    expected_sections: tuple[str, ...]
    expect_refusal: bool

    @field_validator("query_type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in QUERY_TYPES:
            raise ValueError(f"query_type must be one of {', '.join(QUERY_TYPES)}")
        return value

    @field_validator("expected_sections")
    @classmethod
    def _labels(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [v for v in value if ":" not in v or not v.split(":", 1)[1].strip()]
        if bad:
            raise ValueError(f"expected_sections must look like 'CENTRAL:Section 18', not {bad}")
        return value


def load_golden(path: Path | str = GOLDEN_JSONL) -> list[GoldenQuestion]:
    """Read and validate a golden JSON Lines file (ids unique)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise GoldenError(f"{path}: cannot read the golden file: {exc}") from exc
    out: list[GoldenQuestion] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = GoldenQuestion.model_validate(json.loads(line))
        except (json.JSONDecodeError, ValidationError) as exc:
            first = str(exc).splitlines()
            raise GoldenError(f"{path}:{number}: {' '.join(first[:3])}") from None
        if item.id in seen:
            raise GoldenError(f"{path}:{number}: duplicate id {item.id!r}")
        seen.add(item.id)
        out.append(item)
    if not out:
        raise GoldenError(f"{path}: no questions")
    return out


def golden_sha256(path: Path | str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@dataclass
class EvalResult:
    rows: list[dict[str, Any]]
    headline: dict[str, float | None]
    k: int
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    started_at: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))


def _units_text(conn: psycopg.Connection[Any], keys: Iterable[str]) -> dict[str, str]:
    """Text of each "JURISDICTION:Section label" unit (all its parts, in order)."""
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    pairs = [k.split(":", 1) for k in wanted]
    with conn.cursor() as cur:
        cur.execute(
            "SELECT jurisdiction || ':' || section_label, string_agg(text, E'\\n' ORDER BY "
            "document_key, ordinal) FROM legal_chunks WHERE status = 'current' AND "
            "(jurisdiction, section_label) IN (SELECT * FROM unnest(%s::text[], %s::text[])) "
            "GROUP BY 1",
            ([p[0] for p in pairs], [p[1] for p in pairs]),
        )
        return {str(key): str(text) for key, text in cur.fetchall()}


def _verified(conn: psycopg.Connection[Any], citations: Sequence[Mapping[str, Any]]) -> int:
    """How many citations quote their chunk verbatim AND are on the cited page (re-read from the
    store, independently of the engine's own checks)."""
    good = 0
    with conn.cursor() as cur:
        for c in citations:
            cur.execute(
                "SELECT c.text, p.text FROM legal_chunks c JOIN document_versions v "
                "ON v.version_id = c.version_id LEFT JOIN document_pages p ON p.document_key = "
                "c.document_key AND p.sha256 = v.sha256 AND p.page = %s WHERE c.chunk_id = %s "
                "AND c.status = 'current'",
                (c["page"], c["chunk_id"]),
            )
            row = cur.fetchone()
            if row and quote_in(c["quote"], row[0]) and row[1] and quote_in(c["quote"], row[1]):
                good += 1
    return good


def evaluate(
    engine: QueryEngine,
    conn: psycopg.Connection[Any],
    golden: Sequence[GoldenQuestion],
    *,
    k: int = 5,
    with_ragas: bool = True,
    judge: LLMSettings | None = None,
    judge_runs: int = 3,
) -> EvalResult:
    """Answer every golden question (top-``k``) and score it. Only ``query`` reaches the engine.

    With a ``judge`` endpoint, faithfulness and response relevancy are judged by it (averaged
    over ``judge_runs`` runs); otherwise they stay empty."""
    judged: list[Judged] = []
    answers: dict[str, dict[str, Any]] = {}
    expected_text = _units_text(conn, (s for g in golden for s in g.expected_sections))
    for item in golden:
        try:
            result = engine.answer(item.query, top_k=max(k, 10))
        except QuestionError as exc:
            result = {"status": "error", "refusal_reason": None, "answer": str(exc),
                      "citations": [], "retrieved": [], "timings_ms": {"total": 0.0}}  # fmt: skip
        answers[item.id] = result
        retrieved = tuple(f"{r['jurisdiction']}:{r['section']}" for r in result["retrieved"])
        retrieved_text = _units_text(conn, retrieved)
        judged.append(
            Judged(
                id=item.id,
                expected=item.expected_sections,
                retrieved=retrieved,
                expect_refusal=item.expect_refusal,
                refused=result["status"] != "answered",
                citations_total=len(result["citations"]),
                citations_verbatim=_verified(conn, result["citations"]),
                answer=result["answer"] if result["status"] == "answered" else "",
                ground_truth=item.ground_truth,
                contexts=tuple(retrieved_text.get(r, "") for r in dict.fromkeys(retrieved)),
                reference_contexts=tuple(expected_text.get(s, "") for s in item.expected_sections),
                latency_ms=float(result["timings_ms"].get("total", 0.0)),
                question=item.query,
            )
        )
    retrieval = retrieval_scores(judged)
    ragas = ragas_non_llm(judged) if with_ragas else {}
    judged_by_llm = ragas_llm(judged, judge, judge_runs, embed_query=engine.embed_query) or {}
    rows: list[dict[str, Any]] = []
    for item, j in zip(golden, judged, strict=True):
        result = answers[item.id]
        scores = retrieval.get(item.id, {})
        row: dict[str, Any] = {
            "question_id": item.id,
            "jurisdiction": item.jurisdiction,
            "query_type": item.query_type,
            "query": item.query,
            "status": result["status"],
            "refusal_reason": result.get("refusal_reason"),
            "expect_refusal": item.expect_refusal,
            "refusal_correct": refusal_correct(j),
            "latency_ms": j.latency_ms,
            "retrieved": list(dict.fromkeys(j.retrieved)),
            "expected": list(item.expected_sections),
            "answer": result["answer"],
        }
        row["hit_at_1"] = scores.get("hit@1")
        row["hit_at_3"] = scores.get("hit@3")
        row["hit_at_5"] = scores.get("hit@5")
        row["hit_at_10"] = scores.get("hit@10")
        row["recall_at_5"] = scores.get("recall@5")
        row["recall_at_10"] = scores.get("recall@10")
        row["reciprocal_rank"] = scores.get("mrr")
        row["ndcg_at_10"] = scores.get("ndcg@10")
        row["citation_validity"] = citation_validity(j)
        extra = ragas.get(item.id, {})
        row["context_precision"] = extra.get("context_precision")
        row["context_recall"] = extra.get("context_recall")
        row["answer_similarity"] = extra.get("answer_similarity")
        by_judge = judged_by_llm.get(item.id, {})
        row["faithfulness"] = by_judge.get("faithfulness")
        row["response_relevancy"] = by_judge.get("response_relevancy")
        rows.append(row)
    return EvalResult(rows, headline(rows), k)


def _mean(values: Iterable[float | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return round(sum(present) / len(present), 4) if present else None


def headline(rows: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """Means over the questions each metric applies to (retrieval metrics: questions with
    expected sections; citation validity: answers with citations; refusal correctness: all)."""
    out: dict[str, float | None] = {
        metric: _mean(r[metric] for r in rows) for metric in ROW_METRICS
    }
    out["mrr"] = out.pop("reciprocal_rank")
    out["refusal_correctness"] = _mean(1.0 if r["refusal_correct"] else 0.0 for r in rows)
    latencies = sorted(float(r["latency_ms"]) for r in rows)
    out["latency_p50_ms"] = round(latencies[len(latencies) // 2], 1) if latencies else None
    out["latency_p95_ms"] = (
        round(latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))], 1)
        if latencies
        else None
    )
    out["questions"] = float(len(rows))
    return out


def by_group(rows: Sequence[Mapping[str, Any]], key: str) -> dict[str, dict[str, float | None]]:
    """Headline means per value of ``key`` (jurisdiction or query_type)."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(str(row[key]), []).append(row)
    return {name: headline(items) for name, items in sorted(groups.items())}


# ---------------------------------------------------------------------------------------------
# History in Postgres (sql/0006_evaluation.sql)

_QUESTION_COLUMNS = (
    "question_id", "jurisdiction", "query_type", "query", "status", "refusal_reason",
    "expect_refusal", "refusal_correct", *ROW_METRICS, "latency_ms", "retrieved", "expected",
)  # fmt: skip


def record(
    conn: psycopg.Connection[Any],
    result: EvalResult,
    *,
    scope: str,
    golden_file: str,
    golden_sha: str,
    source: str,
    dagster_run_id: str | None = None,
    model_id: str | None = None,
) -> None:
    """One row per run and one per question, in one transaction (history accumulates)."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute(
            "INSERT INTO eval_runs (run_id, started_at, scope, source, golden_file, "
            "golden_sha256, k, questions, model_id, dagster_run_id, metrics) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (result.run_id, result.started_at, scope, source, golden_file, golden_sha, result.k,
             len(result.rows), model_id, dagster_run_id, Jsonb(result.headline)),
        )  # fmt: skip
        cur.executemany(
            f"INSERT INTO eval_questions (run_id, {', '.join(_QUESTION_COLUMNS)}) "
            f"VALUES (%s, {', '.join(['%s'] * len(_QUESTION_COLUMNS))})",
            [
                (
                    result.run_id,
                    *(
                        Jsonb(r[c]) if c in {"retrieved", "expected"} else r[c]
                        for c in _QUESTION_COLUMNS
                    ),
                )
                for r in result.rows
            ],  # fmt: skip
        )


def history(
    conn: psycopg.Connection[Any], *, scope: str, golden_sha: str | None = None, limit: int = 30
) -> list[dict[str, Any]]:
    """Past runs of a scope, oldest first: run_id, started_at, source, metrics."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT run_id, started_at, source, metrics FROM (SELECT * FROM eval_runs "
            "WHERE scope = %s AND (%s::text IS NULL OR golden_sha256 = %s) "
            "ORDER BY started_at DESC LIMIT %s) recent ORDER BY started_at",
            (scope, golden_sha, golden_sha, int(limit)),
        )
        return [
            {"run_id": r[0], "started_at": r[1], "source": r[2], "metrics": r[3]}
            for r in cur.fetchall()
        ]

"""The thin query asset: answers to a list of questions (run config) from the materialized
stores, with a readable table in its metadata."""

import json
from typing import Any

import dagster as dg
from pydantic import Field

from civicsetu_pipelines.answer import QueryEngine, QuestionError
from civicsetu_pipelines.base import write_atomic
from civicsetu_pipelines.defs.assets import EAGER, OWNERS
from civicsetu_pipelines.defs.resources import (
    AnswerResource,
    CorpusResource,
    EmbeddingResource,
    PostgresResource,
)

SAMPLE_QUESTIONS = (
    "What does Section 18 say about the return of amount and compensation?",
    "What is the rate of interest payable by the promoter under the Gujarat rules?",
    "Which rule of the Chandigarh rules derives from section 44 on appeals?",
    "How do Gujarat and Chandigarh differ on the timelines for refund?",
    "What is the penalty for non-registration of a real estate project?",
    "What is the capital of France?",
)


class AnswersConfig(dg.Config):
    """The questions to answer (default: a few sample questions) and how."""

    questions: list[str] = Field(default_factory=lambda: list(SAMPLE_QUESTIONS))
    jurisdictions: list[str] = Field(default_factory=list, description="Filter; empty = all")
    as_of: str | None = Field(default=None, description="YYYY-MM-DD: the law in force then")
    top_k: int = Field(default=5, description="Units retrieved per question")


@dg.asset(
    group_name="out",
    automation_condition=EAGER,
    kinds={"python", "postgres"},
    owners=OWNERS,
    deps=["legal_chunks", "graph_edges"],
)
def answers(
    context: dg.AssetExecutionContext,
    config: AnswersConfig,
    postgres: PostgresResource,
    embedder: EmbeddingResource,
    answering: AnswerResource,
    corpus: CorpusResource,
) -> dg.MaterializeResult:
    """Answers (or explicit refusals, with the reason) to the configured questions, each with
    verbatim citations checked against the stored chunk and page. Written to
    `reports/answers.json`; the metadata holds a table of every question."""
    rows: list[dict[str, Any]] = []
    with QueryEngine(postgres.url(), embedder.query_embedder(), answering.settings()) as qe:
        for number, question in enumerate(config.questions, start=1):
            try:
                result = qe.answer(question, jurisdictions=config.jurisdictions or None,
                                   as_of=config.as_of, top_k=config.top_k)  # fmt: skip
            except QuestionError as exc:
                result = {"status": "error", "refusal_reason": None, "error": str(exc),
                          "citations": [], "confidence": None, "timings_ms": {}}  # fmt: skip
            rows.append({"n": number, "question": question, **result})
            context.log.info(f"question {number}/{len(config.questions)}: {result['status']}")
    out = corpus.reports / "answers.json"
    write_atomic(out, json.dumps(rows, indent=2, default=str).encode())
    statuses = [r["status"] for r in rows]
    return dg.MaterializeResult(
        metadata={
            "questions": len(rows),
            "answered": statuses.count("answered"),
            "refused": statuses.count("refused"),
            "errors": statuses.count("error"),
            "answers": dg.MetadataValue.md(answers_table(rows)),
            "file": dg.MetadataValue.path(str(out)),
        }
    )


def _cell(text: object, limit: int = 90) -> str:
    flat = " ".join(str(text or "").split()).replace("|", "\\|")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def answers_table(rows: list[dict[str, Any]]) -> str:
    """A markdown table: question, status (reason), confidence, first citation, time."""
    lines = [
        "| # | question | status | confidence | first citation | ms |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        status = r["status"] + (f" ({r['refusal_reason']})" if r.get("refusal_reason") else "")
        first = r["citations"][0] if r.get("citations") else None
        cite = f"{first['jurisdiction']} {first['label']}, p. {first['page']}" if first else ""
        total = r.get("timings_ms", {}).get("total", "")
        lines.append(
            f"| {r['n']} | {_cell(r['question'])} | {status} | {r.get('confidence') or ''} | "
            f"{_cell(cite, 40)} | {total} |"
        )
    return "\n".join(lines)

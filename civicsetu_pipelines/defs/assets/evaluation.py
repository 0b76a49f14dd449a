"""Evaluation assets: golden-set scores per jurisdiction and over all questions (history in
Postgres), and the analyst report."""

import datetime as dt
import json
from collections.abc import Iterator, Sequence
from typing import Any

import dagster as dg

from civicsetu_pipelines.answer import QueryEngine
from civicsetu_pipelines.base import Settings
from civicsetu_pipelines.defs.assets import EAGER, OWNERS
from civicsetu_pipelines.defs.partitions import jurisdiction_partitions
from civicsetu_pipelines.defs.resources import (
    AnswerResource,
    CorpusResource,
    EmbeddingResource,
    PostgresResource,
)
from civicsetu_pipelines.evaluate import (
    GOLDEN_JSONL,
    THRESHOLDS,
    EvalResult,
    GoldenQuestion,
    by_kind_and_split,
    by_split,
    evaluate,
    golden_sha256,
    held_out,
    history,
    load_golden,
    record,
)

ALL = "ALL"


def _check_specs(asset: str) -> list[dg.AssetCheckSpec]:
    return [
        dg.AssetCheckSpec(
            f"{metric}_threshold",
            asset=asset,
            description=f"{metric} on the test half {'=' if limit == 1.0 else '≥'} {limit} "
            "(warning; the dev half is the one tuned on)",
        )
        for metric, limit in THRESHOLDS.items()
    ]


def _check_results(asset: str, result: EvalResult) -> Iterator[dg.AssetCheckResult]:
    held = held_out(result.rows)
    for metric, limit in THRESHOLDS.items():
        value = held.get(metric)
        yield dg.AssetCheckResult(
            asset_key=asset,
            check_name=f"{metric}_threshold",
            passed=value is None or value >= limit,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={"value": value if value is not None else "n/a", "threshold": limit},
        )


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _headline_md(result: EvalResult, title: str) -> str:
    """The headline of each half side by side (targets are held on test)."""
    halves = by_split(result.rows)
    lines = [f"**{title}**: {len(result.rows)} questions; targets are held on the test half, "
             "the dev half is the one tuned on", "",
             "| metric | " + " | ".join(halves) + " | target |",
             "|---|" + "---|" * (len(halves) + 1)]  # fmt: skip
    for metric in result.headline:
        cells = " | ".join(_cell(h.get(metric)) for h in halves.values())
        lines.append(f"| {metric} | {cells} | {_cell(THRESHOLDS.get(metric))} |")
    return "\n".join(lines)


def _run(
    context: dg.AssetExecutionContext,
    questions: Sequence[GoldenQuestion],
    scope: str,
    postgres: PostgresResource,
    embedder: EmbeddingResource,
    answering: AnswerResource,
) -> EvalResult:
    with (
        QueryEngine(postgres.url(), embedder.query_embedder(), answering.settings()) as engine,
        postgres.connect() as conn,
    ):
        result = evaluate(engine, conn, questions, k=5, judge=answering.settings().llm)
        record(
            conn,
            result,
            scope=scope,
            source="asset",
            golden_file=GOLDEN_JSONL.name,
            golden_sha=golden_sha256(GOLDEN_JSONL),
            dagster_run_id=context.run.run_id,
            model_id=embedder.config().model_id,
        )
    context.log.info(f"{scope}: {len(result.rows)} golden questions scored (run {result.run_id})")
    return result


@dg.asset(
    partitions_def=jurisdiction_partitions,
    group_name="evaluation",
    automation_condition=EAGER,
    kinds={"python", "postgres"},
    owners=OWNERS,
    deps=["legal_chunks", "graph_edges"],
    check_specs=_check_specs("golden_eval_scores"),
)
def golden_eval_scores(
    context: dg.AssetExecutionContext,
    postgres: PostgresResource,
    embedder: EmbeddingResource,
    answering: AnswerResource,
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
    """The golden questions of this jurisdiction (data/golden.jsonl), answered from the stores
    and scored: hit@k, recall@5/@10, MRR, nDCG@10 (ranx), citation validity, refusal
    correctness, latency and the non-LLM RAGAS metrics. One row per run and per question in
    Postgres (eval_runs, eval_questions)."""
    jurisdiction = context.partition_key
    questions = [q for q in load_golden() if q.jurisdiction == jurisdiction]
    if not questions:
        yield dg.MaterializeResult(metadata={"questions": 0})
        for metric in THRESHOLDS:
            yield dg.AssetCheckResult(check_name=f"{metric}_threshold", passed=True,
                                      severity=dg.AssetCheckSeverity.WARN,
                                      metadata={"value": "no questions"})  # fmt: skip
        return
    result = _run(context, questions, jurisdiction, postgres, embedder, answering)
    yield dg.MaterializeResult(
        metadata={
            "run_id": result.run_id,
            "questions": len(result.rows),
            **{k: v for k, v in result.headline.items() if v is not None},
            "summary": dg.MetadataValue.md(_headline_md(result, jurisdiction)),
        }
    )
    yield from _check_results("golden_eval_scores", result)


@dg.asset(
    group_name="evaluation",
    automation_condition=EAGER,
    kinds={"python", "postgres"},
    owners=OWNERS,
    deps=["legal_chunks", "graph_edges", "learned_ranker"],
    check_specs=_check_specs("golden_eval_all"),
)
def golden_eval_all(
    context: dg.AssetExecutionContext,
    postgres: PostgresResource,
    embedder: EmbeddingResource,
    answering: AnswerResource,
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
    """Every golden question (all jurisdictions, comparisons and out-of-scope ones) scored as in
    golden_eval_scores: the view the report and the trend are built from."""
    result = _run(context, load_golden(), ALL, postgres, embedder, answering)
    groups = by_kind_and_split(result.rows)
    yield dg.MaterializeResult(
        metadata={
            "run_id": result.run_id,
            "questions": len(result.rows),
            **{k: v for k, v in result.headline.items() if v is not None},
            "summary": dg.MetadataValue.md(_headline_md(result, "All golden questions")),
            "by_split": dg.MetadataValue.json(by_split(result.rows)),
            "by_query_type": dg.MetadataValue.json(groups),
        }
    )
    yield from _check_results("golden_eval_all", result)


@dg.asset(
    group_name="evaluation",
    kinds={"html"},
    owners=OWNERS,
    deps=["golden_eval_all", "state_divergences"],
    automation_condition=EAGER,
)
def eval_report(
    context: dg.AssetExecutionContext, postgres: PostgresResource, corpus: CorpusResource
) -> dg.MaterializeResult:
    """A self-contained HTML report of the latest all-questions run (heatmap of jurisdiction ×
    query type, per-metric bars, latency histogram, trend over past runs, the ten worst
    questions), a CSV of per-question rows, and a summary with a plot here."""
    from civicsetu_pipelines.evaluate import render_report

    with postgres.connect() as conn:
        past = history(conn, scope=ALL, golden_sha=golden_sha256(GOLDEN_JSONL))
        if not past:
            raise dg.Failure("No evaluation run yet: materialize golden_eval_all first")
        latest = past[-1]
        rows = _question_rows(conn, latest["run_id"])
        states = _states(conn)
    ranking_file = Settings.from_env().ranker_dir / "report.json"
    files = render_report(
        corpus.reports / "eval",
        rows=rows,
        headline=latest["metrics"],
        history=past,
        title="CivicSetu golden-set evaluation",
        generated_at=dt.datetime.now(dt.UTC).replace(microsecond=0),
        thresholds=THRESHOLDS,
        ranking=json.loads(ranking_file.read_text()) if ranking_file.exists() else None,
        states=states,
    )
    return dg.MaterializeResult(
        metadata={
            "run_id": latest["run_id"],
            "runs_in_trend": len(past),
            "html": dg.MetadataValue.path(str(files.html)),
            "csv": dg.MetadataValue.path(str(files.csv)),
            "summary": dg.MetadataValue.md(files.markdown),
            "plot": dg.MetadataValue.md(files.summary_markdown_image),
        }
    )


def _states(conn: Any) -> dict[str, Any]:
    """What each jurisdiction fixed per matter, and the divergence flags, for the report."""
    from civicsetu_pipelines.provisions import (
        load_matter_specs,
        stored_divergences,
        stored_provisions,
    )

    names = {s.key: s.name for s in load_matter_specs()}
    provisions = [{"jurisdiction": p.jurisdiction, "matter": names.get(p.matter, p.matter),
                   "value": p.value, "quote": p.quote, "label": p.label, "page": p.page}
                  for p in stored_provisions(conn)]  # fmt: skip
    flags = stored_divergences(conn)
    return {"provisions": provisions,
            "flags": [f["message"] for f in flags if f["kind"] != "unfilled"],
            "flag_keys": [{"jurisdiction": f["jurisdiction"], "matter": names.get(f["matter"])}
                          for f in flags if f["kind"] != "unfilled"]}  # fmt: skip


def _question_rows(conn: Any, run_id: str) -> list[dict[str, Any]]:
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM eval_questions WHERE run_id = %s ORDER BY question_id",
                    (run_id,))  # fmt: skip
        names = [d.name for d in cur.description or []]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

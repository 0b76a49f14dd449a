"""Evaluation assets: golden-set scores per jurisdiction and over all questions (history in
Postgres), and the analyst report."""

import dataclasses
import datetime as dt
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
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
    THRESHOLDS,
    EvalResult,
    GoldenQuestion,
    by_kind_and_split,
    by_split,
    evaluate,
    evaluation_identity,
    golden_sha256,
    held_out,
    history,
    intervals,
    load_golden,
    open_memo,
    record,
    summary,
    with_intervals,
)
from civicsetu_pipelines.store import read_changes

ALL = "ALL"
SUMMARY_FILE = "summary.json"  # <state>/reports/eval/: the eval --json structure, no rows
# the trend draws the 95% interval of each of its runs (MAX_TREND_RUNS), read from their answers
TREND_BANDS = 30
CHANGES_SHOWN = 50  # the report's "What changed": the latest recorded changes


def _check_specs(asset: str) -> list[dg.AssetCheckSpec]:
    return [
        dg.AssetCheckSpec(
            f"{metric}_threshold",
            asset=asset,
            description=f"Target: {metric} on the test half {'=' if limit == 1.0 else '≥'} "
            f"{limit}. A target not met is a warning naming the figure and its 95% interval "
            "(an open target, not broken data); the dev half is the one tuned on",
        )
        for metric, limit in THRESHOLDS.items()
    ]


def _check_results(asset: str, result: EvalResult) -> Iterator[dg.AssetCheckResult]:
    """One check per target, evaluated once over every question (after every partition has
    loaded): met, or "target not met" with the figure and its interval."""
    rows = [r for r in result.rows if r.get("split") == "test"] or result.rows
    held = with_intervals(held_out(result.rows), rows)
    for metric, limit in THRESHOLDS.items():
        value, ci = held.get(metric), held.get(f"{metric}_ci95")
        met = value is None or value >= limit
        band = f" (95% CI {ci[0]:.3f}-{ci[1]:.3f})" if ci else ""
        shown = "n/a" if value is None else f"{value:.3f}{band}"
        yield dg.AssetCheckResult(
            asset_key=asset,
            check_name=f"{metric}_threshold",
            passed=met,
            severity=dg.AssetCheckSeverity.WARN,
            description=f"target met: {metric} {shown} ≥ {limit}"
            if met
            else f"target not met: {metric} {shown} < {limit} (an open target)",
            metadata={
                "value": value if value is not None else "n/a",
                "threshold": limit,
                "ci95": dg.MetadataValue.json(ci) if ci else "n/a",
                "kind": "target",
            },  # fmt: skip
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
) -> tuple[EvalResult, dict[str, Any]]:
    """Score ``questions``; the result and its summary (:func:`~civicsetu_pipelines.evaluate.
    summary`: the identity it was measured on, the figures with their intervals)."""
    golden = Settings.from_env().golden_path
    settings = answering.settings()
    model_id = embedder.config().model_id
    with (
        QueryEngine(postgres.url(), embedder.query_embedder(), settings) as engine,
        postgres.connect() as conn,
    ):
        ranker_file = Path(settings.ranker) if settings.ranker else None
        identity = evaluation_identity(
            conn, reranker=engine.reranker, ranker_file=ranker_file, model=model_id, k=5,
            retrieval=settings.retrieval, golden_path=golden,
        )  # fmt: skip
        memo = open_memo(Settings.from_env().memo_dir / f"eval-{scope}.pkl", engine, conn,
                         model=model_id)  # fmt: skip
        result = evaluate(engine, conn, questions, k=5, judge=settings.llm, memo=memo)
        if memo is not None:
            memo.save()
            context.log.info(f"{scope}: {memo.said()} (a question is asked again only when a "
                             "jurisdiction it reads serves other rows)")  # fmt: skip
        record(
            conn,
            result,
            scope=scope,
            source="asset",
            golden_file=golden.name,
            golden_sha=golden_sha256(golden),
            dagster_run_id=context.run.run_id,
            model_id=model_id,
        )
        found = summary(result, identity=identity, model_id=model_id,
                        evidence_distances=dataclasses.asdict(engine.distances))  # fmt: skip
    context.log.info(f"{scope}: {len(result.rows)} golden questions scored (run {result.run_id}, "
                     f"identity {identity.digest})")  # fmt: skip
    return result, found


@dg.asset(
    partitions_def=jurisdiction_partitions,
    group_name="evaluation",
    automation_condition=EAGER,
    kinds={"python", "postgres"},
    owners=OWNERS,
    deps=["legal_chunks", "graph_edges"],
)
def golden_eval_scores(
    context: dg.AssetExecutionContext,
    postgres: PostgresResource,
    embedder: EmbeddingResource,
    answering: AnswerResource,
) -> dg.MaterializeResult:
    """The golden questions of this jurisdiction (the golden file: ``CIVICSETU_GOLDEN``, else
    data/golden.jsonl), answered from the stores and scored: hit@k, recall@5/@10, MRR,
    nDCG@10 (trec_eval), citation validity, refusal correctness, latency and the non-LLM RAGAS
    metrics, each with its 95% interval. One row per run and per question in Postgres
    (eval_runs, eval_questions). The targets are checked once, by golden_eval_all, after every
    partition has loaded: a jurisdiction's few questions, scored while others still load, are
    a figure, not a verdict."""
    jurisdiction = context.partition_key
    golden = Settings.from_env().golden_path
    questions = [q for q in load_golden(golden) if q.jurisdiction == jurisdiction]
    if not questions:
        return dg.MaterializeResult(metadata={"questions": 0})
    result, found = _run(context, questions, jurisdiction, postgres, embedder, answering)
    return dg.MaterializeResult(
        metadata={
            "run_id": result.run_id,
            "questions": len(result.rows),
            "identity": found["identity"]["digest"],
            **{k: v for k, v in result.headline.items() if v is not None},
            "intervals": dg.MetadataValue.json(intervals(result.rows)),
            "summary": dg.MetadataValue.md(_headline_md(result, jurisdiction)),
        }
    )


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
    corpus: CorpusResource,
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
    """Every golden question (all jurisdictions, comparisons and out-of-scope ones) scored as in
    golden_eval_scores: the view the report and the trend are built from."""
    result, found = _run(
        context, load_golden(Settings.from_env().golden_path), ALL, postgres, embedder, answering
    )
    groups = by_kind_and_split(result.rows)
    # the summary `civicsetu eval --json` prints (without the per-question rows): equal
    # identities, equal figures
    path = corpus.reports / "eval" / SUMMARY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(found, indent=1, default=str))
    yield dg.MaterializeResult(
        metadata={
            "run_id": result.run_id,
            "questions": len(result.rows),
            "identity": dg.MetadataValue.json(found["identity"]),
            "summary_json": dg.MetadataValue.path(str(path)),
            **{k: v for k, v in result.headline.items() if v is not None},
            "intervals": dg.MetadataValue.json(intervals(result.rows)),
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
        past = history(conn, scope=ALL, golden_sha=golden_sha256(Settings.from_env().golden_path))
        if not past:
            raise dg.Failure("No evaluation run yet: materialize golden_eval_all first")
        # each run's intervals over its questions: the trend's bands (the last runs only)
        past = [{**run, "intervals": intervals(_question_rows(conn, run["run_id"]))}
                if index >= len(past) - TREND_BANDS else run
                for index, run in enumerate(past)]  # fmt: skip
        latest = past[-1]
        rows = _question_rows(conn, latest["run_id"])
        # the previous run's answers: a change is marked only outside the noise
        previous_rows = _question_rows(conn, past[-2]["run_id"]) if len(past) > 1 else None
        states = _states(conn)
        changes = read_changes(conn, limit=CHANGES_SHOWN)  # "What changed", newest first
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
        changes=changes,
        previous_rows=previous_rows,
        identity=_identity(corpus, latest["run_id"]),
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


def _identity(corpus: CorpusResource, run_id: str) -> dict[str, Any] | None:
    """The identity golden_eval_all measured run ``run_id`` on (its summary.json), if that is
    the run the report shows."""
    path = corpus.reports / "eval" / SUMMARY_FILE
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return found.get("identity") if found.get("run_id") == run_id else None


def _states(conn: Any) -> dict[str, Any]:
    """What each jurisdiction fixed per matter, and the divergence flags, for the report."""
    from civicsetu_pipelines.provisions import (
        load_matter_specs,
        stored_divergences,
        stored_provisions,
    )
    from civicsetu_pipelines.store import unit_uris

    names = {s.key: s.name for s in load_matter_specs()}
    stored = stored_provisions(conn)
    uris = unit_uris(conn, [str(p.chunk_id) for p in stored if p.chunk_id])
    provisions = [{"jurisdiction": p.jurisdiction, "matter": names.get(p.matter, p.matter),
                   "value": p.value, "quote": p.quote, "label": p.label, "page": p.page,
                   "uri": uris.get(str(p.chunk_id))}
                  for p in stored]  # fmt: skip
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

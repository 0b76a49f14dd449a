"""``civicsetu ask`` and ``civicsetu eval``: questions answered from the store, and the golden
set scored."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from civicsetu_pipelines.base import Settings
from civicsetu_pipelines.cli.common import connect_store, console, out, print_json


def _require_materialized() -> None:
    """``StoreNotReady`` (one line from :func:`main`) before a question loads the model for a
    store nothing was materialized into."""
    from civicsetu_pipelines.store import connect, ensure_serving, resolve_database_url

    with connect(resolve_database_url(Settings.from_env())) as conn:
        ensure_serving(conn)


def _note_model_export() -> None:
    """Say so when this command's first question will export the model to ONNX (once)."""
    from civicsetu_pipelines.store import embedding_config_from_env, export_pending

    if export_pending(embedding_config_from_env(), Settings.from_env().models_dir):
        console.print("first use of this embedding model: exporting it to ONNX once "
                      "(torch, 15-60 s); later questions start in about a second")  # fmt: skip


def ask(
    question: Annotated[
        str,
        typer.Argument(
            help="The question, in quotes; it may name a unit by its Akoma Ntoso URI "
            "(/akn/in/act/2016/16/~sec_18), an expression URI's day its --as-of"
        ),
    ],
    jurisdiction: Annotated[
        list[str] | None,
        typer.Option("--jurisdiction", "-j", help="Only these jurisdictions (repeatable)"),
    ] = None,
    as_of: Annotated[
        str | None, typer.Option("--as-of", help="YYYY-MM-DD: the law in force on that date")
    ] = None,
    top_k: Annotated[int, typer.Option("--top-k", help="Units to retrieve (1-50)")] = 5,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    explain: Annotated[
        bool,
        typer.Option("--explain", help="Show why each unit ranked where it did (score parts)"),
    ] = False,
) -> None:
    """Answer a question from the stored corpus with verbatim citations, or refuse with the
    reason. Exit 0 for an answer or a refusal, 2 for bad input."""
    from civicsetu_pipelines.answer import QuestionError, answer

    _require_materialized()
    _note_model_export()
    try:
        result = answer(question, jurisdictions=jurisdiction, as_of=as_of, top_k=top_k)
    except QuestionError as exc:
        if as_json:
            print_json({"status": "error", "error": {"code": exc.code, "message": str(exc)}})
        else:
            console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None
    if as_json:
        print_json(result)
        return
    if result["status"] == "refused":
        out.print(f"[yellow]Refused ({result['refusal_reason']}):[/yellow] {result['answer']}")
        for rel in result.get("related", []):
            out.print(f"  related, not answering: {rel['jurisdiction']} {rel['label']} "
                      f"({rel['document']})")  # fmt: skip
    else:
        unsure = result.get("not_sure")
        if unsure:
            out.print(f"[yellow]{unsure['message']}[/yellow]")
        out.print(result["answer"], markup=False, highlight=False)
        out.print(f"\nconfidence: {result['confidence']}")
        if unsure:
            for rel in unsure["may_be_relevant"]:
                out.print(f"  may be relevant: {rel['jurisdiction']} {rel['label']} "
                          f"({rel['document']})", markup=False)  # fmt: skip
            out.print(unsure["ask_instead"], markup=False)
        for c in result["citations"]:
            role = c.get("role") or ("case law" if c.get("case_law") else "law")
            shown = "" if role == "law" else f" ({role})"
            out.print(f"[{c['n']}] {c['jurisdiction']} {c['label']}{shown}, "
                      f"{c['document_title']}, page {c['page']} - {c['source_url']}",
                      markup=False)  # fmt: skip
            if c.get("uri"):
                out.print(f"    {c['uri']}", markup=False, highlight=False, soft_wrap=True)
            if c.get("amended"):
                out.print(f"    {c['amended']['note']}", markup=False)
            if c.get("in_force_until"):
                out.print(f"    in force until {c['in_force_until']} (since amended or "
                          "repealed)", markup=False)  # fmt: skip
    if explain and result.get("retrieved"):
        ranker = str(result.get("ranker") or "deterministic")
        if ranker.startswith("learned") and "+" in ranker:
            title = (f"Ranking by the {ranker} ranker: score = sum of the parts: the hand-set "
                     "score (hand) and a learned correction (each feature times its learned "
                     "weight, and the intercept)")  # fmt: skip
        elif ranker.startswith("learned"):
            title = (f"Ranking by the {ranker} ranker: score = the probability the unit answers, "
                     "from the sum of the parts (each feature times its learned weight, and the "
                     "intercept), +1 for a unit the question names")  # fmt: skip
        else:
            title = (
                "Ranking: score = sum of the parts (authority is the prior of legal "
                "force: act > rules > regulations > orders > case law > FAQ > forms)"
            )
        table = Table(title=title)
        moved = any(r.get("moved") for r in result["retrieved"])
        columns = ["#", "unit", "authority", "score", "parts"] + (["diversity"] if moved else [])
        for column in columns:
            table.add_column(column)
        for rank, r in enumerate(result["retrieved"], start=1):
            parts = ", ".join(f"{k} {v:+.2f}" for k, v in (r.get("why") or {}).items())
            # a unit diversity placed below units that scored less: the rule, and whom it
            # gave way to
            why_here = (str(r.get("moved") or ""),) if moved else ()
            table.add_row(str(rank), f"{r['jurisdiction']} {r['label']} ({r['document']})",
                          str(r.get("authority", "")), f"{r['score']:.3f}", parts,
                          *why_here)  # fmt: skip
        out.print(table)
    out.print(f"\n{result['disclaimer']}", style="dim")
    console.print(f"{result['timings_ms']['total']:.0f} ms")


def eval_command(
    golden: Annotated[
        Path | None, typer.Option("--golden", help="A golden JSON Lines file (default: packaged)")
    ] = None,
    k: Annotated[int, typer.Option("--k", help="hit@k reported: 1, 3, 5 or 10")] = 5,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh",
            help="Ask every question again (by default a question whose jurisdictions serve "
            "the rows they served when it was last asked, with the same ranking and code, "
            "keeps that answer)",
        ),
    ] = False,
) -> None:
    """Score a golden file against the current stores; prints the headline metrics (per-question
    rows with --json) and records the run in Postgres. Exit 0 when it ran, whatever the scores.
    Only the questions that read a jurisdiction whose rows changed are asked again (--fresh:
    all)."""
    from civicsetu_pipelines.answer import (
        QueryEngine,
        default_query_embedder,
        settings_from_env,
    )
    from civicsetu_pipelines.evaluate import (
        THRESHOLDS,
        GoldenError,
        by_kind_and_split,
        evaluate,
        evaluation_identity,
        golden_sha256,
        in_test_half,
        load_golden,
        open_memo,
        record,
        summary,
    )
    from civicsetu_pipelines.store import embedding_config_from_env, resolve_database_url

    if k not in (1, 3, 5, 10):
        console.print("[red]--k must be 1, 3, 5 or 10[/red]")
        raise typer.Exit(2)
    path = golden or Settings.from_env().golden_path
    try:
        questions = load_golden(path)
    except GoldenError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None
    url = resolve_database_url(Settings.from_env())
    _require_materialized()
    _note_model_export()
    with (
        console.status(f"answering {len(questions)} golden questions ..."),
        QueryEngine(url, default_query_embedder(), settings_from_env()) as engine,
        connect_store() as conn,
    ):
        model_id = embedding_config_from_env().model_id
        identity = evaluation_identity(
            conn, reranker=engine.reranker, ranker_file=Settings.from_env().ranker_path,
            model=model_id, k=k, retrieval=engine.settings.retrieval, golden_path=path,
        )  # fmt: skip
        memo = None if fresh else open_memo(Settings.from_env().memo_dir / "eval-ALL.pkl",
                                            engine, conn, model=model_id)  # fmt: skip
        result = evaluate(engine, conn, questions, k=k, judge=engine.settings.llm, memo=memo)
        if memo is not None:
            memo.save()
            console.print(f"golden questions: {memo.said()} (--fresh asks every one again)")
        record(conn, result, scope="ALL", source="cli", golden_file=path.name,
               golden_sha=golden_sha256(path), model_id=model_id)  # fmt: skip
        distances = engine.distances
    found = summary(result, identity=identity, model_id=model_id,
                    evidence_distances=dataclasses.asdict(distances))  # fmt: skip
    splits = found["by_split"]
    kinds = by_kind_and_split(result.rows)
    displaced = found["diversity_displaced"]  # the test half's ids left out
    if as_json:
        rows = [
            {"id": r["question_id"], "split": r["split"], "phrasing": r["phrasing"],
             "query_type": r["query_type"], f"hit_at_{k}": r[f"hit_at_{k}"],
             "hit_at_5": r["hit_at_5"], "reciprocal_rank": r["reciprocal_rank"],
             "governing_rr": r["governing_rr"], "retrieved": r["retrieved"],
             "governing": r["governing"], "governing_placement": r["governing_placement"],
             "status": r["status"],
             "refusal_correct": r["refusal_correct"],
             "citation_validity": r["citation_validity"], "latency_ms": r["latency_ms"],
             "confidence": r["confidence"]}
            for r in result.rows
            if not in_test_half(r)  # the test half: its aggregates only
        ]  # fmt: skip
        hidden = len(result.rows) - len(rows)
        print_json({**found, "questions": rows, "test_questions_not_listed": hidden})
        return
    halves = list(splits)
    table = Table(title=f"Golden evaluation: {len(result.rows)} questions from {path.name} "
                  "(targets are held on test; dev is the half tuned on)")  # fmt: skip
    table.add_column("metric")
    for half in halves:
        n = int(splits[half].get("questions") or 0)
        table.add_column(f"{half} ({n})", justify="right")
    table.add_column("target", justify="right")
    shown = ["governing_hit_at_1", "governing_hit_at_5", "governing_mrr",
             "plain_governing_hit_at_3", "plain_answered", "selective_precision",
             "confident_coverage", f"hit_at_{k}", "mrr", "ndcg_at_10",
             "recall_at_5", "citation_validity", "refusal_correctness", "context_precision",
             "context_recall", "answer_similarity", "latency_p50_ms",
             "latency_p95_ms"]  # fmt: skip
    for metric in shown:
        cells = []
        for half in halves:
            value = splits[half].get(metric)
            if metric == f"hit_at_{k}":
                value = _mean_of([r for r in result.rows if half == "all" or r["split"] == half],
                                 metric)  # fmt: skip
            ci = splits[half].get(f"{metric}_ci95")
            band = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci and metric != f"hit_at_{k}" else ""
            cells.append("n/a" if value is None else f"{value:.3f}{band}")
        target = THRESHOLDS.get(metric)
        table.add_row(metric, *cells, "" if target is None else f"{target:g}")
    out.print(table)
    if displaced["count"] is not None:  # the hit@5 the diversity cap cost, not the ranking
        which = f" ({', '.join(displaced['questions'])})" if displaced["questions"] else ""
        count, scored = int(displaced["count"]), displaced["scored"]
        out.print(f"diversity moved the governing provision out of the top {displaced['k']}: "
                  f"{count} of {scored} questions{which}")  # fmt: skip
    out.print("[low, high]: the 95% bootstrap interval over the questions", markup=False)
    ident = found["identity"]
    out.print(f"identity {ident['digest']}: {ident['documents']} documents, {ident['units']} "
              f"units served (store {ident['store'][:12]}), ranker {ident['ranker']}, k {k}, "
              f"golden {ident['golden_file']} ({ident['golden'][:12]})")  # fmt: skip
    out.print(f"model {model_id}")
    out.print(f"evidence distances: answer {distances.answer}, near {distances.near}, domain "
              f"{distances.domain}")  # fmt: skip
    per_kind = Table(title="By question type (governing provision ranked; refusals)")
    per_kind.add_column("question type")
    for half in halves[:-1] or halves:
        per_kind.add_column(f"{half}: n", justify="right")
        per_kind.add_column(f"{half}: gov hit@5", justify="right")
        per_kind.add_column(f"{half}: gov MRR", justify="right")
        per_kind.add_column(f"{half}: refusal ok", justify="right")
    for kind, groups in kinds.items():
        cells = []
        for half in halves[:-1] or halves:
            g = groups.get(half, {})
            cells += [str(int(g.get("questions") or 0))] + [
                "–" if g.get(m) is None else f"{g[m]:.2f}"
                for m in ("governing_hit_at_5", "governing_mrr", "refusal_correctness")
            ]
        per_kind.add_row(kind, *cells)
    out.print(per_kind)
    console.print(f"recorded as run {result.run_id}")


def _mean_of(rows: list[dict[str, Any]], metric: str) -> float | None:
    values = [float(r[metric]) for r in rows if r.get(metric) is not None]
    return sum(values) / len(values) if values else None

"""The ``civicsetu`` command line."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from civicsetu_pipelines.base import REPO_ROOT, Settings, process_alive

app = typer.Typer(
    help="CivicSetu: RERA gazettes to a cited legal knowledge base.", no_args_is_help=True
)
db_app = typer.Typer(help="The embedded Postgres (or the external one in CIVICSETU_DATABASE_URL).")
app.add_typer(db_app, name="db")
graph_app = typer.Typer(help="The legal graph: cross-references and rule-to-Act derivation.")
app.add_typer(graph_app, name="graph")
documents_app = typer.Typer(help="The registered documents: add your own, list, remove.")
app.add_typer(documents_app, name="documents")
workers_app = typer.Typer(
    help="Celery workers (and their Redis broker) for `materialize --executor celery`."
)
app.add_typer(workers_app, name="workers")
console = Console(stderr=True)
out = Console(width=max(Console().width, 120))


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


@db_app.command("start")
def db_start() -> None:
    """Start the embedded Postgres (idempotent) and apply migrations."""
    from civicsetu_pipelines.store import (
        apply_migrations,
        redact_url,
        resolve_database_url,
    )

    url = resolve_database_url(Settings.from_env())
    applied = apply_migrations(url)
    console.print(
        f"Postgres ready at {redact_url(url)}; migrations applied now: {applied or 'none'}"
    )


@db_app.command("stop")
def db_stop() -> None:
    """Stop the embedded Postgres cleanly."""
    from civicsetu_pipelines.store import EmbeddedPostgres

    settings = Settings.from_env()
    if settings.database_url:
        console.print("CIVICSETU_DATABASE_URL is set: the external server is not ours to stop.")
        return
    stopped = EmbeddedPostgres.from_settings(settings).stop()
    console.print("stopped" if stopped else "not running")


@db_app.command("status")
def db_status(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Show whether the embedded Postgres is running."""
    from civicsetu_pipelines.store import EmbeddedPostgres

    settings = Settings.from_env()
    if settings.database_url:
        from civicsetu_pipelines.store import redact_url

        status: dict[str, Any] = {"external": True, "url": redact_url(settings.database_url)}
    else:
        status = EmbeddedPostgres.from_settings(settings).status()
    if as_json:
        _print_json(status)
    else:
        for key, value in status.items():
            out.print(f"{key}: {value}")
    raise typer.Exit(0 if status.get("running", True) else 3)


@db_app.command("url")
def db_url() -> None:
    """Print the database URL (starting the embedded server if needed)."""
    from civicsetu_pipelines.store import resolve_database_url

    out.print(resolve_database_url(Settings.from_env()), soft_wrap=True)


@app.command()
def materialize(
    jurisdiction: Annotated[
        list[str] | None,
        typer.Option("--jurisdiction", "-j", help="Partition(s) to run; default: all"),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Run even jurisdictions whose inputs are unchanged")
    ] = False,
    executor: Annotated[
        str,
        typer.Option(
            help="in_process: every step in this process; celery: the steps on the workers of "
            "`civicsetu workers start` (or of CIVICSETU_CELERY_BROKER_URL)"
        ),
    ] = "in_process",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON record per jurisdiction")
    ] = False,
) -> None:
    """Materialize every asset for the given jurisdictions through the Dagster instance.

    A jurisdiction whose inputs (documents, registry, code, settings) are unchanged since its
    last successful run is reported up to date and skipped, unless --force."""
    from civicsetu_pipelines.defs import build_definitions
    from civicsetu_pipelines.defs.resources import warm_up_embedder
    from civicsetu_pipelines.operate import (
        fail_orphaned_runs,
        open_instance,
        prepare_dagster_home,
        run_job,
        run_partitions,
    )

    if executor not in ("in_process", "celery"):
        raise typer.BadParameter(f"--executor must be in_process or celery, not {executor!r}")
    settings = Settings.from_env()
    home = prepare_dagster_home(settings)
    wanted = _wanted_jurisdictions(jurisdiction)
    definitions = build_definitions(settings)
    remote = None
    if executor == "celery":
        from civicsetu_pipelines.operate import celery_remote

        remote = celery_remote(settings)  # the broker answers and a worker listens, or an error

    @functools.cache
    def stored() -> frozenset[str]:
        """Jurisdictions with current rows in the store (read once, on first need)."""
        return frozenset(r["jurisdiction"] for r in _read_stats()[1] if r["current_rows"])

    def has_rows(name: str) -> bool:
        return name in stored()

    total = len(wanted)
    with open_instance() as instance, console.status("checking inputs ...") as status:
        for run_id, why in fail_orphaned_runs(instance):
            console.print(f"[yellow]run {run_id} marked failed: {why}[/yellow]")
        outcomes = run_partitions(
            instance,
            definitions.resolve_job_def("ingest_job"),
            wanted,
            force=force,
            has_rows=has_rows,
            before=lambda i, name: status.update(f"[{i}/{total}] materializing {name} ..."),
            warm_up=None if remote else warm_up_embedder,
            remote=remote,
        )
    if as_json:
        _print_json([
            {"jurisdiction": o.jurisdiction, "status": o.status, "run_id": o.run_id,
             "executor": o.executor, "workers": o.workers, "seconds": round(o.seconds, 2),
             "error": o.error,
             "failed_checks": [{"asset": a, "check": c, "severity": v}
                               for a, c, v in o.failed_checks]}
            for o in outcomes
        ])  # fmt: skip
    failures = []
    for index, outcome in enumerate(outcomes, 1):
        prefix = f"[{index}/{total}] {outcome.jurisdiction}:"
        if outcome.status == "up_to_date":
            console.print(f"{prefix} [green]up to date[/green] (inputs unchanged since its last "
                          "successful run; --force runs it anyway)")  # fmt: skip
            continue
        state = "[green]ok[/green]" if outcome.status == "ok" else "[red]FAILED[/red]"
        ran_on = f", steps on {', '.join(outcome.workers)}" if outcome.workers else ""
        console.print(f"{prefix} {state} in {outcome.seconds:.1f}s (run {outcome.run_id}{ran_on})")
        if outcome.error:
            console.print(f"    [red]{outcome.error}[/red]")
        for asset, check, severity in outcome.failed_checks:
            level = "red" if severity == "ERROR" else "yellow"
            console.print(f"    [{level}]check {asset}:{check} failed[/{level}]")
        if outcome.status == "failed":
            failures.append(outcome.jurisdiction)
    if any(o.status == "ok" for o in outcomes):
        reports = settings.state_dir / "reports"
        for job_name, what, where in (
            ("answers_job", "answering the sample questions", reports / "answers.json"),
            ("evaluation_job", "scoring the golden questions", reports / "eval" / "report.html"),
        ):
            with open_instance() as instance, console.status(f"{what} ..."):
                done = run_job(instance, definitions.resolve_job_def(job_name))
            state = "[green]ok[/green]" if done.success else "[red]FAILED[/red]"
            console.print(f"{job_name}: {state} (run {done.run_id}); see {where}")
            for evaluation in done.get_asset_check_evaluations():
                if not evaluation.passed:
                    console.print(f"    [yellow]check {evaluation.asset_key.to_user_string()}:"
                                  f"{evaluation.check_name} failed[/yellow]")  # fmt: skip
            if not done.success:
                failures.append(job_name)
    if not as_json:  # stdout holds the JSON alone
        _summary(wanted)
    console.print(
        f"\nDagster home: {home}\nSee the runs in the UI: `civicsetu dev` then open "
        "http://127.0.0.1:3000\nPer-document figures: `civicsetu stats --json`; units of one "
        "document: `civicsetu sections --document rera_act_2016`\nThe embedded Postgres keeps "
        "running for the UI and later commands: `civicsetu db stop` stops it."
    )
    if failures:
        console.print(f"[red]Runs failed for: {failures}[/red]")
        raise typer.Exit(1)


@app.command("backfill")
def backfill(
    jurisdiction: Annotated[
        list[str] | None,
        typer.Option("--jurisdiction", "-j", help="Jurisdictions (repeatable); default: all"),
    ] = None,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="Wait for the runs")] = True,
    timeout: Annotated[float, typer.Option(help="Seconds to wait at most")] = 7200.0,
) -> None:
    """Backfill ingest_job over all jurisdictions or the chosen ones, through the Dagster daemon
    (the same as a backfill launched from the UI): one queued run per partition, launched by the
    daemon under the run queue's limits. Exit 0 when every run succeeded, 1 when one failed,
    3 on timeout."""
    import time

    from civicsetu_pipelines.operate import (
        backfill_runs,
        daemon_alive,
        open_instance,
        prepare_dagster_home,
    )

    settings = Settings.from_env()
    home = prepare_dagster_home(settings)
    wanted = _wanted_jurisdictions(jurisdiction)
    cmd = [_bin("dagster"), "job", "backfill", "-w", str(REPO_ROOT / "workspace.yaml"), "-j",
           "ingest_job", "--partitions", ",".join(wanted), "--noprompt"]  # fmt: skip
    proc = subprocess.run(cmd, cwd=home, capture_output=True, text=True)
    found = re.search(r"Launched backfill job `([^`]+)`", proc.stdout)
    if proc.returncode != 0 or not found:
        console.print(f"[red]The backfill was not launched:[/red] {proc.stderr.strip()[-800:]}")
        raise typer.Exit(1)
    backfill_id = found.group(1)
    console.print(f"backfill {backfill_id}: {len(wanted)} partition(s) {wanted} queued")
    with open_instance() as instance:
        if not daemon_alive(instance):
            console.print("[yellow]No Dagster daemon is running: the runs wait in the queue "
                          "until one starts (`civicsetu dev`).[/yellow]")  # fmt: skip
        if not wait:
            return
        deadline = time.monotonic() + timeout
        with console.status("waiting for the runs ...") as status:
            while True:
                runs = backfill_runs(instance, backfill_id)
                done = [r for r in runs if r.finished]
                status.update(f"{len(done)}/{len(runs)} runs finished ...")
                if runs and len(done) == len(runs):
                    break
                if time.monotonic() > deadline:
                    console.print(f"[red]Timed out after {timeout:.0f}s[/red]")
                    raise typer.Exit(3)
                time.sleep(2)
    failed = [r for r in runs if not r.succeeded]
    for run in runs:
        state = "[green]ok[/green]" if run.succeeded else f"[red]{run.status}[/red]"
        console.print(f"  {run.partition}: {state} (run {run.run_id})")
    if failed:
        raise typer.Exit(1)


def _wanted_jurisdictions(jurisdiction: list[str] | None) -> list[str]:
    """The jurisdictions asked for (all by default; codes, ISO codes or aliases); unknown ones,
    or ones without documents, exit 2, naming the known."""
    from civicsetu_pipelines.base import UnknownJurisdictionError, jurisdiction_code
    from civicsetu_pipelines.ingest import load_registry

    known = load_registry().jurisdictions()
    if not jurisdiction:
        return known
    wanted = []
    for name in jurisdiction:
        try:
            code = jurisdiction_code(name)
        except UnknownJurisdictionError as exc:
            console.print(f"[red]{exc}[/red]")
            raise typer.Exit(2) from None
        if code not in known:
            console.print(f"[red]{code} has no registered documents (add one with `civicsetu "
                          f"documents add`); with documents: {', '.join(known)}[/red]")  # fmt: skip
            raise typer.Exit(2)
        wanted.append(code)
    return wanted


def _bin(name: str) -> str:
    """The ``name`` command (``dagster``, ``dg``) of this environment."""
    return os.path.join(os.path.dirname(sys.executable), name)


def _require_materialized() -> None:
    """``StoreNotReady`` (one line from :func:`main`) before a question loads the model for a
    store nothing was materialized into."""
    from civicsetu_pipelines.store import connect, ensure_serving, resolve_database_url

    with connect(resolve_database_url(Settings.from_env())) as conn:
        ensure_serving(conn)


def _note_model_export() -> None:
    """Say so when this command's first question will export the model to ONNX (once)."""
    from civicsetu_pipelines.store import embedding_config_from_env, export_pending

    if export_pending(embedding_config_from_env(), Settings.from_env().state_dir / "models"):
        console.print("first use of this embedding model: exporting it to ONNX once "
                      "(torch, 15-60 s); later questions start in about a second")  # fmt: skip


@app.command("ask")
def ask(
    question: Annotated[str, typer.Argument(help="The question, in quotes")],
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
            _print_json({"status": "error", "error": {"code": exc.code, "message": str(exc)}})
        else:
            console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None
    if as_json:
        _print_json(result)
        return
    if result["status"] == "refused":
        out.print(f"[yellow]Refused ({result['refusal_reason']}):[/yellow] {result['answer']}")
        for rel in result.get("related", []):
            out.print(f"  related, not answering: {rel['jurisdiction']} {rel['label']} "
                      f"({rel['document']})")  # fmt: skip
    else:
        out.print(result["answer"], markup=False, highlight=False)
        out.print(f"\nconfidence: {result['confidence']}")
        for c in result["citations"]:
            role = c.get("role") or ("case law" if c.get("case_law") else "law")
            shown = "" if role == "law" else f" ({role})"
            out.print(f"[{c['n']}] {c['jurisdiction']} {c['label']}{shown}, "
                      f"{c['document_title']}, page {c['page']} - {c['source_url']}",
                      markup=False)  # fmt: skip
    if explain and result.get("retrieved"):
        table = Table(
            title="Ranking: score = sum of the parts (authority is the prior of legal "
            "force: act > rules > regulations > orders > case law > FAQ > forms)"
        )
        for column in ("#", "unit", "authority", "score", "parts"):
            table.add_column(column)
        for rank, r in enumerate(result["retrieved"], start=1):
            parts = ", ".join(f"{k} {v:+.2f}" for k, v in (r.get("why") or {}).items())
            table.add_row(str(rank), f"{r['jurisdiction']} {r['label']} ({r['document']})",
                          str(r.get("authority", "")), f"{r['score']:.3f}", parts)  # fmt: skip
        out.print(table)
    out.print(f"\n{result['disclaimer']}", style="dim")
    console.print(f"{result['timings_ms']['total']:.0f} ms")


@app.command("eval")
def eval_command(
    golden: Annotated[
        Path | None, typer.Option("--golden", help="A golden JSON Lines file (default: packaged)")
    ] = None,
    k: Annotated[int, typer.Option("--k", help="hit@k reported: 1, 3, 5 or 10")] = 5,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Score a golden file against the current stores; prints the headline metrics (per-question
    rows with --json) and records the run in Postgres. Exit 0 when it ran, whatever the scores."""
    from civicsetu_pipelines.answer import (
        QueryEngine,
        default_query_embedder,
        settings_from_env,
    )
    from civicsetu_pipelines.evaluate import (
        GOLDEN_JSONL,
        THRESHOLDS,
        GoldenError,
        by_kind_and_split,
        by_split,
        evaluate,
        golden_sha256,
        load_golden,
        record,
    )
    from civicsetu_pipelines.store import embedding_config_from_env, resolve_database_url

    if k not in (1, 3, 5, 10):
        console.print("[red]--k must be 1, 3, 5 or 10[/red]")
        raise typer.Exit(2)
    path = golden or GOLDEN_JSONL
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
        _connect_store() as conn,
    ):
        result = evaluate(engine, conn, questions, k=k, judge=engine.settings.llm)
        model_id = embedding_config_from_env().model_id
        record(conn, result, scope="ALL", source="cli", golden_file=path.name,
               golden_sha=golden_sha256(path), model_id=model_id)  # fmt: skip
        distances = engine.distances
    head = result.headline
    splits = by_split(result.rows)
    kinds = by_kind_and_split(result.rows)
    if as_json:
        rows = [
            {"id": r["question_id"], "split": r["split"], "phrasing": r["phrasing"],
             "query_type": r["query_type"], f"hit_at_{k}": r[f"hit_at_{k}"],
             "hit_at_5": r["hit_at_5"], "reciprocal_rank": r["reciprocal_rank"],
             "governing_rr": r["governing_rr"], "retrieved": r["retrieved"],
             "governing": r["governing"], "status": r["status"],
             "refusal_correct": r["refusal_correct"],
             "citation_validity": r["citation_validity"], "latency_ms": r["latency_ms"]}
            for r in result.rows
        ]  # fmt: skip
        _print_json({"run_id": result.run_id, "k": k, "model_id": model_id,
                     "evidence_distances": dataclasses.asdict(distances), "headline": head,
                     "by_split": splits, "by_query_type": kinds, "questions": rows})  # fmt: skip
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
             "plain_governing_hit_at_3", "plain_answered", f"hit_at_{k}", "mrr", "ndcg_at_10",
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
            cells.append("n/a" if value is None else f"{value:.3f}")
        target = THRESHOLDS.get(metric)
        table.add_row(metric, *cells, "" if target is None else f"{target:g}")
    out.print(table)
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


def _stats_rows() -> list[dict[str, Any]]:
    return _read_stats()[0]


def _read_stats() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per-document catalog rows and per-jurisdiction store rows."""
    from civicsetu_pipelines.store import (
        apply_migrations,
        connect,
        read_stats,
        resolve_database_url,
        store_stats,
    )

    url = resolve_database_url(Settings.from_env())
    apply_migrations(url)
    with connect(url) as conn:
        return read_stats(conn), store_stats(conn)


def _summary(jurisdictions: list[str]) -> None:
    rows = [r for r in _stats_rows() if r["jurisdiction"] in jurisdictions]
    table = Table(title="Ingestion summary")
    for column in ("jurisdiction", "documents", "failed", "pages", "ocr pages", "units", "chunks",
                   "min coverage"):  # fmt: skip
        table.add_column(column)
    for name in jurisdictions:
        docs = [r for r in rows if r["jurisdiction"] == name]
        coverages = [r["coverage"] for r in docs if r["coverage"] is not None]
        table.add_row(
            name,
            str(len(docs)),
            str(sum(r["ingest_status"] == "failed" for r in docs)),
            str(sum(r["pages_ingested"] or 0 for r in docs)),
            str(sum(r["ocr_pages"] or 0 for r in docs)),
            str(sum(r["sections"] or 0 for r in docs)),
            str(sum(r["chunks"] or 0 for r in docs)),
            f"{min(coverages):.4f}" if coverages else "-",
        )
    out.print(table)
    for r in rows:
        if r["ingest_status"] == "failed":
            out.print(f"[red]{r['key']}: {r['error']}[/red]")


@app.command()
def stats(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Per document: jurisdiction, pages, OCR pages, sections, chunks, coverage; per
    jurisdiction: current, superseded and embedded rows of the store, model id, dimension."""
    rows, store = _read_stats()
    data = [
        {
            "document": r["key"],
            "jurisdiction": r["jurisdiction"],
            "doc_type": r["doc_type"],
            "status": r["status"],
            "pages": r["pages"],
            "pages_ingested": r["pages_ingested"],
            "ocr_pages": r["ocr_pages"],
            "needs_ocr_pages": r["needs_ocr_pages"],
            "sections": r["sections"],
            "chunks": r["chunks"],
            "coverage": r["coverage"],
            "ingest_status": r["ingest_status"],
            "error": r["error"],
        }
        for r in rows
    ]
    if as_json:
        _print_json({"documents": data, "store": store})
        return
    if not data:
        console.print("Nothing materialized yet: run `civicsetu materialize`.")
        return
    table = Table()
    for column in ("document", "jurisdiction", "pages", "ocr_pages", "sections", "chunks",
                   "coverage", "ingest_status"):  # fmt: skip
        table.add_column(column)
    for d in data:
        table.add_row(
            *(
                str(d[c])
                for c in (
                    "document",
                    "jurisdiction",
                    "pages",
                    "ocr_pages",
                    "sections",
                    "chunks",
                    "coverage",
                    "ingest_status",
                )
            )
        )
    out.print(table)
    if store:
        store_table = Table(title="Store (legal_chunks)")
        columns = ("jurisdiction", "current_rows", "superseded_rows", "embedded_rows", "model_id",
                   "dimension")  # fmt: skip
        for column in columns:
            store_table.add_column(column)
        for s in store:
            store_table.add_row(*(str(s[c]) for c in columns))
        out.print(store_table)


@app.command()
def inspect(
    path: Annotated[Path, typer.Argument(help="A PDF (not registered, not stored)")],
    kind: Annotated[
        str,
        typer.Option(help="auto|act|rules|regulations|faq|order|notification|circular|judgment"),
    ] = "auto",
    language: Annotated[str, typer.Option(help="eng|hin|kan: the text's language (OCR)")] = "eng",
    pages: Annotated[
        str | None, typer.Option(help="Pages to read, e.g. 42-80 or 1-3,7 (default: all)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Parse one PDF as the pipeline would, without registering it: its kind (detected, and
    why), its units (label, number, title, first and last page), coverage and every structure
    check. Exit 0 when the structure is sound, 1 when an error check fails, 2 for bad input."""
    from civicsetu_pipelines.base import DocumentError
    from civicsetu_pipelines.ingest import KINDS, inspect_pdf, parse_page_ranges

    if kind != "auto" and kind not in KINDS:
        console.print(f"[red]Unknown kind {kind!r}; one of auto, {', '.join(KINDS)}[/red]")
        raise typer.Exit(2)
    if not path.is_file():
        console.print(f"[red]No such file: {path}[/red]")
        raise typer.Exit(2)
    try:
        indexes = parse_page_ranges(pages) if pages else None
    except ValueError as exc:
        console.print(f"[red]--pages {pages!r}: {exc}[/red]")
        raise typer.Exit(2) from None
    with console.status(f"parsing {path.name} ..."):
        try:
            found = inspect_pdf(path, kind=kind, language=language, pages=indexes)
        except DocumentError as exc:
            console.print(f"[red]{exc}[/red]")
            raise typer.Exit(2) from None
    if as_json:
        _print_json(found)
    else:
        out.print(f"{path}: [bold]{found['kind']}[/bold] ({found['kind_reason']}); "
                  f"{found['pages']} pages, {found['ocr_pages']} OCR'd")  # fmt: skip
        if found["ocr_unread_pages"]:
            pages = ", ".join(str(page) for page in found["ocr_unread_pages"])
            out.print(f"[yellow]OCR left text-like ink unread on page(s) {pages}[/yellow]")
        table = Table(title=f"{len(found['units'])} units")
        for column in ("label", "title", "first_page", "last_page"):
            table.add_column(column)
        for unit in found["units"]:
            table.add_row(unit["label"], unit["title"][:80], str(unit["first_page"]),
                          str(unit["last_page"]))  # fmt: skip
        out.print(table)
        out.print(f"coverage {found['coverage']:.4f}")
        for check in found["checks"]:
            if check["passed"]:
                state = "[green]pass[/green]"
            else:
                state = (
                    "[red]FAIL[/red]" if check["severity"] == "error" else "[yellow]warn[/yellow]"
                )
            out.print(f"  {state} {check['name']}: {check['message']}")
    if not found["structure_ok"]:
        raise typer.Exit(1)


@app.command()
def sections(
    document: Annotated[str, typer.Option("--document", "-d", help="Document key")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List label, title and first page of each top-level unit of a document."""
    from civicsetu_pipelines.store import (
        apply_migrations,
        connect,
        read_sections,
        resolve_database_url,
    )

    url = resolve_database_url(Settings.from_env())
    apply_migrations(url)
    with connect(url) as conn:
        try:
            units = read_sections(conn, document)
        except KeyError:
            console.print(
                f"[red]No document {document!r} in the catalog. Materialize it first, or check "
                "the key with `civicsetu stats`.[/red]"
            )
            raise typer.Exit(2) from None
    rows = [
        {"label": u["label"], "title": u["title"], "page_start": u["page_start"]} for u in units
    ]
    if as_json:
        _print_json({"document": document, "units": rows})
        return
    table = Table(title=document)
    for column in ("label", "title", "page_start"):
        table.add_column(column)
    for r in rows:
        table.add_row(r["label"], r["title"], str(r["page_start"]))
    out.print(table)


@documents_app.command("add")
def documents_add(
    path: Annotated[Path, typer.Argument(help="The PDF to register")],
    jurisdiction: Annotated[
        str,
        typer.Option("--jurisdiction", "-j", help="Code, ISO code or name: BIHAR, IN-BR, Bihar"),
    ],  # fmt: skip
    kind: Annotated[
        str,
        typer.Option(
            "--kind", help="act, rules, regulations, faq, order, notification, circular or judgment"
        ),
    ],  # fmt: skip
    title: Annotated[str, typer.Option("--title", help="The official title")],
    key: Annotated[str | None, typer.Option(help="Document key (default: from the title)")] = None,
    effective_from: Annotated[
        str | None, typer.Option("--effective-from", help="YYYY-MM-DD (default: today)")
    ] = None,
    status: Annotated[str, typer.Option(help="in_force or draft")] = "in_force",
    pages: Annotated[str | None, typer.Option(help="Pages to ingest, e.g. 3-40,42")] = None,
    language: Annotated[str, typer.Option(help="Tesseract language: eng, hin, kan ...")] = "eng",
    source_url: Annotated[
        str | None, typer.Option("--source-url", help="Where to cite it (default: the file)")
    ] = None,
) -> None:
    """Register a PDF: copy it into the content-addressed store and add it to the user registry.
    Then `civicsetu materialize -j J` ingests it end to end."""
    import datetime as dt

    from civicsetu_pipelines.ingest import AddError, add_document

    try:
        date = dt.date.fromisoformat(effective_from) if effective_from else None
    except ValueError:
        console.print(f"[red]--effective-from {effective_from!r} is not a date YYYY-MM-DD[/red]")
        raise typer.Exit(2) from None
    if status not in {"in_force", "draft"}:
        console.print(f"[red]--status {status!r}: expected in_force or draft[/red]")
        raise typer.Exit(2)
    try:
        added = add_document(path, jurisdiction=jurisdiction, kind=kind, title=title, key=key,
                             effective_from=date, status=status, pages=pages,
                             language=language, source_url=source_url)  # fmt: skip
    except AddError as exc:
        console.print(f"[red]not added: {exc}[/red]")
        raise typer.Exit(2) from None
    spec = added.spec
    layer = "has a text layer" if added.text_layer else "is scanned (no text layer)"
    out.print(f"added {spec.key!r}: {spec.doc_type} of {spec.jurisdiction}, {added.pages} "
              f"page(s), {layer}; sha256 {spec.sha256}")  # fmt: skip
    for note in added.notes:
        out.print(f"  {note}")
    out.print(f"next: civicsetu materialize -j {spec.jurisdiction}")


@documents_app.command("list")
def documents_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Every registered document: shipped and added."""
    from civicsetu_pipelines.ingest import load_registry, user_keys

    added = user_keys()
    rows = [
        {"key": s.key, "jurisdiction": s.jurisdiction, "kind": s.doc_type, "title": s.title,
         "effective_date": s.effective_date.isoformat(), "status": str(s.status),
         "language": s.language, "origin": "added" if s.key in added else "shipped"}
        for s in load_registry().documents()
    ]  # fmt: skip
    if as_json:
        _print_json(rows)
        return
    table = Table(title=f"{len(rows)} documents")
    columns = ("key", "jurisdiction", "kind", "effective_date", "origin", "title")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(str(row[c])[:70] for c in columns))
    out.print(table)


@documents_app.command("remove")
def documents_remove(key: Annotated[str, typer.Argument(help="A key added with `add`")]) -> None:
    """Take an added document out of the registry; the next run of its jurisdiction retires its
    rows. Warns with the citations from other documents that will become unresolved."""
    from civicsetu_pipelines.graph import citations_of
    from civicsetu_pipelines.ingest import AddError, remove_document

    try:
        spec = remove_document(key)
    except AddError as exc:
        console.print(f"[red]not removed: {exc}[/red]")
        raise typer.Exit(2) from None
    out.print(f"removed {key!r} ({spec.jurisdiction}); run `civicsetu materialize -j "
              f"{spec.jurisdiction}` to retire its rows")  # fmt: skip
    try:
        with _connect_store() as conn:
            cited = citations_of(conn, key)
    except Exception as exc:  # noqa: BLE001 - the warning is best effort; say why it is missing
        console.print(f"[yellow]citations of {key!r} not checked: {exc}[/yellow]")
        return
    if cited:
        console.print(f"[yellow]warning: {len(cited)} citation(s) of {key!r} by other documents "
                      "will become unresolved:[/yellow]")  # fmt: skip
        for edge in cited:
            console.print(f"[yellow]  {edge['source_document']} {edge['source_label']} -> "
                          f"{edge['target_label']} ({edge['edge_type']})[/yellow]")  # fmt: skip


def _connect_store() -> Any:
    from civicsetu_pipelines.store import apply_migrations, connect, resolve_database_url

    url = resolve_database_url(Settings.from_env())
    apply_migrations(url)
    return connect(url)


@graph_app.command("stats")
def graph_stats_command(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Edges by type and jurisdiction."""
    from civicsetu_pipelines.graph import graph_stats

    with _connect_store() as conn:
        stats = graph_stats(conn)
    if as_json:
        _print_json(stats)
        return
    table = Table(title="Graph edges")
    for column in ("jurisdiction", "edge_type", "edges"):
        table.add_column(column)
    for row in stats["edges"]:
        table.add_row(row["jurisdiction"], row["edge_type"], str(row["edges"]))
    out.print(table)
    table = Table(title="References and derivations by document")
    columns = ("jurisdiction", "document_key", "internal_references", "unresolved",
               "unresolved_rate", "rules", "rules_derived")  # fmt: skip
    for column in columns:
        table.add_column(column)
    for row in stats["documents"]:
        table.add_row(*(str(row[c]) for c in columns))
    out.print(table)


@graph_app.command("export")
def graph_export_command(
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Directory (default: reports/neo4j_import/all)")
    ] = None,
    jurisdiction: Annotated[
        str | None, typer.Option("--jurisdiction", "-j", help="One jurisdiction (default: all)")
    ] = None,
) -> None:
    """Write the graph as CSV for `neo4j-admin database import full`, with an import.sh."""
    from civicsetu_pipelines.base import reports_dir
    from civicsetu_pipelines.graph import export_csv, read_snapshot

    target = out_dir or reports_dir(Settings.from_env().state_dir) / "neo4j_import" / "all"
    with _connect_store() as conn:
        snapshot = read_snapshot(conn, jurisdiction)
    if not snapshot.edges:
        console.print("[red]The graph is empty: materialize it first (civicsetu materialize)[/red]")
        raise typer.Exit(2)
    files = export_csv(snapshot, target)
    console.print(
        f"{len(snapshot.documents)} documents, {len(snapshot.units)} units, "
        f"{len(snapshot.edges)} edges -> {target}"
    )
    for name in sorted(files):
        console.print(f"  {files[name].name}")
    console.print(f"Load into a stopped Neo4j: cd {target} && ./import.sh")


@graph_app.command("neighbours")
def graph_neighbours(
    label: Annotated[str, typer.Argument(help='A unit label, e.g. "Rule 9" or "Section 13"')],
    jurisdiction: Annotated[str, typer.Option("--jurisdiction", "-j")],
    document: Annotated[str | None, typer.Option("--document", "-d")] = None,
    depth: Annotated[int, typer.Option(min=1, max=2)] = 1,
    direction: Annotated[str, typer.Option(help="out, in or both")] = "both",
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Edges around a unit (REFERENCES and DERIVED_FROM, depth 1 or 2)."""
    from civicsetu_pipelines.graph import neighbours

    with _connect_store() as conn:
        query = (
            "SELECT chunk_id::text, document_key FROM legal_chunks WHERE status = 'current' "
            "AND jurisdiction = %s AND label = %s"
        )
        params: list[Any] = [jurisdiction.upper(), label]
        if document:
            query += " AND document_key = %s"
            params.append(document)
        matches = conn.execute(query, params).fetchall()
        if len(matches) != 1:
            found = sorted({m[1] for m in matches})
            console.print(
                f"[red]{label!r} in {jurisdiction.upper()}: "
                + (f"in several documents {found}; pass --document" if found else "not found")
                + "[/red]"
            )
            raise typer.Exit(2)
        rows = neighbours(conn, matches[0][0], depth=depth, direction=direction)
    if as_json:
        _print_json({"label": label, "document": matches[0][1], "edges": rows})
        return
    table = Table(title=f"{label} ({matches[0][1]})")
    for column in ("edge_type", "source_label", "target_label", "evidence_phrase", "depth"):
        table.add_column(column)
    for row in rows:
        table.add_row(*(str(row[c]) for c in ("edge_type", "source_label", "target_label",
                                              "evidence_phrase", "depth")))  # fmt: skip
    out.print(table)


@workers_app.command("start")
def workers_start(
    count: Annotated[int, typer.Option("--count", "-n", help="How many worker processes")] = 2,
    detach: Annotated[
        bool,
        typer.Option("--detach", "-d", help="Run them in the background; return once they answer"),
    ] = False,
) -> None:
    """Start the embedded Redis (unless CIVICSETU_CELERY_BROKER_URL names a broker) and N Celery
    workers, each running one step at a time. In the foreground until SIGTERM, SIGINT or SIGHUP,
    which stop the workers, the Redis and the Postgres this command started, and exit 0."""
    from civicsetu_pipelines.operate import serve_workers

    settings = Settings.from_env()
    if detach:
        _start_detached(settings, count)
        return
    # The workers' Dagster instance; serve_workers refuses when workers already run here.
    with _dagster_home_for_service(settings):
        stopped_by = serve_workers(count, settings, say=console.print)
    if stopped_by:
        console.print(f"stopped by {signal.Signals(stopped_by).name}")


@contextlib.contextmanager
def _dagster_home_for_service(
    settings: Settings, keep_db: bool = False
) -> Iterator[tuple[Path, bool]]:
    """Prepare the Dagster home for a long-running service (``dev``, ``workers start``), which
    starts the embedded Postgres when it is not running; on leaving, stop that Postgres if this
    command started it (and not ``keep_db``). Yields the home and whether the Postgres will be
    stopped (not when it ran before, with ``keep_db``, or when it is an external one)."""
    from civicsetu_pipelines.operate import prepare_dagster_home
    from civicsetu_pipelines.store import EmbeddedPostgres

    embedded = None if settings.database_url else EmbeddedPostgres.from_settings(settings)
    stop_it = embedded is not None and not embedded.status()["running"] and not keep_db
    home = prepare_dagster_home(settings)
    try:
        yield home, stop_it
    finally:
        if stop_it and embedded is not None:
            embedded.stop()
            console.print("embedded Postgres stopped")


def _start_detached(settings: Settings, count: int) -> None:
    """``workers start`` in a session of its own, its output in the state dir's log; returns
    once every worker answers a ping (or fails with the log's tail)."""
    import time

    from civicsetu_pipelines.operate import log_dir, ping, read_record

    if read_record(settings) is not None:
        console.print("workers already run: `civicsetu workers status`")
        return
    log = log_dir(settings) / "workers.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "civicsetu_pipelines.cli", "workers", "start", "-n", str(count)],
            stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + 120
    with console.status(f"starting {count} worker(s) ..."):
        while True:
            record = read_record(settings)
            if record is not None and len(record.workers) == count:
                from civicsetu_pipelines.operate import broker_url

                if len(ping(broker_url(settings), timeout=1.0)) >= count:
                    break
            if not process_alive(process.pid) or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-1500:]
                console.print(f"[red]the workers did not start; {log}:[/red]\n{tail}")
                raise typer.Exit(1)
            time.sleep(0.5)
    console.print(f"{count} worker(s) running (supervisor pid {process.pid}, log {log}); "
                  "`civicsetu workers stop` stops them")  # fmt: skip


@workers_app.command("stop")
def workers_stop() -> None:
    """Stop the workers of this state directory (and the Redis and Postgres their start
    started); waits until they are gone."""
    from civicsetu_pipelines.operate import stop_workers

    record = stop_workers(Settings.from_env())
    if record is None:
        console.print("no workers run for this state directory")
        return
    console.print(f"stopped {len(record.workers)} worker(s) and their supervisor "
                  f"(pid {record.supervisor})")  # fmt: skip


@workers_app.command("status")
def workers_status(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """The supervisor, its workers and which of them answer on the broker."""
    from civicsetu_pipelines.operate import ping, read_record

    settings = Settings.from_env()
    record = read_record(settings)
    data: dict[str, Any] = {"running": record is not None, "workers": []}
    if record is not None:
        from civicsetu_pipelines.operate import broker_url

        answering = set(ping(broker_url(settings), timeout=1.0))
        data.update(supervisor=record.supervisor, broker=record.broker,
                    embedded_broker=record.embedded_broker)  # fmt: skip
        data["workers"] = [
            {"name": name, "pid": pid, "alive": process_alive(pid), "answers": name in answering}
            for name, pid in sorted(record.workers.items())
        ]
    if as_json:
        _print_json(data)
        return
    if record is None:
        out.print("no workers run for this state directory")
        return
    out.print(f"supervisor pid {record.supervisor}, broker {record.broker}"
              + (" (embedded Redis)" if record.embedded_broker else ""))  # fmt: skip
    for worker in data["workers"]:
        out.print(f"  {worker['name']}  pid {worker['pid']}  "
                  f"{'answers' if worker['answers'] else 'NOT answering'}")  # fmt: skip


# dg dev's webserver and code servers outlive SIGINT here (the daemon stops at once): SIGTERM
# follows after this long, then SIGKILL, so everything is gone well within 30 s.
DEV_STOP_GRACE_S = 8.0


@app.command()
def dev(
    port: Annotated[int, typer.Option(help="Webserver port")] = 3000,
    host: Annotated[str, typer.Option(help="Webserver host")] = "127.0.0.1",
    keep_db: Annotated[
        bool, typer.Option("--keep-db", help="Leave the embedded Postgres running on exit")
    ] = False,
) -> None:
    """Start the embedded Postgres, the Dagster webserver and the daemon together; Ctrl-C,
    SIGTERM or SIGHUP stops them all and exits 0 (the Postgres only if this command started it,
    and not with --keep-db)."""
    from civicsetu_pipelines.operate import run_until_stopped

    settings = Settings.from_env()
    # `dg dev`, Dagster's documented entry point, on the dg project of pyproject.toml ([tool.dg]).
    cmd = [_bin("dg"), "dev", "--target-path", str(REPO_ROOT), "--host", host, "--port", str(port)]
    with _dagster_home_for_service(settings, keep_db) as (home, stops_postgres):
        console.print(f"Dagster UI on http://{host}:{port}, with the daemon (Ctrl-C, SIGTERM or "
                      "SIGHUP stops both" + (" and the Postgres" if stops_postgres else "")
                      + ")")  # fmt: skip
        # The instance is DAGSTER_HOME's (the repository's deploy/dagster.yaml is a template
        # copied there). dg dev runs in a session of its own, stopped whole (webserver, daemon,
        # code servers) however this process is asked to stop. VIRTUAL_ENV: this environment
        # is the project's.
        code, stopped_by = run_until_stopped(
            cmd, cwd=home, grace=DEV_STOP_GRACE_S, env={**os.environ, "VIRTUAL_ENV": sys.prefix}
        )
    if stopped_by is not None:
        console.print(f"stopped by {signal.Signals(stopped_by).name}")
    raise typer.Exit(0 if stopped_by is not None or code == 0 else code)


def main() -> None:
    """The console entry point: expected failures print one clear line and exit 1, never a
    stack trace (bad registry, a document error, a migration edited after it was applied, a
    database that cannot be reached, a question asked of a store nothing was materialized into)."""
    import psycopg

    from civicsetu_pipelines.base import DocumentError
    from civicsetu_pipelines.ingest import RegistryError
    from civicsetu_pipelines.operate import BrokerError
    from civicsetu_pipelines.store import MigrationChecksumError, StoreNotReady

    try:
        app()
    except (
        RegistryError, DocumentError, MigrationChecksumError, BrokerError, StoreNotReady,
        psycopg.OperationalError,
    ) as exc:  # fmt: skip
        console.print(f"[red]{type(exc).__name__}: {exc}[/red]")
        sys.exit(1)


if __name__ == "__main__":
    main()

"""``civicsetu materialize`` and ``civicsetu backfill``: Dagster runs over the jurisdictions."""

from __future__ import annotations

import functools
import re
import subprocess
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from rich.table import Table

from civicsetu_pipelines.base import REPO_ROOT, Settings
from civicsetu_pipelines.cli.common import bin_path, console, out, print_json, read_all_stats


def materialize(
    jurisdiction: Annotated[
        list[str] | None,
        typer.Option("--jurisdiction", "-j", help="Partition(s) to run; default: all"),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Run even jurisdictions whose inputs are unchanged, and process every "
            "document of each (not only those that changed)",
        ),
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
    reports: Annotated[
        bool,
        typer.Option(
            "--reports/--no-reports",
            help="After the partitions, also answer the sample questions (answers_job) and score "
            "the golden questions (evaluation_job). Off by default: materialize ends when the "
            "changed rows are served; the reports follow their own inputs (`civicsetu eval`, "
            "or declarative automation under `civicsetu dev`)",
        ),
    ] = False,
) -> None:
    """Materialize every asset for the given jurisdictions through the Dagster instance.

    A jurisdiction whose inputs (documents, registry, code, settings) are unchanged since its
    last successful run is reported up to date and skipped, unless --force. In a jurisdiction
    that runs, only its new, changed and removed documents (with their amendment family) are
    processed; the others stay as they are served (--force: every document). With --reports,
    the answers and evaluation jobs then run over everything stored. Each step's start and a
    long step's last message are printed while the runs go on (:class:`RunWatcher`). A jurisdiction
    left without a registered document (its last one removed while the database could not be
    reached) whose rows are still served is retired instead (it has no partition to run)."""
    from civicsetu_pipelines.store import start_database_early

    settings = Settings.from_env()
    start_database_early(settings)  # a cold start's wait overlaps the imports below
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
    wanted, emptied = _wanted_and_emptied(jurisdiction)
    for name in emptied:  # no partition of theirs is left to run
        _retire_emptied(name, results=not as_json)
    if not wanted:
        return
    if executor == "in_process":  # the checks' library imports on the other core meanwhile
        from civicsetu_pipelines.ingest import start_validator

        start_validator(settings.run_dir, settings.validator_idle_s)
    home = prepare_dagster_home(settings)
    definitions = build_definitions(settings)
    remote = None
    if executor == "celery":
        from civicsetu_pipelines.operate import celery_remote

        remote = celery_remote(settings)  # the broker answers and a worker listens, or an error

    @functools.cache
    def stored() -> frozenset[str]:
        """Jurisdictions with current rows in the store (read once, on first need)."""
        return frozenset(r["jurisdiction"] for r in read_all_stats()[1] if r["current_rows"])

    def has_rows(name: str) -> bool:
        return name in stored()

    total = len(wanted)
    with (
        open_instance() as instance,
        console.status("checking inputs ...") as status,
        _watching(status, definitions, instance),
    ):
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
        print_json([
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
        served = outcome.metadata.get("served_documents")
        if served:  # the documents as the unit of work: which it processed, which it left
            unserved = served.get("failed_or_set_aside") or []
            console.print(f"    documents: {served.get('processed', 0)} processed "
                          f"({len(unserved)} failed or set aside), "
                          f"{served.get('left_as_they_were', 0)} left as they were")  # fmt: skip
        if outcome.error:
            console.print(f"    [red]{outcome.error}[/red]")
        for asset, check, severity in outcome.failed_checks:
            if severity == "ERROR":  # broken data: the check blocks
                console.print(f"    [red]check {asset}:{check} failed[/red]")
            else:  # a warning: the data loaded, something in it deserves a look
                console.print(f"    [yellow]warning: {asset}:{check}[/yellow]")
        if outcome.status == "failed":
            failures.append(outcome.jurisdiction)
    if reports and not any(o.served for o in outcomes):
        console.print("[red]--reports: no jurisdiction is served, so the reports were not "
                      "run[/red]")  # fmt: skip
    elif reports:  # an up-to-date store is scored as well as a changed one
        reports_at = settings.state_dir / "reports"
        for job_name, what, where in (
            ("answers_job", "answering the sample questions", reports_at / "answers.json"),
            ("evaluation_job", "scoring the golden questions", reports_at / "eval" / "report.html"),
        ):
            with (
                open_instance() as instance,
                console.status(f"{what} ...") as status,
                _watching(status, definitions, instance),
            ):
                done = run_job(instance, definitions.resolve_job_def(job_name))
            state = "[green]ok[/green]" if done.success else "[red]FAILED[/red]"
            console.print(f"{job_name}: {state} (run {done.run_id}); see {where}")
            _say_checks(done.get_asset_check_evaluations())
            if not done.success:
                failures.append(job_name)
    if not as_json:  # stdout holds the JSON alone
        _summary(wanted)
    if not reports:
        console.print(
            "\nThe golden-set scores, the learned ranker and the report are not refreshed by "
            "materialize: `civicsetu eval` scores the store now (questions whose jurisdictions "
            "did not change are not asked again), `civicsetu materialize --reports` runs the "
            "evaluation job too, and under `civicsetu dev` declarative automation refreshes them."
        )
    console.print(
        f"\nDagster home: {home}\nSee the runs in the UI: `civicsetu dev` then open "
        "http://127.0.0.1:3000\nPer-document figures: `civicsetu stats --json`; units of one "
        "document: `civicsetu sections --document rera_act_2016`\nThe embedded Postgres keeps "
        "running for the UI and later commands: `civicsetu db stop` stops it"
        + (" and the checks' validator (which otherwise exits after "
           f"{settings.validator_idle_s:g} s without a command)."
           if executor == "in_process" and settings.validator_idle_s > 0 else ".")
    )  # fmt: skip
    if failures:
        console.print(f"[red]Runs failed for: {failures}[/red]")
        raise typer.Exit(1)


def teach_encoder(
    epochs: Annotated[int, typer.Option(min=1, help="Passes over the training pairs")] = 3,
) -> None:
    """Teach the embedding model the stored corpus's language (encoder_job, minutes).

    The questions mined from the stored corpus (titles, FAQ and judgment citations, derivations,
    lay rewrites; never the golden files) fine-tune the packaged MiniLM, which is exported to
    ONNX and judged against the packaged model on the golden dev half by vector search alone.
    The model is saved under <models>/encoders/, named by its version (its training data's
    hash); it is served only when CIVICSETU_EMBED_MODEL names its folder, and then every stored
    unit is embedded again by the next materialize."""
    from civicsetu_pipelines.defs import build_definitions
    from civicsetu_pipelines.operate import open_instance, prepare_dagster_home, run_job

    settings = Settings.from_env()
    prepare_dagster_home(settings)
    definitions = build_definitions(settings)
    with (
        open_instance() as instance,
        console.status("teaching the encoder ...") as status,
        _watching(status, definitions, instance),
    ):
        done = run_job(instance, definitions.resolve_job_def("encoder_job"),
                       {"corpus_encoder": {"epochs": epochs}})  # fmt: skip
    if not done.success:
        console.print(f"[red]encoder_job FAILED[/red] (run {done.run_id}): see `civicsetu dev`")
        raise typer.Exit(1)
    made = done.asset_materializations_for_node("corpus_encoder")[-1]
    metadata = {k: v.value for k, v in made.metadata.items()}
    for check in done.get_asset_check_evaluations():
        verdict = "[green]better[/green]" if check.passed else "[yellow]not better[/yellow]"
        console.print(f"{verdict} than the packaged model: {check.description}")
    console.print(f"encoder_job: [green]ok[/green] (run {done.run_id}), version "
                  f"{metadata['version']}, {metadata['seconds']} s\nServe it with: "
                  f"{metadata['serve']} (the next `civicsetu materialize` embeds every stored "
                  "unit with it; its refusal distances: bench/calibrate_refusals.py)")  # fmt: skip


def _watching(status: Any, definitions: Any, instance: Any) -> Any:
    """A :class:`RunWatcher` printing this process's runs' steps: on a terminal in the status
    line; elsewhere (a log, CI) as lines, each step's start and a long step's last message. It
    reads the command's own ``instance`` (opening another took ~0.5 s of the run's CPU)."""
    from civicsetu_pipelines.operate import RunWatcher

    @functools.cache
    def steps(job: str) -> int:
        try:
            return len(definitions.resolve_job_def(job).nodes_in_topological_order)
        except Exception:  # an unknown job: n without /N
            return 0

    def say(line: str, new_step: bool) -> None:
        if console.is_terminal:
            status.update(line)
        else:
            console.print(f"  {line}", highlight=False, markup=False)

    return RunWatcher(say, steps=steps, instance=instance)


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

    from civicsetu_pipelines.defs.partitions import add_jurisdiction_partitions
    from civicsetu_pipelines.operate import (
        backfill_runs,
        daemon_alive,
        open_instance,
        prepare_dagster_home,
    )

    settings = Settings.from_env()
    home = prepare_dagster_home(settings)
    wanted = _wanted_jurisdictions(jurisdiction)
    with open_instance() as instance:  # a jurisdiction added since the last run: a partition now
        add_jurisdiction_partitions(instance, wanted)
    cmd = [bin_path("dagster"), "job", "backfill", "-w", str(REPO_ROOT / "workspace.yaml"), "-j",
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


def _say_checks(evaluations: Sequence[Any]) -> None:
    """A job's checks that did not pass, grouped so a sound run reads as one: the targets not
    met yet (open targets, with their figure and interval), warnings, and checks that failed
    (broken data) apart."""
    targets, warnings, failed = [], [], []
    for evaluation in evaluations:
        if evaluation.passed:
            continue
        name = f"{evaluation.asset_key.to_user_string()}:{evaluation.check_name}"
        kind = evaluation.metadata.get("kind")
        if kind is not None and getattr(kind, "value", kind) == "target":
            targets.append(evaluation.description or name)
        elif evaluation.severity.value == "ERROR":
            failed.append(name)
        else:
            warnings.append(name)
    if targets:
        console.print(f"    open targets ({len(targets)}; the run is sound, the figure is "
                      "short of its target):")  # fmt: skip
        for target in targets:
            console.print(f"      {target}", markup=False)
    for name in warnings:
        console.print(f"    [yellow]warning: {name}[/yellow]")
    for name in failed:
        console.print(f"    [red]check {name} failed[/red]")


def _wanted_jurisdictions(jurisdiction: list[str] | None) -> list[str]:
    """The jurisdictions asked for (all by default; codes, ISO codes or aliases); unknown ones,
    or ones without documents, exit 2, naming the known."""
    wanted, missing = _asked(jurisdiction)
    if missing:
        _refuse(missing[0])
    return wanted


def _asked(jurisdiction: list[str] | None) -> tuple[list[str], list[str]]:
    """The codes asked for (all the registry's by default), and those of them without a
    registered document; an unknown name exits 2."""
    from civicsetu_pipelines.base import UnknownJurisdictionError, jurisdiction_code
    from civicsetu_pipelines.ingest import load_registry

    known = load_registry().jurisdictions()
    if not jurisdiction:
        return known, []
    wanted = []
    for name in jurisdiction:
        try:
            wanted.append(jurisdiction_code(name))
        except UnknownJurisdictionError as exc:
            console.print(f"[red]{exc}[/red]")
            raise typer.Exit(2) from None
    return wanted, [code for code in wanted if code not in known]


def _refuse(code: str) -> None:
    from civicsetu_pipelines.ingest import load_registry

    known = load_registry().jurisdictions()
    console.print(f"[red]{code} has no registered documents (add one with `civicsetu "
                  f"documents add`); with documents: {', '.join(known)}[/red]")  # fmt: skip
    raise typer.Exit(2)


def _wanted_and_emptied(jurisdiction: list[str] | None) -> tuple[list[str], list[str]]:
    """The jurisdictions to run (:func:`_wanted_jurisdictions`), and apart those asked for
    (every one, by default) that have no registered document left but rows still served:
    their documents were removed while the database was not reachable. No partition runs for
    them (the partitions are the registry's jurisdictions): they are retired directly. A
    jurisdiction asked for with neither documents nor rows served exits 2."""
    wanted, missing = _asked(jurisdiction)
    if jurisdiction and not missing:
        return wanted, []  # every one asked for has documents: the store is not read here
    served = set(_served_jurisdictions())
    for code in missing:
        if code not in served:
            _refuse(code)
    if jurisdiction:
        return [w for w in wanted if w not in missing], sorted(set(missing))
    return wanted, sorted(served - set(wanted))


def _served_jurisdictions() -> list[str]:
    """The jurisdictions with a document version still served (none when the store cannot be
    read: the runs then say why)."""
    from civicsetu_pipelines.cli.common import connect_store
    from civicsetu_pipelines.store import jurisdictions_served

    try:
        with connect_store() as conn:
            return jurisdictions_served(conn)
    except Exception as exc:  # noqa: BLE001 - only the retirement of emptied ones is skipped
        console.print(f"[yellow]the store could not be read: {exc}[/yellow]")
        return []


def _retire_emptied(jurisdiction: str, *, results: bool = True) -> None:
    """Retire every row a jurisdiction without a registered document still serves, in one
    transaction, and its Neo4j mirror (when configured); what was retired is printed on stdout
    (``results``), else (``--json``: stdout holds the JSON alone) on stderr."""
    from civicsetu_pipelines.cli.common import connect_store, sync_mirror
    from civicsetu_pipelines.operate import retire_jurisdiction_documents

    def say(line: str) -> None:
        (out if results else console).print(line, markup=False, highlight=False, soft_wrap=True)

    with connect_store() as conn:
        retired = retire_jurisdiction_documents(conn, jurisdiction, registered=[])
        conn.commit()
        say(
            f"{jurisdiction}: no registered documents left: {retired.summary()} "
            f"({', '.join(retired.documents) or 'none'}); nothing of it is served"
        )
        sync_mirror(conn, jurisdiction, say)


def _stats_rows() -> list[dict[str, Any]]:
    return read_all_stats()[0]


# Documents this run did not load: failed (fetch, parse) or set aside (a blocking check).
NOT_LOADED = ("failed", "set_aside")


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
            str(sum(r["ingest_status"] in NOT_LOADED for r in docs)),
            str(sum(r["pages_ingested"] or 0 for r in docs)),
            str(sum(r["ocr_pages"] or 0 for r in docs)),
            str(sum(r["sections"] or 0 for r in docs)),
            str(sum(r["chunks"] or 0 for r in docs)),
            f"{min(coverages):.4f}" if coverages else "-",
        )
    out.print(table)
    for r in rows:
        if r["ingest_status"] in NOT_LOADED:
            out.print(f"[red]{r['key']}: {r['error']}[/red]")

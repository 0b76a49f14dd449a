"""Running the ingestion job per jurisdiction through a Dagster instance, incrementally.

Shared by ``civicsetu materialize`` and the benchmarks. A jurisdiction whose input fingerprint
(:mod:`civicsetu_pipelines.operate.freshness`) matches its last successful run is skipped unless
``force``; within a run, only the documents that changed are processed (``raw_pdfs``' plan,
:mod:`civicsetu_pipelines.ingest.worklist`), every document with ``force``.
"""

from __future__ import annotations

import concurrent.futures
import functools
import multiprocessing
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from civicsetu_pipelines.base import (
    Settings,
    output_settings,
    pdf_cache_dir,
    process_alive,
)
from civicsetu_pipelines.ingest import load_registry, prefetch_parses
from civicsetu_pipelines.operate.freshness import FINGERPRINT_TAG, partition_fingerprint

QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def ingest_run_config(every_document: bool = False) -> dict[str, Any]:
    """The run config of a jurisdiction's ingest run: quiet, and, with ``every_document``, its
    ``raw_pdfs`` told to process every document, not only those that changed (``--force``)."""
    if not every_document:
        return QUIET
    return {**QUIET, "ops": {"raw_pdfs": {"config": {"every_document": True}}}}


# The host and pid of the process that orchestrates a run this package starts: a run left
# STARTED by a process that died (SIGKILL, OOM, a lost machine) is found and marked failed by
# fail_orphaned_runs.
HOST_TAG = "civicsetu/host"
PID_TAG = "civicsetu/pid"
IN_PROGRESS = (
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
)


@dataclass
class PartitionOutcome:
    jurisdiction: str
    status: str  # ok | failed | up_to_date
    seconds: float
    run_id: str | None = None
    failed_checks: list[tuple[str, str, str]] = field(default_factory=list)  # asset, check, sev
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)  # asset -> metadata
    executor: str = "in_process"
    workers: list[str] = field(default_factory=list)  # the Celery workers that ran its steps
    error: str | None = None  # why a failed run failed, as Dagster recorded it

    @property
    def served(self) -> bool:
        """Its rows are served: its run succeeded now, or earlier with the same inputs."""
        return self.status in ("ok", "up_to_date")


@dataclass(frozen=True)
class RemoteExecution:
    """Run the job's steps outside this process: the job as the workers load it again, and the
    run config that selects their executor (``workers.celery_run_config``)."""

    job: dg.ReconstructableJob
    run_config: Mapping[str, Any]
    executor: str = "celery"
    concurrency: int = 1  # runs orchestrated at once (one per worker keeps every worker busy)


def ensure_partitions(
    instance: dg.DagsterInstance,
    partitions_def: dg.PartitionsDefinition | None,
    keys: Sequence[str],
) -> list[str]:
    """Add ``keys`` the instance does not hold yet to a dynamic ``partitions_def`` (the
    jurisdictions are data: a new one needs no code reload); returns those added. Nothing for
    a static definition."""
    if not isinstance(partitions_def, dg.DynamicPartitionsDefinition) or not partitions_def.name:
        return []
    have = set(instance.get_dynamic_partitions(partitions_def.name))
    new = [k for k in dict.fromkeys(keys) if k not in have]
    if new:
        instance.add_dynamic_partitions(partitions_def.name, new)
    return new


def up_to_date(
    instance: dg.DagsterInstance, jurisdiction: str, fingerprint: str, has_rows: Callable[[], bool]
) -> bool:
    """The last run of the jurisdiction succeeded with these inputs and its rows are there."""
    runs = instance.get_runs(
        filters=dg.RunsFilter(job_name="ingest_job", tags={"dagster/partition": jurisdiction}),
        limit=1,
    )
    return (
        bool(runs)
        and runs[0].status == dg.DagsterRunStatus.SUCCESS
        and runs[0].tags.get(FINGERPRINT_TAG) == fingerprint
        and has_rows()
    )


def run_partitions(
    instance: dg.DagsterInstance,
    job: dg.JobDefinition,
    partitions: Sequence[str],
    *,
    force: bool = False,
    has_rows: Callable[[str], bool] = lambda _j: True,
    before: Callable[[int, str], None] | None = None,
    warm_up: Callable[[], object] | None = None,
    remote: RemoteExecution | None = None,
) -> list[PartitionOutcome]:
    """Run the partitioned ``job`` (the ingest job) once per partition that is not up to date.

    ``warm_up`` (the embedding model's worker, from the definitions' resource) is started before
    the first run, so the model loads while the first partition is fetched and parsed. With
    ``remote``, each run's steps execute on its executor's workers (this process orchestrates;
    it neither loads the model nor parses ahead)."""
    settings = Settings.from_env()
    registry = load_registry()
    ensure_partitions(instance, job.partitions_def, partitions)
    outcomes: list[PartitionOutcome] = []
    to_run: list[tuple[int, str, str | None]] = []
    for index, name in enumerate(partitions, 1):
        started = time.perf_counter()
        fingerprint = partition_fingerprint(
            name, registry, list(settings.mirror_dirs), output_settings(),
            pdf_store=pdf_cache_dir(settings.state_dir),
        )  # fmt: skip
        if (
            not force
            and fingerprint
            and up_to_date(instance, name, fingerprint, functools.partial(has_rows, name))
        ):
            outcomes.append(PartitionOutcome(name, "up_to_date", time.perf_counter() - started))
        else:
            to_run.append((index, name, fingerprint))
    if to_run and remote is None:
        # Overlap the slow, single-threaded preparations with the runs: the model's worker
        # process imports and loads it while the first partition is fetched, parsed and checked
        # here, and a thread parses the later partitions into the parse cache while this
        # process waits on the worker's encoding (their scans in a lane of their own).
        if warm_up is not None:
            warm_up()
        later = [spec for _, name, _ in to_run[1:] for spec in registry.documents(name)]
        threading.Thread(
            target=prefetch_parses,
            args=(later,),
            kwargs={
                "mirror_dirs": list(settings.mirror_dirs),
                "pdf_cache": pdf_cache_dir(settings.state_dir),
                "parse_cache": settings.parse_cache,
                "offline": settings.offline,
            },
            name="civicsetu-prefetch",
            daemon=True,
        ).start()
    if remote is not None and remote.concurrency > 1 and len(to_run) > 1:
        # Runs side by side, so that the workers are kept busy (a run's steps are mostly a
        # chain): each orchestrated by a process of its own (its pid in its run's tags). Not
        # threads: setting up a run reconfigures `logging`, and two at once deadlock.
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(remote.concurrency, mp_context=context) as pool:
            futures = []
            for index, name, fingerprint in to_run:
                if before is not None:
                    before(index, name)
                futures.append(pool.submit(_run_remote, remote, name, fingerprint, force))
            outcomes.extend(future.result() for future in futures)
        to_run = []
    for index, name, fingerprint in to_run:
        started = time.perf_counter()
        if before is not None:
            before(index, name)
        tags = _run_tags(fingerprint)
        if remote is None:
            result = job.execute_in_process(
                partition_key=name,
                instance=instance,
                raise_on_error=False,
                tags=tags,
                run_config=ingest_run_config(force),
            )
            outcome = _outcome(instance, name, result, started, "in_process")
        else:
            outcome = _execute_remote(instance, remote, name, tags, started, force)
        outcomes.append(outcome)
    order = {name: i for i, name in enumerate(partitions)}
    return sorted(outcomes, key=lambda o: order[o.jurisdiction])


def _run_tags(fingerprint: str | None) -> dict[str, str]:
    return {**process_tags(), **({FINGERPRINT_TAG: fingerprint} if fingerprint else {})}


def _execute_remote(
    instance: dg.DagsterInstance,
    remote: RemoteExecution,
    name: str,
    tags: dict[str, str],
    started: float,
    every_document: bool = False,
) -> PartitionOutcome:
    with dg.execute_job(
        remote.job,
        instance=instance,
        run_config={**ingest_run_config(every_document), **remote.run_config},
        tags={**tags, "dagster/partition": name},
        raise_on_error=False,
    ) as result:
        return _outcome(instance, name, result, started, remote.executor)


def _run_remote(
    remote: RemoteExecution, name: str, fingerprint: str | None, every_document: bool = False
) -> PartitionOutcome:
    """One partition's run, orchestrated by this (pool) process on the environment's instance."""
    started = time.perf_counter()
    with open_instance() as instance:
        return _execute_remote(
            instance, remote, name, _run_tags(fingerprint), started, every_document
        )


def _outcome(
    instance: dg.DagsterInstance,
    name: str,
    result: dg.ExecuteInProcessResult | dg.ExecuteJobResult,
    started: float,
    executor: str,
) -> PartitionOutcome:
    outcome = PartitionOutcome(
        name, "ok" if result.success else "failed", time.perf_counter() - started,
        result.run_id, executor=executor,
    )  # fmt: skip
    for check in result.get_asset_check_evaluations():
        if not check.passed:
            outcome.failed_checks.append(
                (check.asset_key.to_user_string(), check.check_name, check.severity.value)
            )
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization  # type: ignore[union-attr]
        outcome.metadata[mat.asset_key.to_user_string()] = {
            key: value.value for key, value in mat.metadata.items()
        }
    if executor == "celery":
        outcome.workers = celery_workers(instance, result.run_id)
    if not result.success:
        outcome.error = run_failure(instance, result.run_id)
    return outcome


CELERY_WORKER_KEY = "Celery worker"  # dagster-celery's engine event, as a step starts on a worker


def celery_workers(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    """The distinct Celery workers that executed steps of the run (from its event log)."""
    names = set()
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        data = record.dagster_event.engine_event_data if record.dagster_event else None
        value = data.metadata.get(CELERY_WORKER_KEY) if data is not None else None
        if value is not None:
            names.add(str(value.value))
    return sorted(names)


def run_failure(instance: dg.DagsterInstance, run_id: str) -> str | None:
    """The first step failure's or run failure's message of a failed run."""
    kinds = (dg.DagsterEventType.STEP_FAILURE, dg.DagsterEventType.RUN_FAILURE)
    for kind in kinds:
        for record in instance.all_logs(run_id, of_type=kind):
            event = record.dagster_event
            if event is None:
                continue
            step = f"step {event.step_key}: " if event.step_key else ""
            error = getattr(event.event_specific_data, "error", None)
            if error is None:
                return f"{step}{event.message or ''}"[:600]
            while error.cause is not None:  # the step's own exception, not Dagster's wrapper
                error = error.cause
            return f"{step}{error.message.strip()}"[:600]
    return None


def process_tags() -> dict[str, str]:
    """The tags that name this process as the one orchestrating a run."""
    return {HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid())}


def fail_orphaned_runs(instance: dg.DagsterInstance) -> list[tuple[str, str]]:
    """Mark failed every run still in progress whose orchestrating process ran on this host and
    is gone (its pid no longer runs, or runs a process started after the run). Returns (run id,
    why) of each. Runs of other hosts are left to those hosts."""
    import psutil

    host = socket.gethostname()
    marked = []
    records = instance.get_run_records(
        filters=dg.RunsFilter(statuses=list(IN_PROGRESS), tags={HOST_TAG: host})
    )
    for record in records:
        run = record.dagster_run
        pid = int(run.tags.get(PID_TAG) or 0)
        if not pid:
            continue
        began = record.start_time or record.create_timestamp.timestamp()
        try:
            reused = psutil.Process(pid).create_time() > began + 1.0
        except psutil.Error:
            reused = False
        if process_alive(pid) and not reused:
            continue
        why = (f"the process that ran it (pid {pid} on {host}) is gone: killed or crashed "
               f"while the run was {run.status.value}; marked failed by civicsetu")  # fmt: skip
        instance.report_run_failed(run, message=why)
        marked.append((run.run_id, why))
    return marked


def run_job(
    instance: dg.DagsterInstance, job: dg.JobDefinition, ops: Mapping[str, Any] | None = None
) -> dg.ExecuteInProcessResult:
    """Execute an unpartitioned job (e.g. ``answers_job``) through the instance, quietly, with
    ``ops`` (an asset's name to its config) as its run config's ops."""
    config: dict[str, Any] = {**QUIET, "ops": {k: {"config": v} for k, v in (ops or {}).items()}}
    return job.execute_in_process(
        instance=instance, raise_on_error=False, run_config=config, tags=process_tags()
    )


# A process that runs jobs in itself (``civicsetu materialize``) writes thousands of events;
# dagster-postgres opens a connection per statement by default (NullPool): 5,564 connections and
# ~29 s of a cold materialization of the seven default partitions (bench_store.py --profile).
# Pooled as the webserver pools them: one held connection per storage, a few more when busy.
POOL_OVERFLOW = 4
POOL_RECYCLE_S = 3600


def open_instance() -> dg.DagsterInstance:
    """The Dagster instance of ``DAGSTER_HOME`` (a context manager: close it when done), its
    storages' connections pooled (one held per storage, no statement timeout)."""
    instance = dg.DagsterInstance.get()
    instance.optimize_for_webserver(
        statement_timeout=0, pool_recycle=POOL_RECYCLE_S, max_overflow=POOL_OVERFLOW
    )
    return instance


def daemon_alive(instance: dg.DagsterInstance, within_s: float = 120.0) -> bool:
    """Whether a Dagster daemon has sent a heartbeat recently."""
    beats = instance.get_daemon_heartbeats()
    return any(time.time() - beat.timestamp < within_s for beat in beats.values())


@dataclass(frozen=True)
class RunState:
    """One run as the CLI reports it."""

    run_id: str
    partition: str | None
    status: str  # Dagster's run status value, e.g. SUCCESS, FAILURE, STARTED
    finished: bool

    @property
    def succeeded(self) -> bool:
        return self.status == dg.DagsterRunStatus.SUCCESS.value


def backfill_runs(instance: dg.DagsterInstance, backfill_id: str) -> list[RunState]:
    """The runs of a backfill so far, by partition."""
    runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
    states = [
        RunState(r.run_id, r.tags.get("dagster/partition"), r.status.value, r.is_finished)
        for r in runs
    ]
    return sorted(states, key=lambda s: s.partition or "")

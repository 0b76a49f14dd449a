"""``gazette_change_sensor``: re-ingest a jurisdiction when one of its PDFs or registry entries
changes.

Every minute (at most) the sensor loads the registry, fingerprints the PDFs the mirror/drop
directories hold for it and every registry entry (:mod:`civicsetu_pipelines.operate.gazette_watch`),
compares that snapshot with the one kept in its cursor and requests one ``ingest_job`` run per
affected jurisdiction:

* run key ``gazette:<JURISDICTION>:<seq>:<sha256 of the seq and the changed fingerprints>``: a
  retried tick (same cursor, same files) asks for the same key, so Dagster launches it once; a
  later change, even back to bytes seen before, gets a new ``seq`` and so a new key;
* tags ``civicsetu/trigger=gazette_change_sensor`` and ``civicsetu/changed_documents=<keys>``.

The first evaluation (empty cursor, e.g. the sensor was just turned on or its cursor reset)
records the snapshot as the baseline and requests nothing: the initial state is materialized by
running ``ingest_job`` itself (a backfill over the jurisdictions), and turning a watcher on should
not re-ingest everything. A cursor this sensor did not write is treated the same way.

Nothing raises out of an evaluation for a bad input: an unreadable or invalid registry, an
unreadable PDF or one still being copied in gives a ``SkipReason`` saying so, and the cursor is
left as it was, so the next tick compares again. A change for a jurisdiction that is not yet a
partition (a state's first document) adds its partition with the tick's result (Dagster dynamic
partitions: no code reload) and requests its run; a partition left without registered documents
is run too (the run retires what it served); a change in a jurisdiction that is neither is
reported and not requested.

Online checks (``online=True``, off by default) add the ETag/Last-Modified of a HEAD request to
each download URL, at most every ``online_interval_seconds``; a URL that does not answer keeps
its last fingerprint.

The sensor starts STOPPED, like Dagster's default: it launches heavy runs, so users turn it on in
the UI (Automation) or with ``dagster sensor start gazette_change_sensor``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import dagster as dg
import httpx

from civicsetu_pipelines.base import Settings
from civicsetu_pipelines.defs.partitions import JURISDICTION_PARTITIONS, jurisdiction_partitions
from civicsetu_pipelines.ingest import RegistryError, load_registry, user_registry_path
from civicsetu_pipelines.operate import (
    PDF_PREFIX,
    REMOTE_PREFIX,
    CursorError,
    FileInFluxError,
    SourceError,
    WatchLimits,
    WatchState,
    change_digest,
    changed_entries,
    changed_partitions,
    fail_orphaned_runs,
    http_client,
    load_sources,
    remote_snapshot,
    snapshot,
    watch_once,
)

SENSOR_NAME = "gazette_change_sensor"
MINIMUM_INTERVAL_SECONDS = 60
# PDFs a sensor tick downloads from the watched sources at most (the rest wait for the next
# tick): a tick downloads and reads each, and must end well within Dagster's sensor timeout.
SOURCE_DOWNLOADS_PER_TICK = 5
TRIGGER_TAG = "civicsetu/trigger"
CHANGED_TAG = "civicsetu/changed_documents"
SEQ_TAG = "civicsetu/gazette_seq"


def gazette_run_key(jurisdiction: str, seq: int, digest: str) -> str:
    return f"gazette:{jurisdiction}:{seq}:{digest}"


def build_gazette_sensor(
    job: dg.UnresolvedAssetJobDefinition | dg.JobDefinition,
    *,
    mirror_dirs: Sequence[Path | str],
    registry_files: Sequence[Path | str],
    online: bool = False,
    online_interval_seconds: float = 3600.0,
    client_factory: Callable[[], httpx.Client] = http_client,
    partition_keys: Sequence[str] | None = None,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    state_dir: Path | str | None = None,
    watch_limits: WatchLimits | None = None,
) -> dg.SensorDefinition:
    """The ``gazette_change_sensor`` for ``job`` (``ingest_job``).

    ``mirror_dirs``: the directories to watch, in fetch order (``Settings.mirror_dirs``);
    ``registry_files``: every registry file to load (see ``gazette_watch.registry_files_for``);
    ``partition_keys``: the partitions taken as held (for tests; default: the instance's); every
    jurisdiction the registry holds at a tick is one, those not held added with its result;
    ``client_factory``: the HTTP client for online checks (closed after each use);
    ``state_dir``: the state directory whose user registry (``documents add``) is watched too
    and whose watched sources (``civicsetu sources add``) each tick runs first, exactly as
    ``civicsetu watch --once`` (new PDFs identified and registered; the registry's change then
    requests their runs); None: neither.
    """
    mirrors = tuple(Path(p) for p in mirror_dirs)
    files = tuple(Path(p) for p in registry_files)
    user = user_registry_path(Path(state_dir)) if state_dir is not None else None
    limits = watch_limits or WatchLimits(max_downloads=SOURCE_DOWNLOADS_PER_TICK)

    def watched_sources(context: dg.SensorEvaluationContext) -> str:
        """One tick of the watched sources (none: nothing), what it registered, as a note."""
        if state_dir is None or not load_sources(Path(state_dir)):
            return ""
        try:
            tick = watch_once(Settings.from_env(), limits=limits)
        except (SourceError, OSError, httpx.HTTPError) as exc:
            context.log.warning(f"{SENSOR_NAME}: the watched sources were not read: {exc}")
            return f" (sources not read: {exc})"
        for item in (*tick.failed, *tick.pending):
            context.log.warning(f"{SENSOR_NAME}: {item}")
        if tick.registered:
            context.log.info(f"{SENSOR_NAME}: registered {len(tick.registered)} new document(s) "
                             f"from the watched sources: {', '.join(tick.changed)}")  # fmt: skip
        return ""

    fixed = frozenset(partition_keys) if partition_keys is not None else None

    def evaluate(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        note = ""
        try:
            state = WatchState.loads(context.cursor)
        except CursorError as exc:
            state = None
            note = f" (the stored cursor was not readable and was replaced: {exc})"
            context.log.warning(f"{SENSOR_NAME}: {exc}; recording a new baseline")

        if state is not None:  # after the baseline: what the sources register is requested
            note += watched_sources(context)
        watched = files + ((user,) if user is not None and user.is_file() else ())
        try:
            registry = load_registry(include_seed=False, paths=watched)
            current = snapshot(registry, mirrors, watched)
        except RegistryError as exc:
            return dg.SkipReason(
                f"The document registry cannot be loaded, so nothing was compared (fix it; the "
                f"next tick compares again): {exc}"
            )
        except FileInFluxError as exc:
            return dg.SkipReason(
                f"A watched file is still being written; looking again at the next tick: {exc}"
            )
        except OSError as exc:
            return dg.SkipReason(f"A watched file cannot be read, so nothing was compared: {exc}")

        previous = state.snapshot if state else {}
        remote_at = state.remote_checked_at if state else 0.0
        if online:
            known_remote = {k: v for k, v in previous.items() if k.startswith(REMOTE_PREFIX)}
            now = time.time()
            current.update(known_remote)  # kept when not due, or when the check fails
            if now - remote_at >= online_interval_seconds:
                try:
                    with client_factory() as client:
                        current.update(remote_snapshot(registry, client, known_remote))
                    remote_at = now
                except (httpx.HTTPError, OSError) as exc:
                    context.log.warning(f"{SENSOR_NAME}: online check skipped: {exc}")

        documents = len(registry.specs)
        mirrored = sum(1 for k in current if k.startswith(PDF_PREFIX))
        if state is None:
            baseline = WatchState(snapshot=current, seq=0, remote_checked_at=remote_at)
            return dg.SensorResult(
                skip_reason=f"Recorded the baseline: {documents} registry documents, "
                f"{mirrored} PDF(s) in the mirror directories. No runs requested: the initial "
                f"state is materialized by ingest_job itself; later changes are requested"
                f"{note}.",
                cursor=baseline.dumps(),
            )

        if not changed_entries(previous, current):
            unchanged = WatchState(snapshot=previous, seq=state.seq, remote_checked_at=remote_at)
            return dg.SensorResult(
                skip_reason=f"No change in {documents} registry documents ({mirrored} mirrored).",
                cursor=unchanged.dumps(),
            )

        seq = state.seq + 1
        new_cursor = WatchState(snapshot=current, seq=seq, remote_checked_at=remote_at).dumps()
        affected = changed_partitions(previous, current, registry)
        # the jurisdictions are data: every one with a registered document is a partition (a
        # new one is added with this tick's result, no code reload); a partition left without
        # documents still runs (the run retires what it served); a jurisdiction that is
        # neither has nothing to run
        registered = frozenset(registry.jurisdictions())
        have = (
            set(context.instance.get_dynamic_partitions(JURISDICTION_PARTITIONS))
            if fixed is None
            else set(fixed)
        )
        known = registered | have
        new_partitions = sorted(j for j in affected if j in registered and j not in have)
        unknown = {j: keys for j, keys in affected.items() if j not in known}
        for jurisdiction, keys in unknown.items():
            context.log.warning(
                f"{SENSOR_NAME}: {', '.join(keys)} changed in {jurisdiction}, which is neither a "
                f"partition nor holds a registered document: nothing to run"
            )
        for jurisdiction in new_partitions:
            context.log.info(f"{SENSOR_NAME}: {jurisdiction} is a new partition")
        requests = [
            dg.RunRequest(
                run_key=gazette_run_key(
                    jurisdiction, seq, change_digest(previous, current, keys, seq)
                ),
                partition_key=jurisdiction,
                tags={TRIGGER_TAG: SENSOR_NAME, CHANGED_TAG: ",".join(keys), SEQ_TAG: str(seq)},
            )
            for jurisdiction, keys in affected.items()
            if jurisdiction in known
        ]
        for request in requests:
            context.log.info(
                f"{SENSOR_NAME}: {request.partition_key}: {request.tags[CHANGED_TAG]} changed"
            )
        if not requests:
            reason = "Only registry bookkeeping changed (no document entry or PDF)"
            if unknown:
                reason = (
                    f"Changes only in jurisdictions that are neither partitions nor hold a "
                    f"registered document ({', '.join(unknown)}): nothing to run"
                )
            return dg.SensorResult(skip_reason=reason + ".", cursor=new_cursor)
        return dg.SensorResult(
            run_requests=requests,
            cursor=new_cursor,
            dynamic_partitions_requests=(
                [jurisdiction_partitions.build_add_request(new_partitions)]
                if new_partitions
                else []
            ),
        )

    @dg.sensor(
        name=SENSOR_NAME,
        job=job,
        minimum_interval_seconds=MINIMUM_INTERVAL_SECONDS,
        default_status=default_status,
        description="Request ingest_job for the jurisdictions whose gazette PDFs (in the mirror "
        "directories) or registry entries changed since the last tick; the first tick only "
        "records a baseline.",
    )
    def gazette_change_sensor(
        context: dg.SensorEvaluationContext,
    ) -> dg.SensorResult | dg.SkipReason:
        return evaluate(context)

    return gazette_change_sensor


ORPHANED_RUNS_SENSOR = "orphaned_runs_sensor"


def build_orphaned_runs_sensor() -> dg.SensorDefinition:
    """``orphaned_runs_sensor``: every minute, runs this host's ``civicsetu`` processes started
    and that are still in progress although their process is gone (SIGKILL, OOM) are marked
    failed, with the reason in the run's event log. Dagster's own run monitoring
    (``dagster.yaml``) cannot tell for these runs: they run in the CLI's process, not through a
    run launcher. On by default: it only reads runs and fails dead ones."""

    @dg.sensor(
        name=ORPHANED_RUNS_SENSOR,
        minimum_interval_seconds=MINIMUM_INTERVAL_SECONDS,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Marks failed the runs whose civicsetu process died (pid gone on this host)",
    )
    def orphaned_runs_sensor(context: dg.SensorEvaluationContext) -> dg.SkipReason:
        marked = fail_orphaned_runs(context.instance)
        for run_id, why in marked:
            context.log.warning(f"run {run_id}: {why}")
        if marked:
            return dg.SkipReason(f"marked {len(marked)} run(s) failed: "
                                 + ", ".join(run_id for run_id, _ in marked))  # fmt: skip
        return dg.SkipReason("no run left in progress by a dead process")

    return orphaned_runs_sensor

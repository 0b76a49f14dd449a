"""Weekly re-ingestion: one schedule per jurisdiction partition of ``ingest_job``.

Each schedule (``reingest_CENTRAL``, ``reingest_GUJARAT``, ...) requests one run of
``ingest_job`` for its own partition only.

When: every schedule uses the cron expression in ``CIVICSETU_REINGEST_CRON`` (default
``"0 3 * * 1"``: Mondays at 03:00), in the ``Asia/Kolkata`` timezone. To change it, set the
variable to any standard 5-field cron expression before starting ``dagster dev``/the daemon, e.g.
``CIVICSETU_REINGEST_CRON="30 1 * * 0"`` for Sundays at 01:30 IST, then reload the code location.
An invalid expression stops the code location from loading, with a message naming the variable.

The schedules are not staggered: they all fire at the same moment, and the run queue
(``dagster.yaml``: ``QueuedRunCoordinator``, ``max_concurrent_runs: 2``) runs them two at a time.
Staggering would mean rewriting a user-supplied cron expression, which is fragile for ranges,
lists and steps.

They start STOPPED: a re-ingestion is heavy (OCR, embeddings, database writes) and, with every
document pinned by sha256, reproduces what is already stored, so a fresh ``dagster dev`` should not
start it on its own. Turn a schedule on in the UI (Automation) or with
``dagster schedule start reingest_GUJARAT``.
"""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg

from civicsetu_pipelines.base import ENV_REINGEST_CRON, env_value
from civicsetu_pipelines.defs.partitions import (
    add_jurisdiction_partitions,
    registered_jurisdictions,
)

DEFAULT_REINGEST_CRON = "0 3 * * 1"  # Mondays, 03:00
REINGEST_TIMEZONE = "Asia/Kolkata"
SCHEDULE_PREFIX = "reingest_"
TRIGGER_TAG = "civicsetu/trigger"


def reingest_cron() -> str:
    """The cron expression of the re-ingestion schedules (``CIVICSETU_REINGEST_CRON``)."""
    return env_value(ENV_REINGEST_CRON, DEFAULT_REINGEST_CRON).strip()


def _schedule(
    job: dg.UnresolvedAssetJobDefinition | dg.JobDefinition,
    jurisdiction: str,
    cron: str,
    default_status: dg.DefaultScheduleStatus,
) -> dg.ScheduleDefinition:
    name = f"{SCHEDULE_PREFIX}{jurisdiction}"
    tags = {TRIGGER_TAG: name}

    def reingest(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
        # One run per tick: the scheduler scopes the run key to the scheduled time. The
        # partitions are dynamic: one the instance lacks yet is added first.
        add_jurisdiction_partitions(context.instance, [jurisdiction])
        return dg.RunRequest(run_key=name, partition_key=jurisdiction, tags=tags)

    try:
        return dg.schedule(
            name=name,
            cron_schedule=cron,
            job=job,
            execution_timezone=REINGEST_TIMEZONE,
            default_status=default_status,
            description=f"Re-ingest the {jurisdiction} partition of {job.name} "
            f"(cron {cron!r} in {REINGEST_TIMEZONE}; set {ENV_REINGEST_CRON} to change it)",
        )(reingest)
    except dg.DagsterInvalidDefinitionError as exc:
        raise dg.DagsterInvalidDefinitionError(
            f"{ENV_REINGEST_CRON}={cron!r} is not a valid 5-field cron expression "
            f"(example: {DEFAULT_REINGEST_CRON!r}, Mondays at 03:00 {REINGEST_TIMEZONE}): {exc}"
        ) from exc


def build_reingest_schedules(
    job: dg.UnresolvedAssetJobDefinition | dg.JobDefinition,
    *,
    jurisdictions: Sequence[str] | None = None,
    cron: str | None = None,
    default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.STOPPED,
) -> list[dg.ScheduleDefinition]:
    """One weekly schedule per partition of ``job`` (``reingest_<JURISDICTION>``).

    ``jurisdictions`` defaults to the registry's jurisdictions when the definitions load;
    ``cron`` to :func:`reingest_cron` (``CIVICSETU_REINGEST_CRON``, default ``"0 3 * * 1"``).

    ``dg.build_schedule_from_partitioned_job`` is not used: for a statically partitioned job it
    requests every partition in one tick, and for an asset job whose partitions come from its
    assets (like ``ingest_job``) it only accepts time-window partitions.
    """
    keys = list(jurisdictions) if jurisdictions is not None else registered_jurisdictions()
    cron = cron if cron is not None else reingest_cron()
    return [_schedule(job, key, cron, default_status) for key in keys]

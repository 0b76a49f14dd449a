"""The definitions' executor: Dagster's multiprocess executor by default, or its in-process one,
or dagster-celery's, chosen by run config (the launchpad, or ``civicsetu materialize
--executor celery``)::

    execution:
      config:
        celery:
          broker: redis://127.0.0.1:6390/0
          backend: redis://127.0.0.1:6390/0

``civicsetu materialize`` without ``--executor`` runs in its own process whatever this says
(``execute_in_process``).

The multiprocess default starts a run's step processes from a forkserver that has imported the
definitions and Great Expectations once (:data:`PRELOAD`): each step process is a fork of it, not
a fresh interpreter importing them again (2.5 s and 2.4 s here, paid by every step of a run
launched by the daemon or the UI). ``start_method: {spawn: {}}`` in the run config restores
Dagster's own default.
"""

from __future__ import annotations

import dagster as dg
from dagster_celery import celery_executor

# What the forkserver imports before it forks a run's step processes: the code location and the
# checks' library (imported at a step's first check otherwise).
PRELOAD = ("civicsetu_pipelines.definitions", "great_expectations")
DEFAULT_CONFIG = {
    "multiprocess": {"start_method": {"forkserver": {"preload_modules": list(PRELOAD)}}}
}

MODES: dict[str, dg.ExecutorDefinition] = {
    "multiprocess": dg.multiprocess_executor,
    "in_process": dg.in_process_executor,
    "celery": celery_executor,
}


@dg.executor(
    name="civicsetu",
    config_schema=dg.Field(
        dg.Selector(
            {mode: definition.config_schema.as_field() for mode, definition in MODES.items()}
        ),
        default_value=DEFAULT_CONFIG,
    ),
    requirements=dg.multiple_process_executor_requirements(),
)
def civicsetu_executor(init_context: dg.InitExecutorContext) -> dg.Executor:
    """Multiprocess (the default, its step processes forked from a preloaded forkserver),
    in-process, or Celery workers (``celery``: broker, backend, config_source, retries as
    dagster-celery takes them)."""
    ((mode, raw),) = init_context.executor_config.items()
    config: dict[str, object] = dict(raw)  # type: ignore[call-overload]
    definition = MODES[mode]
    inner = init_context._replace(executor_def=definition, executor_config=config)
    return definition.executor_creation_fn(inner)  # type: ignore[misc]

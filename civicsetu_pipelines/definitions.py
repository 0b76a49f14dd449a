"""Code location entry point (``workspace.yaml`` and ``[tool.dagster]`` point here)."""

import dagster as dg

from civicsetu_pipelines.defs import build_definitions

defs = build_definitions()


def ingest_job() -> dg.JobDefinition:
    """The ingest job, for ``dg.reconstructable``: a run whose steps execute in other processes
    (Celery workers) loads it again there from this module."""
    return defs.resolve_job_def("ingest_job")

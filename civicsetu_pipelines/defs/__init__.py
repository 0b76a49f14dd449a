"""Dagster definitions, assembled from the modules of this package."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from civicsetu_pipelines.base import Settings, neo4j_configured
from civicsetu_pipelines.defs.assets import (
    akn,
    answers,
    documents,
    encoder,
    evaluation,
    graph,
    ingest,
    provisions,
    ranking,
    store,
)
from civicsetu_pipelines.defs.executors import civicsetu_executor
from civicsetu_pipelines.defs.io_managers import PartitionedParquetIOManager
from civicsetu_pipelines.defs.jobs import (
    build_answers_job,
    build_encoder_job,
    build_evaluation_job,
    build_ingest_job,
)
from civicsetu_pipelines.defs.resources import default_resources
from civicsetu_pipelines.defs.schedules import build_reingest_schedules
from civicsetu_pipelines.defs.sensors import build_gazette_sensor, build_orphaned_runs_sensor
from civicsetu_pipelines.operate import registry_files_for

# The asset modules, in the order data flows through them.
ASSET_MODULES = [ingest, store, graph, akn, provisions, documents, answers, ranking, encoder,
                 evaluation]  # fmt: skip


def build_definitions(settings: Settings | None = None) -> dg.Definitions:
    settings = settings or Settings.from_env()
    resources = default_resources()
    resources["parquet_io"] = PartitionedParquetIOManager(
        base_dir=str(Path(settings.storage_dir) / "assets")
    )
    ingest_job = build_ingest_job(neo4j_enabled=neo4j_configured())
    return dg.Definitions(
        assets=dg.load_assets_from_modules(ASSET_MODULES),
        asset_checks=dg.load_asset_checks_from_modules(ASSET_MODULES),
        jobs=[ingest_job, build_answers_job(), build_evaluation_job(), build_encoder_job()],
        schedules=build_reingest_schedules(ingest_job),
        sensors=[
            build_gazette_sensor(
                ingest_job,
                mirror_dirs=settings.mirror_dirs,
                registry_files=registry_files_for(settings),
                state_dir=settings.state_dir,
            ),
            build_orphaned_runs_sensor(),
        ],
        resources=resources,
        executor=civicsetu_executor,
    )

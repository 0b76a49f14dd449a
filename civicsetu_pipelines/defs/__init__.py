"""Dagster definitions, assembled from the modules of this package."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from civicsetu_pipelines.config import Settings, neo4j_configured
from civicsetu_pipelines.defs.assets import answers, graph, ingest, store
from civicsetu_pipelines.defs.io_managers import PartitionedParquetIOManager
from civicsetu_pipelines.defs.jobs import build_answers_job, build_ingest_job
from civicsetu_pipelines.defs.resources import default_resources


def build_definitions(settings: Settings | None = None) -> dg.Definitions:
    settings = settings or Settings.from_env()
    resources = default_resources()
    resources["parquet_io"] = PartitionedParquetIOManager(
        base_dir=str(Path(settings.storage_dir) / "assets")
    )
    return dg.Definitions(
        assets=dg.load_assets_from_modules([ingest, store, graph, answers]),
        asset_checks=dg.load_asset_checks_from_modules([ingest, store, graph, answers]),
        jobs=[build_ingest_job(neo4j_enabled=neo4j_configured()), build_answers_job()],
        resources=resources,
    )

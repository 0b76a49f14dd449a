"""Jobs: the main ingestion job over every asset, partitioned by jurisdiction."""

from __future__ import annotations

import dagster as dg

from civicsetu_pipelines.defs.partitions import jurisdiction_partitions

ingest_job = dg.define_asset_job(
    "ingest_job",
    selection=dg.AssetSelection.all(),
    partitions_def=jurisdiction_partitions,
    description="Fetch, parse and chunk every registry document of a jurisdiction",
)

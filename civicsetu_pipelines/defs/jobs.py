"""Jobs: the main ingestion job over every asset, partitioned by jurisdiction."""

from __future__ import annotations

import dagster as dg

ingest_job = dg.define_asset_job(
    "ingest_job",
    selection=dg.AssetSelection.all(),
    description="Fetch, parse and chunk every registry document of a jurisdiction",
)

"""Jobs: the main ingestion job over every asset, partitioned by jurisdiction."""

from __future__ import annotations

import dagster as dg


def build_ingest_job(*, neo4j_enabled: bool) -> dg.UnresolvedAssetJobDefinition:
    """Every asset of a jurisdiction; ``neo4j_graph`` only when a Neo4j server is configured."""
    selection: dg.AssetSelection = dg.AssetSelection.all()
    note = ""
    if not neo4j_enabled:
        selection = selection - dg.AssetSelection.assets("neo4j_graph")
        note = " (neo4j_graph is left out: NEO4J_URI is not set)"
    return dg.define_asset_job(
        "ingest_job",
        selection=selection,
        description="Fetch, parse, chunk, embed, store and link every registry document of a "
        f"jurisdiction{note}",
    )

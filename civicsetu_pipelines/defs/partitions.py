"""Partitions: one per jurisdiction in the document registry."""

from __future__ import annotations

import dagster as dg

from civicsetu_pipelines.ingest import load_registry

jurisdiction_partitions = dg.StaticPartitionsDefinition(load_registry().jurisdictions())

"""Code location entry point (``workspace.yaml`` and ``[tool.dagster]`` point here)."""

from civicsetu_pipelines.defs import build_definitions

defs = build_definitions()

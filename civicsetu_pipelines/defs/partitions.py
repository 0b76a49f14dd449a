"""Partitions: one per jurisdiction with registered documents, as Dagster dynamic partitions.

The jurisdictions are data (the document registry), not code: a jurisdiction that gets its
first document (``civicsetu documents add``, a watched source) becomes a partition without a
code reload. :func:`add_jurisdiction_partitions` adds the registry's jurisdictions an instance
does not hold yet; ``civicsetu materialize``, ``backfill`` and ``dev`` call it before they run,
and the gazette sensor asks for new ones in its result (the UI then shows them). A
jurisdiction whose last document was removed keeps its partition and its runs' history; its
rows are retired (``documents remove``).
"""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg

JURISDICTION_PARTITIONS = "jurisdiction"
jurisdiction_partitions = dg.DynamicPartitionsDefinition(name=JURISDICTION_PARTITIONS)


def registered_jurisdictions() -> list[str]:
    """The jurisdictions the document registry holds documents of, now."""
    from civicsetu_pipelines.ingest import load_registry

    return load_registry().jurisdictions()


def add_jurisdiction_partitions(
    instance: dg.DagsterInstance, jurisdictions: Iterable[str] | None = None
) -> list[str]:
    """Add to ``instance`` the partitions of ``jurisdictions`` (default: the registry's) it does
    not hold yet; returns those added, in order."""
    from civicsetu_pipelines.operate import ensure_partitions

    wanted = registered_jurisdictions() if jurisdictions is None else list(jurisdictions)
    return ensure_partitions(instance, jurisdiction_partitions, wanted)

"""Asset modules; what they share."""

from collections.abc import Sequence

import dagster as dg

from civicsetu_pipelines.base import SetAside

OWNERS = ["team:civicsetu-data"]

# Downstream assets follow their upstream through declarative automation: when a gazette is
# re-ingested (schedule, sensor, backfill or by hand), the chunks, embeddings, store, graph,
# answers, evaluation and report refresh without a manual step (the default automation
# condition sensor evaluates this; turn it on in the UI under Automation).
EAGER = dg.AutomationCondition.eager()


def act_document_key() -> str:
    """The registry's Act (the document of kind ``act``): what every state's rules derive from."""
    from civicsetu_pipelines.ingest import load_registry

    return next((s.key for s in load_registry().documents() if str(s.doc_type) == "act"),
                "rera_act_2016")  # fmt: skip


def set_aside_check(asides: Sequence[SetAside]) -> dg.AssetCheckResult:
    """An asset's ``documents_set_aside`` check: passed when its step set no document aside,
    else failed naming each document with why (``base.set_aside``)."""
    from civicsetu_pipelines.base import by_document

    return dg.AssetCheckResult(
        check_name="documents_set_aside",
        passed=not asides,
        severity=dg.AssetCheckSeverity.ERROR,
        description="; ".join(f"{a.document_key}: {a.reason()}" for a in asides)[:1000] or None,
        metadata={"documents": dg.MetadataValue.json(by_document(asides))},
    )

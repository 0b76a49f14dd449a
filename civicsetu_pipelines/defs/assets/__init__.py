"""Asset modules; what they share."""

import dagster as dg

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

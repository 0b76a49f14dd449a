"""Asset modules; what they share."""

import dagster as dg

OWNERS = ["team:civicsetu-data"]

# Downstream assets follow their upstream through declarative automation: when a gazette is
# re-ingested (schedule, sensor, backfill or by hand), the chunks, embeddings, store, graph,
# answers, evaluation and report refresh without a manual step (the default automation
# condition sensor evaluates this; turn it on in the UI under Automation).
EAGER = dg.AutomationCondition.eager()

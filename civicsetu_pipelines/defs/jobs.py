"""Jobs: the main ingestion job over every asset, partitioned by jurisdiction."""

from __future__ import annotations

import dagster as dg

# dagster.yaml limits runs with this tag value to one at a time.
WORKLOAD_TAG = "civicsetu/workload"

# Assets over every jurisdiction at once: materialized by their own job after the partitions.
UNPARTITIONED = ("answers", "prescribed_matters", "state_divergences", "training_pairs",
                 "learned_ranker", "golden_eval_all", "eval_report", "corpus_encoder")  # fmt: skip
# Per-jurisdiction assets that are evaluation, not ingestion: left out of ingest_job (a
# jurisdiction's golden questions scored there took 28% of a cold materialization, and
# golden_eval_all scores them all again after the partitions); materialized per partition from
# the UI or by declarative automation.
EVALUATION_PER_PARTITION = ("golden_eval_scores",)
# Per-jurisdiction exports of everything a jurisdiction holds, whatever changed: left out of
# ingest_job, so that a run costs what changed (issue 46: graph_export re-read and re-wrote a
# 1,000-document state's whole graph, 3 s of an 11 s run for one new order, growing with the
# state); materialized from the UI or by declarative automation, and `civicsetu graph export`
# writes the same files on demand.
EXPORTS_PER_PARTITION = ("graph_export",)


def build_answers_job() -> dg.UnresolvedAssetJobDefinition:
    """The thin query asset over the materialized stores (questions as run config)."""
    return dg.define_asset_job(
        "answers_job",
        selection=dg.AssetSelection.assets("answers"),
        description="Answer the configured questions from the stores, with checked citations",
    )


def build_evaluation_job() -> dg.UnresolvedAssetJobDefinition:
    """Learn the ranking from the corpus, score every golden question and render the analyst
    report."""
    return dg.define_asset_job(
        "evaluation_job",
        selection=dg.AssetSelection.assets(
            "prescribed_matters",
            "state_divergences",
            "training_pairs",
            "learned_ranker",
            "golden_eval_all",
            "eval_report",
        ),
        description="Mine training questions from the corpus, learn a ranker (served when it "
        "wins on dev), score all golden questions against the stores and render the report",
    )


def build_encoder_job() -> dg.UnresolvedAssetJobDefinition:
    """Teach the encoder the corpus's language, on demand (minutes of training: never part of
    ingestion or of the evaluation job)."""
    return dg.define_asset_job(
        "encoder_job",
        selection=dg.AssetSelection.assets("training_pairs", "corpus_encoder"),
        description="Mine training questions from the stored corpus, fine-tune the packaged "
        "MiniLM on them "
        "and judge it against the packaged model on the golden dev half (vector search alone)",
    )


def build_ingest_job(*, neo4j_enabled: bool) -> dg.UnresolvedAssetJobDefinition:
    """Every asset of a jurisdiction but its evaluation and exports
    (:data:`EVALUATION_PER_PARTITION`, :data:`EXPORTS_PER_PARTITION`);
    ``neo4j_graph`` only when a Neo4j server is configured."""
    selection: dg.AssetSelection = dg.AssetSelection.all() - dg.AssetSelection.assets(
        *UNPARTITIONED, *EVALUATION_PER_PARTITION, *EXPORTS_PER_PARTITION
    )
    note = ""
    if not neo4j_enabled:
        selection = selection - dg.AssetSelection.assets("neo4j_graph")
        note = " (neo4j_graph is left out: NEO4J_URI is not set)"
    return dg.define_asset_job(
        "ingest_job",
        selection=selection,
        tags={WORKLOAD_TAG: "embedding"},
        description="Fetch, parse, chunk, embed, store and link every registry document of a "
        f"jurisdiction{note}",
    )

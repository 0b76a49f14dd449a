"""The encoder taught the corpus's own language: fine-tuned on demand, never on the ingest path.

Teaching takes minutes (about 6 on two cores), so ``corpus_encoder`` has no automation condition:
it runs when asked (the UI, ``encoder_job``, ``civicsetu encoder teach``). The model it makes is
a folder under ``<models>/encoders/``, versioned by its training data's hash, served only when a
user names it (``CIVICSETU_EMBED_MODEL``): serving another model re-embeds every stored unit.
"""

from collections.abc import Iterator

import dagster as dg
from pydantic import Field

from civicsetu_pipelines.base import Settings
from civicsetu_pipelines.defs.assets import OWNERS
from civicsetu_pipelines.defs.assets.ranking import PAIRS_FILE, read_pairs
from civicsetu_pipelines.defs.resources import PostgresResource
from civicsetu_pipelines.evaluate import load_golden
from civicsetu_pipelines.rank import TuningSettings, teach_encoder
from civicsetu_pipelines.store import EmbeddingConfig


class EncoderConfig(dg.Config):
    """How long the encoder is taught (the version covers it)."""

    epochs: int = Field(default=TuningSettings.epochs, ge=1, description="passes over the pairs")


@dg.asset(
    group_name="evaluation",
    kinds={"python", "pytorch"},
    owners=OWNERS,
    deps=["training_pairs"],
    check_specs=[
        dg.AssetCheckSpec(
            "dev_improvement",
            asset="corpus_encoder",
            description="The taught encoder retrieves the dev half's governing units better than "
            "the packaged model by vector search alone, beyond the noise (a paired randomization "
            "test on each question's reciprocal rank; warning when not)",
        )
    ],
)
def corpus_encoder(
    context: dg.AssetExecutionContext, config: EncoderConfig, postgres: PostgresResource
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
    """The packaged MiniLM fine-tuned on the questions ``training_pairs`` mined from the stored
    corpus (each with the passage that answers it and a near one that does not; never a golden
    question or one near it), exported to ONNX and judged against the packaged model on the
    golden dev half (the test half in aggregate, for the record). Re-uses a model of the same
    version (same triples, base weights and settings) without teaching it again. Serve it with
    ``CIVICSETU_EMBED_MODEL=<its folder>`` (the metadata's ``serve``)."""
    settings = Settings.from_env()
    queries = read_pairs(settings.ranker_dir / PAIRS_FILE)
    with postgres.connect() as conn:
        outcome = teach_encoder(conn, queries, load_golden(settings.golden_path),
                                EmbeddingConfig(), settings.models_dir,
                                TuningSettings(epochs=config.epochs), context.log.info)  # fmt: skip
    figures = {f"{model}_{half}_mrr": halves[half]["mrr"]
               for model, halves in outcome.figures.items() for half in halves}  # fmt: skip
    yield dg.MaterializeResult(
        metadata={
            "version": outcome.version[:12],
            "taught": outcome.trained,
            "seconds": round(outcome.seconds, 1),
            "triples": dg.MetadataValue.json(dict(outcome.triples)),
            "figures": dg.MetadataValue.json({k: dict(v) for k, v in outcome.figures.items()}),
            **figures,
            "path": dg.MetadataValue.path(str(outcome.folder)),
            "serve": f"CIVICSETU_EMBED_MODEL={outcome.folder}",
        },
        data_version=dg.DataVersion(outcome.version),
    )
    yield dg.AssetCheckResult(
        check_name="dev_improvement",
        passed=outcome.improves,
        severity=dg.AssetCheckSeverity.WARN,
        description=outcome.reason,
        metadata={"paired_test": dg.MetadataValue.json(dict(outcome.dev_test))},
    )

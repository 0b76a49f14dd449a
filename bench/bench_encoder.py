"""Does the encoder taught the corpus's language retrieve governing provisions better? Vector only.

Usage: .venv/bin/python bench/bench_encoder.py [--epochs N] [--learning-rate LR]

On the default store (materialized with the packaged MiniLM), as the ``corpus_encoder`` asset
does it (``rank.encoder.teach_encoder``): the training questions ``rank.pairs`` mines are asked
of the packaged model to choose each one's positive and hard negative (questions near a golden
question and the held-back slice left out), MiniLM is fine-tuned on them and exported to ONNX,
then the golden questions' governing units are retrieved by vector search alone, each model
against its own vectors of every current chunk, per half (units named by document where the
golden set names them), and the held-back mined questions (never trained on) too. Settings are
chosen on dev and the held-back slice; the test half is printed for the record.
"""

from __future__ import annotations

import argparse
import os

import psycopg

from civicsetu_pipelines.base import Settings
from civicsetu_pipelines.evaluate import load_golden
from civicsetu_pipelines.rank import mine_training_queries
from civicsetu_pipelines.rank.encoder import TuningSettings, teach_encoder
from civicsetu_pipelines.store import EmbeddingConfig
from civicsetu_pipelines.store.database import resolve_database_url


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=TuningSettings.epochs)
    parser.add_argument("--learning-rate", type=float, default=TuningSettings.learning_rate)
    args = parser.parse_args()
    settings = Settings.from_env()
    tuning = TuningSettings(epochs=args.epochs, learning_rate=args.learning_rate)
    print(f"command: .venv/bin/python bench/bench_encoder.py --epochs {args.epochs} "
          f"--learning-rate {args.learning_rate}\nmachine: {os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.2f}")  # fmt: skip
    with psycopg.connect(resolve_database_url(settings)) as conn:
        mined = mine_training_queries(conn, "rera_act_2016")
        outcome = teach_encoder(conn, mined, load_golden(), EmbeddingConfig(),
                                settings.models_dir, tuning, print)  # fmt: skip
    print(f"{outcome.folder} ({'taught' if outcome.trained else 'reused'}), triples "
          f"{dict(outcome.triples)}, {outcome.seconds:.0f} s")  # fmt: skip
    for model, halves in outcome.figures.items():
        for half, figures in halves.items():
            print(f"  {model:6} {half:9} " + "  ".join(f"{k} {v:.3f}" for k, v in figures.items()))
    print(f"{'improves' if outcome.improves else 'does not improve'}: {outcome.reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

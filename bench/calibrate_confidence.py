"""The confidence model (``answer.confidence``): fitted on the corpus's own questions, its
thresholds chosen on the golden set's dev half (issue 47, item 4).

Usage: .venv/bin/python bench/calibrate_confidence.py [--write]

On the default embedded store, materialized, with the ranking it serves:

(``rank.calibration`` does steps 1-3, as ``learned_ranker``'s promotion does under a learned
ranker; run this with ``CIVICSETU_RANKER=none`` for the packaged model, the hand-set ranking's.)

1. The training questions the corpus teaches (``rank.pairs.mine_training_queries``: FAQ
   questions to the provisions their answers cite, titles, lay rewrites, judgment sentences,
   derivations; never a golden question) are answered, top 10 as ``civicsetu eval`` asks. Each
   answered one gives the features of its evidence (``evidence_features``) and a label: one of
   its provisions among the first three units served. (An answer from the unit the question
   names is ``high`` by rule and left out, here and in step 3.)
2. A logistic regression (scikit-learn, standardized features, seeded) is fitted on them.
3. The golden dev half's answerable questions with a governing provision are answered the same
   way; ``medium`` is the least probability above which the dev answers are right (a
   governing provision in the top 3) at least ``TARGET_PRECISION["medium"]`` of the time, and
   ``high`` likewise for its target. Each is the least such threshold with at least
   MIN_ANSWERS dev answers above it (a precision over a handful is a guess); none found: the
   level is never given (threshold 1.0, said).
4. Both halves are scored under the chosen thresholds: the selective precision (right among
   high and medium) and the coverage (answered high or medium among the questions with a
   governing provision), each with its 95% interval; the test half in aggregate only.

With ``--write``, the model and all of this go to ``civicsetu_pipelines/data/confidence.yaml``
(with the hashes of the training questions and of the golden file).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
from typing import Any

import numpy as np
import yaml

from civicsetu_pipelines.answer.answers import (
    QueryEngine,
    default_query_embedder,
    settings_from_env,
)
from civicsetu_pipelines.answer.confidence import (
    CONFIDENCE_YAML,
    MIN_ANSWERS,
    TARGET_PRECISION,
)
from civicsetu_pipelines.base.settings import Settings
from civicsetu_pipelines.evaluate import load_golden
from civicsetu_pipelines.evaluate.scoring import GOLDEN_JSONL, golden_sha256
from civicsetu_pipelines.evaluate.significance import bootstrap_ci
from civicsetu_pipelines.ingest import load_registry
from civicsetu_pipelines.rank import Calibration, calibrate, read_answer
from civicsetu_pipelines.rank.pairs import mine_training_queries
from civicsetu_pipelines.store.database import connect, resolve_database_url
from civicsetu_pipelines.store.embedding import embedding_config_from_env


def scored(p: np.ndarray, right: np.ndarray, answerable: int, cut: float) -> dict[str, Any]:
    confident = p >= cut
    precision = right[confident].astype(float)
    coverage = np.concatenate([confident.astype(float), np.zeros(answerable - len(p))])
    ci_p, ci_c = bootstrap_ci(list(precision)), bootstrap_ci(list(coverage))
    return {
        "selective_precision": round(float(precision.mean()), 4) if len(precision) else None,
        "selective_precision_ci95": [round(v, 4) for v in ci_p] if ci_p else None,
        "coverage": round(float(coverage.mean()), 4),
        "coverage_ci95": [round(v, 4) for v in ci_c] if ci_c else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {CONFIDENCE_YAML}")
    args = parser.parse_args()

    url = resolve_database_url(Settings.from_env())
    with connect(url) as conn:
        act = next(s.key for s in load_registry().documents() if str(s.doc_type) == "act")
        mined = mine_training_queries(conn, act)
    golden = load_golden(GOLDEN_JSONL)

    def half(name: str) -> list[tuple[str, tuple[str, ...]]]:
        return [(g.query, g.governing) for g in golden
                if g.split == name and not g.expect_refusal and g.governing]  # fmt: skip

    with QueryEngine(url, default_query_embedder(), settings_from_env()) as engine:
        print(f"ranking: {engine.reranker.name} {getattr(engine.reranker, 'version', '')}")
        fitted = calibrate(engine, mined, half("dev"), progress=print)
        # the test half, scored once, in aggregate, under the thresholds chosen on dev
        test = [r for q, w in half("test") if (r := read_answer(engine, q, w)) is not None]
    model = fitted.model
    tested = Calibration(model, fitted.fitted_on, fitted.right_in_fit, test, len(half("test")))
    figures = {}
    for name, part in (("dev", fitted), ("test", tested)):
        p, right = part.probabilities()
        figures[name] = scored(np.array(p), np.array(right, dtype=bool), part.asked,
                               model.thresholds["medium"])  # fmt: skip
    training = hashlib.sha256(
        json.dumps([q.as_row() for q in mined], sort_keys=True).encode()
    ).hexdigest()
    provenance = {
        "model": embedding_config_from_env().model_id,  # distances are the model's own
        "fitted_on": f"{fitted.fitted_on} answered of {len(mined)} mined training questions "
        f"(right in the top 3: {fitted.right_in_fit})",
        "training_sha256": training,
        "chosen_on": f"golden dev half ({fitted.asked} answerable with a governing provision)",
        "golden_sha256": golden_sha256(GOLDEN_JSONL),
        "target_precision": dict(TARGET_PRECISION),
        "min_answers": MIN_ANSWERS,
        "dev": figures["dev"],
        "test": figures["test"],
    }
    chosen = dataclasses.replace(model, provenance=provenance)
    print(yaml.safe_dump(chosen.as_yaml(), sort_keys=False))
    if args.write:
        CONFIDENCE_YAML.write_text(
            "# The confidence model: bench/calibrate_confidence.py --write (issue 47). Fitted on\n"
            "# the corpus's mined questions, thresholds chosen on the golden dev half.\n"
            + yaml.safe_dump(chosen.as_yaml(), sort_keys=False),
            encoding="utf-8",
        )
        print(f"wrote {CONFIDENCE_YAML}")


if __name__ == "__main__":
    main()

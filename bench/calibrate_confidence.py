"""The confidence model (``answer.confidence``): fitted on the corpus's own questions, its
thresholds chosen on the golden set's dev half (issue 47, item 4).

Usage: .venv/bin/python bench/calibrate_confidence.py [--write]

On the default embedded store, materialized, with the ranking it serves:

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
from collections.abc import Sequence
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
    FEATURES,
    MIN_ANSWERS,
    TARGET_PRECISION,
    ConfidenceModel,
    choose_thresholds,
    evidence_features,
)
from civicsetu_pipelines.base.settings import Settings
from civicsetu_pipelines.evaluate import load_golden
from civicsetu_pipelines.evaluate.metrics import scored_name
from civicsetu_pipelines.evaluate.scoring import GOLDEN_JSONL, golden_sha256
from civicsetu_pipelines.evaluate.significance import bootstrap_ci
from civicsetu_pipelines.ingest import load_registry
from civicsetu_pipelines.rank.pairs import mine_training_queries
from civicsetu_pipelines.store.database import connect, resolve_database_url
from civicsetu_pipelines.store.embedding import embedding_config_from_env

TOP_K = 10  # as civicsetu eval asks
SEED = 47


def read(
    engine: QueryEngine, query: str, wanted: Sequence[str]
) -> tuple[list[float] | None, bool] | None:
    """The features of an answer to ``query`` (None: from the unit the question names, ``high``
    by rule) and whether one of ``wanted`` (golden names) is among its first three units; None
    when it is refused."""
    result = engine.answer(query, top_k=TOP_K)
    evidence = engine.last_evidence
    if result["status"] != "answered" or evidence is None or not evidence.ranked:
        return None
    names = list(dict.fromkeys(
        scored_name(wanted, r["jurisdiction"], r["document"], r["section"])
        for r in result["retrieved"]
    ))  # fmt: skip
    right = any(n in wanted for n in names[:3])
    if evidence.ranked[0].exact:  # the unit the question names: "high" by rule, not fitted
        return None, right
    features = evidence_features(evidence.query, evidence.ranked)
    return [features[f] for f in FEATURES], right


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
    from sklearn.linear_model import LogisticRegression

    url = resolve_database_url(Settings.from_env())
    with connect(url) as conn:
        act = next(s.key for s in load_registry().documents() if str(s.doc_type) == "act")
        mined = mine_training_queries(conn, act)
    golden = load_golden(GOLDEN_JSONL)
    with QueryEngine(url, default_query_embedder(), settings_from_env()) as engine:
        rows = []
        for i, q in enumerate(mined, start=1):
            got = read(engine, q.query, [f"{j}:{s}" for j, s in q.positives])
            if got is not None and got[0] is not None:
                rows.append((got[0], got[1]))
            if i % 100 == 0:
                print(f"  mined questions answered {i}/{len(mined)}", flush=True)
        halves: dict[str, tuple[list[list[float] | None], list[bool], int]] = {}
        for half in ("dev", "test"):
            asked = [g for g in golden if g.split == half and not g.expect_refusal and g.governing]
            read_half = [read(engine, g.query, g.governing) for g in asked]
            kept = [r for r in read_half if r is not None]
            halves[half] = ([f for f, _ in kept], [r for _, r in kept], len(asked))
    x = np.array([f for f, _ in rows], dtype=float)
    y = np.array([r for _, r in rows])
    means, scales = x.mean(axis=0), x.std(axis=0)
    scales[scales == 0] = 1.0
    fit = LogisticRegression(C=1.0, random_state=SEED, max_iter=1000).fit((x - means) / scales, y)
    model = ConfidenceModel(tuple(means), tuple(scales), tuple(fit.coef_[0]),
                            float(fit.intercept_[0]), {"medium": 1.0, "high": 1.0}, {})  # fmt: skip

    def probabilities(half: str) -> tuple[np.ndarray, np.ndarray, int]:
        features, right, answerable = halves[half]
        p = np.array([1.0 if f is None else model.probability(dict(zip(FEATURES, f, strict=True)))
                      for f in features])  # fmt: skip
        return p, np.array(right, dtype=bool), answerable

    p_dev, right_dev, n_dev = probabilities("dev")
    cuts = choose_thresholds(list(p_dev), list(right_dev))
    p_test, right_test, n_test = probabilities("test")
    figures = {
        "dev": scored(p_dev, right_dev, n_dev, cuts["medium"]),
        "test": scored(p_test, right_test, n_test, cuts["medium"]),
    }
    training = hashlib.sha256(
        json.dumps([q.as_row() for q in mined], sort_keys=True).encode()
    ).hexdigest()
    provenance = {
        "model": embedding_config_from_env().model_id,  # distances are the model's own
        "fitted_on": f"{len(rows)} answered of {len(mined)} mined training questions "
        f"(right in the top 3: {int(y.sum())})",
        "training_sha256": training,
        "chosen_on": f"golden dev half ({n_dev} answerable with a governing provision)",
        "golden_sha256": golden_sha256(GOLDEN_JSONL),
        "target_precision": dict(TARGET_PRECISION),
        "min_answers": MIN_ANSWERS,
        "dev": figures["dev"],
        "test": figures["test"],
    }
    chosen = dataclasses.replace(model, thresholds=cuts, provenance=provenance)
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

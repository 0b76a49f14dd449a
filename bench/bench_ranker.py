"""The learned ranker against the hand-set ranking: every variant, dev and test, in one run.

Usage: .venv/bin/python bench/bench_ranker.py [--limit N] [--all]

On the default embedded store (materialized): mines the training questions from the corpus
(``rank.pairs``), records their candidates through the query engine, fits every variant of
``rank.train.VARIANTS``, and scores each on the held-back mined questions (MRR among the
candidates) and on the golden dev and test halves (governing hit@5, governing MRR, plain top 3,
plain answered, refusal correctness, citation validity) beside the hand-set ranking. Dev alone
chooses; test is printed for the report. ``--limit`` trains on the first N questions (a smoke
run).
"""

from __future__ import annotations

import argparse
import time

from civicsetu_pipelines.answer import (
    DeterministicReranker,
    QueryEngine,
    default_query_embedder,
    settings_from_env,
)
from civicsetu_pipelines.base import Settings
from civicsetu_pipelines.evaluate import evaluate, load_golden
from civicsetu_pipelines.rank import (
    ALL_BLENDS,
    ALL_VARIANTS,
    BLENDS,
    REPORTED_METRICS,
    VARIANTS,
    blend,
    collect,
    counts,
    fit,
    mean_reciprocal_rank,
    mine_training_queries,
)
from civicsetu_pipelines.store import connect, resolve_database_url

METRICS = REPORTED_METRICS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument(
        "--all",
        action="store_true",
        help="also the variants measured worse on dev and no longer tried",
    )
    args = parser.parse_args()
    url = resolve_database_url(Settings.from_env())
    golden = load_golden()
    halves = {s: [g for g in golden if g.split == s] for s in ("dev", "test")}
    with connect(url) as conn:
        queries = mine_training_queries(conn, "rera_act_2016")
    print("mined:", dict(counts(queries)))
    if args.limit:
        queries = queries[: args.limit]
    started = time.perf_counter()
    with (
        QueryEngine(url, default_query_embedder(), settings_from_env()) as engine,
        connect(url) as conn,
    ):
        engine.use_reranker(DeterministicReranker())
        examples, hubs = collect(engine, queries)
        train = [e for e in examples if not e.query.held_back]
        held = [e for e in examples if e.query.held_back]
        took = time.perf_counter() - started
        print(f"recorded {len(examples)} questions with an answer among their candidates "
              f"({len(train)} train, {len(held)} held back) in {took:.0f} s")  # fmt: skip

        def scores(ranker: object) -> dict[str, dict[str, float]]:
            engine.use_reranker(ranker)  # type: ignore[arg-type]
            out = {}
            for half, items in halves.items():
                h = evaluate(engine, conn, items, with_ragas=False).headline
                out[half] = {m: round(h[m], 3) for m in METRICS if h.get(m) is not None}
            return out

        rows = [("hand-set (current)", None, scores(DeterministicReranker()))]
        for name, c, how, leave_out in ALL_VARIANTS if args.all else VARIANTS:
            t = time.perf_counter()
            ranker = fit(train, c, how, leave_out, version=name, hubs=hubs)
            held_mrr = mean_reciprocal_rank(ranker, held)
            print(f"  {name}: fitted in {time.perf_counter() - t:.1f} s, held-back MRR "
                  f"{held_mrr:.3f}")  # fmt: skip
            rows.append((name, round(held_mrr, 3), scores(ranker)))
            for weight in ALL_BLENDS if args.all else BLENDS:
                mixed = blend(ranker, weight)
                mixed_mrr = mean_reciprocal_rank(mixed, held)
                rows.append((f"hand-set + {weight} x {name}", round(mixed_mrr, 3), scores(mixed)))
    header = "| variant | held-back MRR | " + " | ".join(f"dev {m}" for m in METRICS[:2]) + " | "
    header += " | ".join(f"dev {m}" for m in METRICS[2:5]) + " | test: " + ", ".join(METRICS)
    print(header)
    for name, held_mrr, s in rows:
        dev = [str(s["dev"].get(m, "-")) for m in METRICS[:5]]
        test = " / ".join(str(s["test"].get(m, "-")) for m in METRICS)
        print(
            f"| {name} | {held_mrr if held_mrr is not None else '-'} | {' | '.join(dev)} | {test} |"
        )


if __name__ == "__main__":
    main()

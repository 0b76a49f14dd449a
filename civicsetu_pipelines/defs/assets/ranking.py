"""Ranking assets: training questions mined from the corpus, and the ranker learned from them,
served only when it wins on the golden dev half (the ``promotion`` check)."""

import dataclasses
import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

import dagster as dg
from pydantic import Field

from civicsetu_pipelines.answer import (
    DeterministicReranker,
    QueryEngine,
    load_ranker,
    save_ranker,
)
from civicsetu_pipelines.base import Settings
from civicsetu_pipelines.defs.assets import EAGER, OWNERS, act_document_key
from civicsetu_pipelines.defs.resources import AnswerResource, EmbeddingResource, PostgresResource
from civicsetu_pipelines.evaluate import (
    by_kind_and_split,
    by_split,
    evaluate,
    golden_sha256,
    load_golden,
    open_memo,
)
from civicsetu_pipelines.rank import (
    ALL_BLENDS,
    ALL_VARIANTS,
    BLENDS,
    REPORTED_METRICS,
    SEED,
    VARIANTS,
    TrainingQuery,
    blend,
    calibrate,
    collect,
    counts,
    examples_sha256,
    fit,
    mean_reciprocal_rank,
    mine_training_queries,
    promotion,
    version_of,
)

PAIRS_FILE = "training_pairs.jsonl"
REPORT_FILE = "report.json"  # the last verdict and variants, for the analyst report


@dg.asset(
    group_name="evaluation",
    automation_condition=EAGER,
    kinds={"python", "postgres"},
    owners=OWNERS,
    deps=["legal_chunks", "graph_edges"],
)
def training_pairs(context: dg.AssetExecutionContext, postgres: PostgresResource) -> (
    dg.MaterializeResult
):  # fmt: skip
    """Questions mined from the stored corpus with the units that answer them (titles, FAQ
    citations, judgment citations, derivations, lay rewrites; never the golden files), each with
    its provenance and a held-back slice of its own; written to
    ``<state>/storage/ranker/training_pairs.jsonl``."""
    with postgres.connect() as conn:
        queries = mine_training_queries(conn, act_document_key())
    lines = "".join(json.dumps(q.as_row(), sort_keys=True) + "\n" for q in queries)
    target = Settings.from_env().ranker_dir / PAIRS_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(lines)
    digest = hashlib.sha256(lines.encode()).hexdigest()
    context.log.info(f"{len(queries)} training questions mined: {dict(counts(queries))}")
    return dg.MaterializeResult(
        metadata={**{k: int(v) for k, v in counts(queries).items()}, "sha256": digest,
                  "path": dg.MetadataValue.path(str(target)),
                  "sample": dg.MetadataValue.json([q.as_row() for q in queries[::97]])},
        data_version=dg.DataVersion(digest),
    )  # fmt: skip


def read_pairs(path: Any) -> list[TrainingQuery]:
    lines = path.read_text().splitlines()
    return [TrainingQuery.from_row(json.loads(line)) for line in lines if line.strip()]


class RankerConfig(dg.Config):
    """Which variants a run fits: the default few, every one (``all``: the pairwise variant and
    a third blend weight too, about three times the fitting and scoring), on demand, or the
    first alone with its first blend (``quick``: two fits scored instead of nine); and
    how many of the mined questions it asks and fits on (``mined_every``: every n-th, in the
    order ``training_pairs`` wrote them; a quick look at the job, 907 questions asked being
    most of a cold run's minute and a half). The version covers what was fitted on, so a
    sample's ranker is never mistaken for the whole's."""

    variants: str = Field(default="default", description="default | all | quick")
    mined_every: int = Field(
        default=1, ge=1, description="fit on every n-th mined question (1: every one)"
    )


def _variants(config: RankerConfig) -> tuple[tuple[Any, ...], tuple[float, ...]]:
    if config.variants == "all":
        return ALL_VARIANTS, ALL_BLENDS
    if config.variants == "quick":
        return VARIANTS[:1], BLENDS[:1]
    if config.variants != "default":
        raise dg.Failure(f"learned_ranker: variants must be 'default', 'all' or 'quick', not "
                         f"{config.variants!r}")  # fmt: skip
    return VARIANTS, BLENDS


@dg.asset(
    group_name="evaluation",
    automation_condition=EAGER,
    kinds={"python", "scikitlearn"},
    owners=OWNERS,
    deps=["training_pairs"],
    check_specs=[
        dg.AssetCheckSpec(
            "promotion",
            asset="learned_ranker",
            description="The learned ranker is served only when it beats the current ranking "
            "on dev governing MRR without lowering dev refusal correctness (warning when not: "
            "the current ranking stays)",
        )
    ],
)
def learned_ranker(
    context: dg.AssetExecutionContext,
    config: RankerConfig,
    postgres: PostgresResource,
    embedder: EmbeddingResource,
    answering: AnswerResource,
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
    """A logistic ranker over each candidate's features, trained on the mined questions; every
    variant scored on the golden dev half (the choice) and the test half (the report) beside the
    hand-set ranking. Versioned by what the fits read (the mined questions' candidates,
    features and labels; the variants, the seed, the golden file), not by the whole store: a
    change no mined question reads re-fits nothing. Every question (mined or golden) is asked
    again only when a jurisdiction it reads serves other rows (``evaluate.ScopedMemo``), so a
    run costs what the change costs. Promoted to
    ``<state>/storage/ranker/promoted.json`` when it wins on dev beyond the noise (a paired
    randomization test, :func:`~civicsetu_pipelines.rank.promotion`); otherwise that file is removed
    and the hand-set ranking is served."""
    variants, blends = _variants(config)
    ranker_dir = Settings.from_env().ranker_dir
    pairs_path = ranker_dir / PAIRS_FILE
    queries = read_pairs(pairs_path)[:: config.mined_every]
    golden = load_golden(Settings.from_env().golden_path)
    dev_half = [g for g in golden if g.split == "dev"]
    settings = answering.settings()
    with (
        QueryEngine(postgres.url(), embedder.query_embedder(), settings) as engine,
        postgres.connect() as conn,
    ):
        memo_dir = Settings.from_env().memo_dir
        model = embedder.config().model_id
        asked = open_memo(memo_dir / "ranker-candidates.pkl", engine, conn, model=model)
        scored = open_memo(memo_dir / "ranker-golden.pkl", engine, conn, model=model)
        engine.use_reranker(DeterministicReranker())
        examples, hubs = collect(
            engine, queries, progress=lambda i, n: context.log.info(f"asked {i}/{n}"), memo=asked
        )
        if asked is not None:
            asked.save()
            context.log.info(f"mined questions: {asked.said()}")
        # the golden file too: the variant is chosen on its dev half
        version = version_of(examples_sha256(examples), [list(v) for v in variants],
                             list(blends), SEED,
                             golden_sha256(Settings.from_env().golden_path))  # fmt: skip
        saved = ranker_dir / f"ranker-{version}.json"

        def dev_scores(ranker: Any) -> dict[str, float]:
            engine.use_reranker(ranker)
            result = evaluate(engine, conn, dev_half, with_ragas=False, memo=scored)
            return _reported(result.headline)

        def everything(ranker: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
            """Both halves scored in one pass, and the per-question rows."""
            engine.use_reranker(ranker)
            rows = evaluate(engine, conn, golden, with_ragas=False, memo=scored).rows
            split = by_split(rows)
            return {h: _reported(split.get(h, {})) for h in ("dev", "test")}, rows

        current, current_rows = everything(DeterministicReranker())
        retrained = not saved.exists()
        if not retrained:
            context.log.info(f"inputs unchanged: {saved.name} reused, not retrained")
            table = json.loads(saved.read_text()).get("variants", [])
            chosen = load_ranker(saved)
        else:
            train = [e for e in examples if not e.query.held_back]
            held = [e for e in examples if e.query.held_back]
            table, best = [], None
            for name, c, how, leave_out in variants:
                base = fit(train, c, how, leave_out, version=f"{version}:{name}", hubs=hubs)
                tried = [(name, base)]
                tried += [(f"hand-set + {w} x {name}", blend(base, w)) for w in blends]
                for label, ranker in tried:
                    dev = dev_scores(ranker)
                    row: dict[str, Any] = {
                        "variant": label,
                        "held_back_mrr": round(mean_reciprocal_rank(ranker, held), 4),
                        **{f"dev_{m}": round(v, 4) for m, v in dev.items()},
                    }
                    table.append(row)
                    context.log.info(f"variant {label}: {row}")
                    key = (dev.get("governing_mrr", 0.0), row["held_back_mrr"])
                    if best is None or key > best[0]:
                        best = (key, ranker)
            assert best is not None
            chosen = best[1]
            save_ranker(chosen, saved, variants=table, trained_on=len(train),
                        held_back=len(held), questions=len(queries))  # fmt: skip
        chosen_scores, chosen_rows = everything(chosen)  # dev again, and test for the report
        verdict = promotion(  # a paired test on the dev half's questions
            [r for r in chosen_rows if r.get("split") == "dev"],
            [r for r in current_rows if r.get("split") == "dev"],
        )
        if scored is not None:
            scored.save()
            context.log.info(f"golden questions: {scored.said()}")
        promoted = ranker_dir / "promoted.json"
        thresholds = None
        if verdict.promoted:
            # the confidence model fitted again under the ranking now served, on the mined
            # questions, its thresholds chosen on dev: the packaged one was fitted and chosen
            # under the hand-set ranking (issue 47)
            engine.use_reranker(chosen)
            calibrated = calibrate(
                engine, queries,
                [(g.query, g.governing) for g in dev_half
                 if not g.expect_refusal and g.governing],
                progress=context.log.info,
                provenance={"fitted_on": "mined training questions answered under this ranker",
                            "chosen_on": "golden dev half"},
            )  # fmt: skip
            thresholds = dict(calibrated.model.thresholds)
            kept = {k: v for k, v in json.loads(saved.read_text()).items()
                    if k not in ("ranker", "sha256")}  # fmt: skip
            served = dataclasses.replace(chosen, confidence_model=calibrated.model.as_yaml())
            save_ranker(served, promoted, **kept,
                        confidence_fitted_on=f"{calibrated.fitted_on} answered mined questions",
                        confidence_chosen_on=f"golden dev half: {len(calibrated.readings)} "
                        "answers")  # fmt: skip
            context.log.info(f"confidence model under it: fitted on {calibrated.fitted_on} mined "
                             f"answers; thresholds chosen on dev: {thresholds}")  # fmt: skip
        else:
            promoted.unlink(missing_ok=True)
    context.log.info(f"learned ranker {chosen.version}: {verdict.reason}")
    rows = [
        {"variant": "hand-set (current)",
         **{f"{h}_{m}": v for h, ms in current.items() for m, v in ms.items()}},
        {"variant": f"chosen: {chosen.version}",
         **{f"{h}_{m}": v for h, ms in chosen_scores.items() for m, v in ms.items()}},
        *table,
    ]  # fmt: skip
    compared = side_by_side({"hand-set": current_rows, "learned": chosen_rows})
    (ranker_dir / REPORT_FILE).write_text(json.dumps(
        {"version": chosen.version, "promoted": verdict.promoted, "reason": verdict.reason,
         "tests": verdict.tests, "rows": rows, **compared}, indent=1, default=str))  # fmt: skip
    yield dg.MaterializeResult(
        metadata={
            "version": chosen.version,
            "retrained": retrained,
            "promoted": verdict.promoted,
            "reason": verdict.reason,
            "weights": dg.MetadataValue.json(chosen.weights),
            "variants": dg.MetadataValue.md(_variants_md(rows)),
            "path": dg.MetadataValue.path(str(saved)),
        }
    )
    yield dg.AssetCheckResult(
        check_name="promotion",
        passed=verdict.promoted,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "reason": verdict.reason,
            "paired_tests": dg.MetadataValue.json(verdict.tests),
            "dev_current": dg.MetadataValue.json(current["dev"]),
            "dev_learned": dg.MetadataValue.json(chosen_scores["dev"]),
            "confidence_thresholds": dg.MetadataValue.json(thresholds or {}),
        },  # fmt: skip
    )


WORST = 5


def _reported(headline: Mapping[str, Any]) -> dict[str, float]:
    """The metrics a ranker is compared by, of a headline (those it has)."""
    return {m: v for m, v in headline.items() if m in REPORTED_METRICS and v is not None}


def side_by_side(rows_by_ranker: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per query type, each ranker's governing MRR on dev and on test; and each ranker's WORST
    dev questions (refused wrongly first, then the lowest governing reciprocal rank): the test
    half is shown as aggregates only, never question by question (issue 47)."""
    by_type: dict[str, dict[str, Any]] = {}
    worst: dict[str, list[dict[str, Any]]] = {}
    for name, rows in rows_by_ranker.items():
        for kind, groups in by_kind_and_split(rows).items():
            cell = by_type.setdefault(kind, {})
            for half in ("dev", "test"):
                cell[f"{name} {half}"] = groups.get(half, {}).get("governing_mrr")
        dev = [r for r in rows if r.get("split") == "dev"]
        ordered = sorted(
            dev,
            key=lambda r: (bool(r["refusal_correct"]), r.get("governing_rr") or 0.0,
                           r["question_id"]),
        )  # fmt: skip
        worst[name] = [
            {"id": r["question_id"], "type": r["query_type"], "query": r["query"],
             "status": r["status"], "refusal_correct": r["refusal_correct"],
             "governing_rr": r.get("governing_rr")}
            for r in ordered[:WORST]
        ]  # fmt: skip
    return {"by_type": by_type, "worst": worst}


def _variants_md(rows: list[dict[str, Any]]) -> str:
    columns = ["variant", "held_back_mrr", *(f"dev_{m}" for m in REPORTED_METRICS),
               *(f"test_{m}" for m in REPORTED_METRICS)]  # fmt: skip
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(str(row.get(c, "—")) for c in columns) + " |")
    return "\n".join(lines)

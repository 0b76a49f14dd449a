"""Evidence distances for the configured embedding model, chosen on the golden set's dev half.

Usage: .venv/bin/python bench/calibrate_refusals.py

A question is answered only when its nearest unit is close enough in the model's vector space
(:class:`~civicsetu_pipelines.store.embedding.EvidenceDistances`: ``answer``, ``near`` for a unit
holding most of its terms, ``domain`` for a buyer's story about a matter the statute regulates).
Distances mean nothing across models, so each packaged model carries its own
(``evidence_distances`` in data/models.yaml). This script chooses them, in ONE process, on the
default embedded store materialized with the configured model (``CIVICSETU_EMBED_MODEL``):

1. Every dev question is answered once, top 10 as ``civicsetu eval`` asks, with distances
   that never refuse (2, 2, 2). The other refusals (places, references, another law, a state's
   own evidence, nothing quotable) are what they always are, and the engine's reading of each
   question's evidence (``QueryEngine.last_evidence``) is kept.
2. Replayed under candidate distances: a question is refused when another check refused it or
   its evidence does not answer under them. Each distance can sit at the nearest distance of
   any dev question it can decide (or short of all of them).
3. The dev half alone picks: the most questions decided right (refused exactly when the golden
   question expects it); among those, the nearest distances (``answer`` first, as it applies
   to every question, then ``near``, then ``domain``). Each is then widened by MARGIN (0.02),
   never past halfway to the next dev question it decides. A correct refusal beats a partly
   wrong answer, and the dev half holds few questions that only a distance refuses (most
   refusals are decided by the other checks), so the middle of the gap to the next refusal
   would be a guess: each distance answers the farthest dev question it must, by a margin, and
   no more.
4. The dev and test halves are then answered again under the chosen distances and under the
   model's current ones, and both are scored: refusal correctness and, for plain-language
   questions, the share answered. A comparison question is decided side by side and is not
   replayed in step 2; step 4 scores it as it is.

Prints the chosen distances as the line for data/models.yaml.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from civicsetu_pipelines.answer.answers import (
    QueryEngine,
    default_query_embedder,
    model_distances,
    settings_from_env,
)
from civicsetu_pipelines.answer.verdict import EvidenceReading
from civicsetu_pipelines.base.settings import Settings
from civicsetu_pipelines.evaluate import GoldenQuestion, load_golden
from civicsetu_pipelines.store.database import resolve_database_url
from civicsetu_pipelines.store.embedding import EvidenceDistances, embedding_config_from_env

NEVER_REFUSE = EvidenceDistances(2.0, 2.0, 2.0)
TOP_K = 10  # as civicsetu eval asks
MARGIN = 0.02  # beyond the farthest dev question a distance must answer


@dataclass(frozen=True)
class Decided:
    question: GoldenQuestion
    refused_otherwise: bool  # refused under NEVER_REFUSE: by a check the distances do not move
    evidence: EvidenceReading | None  # None: decided before the verdict, or a comparison


def answer_all(engine: QueryEngine, golden: Sequence[GoldenQuestion]) -> list[Decided]:
    out = []
    for item in golden:
        result = engine.answer(item.query, top_k=TOP_K)
        evidence = engine.last_evidence
        if evidence is not None:  # read every part now, for the replay
            _ = (evidence.shares_terms, evidence.buyers_matter)
        out.append(Decided(item, result["status"] != "answered", evidence))
    return out


def candidates(values: Sequence[float]) -> np.ndarray:
    """Where a distance can sit before its margin: at each of ``values`` (it answers one more
    question), or MARGIN short of the nearest (it answers none of them)."""
    points = sorted(set(values))
    return np.array([max(points[0] - MARGIN, 0.01), *points]) if points else np.array([2.0])


def widened(at: float, values: Sequence[float]) -> float:
    """``at`` plus MARGIN, but never past halfway to the next of ``values``: the farthest dev
    question a distance must answer is answered by a margin, and no dev question farther out
    is let in by it."""
    if not values or at < min(values):  # it answers none of them: no margin to give
        return at
    farther = [v for v in values if v > at]
    return min(at + MARGIN, (at + min(farther)) / 2 if farther else 2.0)


def choose(decided: Sequence[Decided]) -> tuple[EvidenceDistances, int, int]:
    """The dev half's best distances, the questions they decide right and how many there are."""
    free = [d for d in decided if not d.refused_otherwise and d.evidence is not None]
    fixed_right = sum(
        d.refused_otherwise == d.question.expect_refusal
        for d in decided
        if d.refused_otherwise or d.evidence is None
    )
    ev = [d.evidence for d in free if d.evidence is not None]
    nearest = np.array([e.nearest for e in ev])
    exact = np.array([e.exact for e in ev])
    shares = np.array([e.shares_terms for e in ev])
    story = np.array([e.buyers_matter for e in ev])
    expect = np.array([d.question.expect_refusal for d in free])
    a_at = candidates(nearest.tolist())
    n_at = candidates(nearest[shares].tolist())
    d_at = candidates(nearest[story].tolist())
    a = a_at[:, None, None, None]
    n = np.maximum(n_at[None, :, None, None], a)
    d = np.maximum(d_at[None, None, :, None], a)
    answers = (
        exact | (nearest <= a) | (shares & (nearest <= n)) | (story & (nearest <= d))
    )  # (answer, near, domain, question)
    right = (answers != expect).sum(axis=-1)  # answered exactly when no refusal is expected
    best = right.max()

    # the nearest distances that do best: answer first (it applies to every question), then
    # near, then domain; a correct refusal beats a partly wrong answer
    def nearness(ijk: list[int]) -> tuple[float, float, float]:
        at = a_at[ijk[0]]
        return at, max(n_at[ijk[1]], at), max(d_at[ijk[2]], at)

    i, j, k = min(np.argwhere(right == best).tolist(), key=nearness)
    answer = widened(float(a_at[i]), nearest.tolist())
    near = max(widened(float(n_at[j]), nearest[shares].tolist()), answer)
    domain = max(widened(float(d_at[k]), nearest[story].tolist()), answer)
    chosen = EvidenceDistances(round(answer, 3), round(near, 3), round(domain, 3))
    return chosen, int(best) + fixed_right, len(decided)


def scores(engine: QueryEngine, golden: Sequence[GoldenQuestion]) -> dict[str, float]:
    refusal_right, plain, plain_answered = 0, 0, 0
    for item in golden:
        refused = engine.answer(item.query, top_k=TOP_K)["status"] != "answered"
        refusal_right += refused == item.expect_refusal
        if item.phrasing == "plain" and not item.expect_refusal:
            plain += 1
            plain_answered += not refused
    return {
        "refusal_correctness": round(refusal_right / len(golden), 3),
        "plain_answered": round(plain_answered / plain, 3) if plain else float("nan"),
    }


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n", 1)[0]).parse_args()
    config = embedding_config_from_env()
    url = resolve_database_url(Settings.from_env())
    golden = load_golden()
    halves = {s: [g for g in golden if g.split == s] for s in ("dev", "test")}
    embed = default_query_embedder()
    base = settings_from_env()
    current = model_distances(config)
    print(f"model {config.model} ({config.model_id}); current distances {current}")
    with QueryEngine(url, embed, replace(base, distances=NEVER_REFUSE)) as engine:
        decided = answer_all(engine, halves["dev"])
    chosen, right, total = choose(decided)
    not_replayed = sum(1 for d in decided if d.evidence is None)
    print(
        f"dev replay: {right}/{total} decided right under {chosen} "
        f"({not_replayed} decided before the evidence verdict or compared, not replayed)"
    )
    for name, distances in (("current", current), ("chosen", chosen)):
        with QueryEngine(url, embed, replace(base, distances=distances)) as engine:
            for split, items in halves.items():
                print(f"{name:8} {split:5} {scores(engine, items)}")
    print(
        "data/models.yaml: evidence_distances: "
        f"{{answer: {chosen.answer}, near: {chosen.near}, domain: {chosen.domain}}}"
    )


if __name__ == "__main__":
    main()

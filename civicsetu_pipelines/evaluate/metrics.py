"""Scores for golden questions: retrieval, refusals, citations, and ragas' non-LLM metrics.

Pure domain code (no Dagster, no database, no network). One :class:`Judged` is one golden
question after the system answered it; the functions here turn a list of them into per-question
score dicts (``{question id: {metric: value}}``) that :func:`mean_scores` averages.

Retrieval (:func:`retrieval_scores`) is computed by trec_eval (``pytrec_eval``, the reference
implementation of these measures, compiled C: no kernels to compile, milliseconds for a golden
set) on *binary* relevance: every expected top-level unit counts 1, whatever its position in
``expected`` (no graded relevance). It replaced ranx, whose numba kernels cost every scoring
process 5-12 s of compiling (numba's typed containers cannot be cached) and the setup ~45 s of
one core; on 3,000 random rankings both gave every metric identically (BENCHMARKS.md).

ragas' non-LLM metrics (:func:`ragas_non_llm`): ``NonLLMContextPrecisionWithReference``,
``NonLLMContextRecall`` and ``NonLLMStringSimilarity`` (Levenshtein, rapidfuzz), computed by the
real ragas metric objects (ragas 0.3.1, pinned in pyproject.toml: the newest that installs next
to great-expectations and rich 15 -- ragas >= 0.3.2 needs ``instructor``, which needs
``rich<15``; 0.3.1 needs ``marshmallow<4`` through langchain-community/dataclasses-json). A
line-for-line reimplementation of the same definitions on rapidfuzz is kept as the fallback for
an environment where ragas does not import (``backend="auto"``); a test checks both agree.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from rapidfuzz.distance import Levenshtein

from civicsetu_pipelines.answer import full_name

if TYPE_CHECKING:
    from civicsetu_pipelines.answer import Candidate, LLMSettings

log = logging.getLogger("civicsetu.metrics")

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10)
# ragas' defaults (both NonLLM context metrics): a retrieved and a reference context "match" when
# their Levenshtein similarity reaches the threshold (precision: >=, recall: > — as in ragas).
RAGAS_THRESHOLD = 0.5
_RAGAS_EPSILON = 1e-10  # ragas adds it to the precision denominator; kept for identical values

Backend = Literal["auto", "ragas", "rapidfuzz"]


@dataclass(frozen=True)
class Judged:
    """One golden question, evaluated."""

    id: str
    expected: tuple[str, ...]  # golden names of the expected top-level units, best first
    retrieved: tuple[str, ...]  # scored names (scored_name) in ranked order (first counts)
    expect_refusal: bool
    refused: bool
    citations_total: int
    citations_verbatim: int  # how many citation quotes were verbatim in their source
    answer: str  # "" when refused
    ground_truth: str
    contexts: tuple[str, ...]  # texts of the retrieved units
    reference_contexts: tuple[str, ...]  # texts of the expected units
    latency_ms: float
    question: str = ""  # the golden query (for the LLM-judged response relevancy)
    governing: tuple[str, ...] = ()  # the expected units that decide the question as law


# --- retrieval ------------------------------------------------------------------------------


def _unique(labels: Sequence[str]) -> list[str]:
    """Labels in order, each at its first occurrence."""
    return list(dict.fromkeys(labels))


def _check_ids(items: Sequence[Judged]) -> None:
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise ValueError(f"duplicate question id {item.id!r}")
        seen.add(item.id)


def retrieval_scores(
    items: Sequence[Judged], ks: Sequence[int] = DEFAULT_KS
) -> dict[str, dict[str, float]]:
    """Per question id: ``hit@k`` for each k, ``recall@5``, ``recall@10``, ``mrr``, ``ndcg@10``.

    Computed by trec_eval (``pytrec_eval.RelevanceEvaluator``: ``success``, ``recall``,
    ``recip_rank``, ``ndcg_cut``) on binary relevance: each expected unit is relevant (1),
    everything else is not. Duplicates in ``retrieved`` count once, at their first rank. ``mrr``
    is the reciprocal rank of the first relevant unit in the whole ranking (0 when none). A
    question with no retrieved units scores 0 everywhere. Questions that expect a refusal, or have
    no expected units, are left out.
    """
    if any(k < 1 for k in ks):
        raise ValueError(f"every k must be >= 1, got {list(ks)}")
    _check_ids(items)
    names = {f"hit@{k}": f"success_{k}" for k in ks}
    names |= {"recall@5": "recall_5", "recall@10": "recall_10", "mrr": "recip_rank",
              "ndcg@10": "ndcg_cut_10"}  # fmt: skip
    scored = [item for item in items if not item.expect_refusal and item.expected]
    out: dict[str, dict[str, float]] = {item.id: dict.fromkeys(names, 0.0) for item in scored}
    ranked = {item.id: _unique(item.retrieved) for item in scored}
    ranked = {qid: labels for qid, labels in ranked.items() if labels}
    if not ranked:
        return out

    import pytrec_eval

    qrels = {item.id: dict.fromkeys(_unique(item.expected), 1) for item in scored
             if item.id in ranked}  # fmt: skip
    # Scores n, n-1, ..., 1: trec_eval ranks by score (ties by unit id), so exactly in the
    # retrieved order.
    run = {qid: {label: float(len(labels) - i) for i, label in enumerate(labels)}
           for qid, labels in ranked.items()}  # fmt: skip
    measures = {f"success.{','.join(str(k) for k in sorted(set(ks)))}", "recall.5,10",
                "recip_rank", "ndcg_cut.10"}  # fmt: skip
    scores = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    for qid in ranked:
        for ours, theirs in names.items():
            out[qid][ours] = float(scores[qid][theirs])
    return out


GOVERNING_KS: tuple[int, ...] = (1, 3, 5)


def governing_scores(items: Sequence[Judged]) -> dict[str, dict[str, float]]:
    """Per question id with governing units: ``governing_hit@k`` (k = 1, 3, 5) and
    ``governing_rr``, the reciprocal rank of the first governing unit among the retrieved ones
    (duplicates count once, at their first rank). A refused question scores 0: the user got no
    provision at all. Questions without governing units, or expecting a refusal, are left out."""
    out: dict[str, dict[str, float]] = {}
    for item in items:
        if item.expect_refusal or not item.governing:
            continue
        ranked = [] if item.refused else _unique(item.retrieved)
        wanted = set(item.governing)
        rank = next((i for i, label in enumerate(ranked, start=1) if label in wanted), None)
        scores = {f"governing_hit@{k}": float(rank is not None and rank <= k)
                  for k in GOVERNING_KS}  # fmt: skip
        scores["governing_rr"] = 1.0 / rank if rank else 0.0
        out[item.id] = scores
    return out


# Where diversity is asked whether it moved the governing unit out: the top 5, as hit@5 counts.
DIVERSITY_K = 5


# --- unit names -------------------------------------------------------------------------------
#
# A golden file names a unit "JURISDICTION:Label" (any document of the jurisdiction holding that
# label) or "JURISDICTION:document_key:Label" (that document's only: Gujarat's three rule sets
# share rule numbers 1-14). A retrieved unit is scored under the name it answers to among the
# question's own (:func:`scored_name`), else under its full name, which no golden name equals
# unless it names that document; trec_eval and the governing metrics then compare strings.

DOCUMENT_KEY = re.compile(r"[a-z0-9][a-z0-9_]*")


@dataclass(frozen=True)
class UnitName:
    """A golden unit name, parsed: the document is None when any of the jurisdiction's is."""

    jurisdiction: str
    document: str | None
    label: str

    @classmethod
    def parse(cls, name: str) -> UnitName:
        parts = name.split(":", 2)
        if len(parts) == 3 and DOCUMENT_KEY.fullmatch(parts[1]):
            return cls(parts[0], parts[1], parts[2])
        jurisdiction, _, label = name.partition(":")
        return cls(jurisdiction, None, label)

    def matches(self, jurisdiction: str, document: str, label: str) -> bool:
        return (self.jurisdiction == jurisdiction and self.label == label
                and self.document in (None, document))  # fmt: skip


def scored_name(wanted: Sequence[str], jurisdiction: str, document: str, label: str) -> str:
    """The name a retrieved unit is scored under: the first of ``wanted`` (the question's
    golden names) it answers to, else its :func:`full_name`."""
    for name in wanted:
        if UnitName.parse(name).matches(jurisdiction, document, label):
            return name
    return full_name(jurisdiction, document, label)


def unit_key(c: Candidate, wanted: Sequence[str] = ()) -> str:
    """A candidate as scoring names units (:func:`scored_name` among ``wanted``)."""
    return scored_name(wanted, c.row["jurisdiction"], c.row["document_key"],
                       c.row["section_label"])  # fmt: skip


def governing_placement(
    governing: Sequence[str],
    final: Sequence[Candidate],
    candidates: Sequence[Candidate],
    k: int = DIVERSITY_K,
) -> dict[str, Any] | None:
    """Where the question's governing unit stood before and after diversity, from what the
    engine computed for it: ``candidates`` (every candidate, by score, before diversity) and
    ``final`` (the list diversity made of them). The governing unit is the first of
    ``governing`` among the candidates (the one the ranking put first). Places count each
    "JURISDICTION:Section" once, at its first unit, as hit@k and the governing rank do.

    ``unit``, ``label``, ``score``: the unit and its score; ``candidate_rank``: its place among
    the candidates by score; ``final_rank``: its place in the final list (None: not in it);
    ``lower_scored_above``: how many units diversity placed above it in the final list (every
    unit of the list when it is not in it) that scored less than it; ``gave_way``: the cap that
    moved it and the unit placed in its stead, when it is in the list and was moved;
    ``displaced``: a governing unit was in the candidates' top ``k`` and none is in the final
    top ``k`` (the hit@``k`` the cap cost, not the ranking). None when the question has no
    governing unit or none is among the candidates."""
    wanted = set(governing)
    unit = next((c for c in candidates if unit_key(c, governing) in wanted), None)
    if unit is None:
        return None
    key = unit_key(unit, governing)
    before = _unique([unit_key(c, governing) for c in candidates])
    after = _unique([unit_key(c, governing) for c in final])
    first = next((i for i, c in enumerate(final) if unit_key(c, governing) == key), len(final))
    placed = final[first] if first < len(final) else None
    best_after = next((i for i, label in enumerate(after, start=1) if label in wanted), None)
    candidate_rank = before.index(key) + 1
    return {
        "unit": key,
        "label": unit.label,
        "score": round(unit.score, 4),
        "candidate_rank": candidate_rank,
        "final_rank": after.index(key) + 1 if key in after else None,
        "lower_scored_above": sum(1 for c in final[:first] if c.score < unit.score),
        "gave_way": str(placed.gave_way) if placed is not None and placed.gave_way else None,
        "displaced": candidate_rank <= k and (best_after is None or best_after > k),
    }


def mean_scores(per_question: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Each metric's mean over the questions that have it (metrics in first-seen order)."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for scores in per_question.values():
        for name, value in scores.items():
            sums[name] = sums.get(name, 0.0) + float(value)
            counts[name] = counts.get(name, 0) + 1
    return {name: sums[name] / counts[name] for name in sums}


# --- answers --------------------------------------------------------------------------------


def refusal_correct(item: Judged) -> bool:
    """Whether the system refused exactly when the golden question expects a refusal."""
    return item.refused == item.expect_refusal


def citation_validity(item: Judged) -> float | None:
    """Share of citation quotes that are verbatim in their source; None when there are none."""
    if item.citations_total < 0 or not 0 <= item.citations_verbatim <= item.citations_total:
        raise ValueError(
            f"{item.id}: citations_verbatim={item.citations_verbatim} must be within "
            f"0..citations_total={item.citations_total}"
        )
    if item.citations_total == 0:
        return None
    return item.citations_verbatim / item.citations_total


# --- ragas, non-LLM -------------------------------------------------------------------------


def _quiet_ragas() -> None:
    """Turn ragas' usage telemetry off before ragas is imported (it would call home).

    The one place outside ``config.py`` that touches ``os.environ``: ragas reads the variable
    itself at import time, so it must be set here, right before the import; ``setdefault`` keeps
    a value the user set.
    """
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")


@lru_cache(maxsize=1)
def _ragas_metrics() -> tuple[Any, Any, Any, Any] | None:
    """``(SingleTurnSample, precision, recall, similarity)`` from ragas, or None if unimportable."""
    _quiet_ragas()
    try:
        from ragas import SingleTurnSample
        from ragas.metrics import (
            NonLLMContextPrecisionWithReference,
            NonLLMContextRecall,
            NonLLMStringSimilarity,
        )
    except Exception as exc:  # ImportError, or a broken install: fall back, say why once
        log.info("ragas not importable (%s: %s); using the rapidfuzz reimplementation",
                 type(exc).__name__, exc)  # fmt: skip
        return None
    return (
        SingleTurnSample,
        NonLLMContextPrecisionWithReference(),
        NonLLMContextRecall(),
        NonLLMStringSimilarity(),
    )


def ragas_backend() -> str:
    """Which implementation :func:`ragas_non_llm` uses by default, for reports."""
    if _ragas_metrics() is None:
        return "rapidfuzz reimplementation of ragas' non-LLM metrics (ragas not importable)"
    from importlib.metadata import version

    return f"ragas {version('ragas')}"


def _similarity(reference: str, response: str) -> float:
    """ragas ``NonLLMStringSimilarity`` (Levenshtein): 1 - normalized edit distance."""
    return 1.0 - Levenshtein.normalized_distance(reference, response)


def _context_precision(retrieved: Sequence[str], reference: Sequence[str]) -> float:
    """ragas ``NonLLMContextPrecisionWithReference``: average precision of the retrieved list,
    where a retrieved context is relevant when its best similarity to a reference context is
    >= the threshold."""
    verdicts = [
        1 if max(_similarity(rc, ref) for ref in reference) >= RAGAS_THRESHOLD else 0
        for rc in retrieved
    ]
    numerator = sum(sum(verdicts[: i + 1]) / (i + 1) * v for i, v in enumerate(verdicts))
    return numerator / (sum(verdicts) + _RAGAS_EPSILON)


def _context_recall(retrieved: Sequence[str], reference: Sequence[str]) -> float:
    """ragas ``NonLLMContextRecall``: share of reference contexts whose best similarity to a
    retrieved context is > the threshold."""
    verdicts = [
        1 if max(_similarity(rc, ref) for rc in retrieved) > RAGAS_THRESHOLD else 0
        for ref in reference
    ]
    return sum(verdicts) / len(verdicts)


async def _ragas_scores(
    metrics: tuple[Any, Any, Any, Any], jobs: list[tuple[str, str, dict[str, Any]]]
) -> list[float]:
    sample_type, precision, recall, similarity = metrics
    by_name = {"context_precision": precision, "context_recall": recall,
               "answer_similarity": similarity}  # fmt: skip
    return [
        float(await by_name[name].single_turn_ascore(sample_type(**fields)))
        for _, name, fields in jobs
    ]


def ragas_non_llm(
    items: Sequence[Judged], *, backend: Backend = "auto"
) -> dict[str, dict[str, float]]:
    """Per question id: ``context_precision``, ``context_recall``, ``answer_similarity``.

    Only answered in-scope questions (not ``expect_refusal``, not ``refused``) are scored.
    ``context_precision`` (``NonLLMContextPrecisionWithReference``) and ``context_recall``
    (``NonLLMContextRecall``) compare the retrieved ``contexts`` with the ``reference_contexts``
    (Levenshtein similarity, threshold 0.5); they are left out when there are no reference
    contexts, and are 0 when nothing was retrieved (where ragas itself would fail).
    ``answer_similarity`` (``NonLLMStringSimilarity``) compares ``answer`` with
    ``ground_truth``; left out when the ground truth is empty.

    ``backend``: ``"ragas"`` runs ragas' metric objects on ``SingleTurnSample`` (no LLM, no
    embeddings; ``asyncio.run``, so not from inside a running event loop); ``"rapidfuzz"`` runs
    this module's reimplementation of the same definitions; ``"auto"`` takes ragas when it
    imports. See the module docstring for why ragas does not import next to this project's pins.
    """
    _check_ids(items)
    metrics = None if backend == "rapidfuzz" else _ragas_metrics()
    if backend == "ragas" and metrics is None:
        raise RuntimeError(
            "ragas is not importable here (see civicsetu_pipelines.evaluate.metrics)"
        )
    out: dict[str, dict[str, float]] = {}
    zeros: list[tuple[str, str]] = []
    jobs: list[tuple[str, str, dict[str, Any]]] = []  # (question id, metric, sample fields)
    for item in items:
        if item.expect_refusal or item.refused:
            continue
        out[item.id] = {}
        retrieved, reference = list(item.contexts), list(item.reference_contexts)
        if reference:
            if not retrieved:
                zeros += [(item.id, "context_precision"), (item.id, "context_recall")]
            else:
                contexts = {"retrieved_contexts": retrieved, "reference_contexts": reference}
                jobs += [(item.id, "context_precision", contexts),
                         (item.id, "context_recall", contexts)]  # fmt: skip
        if item.ground_truth:
            fields = {"response": item.answer, "reference": item.ground_truth}
            jobs.append((item.id, "answer_similarity", fields))
    if metrics is not None:
        values = asyncio.run(_ragas_scores(metrics, jobs))
    else:
        values = [_rapidfuzz_score(name, fields) for _, name, fields in jobs]
    for (qid, name, _), value in zip(jobs, values, strict=True):
        out[qid][name] = value
    for qid, name in zeros:
        out[qid][name] = 0.0
    order = ("context_precision", "context_recall", "answer_similarity")
    return {qid: {n: scores[n] for n in order if n in scores} for qid, scores in out.items()}


def _rapidfuzz_score(name: str, fields: Mapping[str, Any]) -> float:
    if name == "answer_similarity":
        return _similarity(fields["reference"], fields["response"])
    retrieved, reference = fields["retrieved_contexts"], fields["reference_contexts"]
    if name == "context_precision":
        return _context_precision(retrieved, reference)
    return _context_recall(retrieved, reference)


# --- ragas, LLM-judged ----------------------------------------------------------------------


def ragas_llm(
    items: Sequence[Judged],
    llm_settings: LLMSettings | None,
    runs: int = 3,
    *,
    embed_query: Callable[[str], Any] | None = None,
) -> dict[str, dict[str, float]] | None:
    """Faithfulness and response relevancy judged by an OpenAI-compatible endpoint (ragas'
    ``Faithfulness`` and ``ResponseRelevancy``), each averaged over ``runs`` runs because single
    LLM-judged runs are unstable. None when no endpoint is configured.

    Only answered in-scope questions are judged. Response relevancy compares the question with
    the questions the judge generates from the answer, through ``embed_query`` (the project's
    embedding model); without it only faithfulness is computed. A run that fails or returns NaN
    is left out of the mean; a question with no successful run has no score.
    """
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    if llm_settings is None:
        return None
    if _ragas_metrics() is None:
        log.warning("LLM-judged metrics skipped: ragas is not importable here")
        return None
    from langchain_openai import ChatOpenAI
    from ragas import SingleTurnSample
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import Faithfulness, ResponseRelevancy

    chat = ChatOpenAI(
        base_url=llm_settings.base_url,
        model=llm_settings.model,
        api_key=llm_settings.api_key or "not-needed",  # type: ignore[arg-type]
        temperature=llm_settings.temperature,
        timeout=llm_settings.timeout_s,
        max_retries=0,
    )
    llm = LangchainLLMWrapper(chat)
    judges: dict[str, Any] = {"faithfulness": Faithfulness(llm=llm)}
    if embed_query is not None:
        judges["response_relevancy"] = ResponseRelevancy(
            llm=llm, embeddings=_RagasEmbeddings(embed_query)
        )
    chosen = [i for i in items if not i.expect_refusal and not i.refused and i.answer]
    scores: dict[str, dict[str, list[float]]] = {}
    for item in chosen:
        sample = SingleTurnSample(user_input=item.question, response=item.answer,
                                  retrieved_contexts=list(item.contexts) or [""])  # fmt: skip
        for name, judge in judges.items():
            for _ in range(runs):
                try:
                    value = float(asyncio.run(judge.single_turn_ascore(sample)))
                except Exception as exc:  # a judge failure costs that run only
                    log.warning("%s run failed for %s: %s", name, item.id, type(exc).__name__)
                    continue
                if value == value:  # not NaN
                    scores.setdefault(item.id, {}).setdefault(name, []).append(value)
    return {
        qid: {name: sum(values) / len(values) for name, values in by_name.items()}
        for qid, by_name in scores.items()
    }


class _RagasEmbeddings:
    """The project's query embedder as ragas embeddings (for response relevancy)."""

    def __new__(cls, embed_query: Callable[[str], Any]) -> Any:
        from ragas.embeddings import BaseRagasEmbeddings

        class Wrapped(BaseRagasEmbeddings):  # type: ignore[misc]
            def embed_query(self, text: str) -> list[float]:
                return [float(x) for x in embed_query(text)]

            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                return [self.embed_query(t) for t in texts]

            async def aembed_query(self, text: str) -> list[float]:
                return self.embed_query(text)

            async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
                return self.embed_documents(texts)

        return Wrapped()

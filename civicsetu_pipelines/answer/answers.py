"""Trusted answers from the materialized stores: one question's walk down the stages.

Pure domain code (no Dagster). :class:`QueryEngine` holds a database connection, the query
embedder and the reranker for a process; :func:`answer` uses one per process. A question passes
each stage once, in this order, each a module of its own:

1. understand -- :mod:`~civicsetu_pipelines.answer.questions`: the question validated and read
   (:class:`~civicsetu_pipelines.answer.questions.Query`: places, references, intents, the
   statute's words for a buyer's), the filters parsed (an ``Asked``); a question naming only
   places the corpus does not hold is refused here, before any search;
2. retrieve -- :mod:`~civicsetu_pipelines.answer.retrieval`: its references resolved, every
   candidate unit by vector, full text and phrase, fused by reciprocal rank and expanded;
3. rank -- :mod:`~civicsetu_pipelines.answer.ranking`: reranked, and the units served chosen
   by diversity;
4. decide -- :mod:`~civicsetu_pipelines.answer.verdict`: refused for its references or its
   evidence (read from every candidate by score and the units served as a set, never their
   places), else the confidence its answer is given (:mod:`~civicsetu_pipelines.answer.confidence`);
5. compose -- :mod:`~civicsetu_pipelines.answer.compose`: verbatim quotes with their citations
   placed on pages.

A question comparing states (or answered from the provisions table) retrieves and ranks once
per state and is decided and composed side by side. Every stage is timed (``timings_ms``); the
log records the question's hash and length, its status and the total time, never the text.
``bench/bench_answer_path.py`` follows a question call by call.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from civicsetu_pipelines.answer.candidates import Candidate
from civicsetu_pipelines.answer.compose import Comparison, Composer
from civicsetu_pipelines.answer.confidence import ConfidenceModel, served_confidence
from civicsetu_pipelines.answer.llm import LLMSettings
from civicsetu_pipelines.answer.places import ACT_JURISDICTION
from civicsetu_pipelines.answer.questions import (
    Asked,
    Query,
    understand,
    understand_request,
)
from civicsetu_pipelines.answer.ranking import (
    DIVERSITY_RULES,
    Reranker,
    make_reranker,
    rank,
)
from civicsetu_pipelines.answer.retrieval import (
    QueryEmbedder,
    RetrievalSettings,
    Retriever,
    search_scope,
)
from civicsetu_pipelines.answer.timing import Timer
from civicsetu_pipelines.answer.verdict import (
    EvidenceReading,
    decide,
    places_refusal,
    reference_refusal,
)
from civicsetu_pipelines.provisions import (
    ACROSS_STATES,
    load_matter_specs,
    matter_asked,
    stored_divergences,
    stored_provisions,
)
from civicsetu_pipelines.store import (
    EmbeddingConfig,
    EvidenceDistances,
    absent_terms,
    connect,
    ensure_serving,
)

log = logging.getLogger("civicsetu.answers")


@dataclass(frozen=True)
class AnswerSettings:
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    cross_encoder: str | None = None
    ranker: str | None = None  # a learned ranker file (served when it exists)
    llm: LLMSettings | None = None
    distances: EvidenceDistances | None = None  # None: those calibrated for the query's model


def model_distances(config: EmbeddingConfig | None) -> EvidenceDistances:
    """The evidence distances calibrated for the model of ``config`` (``evidence_distances`` in
    data/models.yaml, or in a taught encoder's ``encoder.json``). A model never calibrated
    answers with the default model's, and the log says so: its refusals are not measured. An
    embedder that names no config is the default model."""
    default = EmbeddingConfig()
    config = config or default
    calibrated = config.evidence_distances
    if calibrated is None:
        log.warning(
            "embedding model %s has no evidence distances calibrated (data/models.yaml, or a "
            "taught encoder's encoder.json): its refusals use %s's, which may not fit its "
            "vectors (bench/calibrate_refusals.py calibrates them on the golden set's dev half)",
            config.model,
            default.model,
        )
        calibrated = default.evidence_distances
    assert calibrated is not None, "the default model has calibrated evidence distances"
    return calibrated


class QueryEngine:
    """Answers questions from the materialized stores (one connection, used under a lock)."""

    def __init__(
        self,
        database_url: str,
        embed_query: Callable[[str], np.ndarray],
        settings: AnswerSettings | None = None,
    ) -> None:
        self.settings = settings or AnswerSettings()
        self._conn = connect(database_url, autocommit=True)
        try:
            ensure_serving(self._conn)  # StoreNotReady, saying what to run, on an empty store
        except BaseException:
            self._conn.close()
            raise
        self._embed_query = embed_query
        self.distances = self.settings.distances or model_distances(
            getattr(embed_query, "config", None)
        )
        # The evidence read for the last question that reached the verdict on it (None when
        # decided before retrieval, or a comparison): bench/calibrate_refusals.py replays it.
        self.last_evidence: EvidenceReading | None = None
        self._lock = threading.Lock()
        self.reranker: Reranker = make_reranker(self.settings.cross_encoder, self.settings.ranker)
        self._confidence: ConfidenceModel | None = None  # the ranking's, read on first use
        self._retriever = Retriever(self._conn, embed_query, self.settings.retrieval)
        self._composer = Composer(self._conn, self.settings.llm)
        self.jurisdictions = self._retriever.stored_jurisdictions()
        self._matters = load_matter_specs()

    def use_reranker(self, reranker: Reranker) -> Reranker:
        """Rank with ``reranker`` from the next question on; returns the one it replaces
        (training records candidates through it; evaluation compares rankers)."""
        previous, self.reranker = self.reranker, reranker
        self._confidence = None
        return previous

    @property
    def confidence_model(self) -> ConfidenceModel:
        """The confidence model of the ranking served (``answer.confidence.served_confidence``),
        read on the first answer that needs it; a model set here serves until the ranking
        changes (calibration sets one while it fits the ranking's own)."""
        if self._confidence is None:
            self._confidence = served_confidence(self.reranker)
        return self._confidence

    @confidence_model.setter
    def confidence_model(self, model: ConfidenceModel) -> None:
        self._confidence = model

    def scope_of(self, question: object) -> list[str] | None:
        """The jurisdictions an answer to ``question`` may read (as :meth:`answer` with no
        filter searches them): the states it names and the Act; None for every jurisdiction."""
        return search_scope(understand(question, known_jurisdictions=self.jurisdictions), [])

    @property
    def embed_query(self) -> Callable[[str], np.ndarray]:
        """The query embedder (evaluation uses it for ragas' response relevancy)."""
        return self._embed_query

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> QueryEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the public call ------------------------------------------------------------------

    def answer(
        self,
        question: object,
        *,
        jurisdictions: Sequence[str] | None = None,
        as_of: str | dt.date | None = None,
        top_k: int = 5,
    ) -> dict[str, Any]:
        """Answer ``question`` or refuse with a reason. Bad input raises
        :class:`~civicsetu_pipelines.answer.questions.QuestionError` (a clear message, no traceback
        needed); everything else is a result dict (see the README for the fields)."""
        timer = Timer()
        asked = understand_request(question, jurisdictions=jurisdictions, as_of=as_of,
                                   top_k=top_k, known=self.jurisdictions)  # fmt: skip
        since = timer.stage("understand", timer.started)
        with self._lock:
            self.last_evidence = None
            result = self._answer(asked, timer, since)
        result["timings_ms"] = timer.finish()
        version = getattr(self.reranker, "version", "")
        result["ranker"] = f"{self.reranker.name} {version}".strip()
        log.info(
            "question %s (%d chars): %s%s in %.1f ms",
            asked.hash,
            asked.query.length,
            result["status"],
            f" ({result['refusal_reason']})" if result["refusal_reason"] else "",
            result["timings_ms"]["total"],
        )
        return result

    # -- stages -----------------------------------------------------------------------------

    def _answer(self, asked: Asked, timer: Timer, since: float) -> dict[str, Any]:
        """The stages after understanding (see the module docstring)."""
        query, as_of = asked.query, asked.as_of
        if asked.only_unheld_places:  # refused before any search
            return places_refusal(asked, self.jurisdictions)
        scope = search_scope(query, list(asked.wanted))
        table = self._from_table(query, scope, as_of)
        if table is not None:
            timer.stage("answer", since)
            return table
        comparing = "comparison" in query.intents and len(
            [j for j in scope or [] if j != ACT_JURISDICTION]
        ) >= 2  # fmt: skip
        if comparing:
            return self._compare(asked, scope or [], timer, since)
        found, since = self._retriever.find(query, scope, as_of, timer, since)
        ranked, since = rank(query, found.candidates, self.reranker, asked.k,
                             (found.diversity, found.per_document), timer, since,
                             found.weights)  # fmt: skip
        decision = decide(asked, scope, found.resolutions, ranked.served, ranked.candidates,
                          functools.partial(absent_terms, self._conn), self.distances,
                          self.jurisdictions, self.confidence_model)  # fmt: skip
        self.last_evidence = decision.evidence
        since = timer.stage("verdict", since)
        if decision.refusal is not None:
            return decision.refusal
        return self._composer.compose(query, ranked.served, decision, timer, since)

    def _from_table(
        self, query: Query, scope: Sequence[str] | None, as_of: dt.date | None
    ) -> dict[str, Any] | None:
        """A question comparing states on a matter of the provisions table (two states or
        more named, or "each state", "which states" ...), answered from the table: each
        state's value beside its verbatim quote, and the divergences flagged between them.
        None (retrieval answers) for any other question, for a date (the table holds today's
        rules) and when the table holds no quote for any of the states."""
        if as_of is not None or query.firm_references:
            return None
        spec = matter_asked(query.text, self._matters)
        if spec is None:
            return None
        states = [j for j in scope or [] if j != ACT_JURISDICTION]
        if len(states) < 2:
            if states or not ACROSS_STATES.search(query.text):
                return None
            states = []  # every state the table holds
        provisions = stored_provisions(self._conn, states, spec.key)
        units = self._retriever.units([p.chunk_id for p in provisions if p.chunk_id])
        comparison = Comparison(query, self._composer, self.distances, self.confidence_model)
        for p in provisions:
            row = units.get(p.chunk_id or "")
            unit = Candidate(row, exact=True, via="provisions table") if row else None
            comparison.add_provision(p.jurisdiction, unit, p.quote, p.value)
        if not comparison.citations:
            return None
        result = comparison.result()
        answered = {side["jurisdiction"] for side in result["comparison"] if side["citations"]}
        flags = [f for f in stored_divergences(self._conn) if f["matter"] == spec.key
                 and f["kind"] != "unfilled" and f["jurisdiction"] in answered]  # fmt: skip
        if flags:
            result["answer"] += "\nWhere they depart:\n" + "\n".join(
                f"  {f['message']}" for f in flags
            )
        result["provisions"] = {"matter": spec.key, "name": spec.name,
                                "flags": [{k: f[k] for k in ("jurisdiction", "kind", "message")}
                                          for f in flags]}  # fmt: skip
        return result

    def _compare(
        self, asked: Asked, scope: Sequence[str], timer: Timer, since: float
    ) -> dict[str, Any]:
        """Each jurisdiction's own provisions side by side (precedence only where quoted): its
        references read once, then each state retrieved and ranked on its own."""
        query, as_of = asked.query, asked.as_of
        resolutions = self._retriever.resolve(query, scope, as_of)
        since = timer.stage("references", since)
        refused = reference_refusal(query, resolutions, scope, as_of, comparing=True,
                                    vague=asked.vague)  # fmt: skip
        if refused is not None:
            return refused
        states = [j for j in scope if j != ACT_JURISDICTION]
        per_state = max(2, asked.k // len(states))
        comparison = Comparison(query, self._composer, self.distances, self.confidence_model)
        for state in states:
            found, since = self._retriever.find(query, [state], as_of, timer, since, [])
            ranked, since = rank(query, found.candidates, self.reranker, per_state,
                                 (found.diversity, found.per_document), timer, since,
                                 found.weights)  # fmt: skip
            comparison.add(state, ranked.served, self._retriever.unknown_terms,
                           ranked.candidates)  # fmt: skip
        timer.stage("answer", since)
        return comparison.result()


# ---------------------------------------------------------------------------------------------
# One engine per process


_ENGINES: dict[tuple[str, AnswerSettings], QueryEngine] = {}
_ENGINES_LOCK = threading.Lock()


def answer(
    question: object,
    *,
    jurisdictions: Sequence[str] | None = None,
    as_of: str | dt.date | None = None,
    top_k: int = 5,
    database_url: str | None = None,
    settings: AnswerSettings | None = None,
) -> dict[str, Any]:
    """Answer a question from the materialized stores (see :meth:`QueryEngine.answer`).

    The embedded Postgres (or ``CIVICSETU_DATABASE_URL``) and the configured embedding model
    are used; the model is loaded once per process. A store nothing was materialized into
    raises ``StoreNotReady``, saying what to run.
    """
    from civicsetu_pipelines.base import Settings
    from civicsetu_pipelines.store import resolve_database_url

    url = database_url or resolve_database_url(Settings.from_env())
    settings = settings or settings_from_env()
    with _ENGINES_LOCK:
        engine = _ENGINES.get((url, settings))
        if engine is None:  # the embedder loads on first use: an empty store fails first
            engine = QueryEngine(url, default_query_embedder(), settings)
            _ENGINES[(url, settings)] = engine
    return engine.answer(question, jurisdictions=jurisdictions, as_of=as_of, top_k=top_k)


def settings_from_env() -> AnswerSettings:
    """Answer settings from the environment (``CIVICSETU_EF_SEARCH``, ``CIVICSETU_DIVERSITY`` /
    ``_DIVERSITY_CAP``, ``CIVICSETU_CROSS_ENCODER``,
    ``CIVICSETU_RANKER`` (else the promoted learned ranker, if any),
    ``CIVICSETU_LLM_BASE_URL`` / ``_MODEL`` / ``_API_KEY``)."""
    from civicsetu_pipelines.base import Settings, answer_env

    env = answer_env()
    llm = None
    if env.get("llm_base_url"):
        llm = LLMSettings(base_url=env["llm_base_url"], model=env.get("llm_model") or "default",
                          api_key=env.get("llm_api_key") or None)  # fmt: skip
    defaults = RetrievalSettings()
    retrieval = RetrievalSettings(
        ef_search=int(env.get("ef_search") or 100),
        per_document=int(env.get("diversity_cap") or defaults.per_document),
        diversity=env.get("diversity") or defaults.diversity,
        # "none": a question naming a state is diversified as any other
        named_state_diversity=None
        if (named := env.get("diversity_named_state", defaults.named_state_diversity)) == "none"
        else named,
    )
    for name, rule in (
        ("", retrieval.diversity),
        ("_NAMED_STATE", retrieval.named_state_diversity),
    ):
        if rule is not None and rule not in DIVERSITY_RULES:
            raise ValueError(f"CIVICSETU_DIVERSITY{name}={rule!r}: expected one of "
                             f"{', '.join(DIVERSITY_RULES)}")  # fmt: skip
    return AnswerSettings(
        retrieval=retrieval,
        cross_encoder=env.get("cross_encoder") or None,
        ranker=str(ranker) if (ranker := Settings.from_env().ranker_path) else None,
        llm=llm,
    )


def default_query_embedder() -> QueryEmbedder:
    """The configured embedding model, in this process (a query is one short text).

    The ONNX runtime by default: no torch, transformers or sentence-transformers is imported on
    the question path. One intra-op thread: a one-sentence query gains nothing from a second
    one, and on a busy 2-core machine two threads oversubscribe the cores (bench/bench_answers.py
    under load: p95 of the answer path 151 ms with 2 threads, 42 ms with 1).
    """
    from civicsetu_pipelines.base import Settings
    from civicsetu_pipelines.store import embedding_config_from_env, open_embedder

    models = Settings.from_env().models_dir
    return QueryEmbedder(open_embedder(embedding_config_from_env(), models, threads=1))

"""The confidence model of a ranking, fitted under it (issue 47): what ``learned_ranker``'s
promotion and ``bench/calibrate_confidence.py`` both do.

1. The mined training questions (``rank.pairs``: the corpus's FAQ questions, titles, lay
   rewrites, judgment sentences, derivations; never a golden question) are answered under the
   ranking, top 10 as evaluation asks. Each answered one gives the features of its evidence
   (``answer.confidence.evidence_features``) and a label: one of its provisions among the
   first three served. An answer from the unit the question names is ``high`` by rule and
   left out.
2. A logistic model is fitted on them (``answer.confidence.fit_model``).
3. The golden dev half's answerable questions with a governing provision are answered the same
   way, and each level's threshold is chosen on them (``choose_thresholds``). The test half is
   never read here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from civicsetu_pipelines.answer import (
    TOP,
    ConfidenceModel,
    QuestionError,
    choose_thresholds,
    evidence_features,
    feature_row,
    fit_model,
    model_of_no_weight,
)
from civicsetu_pipelines.evaluate import scored_name
from civicsetu_pipelines.rank.pairs import TrainingQuery

TOP_K = 10  # as civicsetu eval asks


class Answering(Protocol):
    """What is read of the query engine: an answer, and the evidence it was decided on."""

    last_evidence: Any
    confidence_model: ConfidenceModel

    def answer(self, question: object, *, top_k: int = ...) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Reading:
    """One answered question: its evidence's features (None for an answer from the unit the
    question names, ``high`` by rule) and whether one of its wanted provisions was served among
    the first :data:`~civicsetu_pipelines.answer.confidence.TOP`."""

    features: list[float] | None
    right: bool


def read_answer(engine: Answering, query: str, wanted: Sequence[str]) -> Reading | None:
    """``query`` answered by ``engine`` (None when it is refused, or not a question the engine
    takes); ``wanted``: golden names ("JURISDICTION:Section 18" or with the document)."""
    try:
        result = engine.answer(query, top_k=TOP_K)
    except QuestionError:  # a mined text the engine refuses to read teaches nothing
        return None
    evidence = engine.last_evidence
    if result["status"] != "answered" or evidence is None or not evidence.ranked:
        return None
    names = list(dict.fromkeys(
        scored_name(wanted, r["jurisdiction"], r["document"], r["section"])
        for r in result["retrieved"]
    ))  # fmt: skip
    right = any(n in wanted for n in names[:TOP])
    if evidence.ranked[0].exact:
        return Reading(None, right)
    return Reading(feature_row(evidence_features(evidence.query, evidence.ranked)), right)


@dataclass(frozen=True)
class Calibration:
    """A model fitted and its thresholds chosen, with the readings they were chosen on (the dev
    half's; the bench scores the test half's in the same shape)."""

    model: ConfidenceModel
    fitted_on: int  # answered mined questions the model was fitted on
    right_in_fit: int
    readings: list[Reading]  # the half's answered questions
    asked: int  # the half's answerable questions with a governing provision

    def probabilities(self) -> tuple[list[float], list[bool]]:
        """Each answer's probability (1.0 for a named unit's) and whether it was right."""
        return ([1.0 if r.features is None else self.model.probability_of(r.features)
                 for r in self.readings], [r.right for r in self.readings])  # fmt: skip


def calibrate(
    engine: Answering,
    mined: Sequence[TrainingQuery],
    dev: Sequence[tuple[str, Sequence[str]]],
    progress: Callable[[str], None] | None = None,
    provenance: dict[str, Any] | None = None,
) -> Calibration:
    """The confidence model of the ranking ``engine`` serves: fitted on ``mined``, its
    thresholds chosen on ``dev`` (each question with its governing names). ``progress`` is told
    every 100 questions. The engine then gives levels by the model chosen."""
    say = progress or (lambda _line: None)
    # the level an answer is said with decides nothing here (not its status, not its units):
    # a model of no weight, so that no earlier model (one of other features, say) is read
    engine.confidence_model = model_of_no_weight()
    fit_rows: list[Reading] = []
    for i, q in enumerate(mined, start=1):
        got = read_answer(engine, q.query, [f"{j}:{s}" for j, s in q.positives])
        if got is not None and got.features is not None:
            fit_rows.append(got)
        if i % 100 == 0 or i == len(mined):
            say(f"confidence: mined questions answered {i}/{len(mined)}")
    if not fit_rows or len({r.right for r in fit_rows}) < 2:
        raise ValueError(f"confidence: {len(fit_rows)} answered mined question(s), right and "
                         "wrong both needed to fit a model")  # fmt: skip
    model = fit_model([r.features for r in fit_rows if r.features is not None],
                      [r.right for r in fit_rows])  # fmt: skip
    readings = [r for q, wanted in dev if (r := read_answer(engine, q, wanted)) is not None]
    say(f"confidence: dev questions answered {len(dev)}/{len(dev)}")
    # a named unit's answer is high by rule, not by the model: left out of the choice
    modelled = [(model.probability_of(r.features), r.right) for r in readings
                if r.features is not None]  # fmt: skip
    cuts = choose_thresholds([p for p, _ in modelled], [right for _, right in modelled])
    chosen = dataclasses.replace(model, thresholds=cuts, provenance=dict(provenance or {}))
    engine.confidence_model = chosen  # the ranking's own from here on
    return Calibration(chosen, len(fit_rows), sum(r.right for r in fit_rows), readings, len(dev))

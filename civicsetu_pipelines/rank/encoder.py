"""The bi-encoder taught the corpus's own language: MiniLM fine-tuned on what the corpus pairs.

Pure domain code (no Dagster). The questions :mod:`civicsetu_pipelines.rank.pairs` mines (titles,
lay rewrites, FAQ questions to the sections their answers cite, judgment sentences to the sections
they apply, rule titles to the Act sections they derive from) become (question, positive,
negative) triples of unit texts as the store embeds them:

* the positive is the passage of a question's answer (the unit it was read from, or the Act
  section it cites) nearest the question under the model being taught (a section of many parts
  answers through the part that says it);
* the negative is the nearest passage of any other unit (a hard negative: what today's model
  would wrongly bring), so the model learns the neighbouring sections apart;
* a question whose words are near any golden question's is left out (:func:`near_golden`), and
  so is the held-back slice the variants are chosen on: the golden set is never trained on.

:func:`fine_tune` trains with sentence-transformers (MultipleNegativesRankingLoss, one duplicate-
free batch sampler, seeded, CPU) and saves the model with a manifest (``encoder.json``) naming its
version: the sha256 of the training triples, the base model's weights and the settings
(:func:`encoder_version`). The folder is a model like any other (``CIVICSETU_EMBED_MODEL``), so
the ONNX export and the embedding cache key it by its weights.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from civicsetu_pipelines.evaluate import UnitName
from civicsetu_pipelines.rank.pairs import TrainingQuery
from civicsetu_pipelines.store import (
    TAUGHT_MANIFEST as MANIFEST,
    document_text,
    sha256_file,
    taught_manifest,
)

NEAR_GOLDEN = 0.6  # a mined question sharing this share of its words with a golden one is left out
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Passage:
    """A stored unit's chunk, as the store embeds it."""

    chunk_id: str
    jurisdiction: str
    document_key: str
    section_label: str
    text: str

    @property
    def unit(self) -> tuple[str, str]:
        return (self.jurisdiction, self.section_label)


@dataclass(frozen=True)
class EncoderTriple:
    """One training example: a mined question, the passage that answers it, a near one that
    does not."""

    query: str
    positive: str
    negative: str
    source: str  # the mined question's source (title, faq, judgment, derivation, lay)


@dataclass(frozen=True)
class TuningSettings:
    """How the encoder is taught (part of its version)."""

    epochs: int = 3  # 1 and 3 tie on dev (vector MRR 0.467, 0.464); 3 wins the held-back slice
    batch_size: int = 32
    learning_rate: float = 2e-5
    warmup_ratio: float = 0.1
    max_seq_length: int = 128  # training texts only: the saved model keeps the base's length
    seed: int = 0


_PASSAGES = (
    "SELECT chunk_id::text, jurisdiction, document_key, section_label, label, title, text "
    "FROM legal_chunks WHERE status = 'current' ORDER BY chunk_id"
)


def stored_passages(conn: psycopg.Connection[Any]) -> list[Passage]:
    """Every current chunk of the store, its text as the store embeds it, in chunk order."""
    return [Passage(c, j, d, s, document_text(label, title, text))
            for c, j, d, s, label, title, text in conn.execute(_PASSAGES)]  # fmt: skip


def vector_ranks(
    wanted: Sequence[Sequence[UnitName]],
    query_vectors: np.ndarray,
    passages: Sequence[Passage],
    passage_vectors: np.ndarray,
) -> list[int | None]:
    """Per question, the 1-based rank of its first wanted unit among the distinct units
    (jurisdiction, document, label) vector search alone brings, None when none is held."""
    out: list[int | None] = []
    for names, row in zip(wanted, query_vectors @ passage_vectors.T, strict=True):
        seen: set[tuple[str, str, str]] = set()
        found = None
        for index in np.argsort(-row):
            p = passages[int(index)]
            seen.add((p.jurisdiction, p.document_key, p.section_label))
            if any(n.matches(p.jurisdiction, p.document_key, p.section_label) for n in names):
                found = len(seen)
                break
        out.append(found)
    return out


def rank_summary(found: Sequence[int | None]) -> dict[str, float]:
    """hit@1/3/5 and MRR of :func:`vector_ranks`' ranks."""
    n = max(len(found), 1)
    out = {f"hit_at_{k}": round(sum(r is not None and r <= k for r in found) / n, 4)
           for k in (1, 3, 5)}  # fmt: skip
    out["mrr"] = round(sum(1 / r for r in found if r) / n, 4)
    return out


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def near_golden(queries: Sequence[str], golden: Iterable[str],
                threshold: float = NEAR_GOLDEN) -> set[int]:  # fmt: skip
    """Indexes of ``queries`` whose words overlap a golden question's by ``threshold`` or more
    (Jaccard over lower-cased words): these are never trained on."""
    golden_words = [w for w in (_words(g) for g in golden) if w]
    out: set[int] = set()
    for index, query in enumerate(queries):
        words = _words(query)
        if not words:
            continue
        for other in golden_words:
            if len(words & other) / len(words | other) >= threshold:
                out.add(index)
                break
    return out


def encoder_triples(
    queries: Sequence[TrainingQuery],
    passages: Sequence[Passage],
    query_vectors: np.ndarray,
    passage_vectors: np.ndarray,
    left_out: set[int] = frozenset(),  # type: ignore[assignment]
) -> list[EncoderTriple]:
    """The training triples of ``queries`` (held-back ones and ``left_out`` indexes skipped):
    positive and negative chosen by the vectors of the model being taught (see the module
    docstring). A question whose answer holds no passage is skipped."""
    by_unit: dict[tuple[str, str], list[int]] = {}
    by_chunk = {p.chunk_id: i for i, p in enumerate(passages)}
    for index, passage in enumerate(passages):
        by_unit.setdefault(passage.unit, []).append(index)
    out = []
    for index, query in enumerate(queries):
        if query.held_back or index in left_out:
            continue
        answers = [i for unit in query.positives for i in by_unit.get(unit, [])]
        origin = by_chunk.get(query.origin)
        if query.source in ("title", "lay") and origin is not None:
            document = passages[origin].document_key  # that document's unit, not a namesake's
            answers = [i for i in answers if passages[i].document_key == document]
        if not answers:
            continue
        scores = passage_vectors @ query_vectors[index]
        positive = max(answers, key=lambda i: scores[i])
        answer_units = set(query.positives)
        negative = next(
            (int(i) for i in np.argsort(-scores) if passages[int(i)].unit not in answer_units),
            None,
        )
        if negative is None:
            continue
        out.append(EncoderTriple(query.query, passages[positive].text, passages[negative].text,
                                 query.source))  # fmt: skip
    return out


def encoder_version(triples: Sequence[EncoderTriple], base_weights_sha256: str,
                    settings: TuningSettings) -> str:  # fmt: skip
    """The fine-tuned encoder's version: sha256 of its training triples, the base model's
    weights and the settings (the first 12 hex digits name its folder)."""
    digest = hashlib.sha256()
    digest.update(json.dumps({"base": base_weights_sha256, "settings": asdict(settings)},
                             sort_keys=True).encode())  # fmt: skip
    for triple in triples:
        digest.update(json.dumps(asdict(triple), sort_keys=True).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def fine_tune(
    triples: Sequence[EncoderTriple],
    base: str,
    target: Path,
    settings: TuningSettings,
    manifest: Mapping[str, Any],
    progress: Callable[[int, int, float | None], None] | None = None,
) -> Path:
    """Teach the model at ``base`` (a folder) the ``triples`` and save it at ``target`` with
    ``manifest`` (plus the settings and the weights' sha256) as ``encoder.json``.
    ``progress(step, steps, loss)`` is called as training goes. Written to a temporary folder
    first: ``target`` holds a whole model or nothing."""
    import shutil
    import tempfile

    import torch
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.training_args import BatchSamplers
    from transformers import PrinterCallback, TrainerCallback
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()
    torch.manual_seed(settings.seed)
    model = SentenceTransformer(base, device="cpu")
    served_length = model.max_seq_length
    model.max_seq_length = settings.max_seq_length
    data = Dataset.from_dict({
        "anchor": [t.query for t in triples],
        "positive": [t.positive for t in triples],
        "negative": [t.negative for t in triples],
    })  # fmt: skip

    class Progress(TrainerCallback):  # type: ignore[misc]
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None,
                   **kwargs: Any) -> None:  # fmt: skip
            if progress is not None:
                progress(state.global_step, state.max_steps, (logs or {}).get("loss"))

    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        args = SentenceTransformerTrainingArguments(
            output_dir=str(work / "trainer"),
            num_train_epochs=settings.epochs,
            per_device_train_batch_size=settings.batch_size,
            learning_rate=settings.learning_rate,
            warmup_steps=settings.warmup_ratio,  # a float below 1: a share of the steps
            seed=settings.seed,
            data_seed=settings.seed,
            batch_sampler=BatchSamplers.NO_DUPLICATES,
            save_strategy="no",
            logging_steps=1,
            report_to=[],
            use_cpu=True,
            disable_tqdm=True,
        )
        trainer = SentenceTransformerTrainer(
            model=model, args=args, train_dataset=data,
            loss=MultipleNegativesRankingLoss(model), callbacks=[Progress()],
        )  # fmt: skip
        trainer.remove_callback(PrinterCallback)  # each step's dict on stdout; progress says it
        trainer.train()
        model.max_seq_length = served_length
        saved = work / "model"
        model.save(str(saved))
        weights = saved / "model.safetensors"
        record = {**manifest, "settings": asdict(settings), "triples": len(triples),
                  "weights": "model.safetensors",
                  "sha256": sha256_file(weights)}  # fmt: skip
        (saved / MANIFEST).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
        if target.exists():
            shutil.rmtree(target)
        saved.rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def read_manifest(folder: Path) -> dict[str, Any]:
    """A taught encoder's manifest, its weights checked against the sha256 it records
    (``store.taught_manifest``; ValueError naming the folder when it has none)."""
    record = taught_manifest(str(folder), verify=True)
    if not record:
        raise ValueError(f"{folder}: no {MANIFEST}; not a fine-tuned encoder of this project")
    return record


@dataclass(frozen=True)
class EncoderOutcome:
    """What teaching the encoder made and how it retrieves beside the model it was taught from
    (vector search alone): per half of the golden set (dev chooses; test is reported in
    aggregate) and on the held-back mined questions, and the paired test on dev."""

    folder: Path
    version: str
    trained: bool  # False: a model of this version was already there
    triples: Mapping[str, int]  # per source, and "total"
    seconds: float
    figures: Mapping[str, Mapping[str, Mapping[str, float]]]  # model -> half -> metric
    dev_test: Mapping[str, Any]  # the paired test of dev reciprocal ranks (tuned - base)
    improves: bool
    reason: str


def teach_encoder(
    conn: psycopg.Connection[Any],
    queries: Sequence[TrainingQuery],
    golden: Sequence[Any],
    base: Any,
    models_dir: Path,
    settings: TuningSettings = TuningSettings(),
    say: Callable[[str], None] = lambda line: None,
) -> EncoderOutcome:
    """Teach the packaged model ``base`` (an :class:`~civicsetu_pipelines.store.EmbeddingConfig`)
    the stored corpus's ``queries`` (never the ``golden`` questions or anything near them) into
    ``<models_dir>/encoders/<name>-<version>``, then judge it against ``base`` by vector search
    over the stored passages. ``say`` hears each step (n/N)."""
    import time

    from civicsetu_pipelines.evaluate import paired_test
    from civicsetu_pipelines.store import (
        EmbeddingConfig,
        OnnxEmbedder,
        ensure_onnx_model,
        model_source,
        source_fingerprint,
    )

    started = time.perf_counter()
    passages = stored_passages(conn)
    base_encoder = OnnxEmbedder(base, models_dir, folder=ensure_onnx_model(base, models_dir))
    say(f"1/4 encoding {len(passages)} passages and {len(queries)} mined questions with "
        f"{base.model}")  # fmt: skip
    base_vectors = base_encoder.encode([p.text for p in passages])
    left_out = near_golden([q.query for q in queries], [g.query for g in golden])
    triples = encoder_triples(queries, passages, base_encoder.encode([q.query for q in queries]),
                              base_vectors, left_out)  # fmt: skip
    if not triples:
        raise ValueError("the stored corpus teaches no training pair: materialize first")
    version = encoder_version(triples, source_fingerprint(base), settings)
    folder = models_dir / "encoders" / f"{base.packaged.name if base.packaged else 'model'}" \
        f"-corpus-{version[:12]}"  # fmt: skip
    trained = not (folder / MANIFEST).is_file()
    if trained:
        say(f"2/4 teaching {len(triples)} triples ({len(left_out)} questions near a golden one "
            f"left out), {settings.epochs} epoch(s), into {folder}")  # fmt: skip

        def step(n: int, steps: int, loss: float | None) -> None:
            if loss is not None and (n % 10 == 0 or n == steps):
                say(f"2/4 step {n}/{steps}, loss {loss:.3f}")

        fine_tune(triples, model_source(base, models_dir), folder, settings,
                  {"version": version, "base": base.model,
                   "base_sha256": source_fingerprint(base)}, step)  # fmt: skip
    else:
        read_manifest(folder)
        say(f"2/4 {folder} already holds version {version[:12]}: not taught again")
    tuned = EmbeddingConfig(model=str(folder))
    say("3/4 exporting the taught model to ONNX and encoding the passages with it")
    tuned_encoder = OnnxEmbedder(tuned, models_dir, folder=ensure_onnx_model(tuned, models_dir))
    tuned_vectors = tuned_encoder.encode([p.text for p in passages])
    say("4/4 retrieving the golden questions' governing units with each model")
    sets = {half: [g for g in golden if g.governing and not g.expect_refusal and g.split == half]
            for half in ("dev", "test")}  # fmt: skip
    held = [q for q in queries if q.held_back]
    figures: dict[str, dict[str, dict[str, float]]] = {}
    reciprocal: dict[str, list[float]] = {}
    for name, encoder, vectors in (("base", base_encoder, base_vectors),
                                   ("taught", tuned_encoder, tuned_vectors)):  # fmt: skip
        figures[name] = {}
        for half, questions in sets.items():
            found = vector_ranks([[UnitName.parse(n) for n in g.governing] for g in questions],
                                 encoder.encode([g.query for g in questions]), passages,
                                 vectors)  # fmt: skip
            figures[name][half] = rank_summary(found)
            if half == "dev":
                reciprocal[name] = [1 / r if r else 0.0 for r in found]
        found = vector_ranks(
            [[UnitName(j, None, s) for j, s in q.positives] for q in held],
            encoder.encode([q.query for q in held]),
            passages,
            vectors,
        )
        figures[name]["held_back"] = rank_summary(found)
    test = paired_test(reciprocal["base"], reciprocal["taught"])
    improves = test.difference > 0 and test.significant
    reason = (f"dev governing MRR by vector search {figures['base']['dev']['mrr']:.3f} -> "
              f"{figures['taught']['dev']['mrr']:.3f}: {test}")  # fmt: skip
    by_source: dict[str, int] = {}
    for t in triples:
        by_source[t.source] = by_source.get(t.source, 0) + 1
    by_source["total"] = len(triples)
    return EncoderOutcome(folder, version, trained, by_source, time.perf_counter() - started,
                          figures, test.as_dict(), improves, reason)  # fmt: skip

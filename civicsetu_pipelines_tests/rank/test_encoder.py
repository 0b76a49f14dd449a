"""The encoder taught the corpus's language: its training triples, version, and a real fine-tune."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from civicsetu_pipelines.evaluate import UnitName
from civicsetu_pipelines.rank import TrainingQuery
from civicsetu_pipelines.rank.encoder import (
    EncoderTriple,
    Passage,
    TuningSettings,
    encoder_triples,
    encoder_version,
    fine_tune,
    near_golden,
    rank_summary,
    read_manifest,
    vector_ranks,
)


def _unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


PASSAGES = [
    Passage("c1", "CENTRAL", "act", "Section 4", "Section 4(1) application for registration"),
    Passage("c2", "CENTRAL", "act", "Section 4", "Section 4(2)(l)(D) seventy per cent account"),
    Passage("c3", "CENTRAL", "act", "Section 11", "Section 11(4)(g) pay outgoings"),
    Passage("g1", "GUJARAT", "rules_a", "Rule 3", "Rule 3 information for registration"),
    Passage("g2", "GUJARAT", "rules_b", "Rule 3", "Rule 3 form of complaint"),
]
VECTORS = np.stack([_unit(1, 0, 0, 0), _unit(0.2, 1, 0, 0), _unit(0, 0.9, 0.4, 0),
                    _unit(0, 0, 0, 1), _unit(0, 0, 0.3, 1)])  # fmt: skip


def _query(text: str, positives: list[tuple[str, str]], source: str = "faq",
           origin: str = "x", held: bool = False) -> TrainingQuery:  # fmt: skip
    return TrainingQuery(text, tuple(positives), source, origin, held)


def test_near_golden_leaves_out_questions_sharing_most_words() -> None:
    golden = ["Where must the money paid to the builder be kept?"]
    mined = ["where must the money paid to a builder be kept", "Timelines for refund in Gujarat",
             "money"]  # fmt: skip
    assert near_golden(mined, golden) == {0}
    assert near_golden(mined, golden, threshold=0.1) == {0, 2}


def test_triples_take_the_nearest_part_of_the_answer_and_the_nearest_other_unit() -> None:
    queries = [
        _query("separate account for the money", [("CENTRAL", "Section 4")]),
        _query("held back question", [("CENTRAL", "Section 4")], held=True),
        _query("a golden look-alike", [("CENTRAL", "Section 4")]),
        _query("Information for registration", [("GUJARAT", "Rule 3")], "title", origin="g1"),
        _query("answer not stored", [("CENTRAL", "Section 99")]),
    ]
    query_vectors = np.stack([_unit(0, 1, 0.5, 0), _unit(1, 0, 0, 0), _unit(1, 0, 0, 0),
                              _unit(0, 0, 0.3, 1), _unit(1, 0, 0, 0)])  # fmt: skip
    triples = encoder_triples(queries, PASSAGES, query_vectors, VECTORS, left_out={2})
    assert [t.query for t in triples] == ["separate account for the money",
                                          "Information for registration"]  # fmt: skip
    money, title = triples
    # Section 4's part nearest the question, not its first part; the hard negative is the
    # nearest passage of another unit (Section 11), never a part of Section 4
    assert money.positive == PASSAGES[1].text and money.negative == PASSAGES[2].text
    # a title answers through its own document's unit, not a namesake of another document
    # (rules_b's Rule 3 is nearer the question, but it is a Rule 3 of another rule set)
    assert title.positive == PASSAGES[3].text and "Rule 3" not in title.negative


def test_version_follows_the_triples_base_and_settings() -> None:
    triples = [EncoderTriple("q", "p", "n", "faq")]
    version = encoder_version(triples, "base", TuningSettings())
    assert version == encoder_version(list(triples), "base", TuningSettings())
    assert version != encoder_version([EncoderTriple("q", "p", "m", "faq")], "base",
                                      TuningSettings())  # fmt: skip
    assert version != encoder_version(triples, "other", TuningSettings())
    assert version != encoder_version(triples, "base", TuningSettings(epochs=1))


def test_vector_ranks_count_distinct_units_and_name_the_document() -> None:
    wanted = [[UnitName.parse("CENTRAL:Section 11")], [UnitName.parse("GUJARAT:rules_b:Rule 3")],
              [UnitName.parse("CENTRAL:Section 99")]]  # fmt: skip
    queries = np.stack([_unit(0.1, 1, 0, 0), _unit(0, 0, 0, 1), _unit(1, 0, 0, 0)])
    found = vector_ranks(wanted, queries, PASSAGES, VECTORS)
    # Section 4's two parts count once before Section 11; rules_a's Rule 3 is not rules_b's
    assert found == [2, 2, None]
    assert rank_summary(found) == {"hit_at_1": 0.0, "hit_at_3": 0.6667, "hit_at_5": 0.6667,
                                   "mrr": 0.3333}  # fmt: skip


@pytest.mark.model
def test_fine_tune_saves_a_model_its_manifest_checks(packaged_models_dir: Path,
                                                     tmp_path: Path) -> None:  # fmt: skip
    """A real (tiny) fine-tune of the packaged MiniLM: the saved folder loads, encodes, records
    its version and weights' sha256, and a damaged copy is refused by name."""
    from sentence_transformers import SentenceTransformer

    from civicsetu_pipelines.store import EmbeddingConfig, model_source
    from civicsetu_pipelines.store.embedding import ModelChecksumError

    base = model_source(EmbeddingConfig(), packaged_models_dir)
    triples = [EncoderTriple(f"question {i} about refunds", f"Section {i} refund with interest",
                             f"Section {i + 10} penalty", "faq") for i in range(4)]  # fmt: skip
    steps: list[tuple[int, int]] = []
    tiny = TuningSettings(epochs=1, batch_size=4, max_seq_length=32)
    target = fine_tune(triples, base, tmp_path / "taught", tiny, {"version": "v1"},
                       lambda n, total, loss: steps.append((n, total)))  # fmt: skip
    record = read_manifest(target)
    assert record["version"] == "v1" and record["triples"] == 4
    assert steps and steps[-1] == (1, 1)
    model = SentenceTransformer(str(target), device="cpu")
    assert model.max_seq_length == SentenceTransformer(base, device="cpu").max_seq_length
    assert model.encode(["refund"]).shape == (1, 384)
    assert not list(tmp_path.glob(".taught.*"))  # the temporary folder is gone
    weights = target / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-8] + b"damaged!")
    with pytest.raises(ModelChecksumError, match="model.safetensors: sha256"):
        read_manifest(target)
    with pytest.raises(ModelChecksumError):  # nor is it served: every load checks it
        model_source(EmbeddingConfig(model=str(target)), packaged_models_dir)
    (target / "encoder.json").unlink()
    with pytest.raises(ValueError, match="not a fine-tuned encoder"):
        read_manifest(target)


def test_a_taught_folder_carries_its_distances_and_is_checked_before_it_is_served(
    tmp_path: Path,
) -> None:
    """A taught encoder's folder is a model like any other, but its manifest gives it its own
    refusal distances, and its weights are checked on every load."""
    import hashlib
    import json

    from civicsetu_pipelines.store import EmbeddingConfig, EvidenceDistances, model_source
    from civicsetu_pipelines.store.embedding import ModelChecksumError, ModelError

    folder = tmp_path / "all-MiniLM-L6-v2-corpus-abc"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"weights")
    record = {"version": "abc", "weights": "model.safetensors",
              "sha256": hashlib.sha256(b"weights").hexdigest()}  # fmt: skip
    (folder / "encoder.json").write_text(json.dumps(record))
    config = EmbeddingConfig(model=str(folder))
    assert config.evidence_distances is None  # not calibrated yet: the default's are used
    assert model_source(config, tmp_path) == str(folder)
    record["evidence_distances"] = {"answer": 0.56, "near": 0.56, "domain": 0.62}
    (folder / "encoder.json").write_text(json.dumps(record))
    assert config.evidence_distances == EvidenceDistances(0.56, 0.56, 0.62)
    (folder / "model.safetensors").write_bytes(b"weightz")
    with pytest.raises(ModelChecksumError, match="model.safetensors: sha256 .* encoder.json"):
        model_source(config, tmp_path)
    (folder / "encoder.json").write_text("{not json")
    with pytest.raises(ModelError, match="cannot read the taught encoder's manifest"):
        model_source(config, tmp_path)

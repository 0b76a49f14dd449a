"""The ONNX runtime against the torch runtime, with the REAL packaged all-MiniLM-L6-v2: exported
once per session (into the shared ``packaged_models_dir``), checked on the corpus's own chunks,
and refused when its files are damaged."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from psycopg import sql

from civicsetu_pipelines.store.database import connect
from civicsetu_pipelines.store.embedders import open_embedder
from civicsetu_pipelines.store.embedding import (
    Embedder,
    EmbeddingConfig,
    ModelChecksumError,
    ModelError,
    document_text,
)
from civicsetu_pipelines.store.onnx_model import (
    MIN_COSINE,
    OnnxEmbedder,
    ensure_onnx_model,
    export_dir,
    verify_export,
)
from civicsetu_pipelines_tests.store.test_embedding import TEXTS, long_text


@pytest.fixture(scope="module")
def exported(packaged_models_dir: Path) -> Path:
    return ensure_onnx_model(EmbeddingConfig(), packaged_models_dir)


@pytest.fixture(scope="module")
def torch_embedder(packaged_models_dir: Path) -> Embedder:
    return Embedder(EmbeddingConfig(runtime="torch"), packaged_models_dir)


@pytest.fixture(scope="module")
def onnx_embedder(packaged_models_dir: Path, exported: Path) -> OnnxEmbedder:
    return OnnxEmbedder(EmbeddingConfig(), packaged_models_dir)


def test_the_default_runtime_is_onnx_and_torch_stays_selectable(
    packaged_models_dir: Path,
) -> None:
    assert isinstance(open_embedder(EmbeddingConfig(), packaged_models_dir), OnnxEmbedder)
    torch_one = open_embedder(EmbeddingConfig(runtime="torch"), packaged_models_dir)
    assert isinstance(torch_one, Embedder)
    with pytest.raises(ModelError, match="unknown embedding runtime 'tensorflow'"):
        EmbeddingConfig(runtime="tensorflow")
    # Same model, same stored vectors: the runtime is not part of the vectors' identity.
    assert EmbeddingConfig().model_id == EmbeddingConfig(runtime="torch").model_id


def test_export_is_keyed_by_the_weights_and_records_its_check(
    exported: Path, packaged_models_dir: Path
) -> None:
    assert exported == export_dir(EmbeddingConfig(), packaged_models_dir)
    assert exported.parent == packaged_models_dir / "onnx"
    meta = json.loads((exported / "meta.json").read_text())
    assert meta["dimension"] == 384 and meta["max_seq_length"] == 256
    assert meta["source_weights_sha256"].startswith("53aa5117")
    assert meta["probe_min_cosine"] >= MIN_COSINE
    names = {"model.onnx", "model.onnx.data", "tokenizer.json", "meta.json", "verified.json"}
    assert {p.name for p in exported.iterdir()} == names
    assert not [p for p in exported.parent.iterdir() if p.name.startswith(".export-")]
    # Another model, or other weights, is another folder: never a stale hit.
    mpnet = export_dir(EmbeddingConfig(model="all-mpnet-base-v2"), packaged_models_dir)
    assert mpnet != exported and mpnet.name.startswith("all-mpnet-base-v2-")
    other_weights = EmbeddingConfig(weights_sha256="0" * 64)
    assert export_dir(other_weights, packaged_models_dir) != exported


def test_onnx_matches_torch_on_the_corpus_chunks(
    corpus_store: object, torch_embedder: Embedder, onnx_embedder: OnnxEmbedder
) -> None:
    """The issue's bar: cosine >= 0.9999 on the corpus's own chunks (the first 8 of each
    jurisdiction and its longest, windowed), and the same windows."""
    with connect(corpus_store.database_url) as conn:  # type: ignore[attr-defined]
        rows = conn.execute(
            sql.SQL(
                "SELECT label, title, text FROM (SELECT label, title, text, row_number() OVER "
                "(PARTITION BY jurisdiction ORDER BY chunk_id) AS n, row_number() OVER "
                "(PARTITION BY jurisdiction ORDER BY length(text) DESC, chunk_id) AS longest "
                "FROM legal_chunks WHERE status = 'current') t WHERE n <= %s OR longest <= %s"
            ),
            (8, 1),
        ).fetchall()
    texts = [document_text(label, title, text) for label, title, text in rows]
    assert len(texts) >= 50
    by_onnx, windows_onnx = onnx_embedder.embed_documents(texts)
    by_torch, windows_torch = torch_embedder.embed_documents(texts)
    assert windows_onnx == windows_torch and max(windows_onnx) > 1
    cosine = (by_onnx * by_torch).sum(axis=1)
    assert float(cosine.min()) >= MIN_COSINE, texts[int(cosine.argmin())][:80]


def test_windows_and_queries_agree_with_torch(
    torch_embedder: Embedder, onnx_embedder: OnnxEmbedder
) -> None:
    text = long_text()
    assert onnx_embedder.windows(text) == torch_embedder.windows(text)
    assert onnx_embedder.token_count(text) == torch_embedder.token_count(text)
    assert onnx_embedder.window_tokens == torch_embedder.window_tokens == 254
    query = "my builder is two years late, can I get my money back?"
    both = np.stack([onnx_embedder.embed_query(query), torch_embedder.embed_query(query)])
    assert both.shape == (2, 384) and float(both[0] @ both[1]) >= MIN_COSINE
    # A batch pads; padding must not move a text's vector.
    alone = onnx_embedder.encode(TEXTS[:1])[0]
    batched = onnx_embedder.encode(TEXTS)[0]
    np.testing.assert_allclose(alone, batched, atol=1e-5)


def test_a_damaged_export_is_refused_naming_the_folder(
    exported: Path, tmp_path: Path, packaged_models_dir: Path
) -> None:
    copy = tmp_path / "export"
    shutil.copytree(exported, copy)
    verify_export(copy)  # intact: loads (and records what it verified)
    assert (copy / "verified.json").is_file()
    data = bytearray((copy / "model.onnx.data").read_bytes())
    data[len(data) // 2] ^= 0xFF  # one weight's byte
    (copy / "model.onnx.data").write_bytes(bytes(data))
    with pytest.raises(ModelChecksumError, match=f"Delete {copy}"):
        verify_export(copy)
    with pytest.raises(ModelChecksumError):
        OnnxEmbedder(EmbeddingConfig(), packaged_models_dir, folder=copy).encode(["x"])
    (copy / "tokenizer.json").unlink()
    shutil.copy(exported / "model.onnx.data", copy / "model.onnx.data")
    with pytest.raises(ModelChecksumError, match="tokenizer.json has sha256 missing"):
        verify_export(copy)
    (copy / "meta.json").write_text("{")
    with pytest.raises(ModelError, match="no readable meta.json"):
        verify_export(copy)


def test_a_missing_export_is_made_on_first_use(packaged_models_dir: Path, tmp_path: Path) -> None:
    """A fresh models dir (the packaged weights linked in): the first ONNX use exports, checks
    and installs the model; the export matches the session's. It removes the same model's
    superseded exports and an export killed long ago, and keeps another model's export and an
    export in progress."""
    models = tmp_path / "models"
    models.mkdir()
    for entry in packaged_models_dir.iterdir():
        if entry.name != "onnx":
            (models / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    folder = export_dir(EmbeddingConfig(), models)
    name = folder.name.rpartition("-")[0]
    left = {
        "superseded": folder.parent / f"{name}-0123456789abcdef",
        "killed": folder.parent / ".export-killed",
        "other model": folder.parent / "all-mpnet-base-v2-0123456789abcdef",
        "in progress": folder.parent / ".export-running",
        "same prefix, other model": folder.parent / f"{name}-legal-0123456789abcdef",
    }
    for path in left.values():
        path.mkdir(parents=True)
        (path / "model.onnx").write_bytes(b"old")
    long_ago = time.time() - 2 * 3600
    os.utime(left["killed"], (long_ago, long_ago))
    embedder = OnnxEmbedder(EmbeddingConfig(), models, threads=1)
    vector = embedder.embed_query("refund with interest")
    assert (folder / "meta.json").is_file()
    assert {label for label, path in left.items() if path.exists()} == {
        "other model",
        "in progress",
        "same prefix, other model",
    }
    reference = OnnxEmbedder(EmbeddingConfig(), packaged_models_dir).embed_query(
        "refund with interest"
    )
    assert float(vector @ reference) >= MIN_COSINE


def test_the_standin_is_marked_windowed_as_the_model_and_normalized(
    packaged_models_dir: Path, onnx_embedder: OnnxEmbedder
) -> None:
    """bench_large's fast stand-in (issue 46): the model's windows, its own model id, unit
    vectors that are the same every time and nearer for texts that share words."""
    import dataclasses

    from civicsetu_pipelines.store.embedders import StandInEmbedder

    config = dataclasses.replace(EmbeddingConfig(), runtime="standin")
    assert config.model_id == EmbeddingConfig().model_id + "|standin"
    standin = open_embedder(config, packaged_models_dir)
    assert isinstance(standin, StandInEmbedder)
    text = long_text()
    assert standin.windows(text) == onnx_embedder.windows(text)
    texts = ["The promoter shall refund the amount with interest.",
             "The promoter shall refund the amount with interest within 45 days.",
             "Form C is the registration certificate of a project.", text]  # fmt: skip
    vectors, windows = standin.embed_documents(texts)
    assert windows == onnx_embedder.embed_documents(texts)[1]
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(vectors, standin.embed_documents(texts)[0])
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]

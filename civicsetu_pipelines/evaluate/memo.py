"""What a question got from the store, kept between runs under the rows it could read.

A golden question (or a question mined for the ranker) is answered from the served rows of the
jurisdictions its search reads (:meth:`~civicsetu_pipelines.answer.QueryEngine.scope_of`: the
states it names and the Act, else every jurisdiction). :class:`ScopedMemo` keeps each answer
under a key made of the question, the ranking it was ranked with, and the fingerprint of each
of those jurisdictions' served rows (:func:`~civicsetu_pipelines.store.served_fingerprints`),
all within a ``context`` that names everything else an answer depends on (the code, the model,
the retrieval settings, the refusal distances, the jurisdictions stored). A run after one
state changed asks again only the questions that could read that state (and those naming no
state); every other answer is the one the same question got from the same rows.

Pure domain code: :func:`open_memo` builds the context (the code's hash from
:func:`~civicsetu_pipelines.base.code_hash`) and reads the fingerprints. The file is a pickle
under the state directory, written by this process and read back only when its context is the
caller's; a save keeps only the entries read or written in this run, so it never grows past one
run's questions.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import psycopg

from civicsetu_pipelines.answer import QueryEngine
from civicsetu_pipelines.base import code_hash
from civicsetu_pipelines.store import served_fingerprints

FORMAT = 1


def ranking_key(reranker: Any) -> str:
    """The ranking a question was ranked with: name, version and (for a learned ranker) its
    weights and intercept, so two rankers with one version but other weights differ."""
    parts = {
        "name": str(getattr(reranker, "name", "") or type(reranker).__name__),
        "version": str(getattr(reranker, "version", "") or ""),
        "weights": getattr(reranker, "weights", None),
        "intercept": getattr(reranker, "intercept", None),
        "output": getattr(reranker, "output", None),
        "hubs": getattr(reranker, "hubs", None),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def open_memo(
    path: Path, engine: QueryEngine, conn: psycopg.Connection[Any], *, model: str
) -> ScopedMemo | None:
    """The memo at ``path`` for questions answered by ``engine`` over ``conn``'s store with
    ``model``; None when its answers are generated (an LLM endpoint: not repeatable)."""
    if engine.settings.llm is not None:
        return None
    context = json.dumps(
        {
            "code": code_hash(),
            "model": model,
            "retrieval": repr(engine.settings.retrieval),
            "distances": repr(engine.distances),
            "jurisdictions": sorted(engine.jurisdictions),
        },
        sort_keys=True,
    )
    digest = hashlib.sha256(context.encode()).hexdigest()
    return ScopedMemo(path, digest, served_fingerprints(conn))


class ScopedMemo:
    """Answers kept under the fingerprints of the jurisdictions each could read (see the
    module). ``hits`` and ``misses`` count this run's lookups."""

    def __init__(self, path: Path, context: str, fingerprints: Mapping[str, str]) -> None:
        self.path = path
        self.context = context
        self.fingerprints = dict(sorted(fingerprints.items()))
        self.hits = 0
        self.misses = 0
        self._kept: dict[str, Any] = {}
        self._used: dict[str, Any] = {}
        if path.is_file():
            try:
                with path.open("rb") as handle:
                    saved = pickle.load(handle)  # noqa: S301 - this process's own file
            except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
                saved = None  # unreadable or of another code: asked again, rewritten on save
            if (
                isinstance(saved, dict)
                and saved.get("format") == FORMAT
                and saved.get("context") == context
            ):
                self._kept = dict(saved.get("entries", {}))

    def key(self, text: str, scope: Sequence[str] | None, *parts: str) -> str:
        """The key of ``text`` asked over ``scope`` (None: every jurisdiction) with ``parts``
        (the ranking, k ...): a jurisdiction in scope that serves nothing counts as empty."""
        names = sorted(self.fingerprints) if scope is None else sorted(set(scope))
        read = [(name, self.fingerprints.get(name, "")) for name in names]
        payload = json.dumps([text, read, list(parts)], sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()

    def get(self, key: str) -> Any | None:
        if key in self._kept:
            self.hits += 1
            self._used[key] = self._kept[key]
            return self._kept[key]
        self.misses += 1
        return None

    def put(self, key: str, value: Any) -> None:
        self._used[key] = value

    def save(self) -> None:
        """Write this run's entries (those read or written), atomically."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(f".{os.getpid()}.partial")
        with partial.open("wb") as handle:
            pickle.dump(
                {"format": FORMAT, "context": self.context, "entries": self._used},
                handle,
                protocol=pickle.HIGHEST_PROTOCOL,
            )
        os.replace(partial, self.path)

    def said(self) -> str:
        """``asked 12, reused 562`` for a log line."""
        return f"asked {self.misses}, reused {self.hits}"

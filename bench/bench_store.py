"""Cold, warm and one-document-changed materializations of every default partition.

Usage: .venv/bin/python bench/bench_store.py [--cold-only]

In ONE process, on a fresh state directory (fresh embedded Postgres, empty embedding cache):

1. cold: ``ingest_job`` for every default jurisdiction through the Dagster instance (model
   extraction and loading, parsing, chunking, embedding, loading into pgvector), wall time;
2. bare: the same model in the configured runtime (ONNX by default) encoding the same texts (the
   same windows), nothing else; and, for comparison, the torch runtime on the same windows;
3. warm: the same materialization again with nothing changed;
4. changed: one document's PDF edited (one word on one page; a temporary registry pins the new
   sha256) and its jurisdiction materialized again: how many chunks were re-embedded.

Prints the figures and the ratios cold / floor (the floor: bare encoding of the same windows
plus bare OCR of the same scanned pages at the same resolution, both in this process, one after
the other), cold / bare encoding (in the runtime the pipeline used) and warm / cold; and the CPU
work of each (core-seconds of the whole machine, from ``/proc/stat``: run it on a quiet machine),
with the wall the cold run's work would take on every core kept busy: what scheduling alone
could reach.
``--cold-only`` stops after steps 1 and 2 (in the pipeline's runtime only).

``CIVICSETU_BENCH_PARTITIONS=CENTRAL,GUJARAT`` limits the run to those partitions,
``CIVICSETU_BENCH_PSTATS=FILE`` keeps the profile for ``pstats``, and
``CIVICSETU_BENCH_TIMELINE=1`` prints when each step of each run began and ended.

``--profile`` runs the cold materialization under cProfile (this process: the runs' steps and
the prefetching thread; the embedding worker and Tesseract are processes of their own) and
prints where its time went: per asset (Dagster's step times, summed over the partitions), per
document (its parse from the parse ledger), and the functions with the most own time.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

STATE = Path(tempfile.mkdtemp(prefix="civicsetu-bench-store-"))
os.environ["CIVICSETU_STATE_DIR"] = str(STATE)
os.environ.pop("CIVICSETU_DATABASE_URL", None)

import dagster as dg  # noqa: E402
import pymupdf  # noqa: E402

from civicsetu_pipelines.base.settings import DEFAULT_MIRROR  # noqa: E402
from civicsetu_pipelines.defs import build_definitions  # noqa: E402
from civicsetu_pipelines.defs.resources import warm_up_embedder  # noqa: E402
from civicsetu_pipelines.ingest.registry import DOCUMENTS_YAML, load_registry  # noqa: E402
from civicsetu_pipelines.operate.instance import prepare_dagster_home  # noqa: E402
from civicsetu_pipelines.operate.runs import open_instance, run_partitions  # noqa: E402
from civicsetu_pipelines.store.database import EmbeddedPostgres  # noqa: E402
from civicsetu_pipelines.store.embedders import open_embedder  # noqa: E402
from civicsetu_pipelines.store.embedding import (  # noqa: E402
    document_text,
    embedding_config_from_env,
    sha256_file,
)

CHANGED_DOC = "gujarat_appellate_tribunal_rules_2016"


RUN_IDS: list[str] = []


def materialize(
    partitions: list[str], force: bool = False
) -> tuple[float, dict[str, dict[str, Any]], int]:
    """Run ingest_job per partition as ``civicsetu materialize`` does: wall seconds, metadata by
    "asset:partition", and how many partitions were skipped as up to date. Prints each
    partition's wall seconds."""
    meta: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    with open_instance() as instance:
        job = build_definitions().resolve_job_def("ingest_job")
        outcomes = run_partitions(instance, job, partitions, force=force, warm_up=warm_up_embedder)
    seconds = time.perf_counter() - started
    for outcome in outcomes:
        assert outcome.status != "failed", outcome
        if outcome.run_id:
            RUN_IDS.append(outcome.run_id)
        print(f"  {outcome.jurisdiction:<16} {outcome.status:<11} {outcome.seconds:7.2f} s",
              flush=True)  # fmt: skip
        for asset, values in outcome.metadata.items():
            meta[f"{asset}:{outcome.jurisdiction}"] = values
    return seconds, meta, sum(o.status == "up_to_date" for o in outcomes)


def machine_busy() -> float:
    """Seconds the machine's cores have been busy since boot (``/proc/stat``: user, nice,
    system, irq, softirq and steal time of all cores), so that a difference is the CPU work of
    everything that ran between two readings: this process, its threads and children, the
    embedding worker, Tesseract and the Postgres server alike (the machine otherwise quiet)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def step_seconds(run_ids: list[str]) -> dict[str, float]:
    """Wall seconds of each asset's step, summed over the runs (Dagster's own step stats)."""
    out: dict[str, float] = {}
    with dg.DagsterInstance.get() as instance:
        for run_id in run_ids:
            for stat in instance.get_run_step_stats(run_id):
                if stat.start_time and stat.end_time:
                    seconds = stat.end_time - stat.start_time
                    out[stat.step_key] = out.get(stat.step_key, 0.0) + seconds
    return out


def print_timeline(run_ids: list[str], began: float) -> None:
    """Each step of each run, from and to (seconds since the cold run began), in order."""
    rows = []
    with dg.DagsterInstance.get() as instance:
        for run_id in run_ids:
            for stat in instance.get_run_step_stats(run_id):
                if stat.start_time and stat.end_time:
                    rows.append((stat.start_time - began, stat.end_time - began, stat.step_key))
    print("\nsteps (seconds since the cold run began)")
    for start, end, step in sorted(rows):
        print(f"  {start:7.1f} {end:7.1f}  {end - start:6.1f}  {step}")
    for record in parse_ledger():
        if record.get("at"):
            ended = float(record["at"]) - began
            print(f"  {ended - float(record['seconds']):7.1f} {ended:7.1f}  "
                  f"{float(record['seconds']):6.1f}  parse of {record['document']}")  # fmt: skip


def parse_ledger() -> list[dict[str, Any]]:
    """The parses this run made (``parses.jsonl`` of the parse cache), one record a document."""
    import json

    from civicsetu_pipelines.base.settings import Settings

    ledger = Settings.from_env().parse_cache / "parses.jsonl"
    if not ledger.is_file():
        return []
    return [json.loads(line) for line in ledger.read_text().splitlines() if line.strip()]


def bare_ocr() -> tuple[float, int]:
    """Tesseract alone on every page the cold run OCR'd, one after another in this process:
    the page rendered at the resolution the pipeline read it at (the scan's own, as
    ``ingest.ocr`` chooses it) and read once with Tesseract's layout analysis (psm 3, one
    thread, the document's language): seconds and pages. What a run must spend on OCR at
    least; the pipeline may read a page a second time (psm 6) when the first reading leaves
    text-like ink unread."""
    import json
    import subprocess

    from civicsetu_pipelines.base.settings import Settings
    from civicsetu_pipelines.ingest.ocr import scan_dpi

    cache = Settings.from_env().parse_cache
    specs = {s.key: s for s in load_registry(include_seed=False).documents()}
    seconds, pages = 0.0, 0
    for record in parse_ledger():
        if not record.get("ocr_pages"):
            continue
        spec = specs[record["document"]]
        parsed = json.loads((cache / f"{record['fingerprint']}.json").read_text())
        numbers = [int(p["page"]) for p in parsed if "ocr" in (p.get("flags") or [])]
        with pymupdf.open(Path(DEFAULT_MIRROR) / str(spec.filename)) as pdf:
            for number in numbers:
                page = pdf[number - 1]
                with tempfile.TemporaryDirectory() as tmp:
                    image = Path(tmp) / "page.png"
                    started = time.perf_counter()
                    page.get_pixmap(dpi=scan_dpi(page), colorspace=pymupdf.csGRAY).save(image)
                    subprocess.run(
                        ["tesseract", str(image), "stdout", "-l", spec.language or "eng",
                         "--psm", "3", "tsv"],
                        capture_output=True, check=True,
                        env={**os.environ, "OMP_THREAD_LIMIT": "1"},
                    )  # fmt: skip
                    seconds += time.perf_counter() - started
                    pages += 1
    return seconds, pages


def print_profile(profile: Any, steps: dict[str, float], cold: float) -> None:
    """Per asset, per document, and the functions with the most own time."""
    import io
    import pstats

    print("\nper asset (step wall seconds, all partitions)")
    for step, seconds in sorted(steps.items(), key=lambda kv: -kv[1]):
        print(f"  {step:<34} {seconds:8.2f} s  {100 * seconds / cold:5.1f}%")
    print(f"  {'(all steps)':<34} {sum(steps.values()):8.2f} s  of {cold:.2f} s wall")
    print("\nper document parse (the parse ledger; the prefetch thread parses ahead)")
    for record in sorted(parse_ledger(), key=lambda r: -float(r.get("seconds", 0))):
        print(f"  {record['document']:<44} {record['seconds']:7.2f} s  {record['pages']:4} pages"
              f"  {record.get('ocr_pages', 0):3} OCR'd")  # fmt: skip
    stream = io.StringIO()
    stats = pstats.Stats(profile, stream=stream)
    if os.environ.get("CIVICSETU_BENCH_PSTATS"):  # for pstats/snakeviz: callers, call graph
        stats.dump_stats(os.environ["CIVICSETU_BENCH_PSTATS"])
    stats.sort_stats("tottime").print_stats(30)
    by_package: dict[str, float] = {}
    for (filename, _, _), (_, _, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        parts = Path(filename).parts
        if "civicsetu_pipelines" in parts:
            index = parts.index("civicsetu_pipelines")
            key = "/".join(parts[index : index + 2])
        elif "site-packages" in parts:
            key = parts[parts.index("site-packages") + 1]
        else:
            key = "(python)" if filename.startswith("<") or "python3" in filename else filename
        by_package[key] = by_package.get(key, 0.0) + tottime
    print("\nown time by package (the main thread: the runs and their steps)")
    for key, seconds in sorted(by_package.items(), key=lambda kv: -kv[1])[:25]:
        print(f"  {key:<44} {seconds:8.2f} s")
    print("\nfunctions with the most own time")
    print(stream.getvalue())


def total(meta: dict[str, dict[str, Any]], asset: str, key: str) -> float:
    return sum(float(m.get(key, 0) or 0) for name, m in meta.items() if name.startswith(asset))


def bare_encoding(runtime: str) -> tuple[float, int, int]:
    """Encode the windows of every chunk text with the loaded model in ``runtime``: seconds,
    texts, windows."""
    import dataclasses

    import pandas as pd

    config = dataclasses.replace(embedding_config_from_env(), runtime=runtime)
    embedder = open_embedder(config, STATE / "models")
    embedder.encode(["warm-up"])  # loading is not encoding
    frames = list((STATE / "storage" / "assets" / "section_chunks").glob("*.parquet"))
    chunks = pd.concat([pd.read_parquet(f) for f in frames])
    texts = [document_text(r.label, r.title, r.text) for r in chunks.itertuples()]
    windows = [w for text in texts for w in embedder.windows(text)]
    order = sorted(windows, key=len, reverse=True)  # as embed_documents batches them
    started = time.perf_counter()
    embedder.encode(order)
    return time.perf_counter() - started, len(texts), len(windows)


def change_one_document() -> tuple[Path, Path]:
    """A mirror with one PDF edited, and a registry pinning its new sha256."""
    registry = load_registry(include_seed=False)
    spec = registry.get(CHANGED_DOC)
    mirror = STATE / "mirror"
    mirror.mkdir()
    for doc in registry.documents():
        shutil.copy(Path(DEFAULT_MIRROR) / str(doc.filename), mirror / str(doc.filename))
    target = mirror / str(spec.filename)
    with pymupdf.open(target) as pdf:
        page = pdf[1]
        hits = page.search_for("Appellate Tribunal")
        page.add_redact_annot(hits[0], text="Appeal Tribunal")
        page.apply_redactions()
        pdf.save(STATE / "edited.pdf")
    shutil.move(STATE / "edited.pdf", target)
    data = yaml.safe_load(DOCUMENTS_YAML.read_text())
    for doc in data["documents"]:
        if doc["key"] == CHANGED_DOC:
            doc["sha256"] = sha256_file(target)
    path = STATE / "documents.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return mirror, path


def main() -> None:
    partitions = load_registry(include_seed=False).jurisdictions()
    if os.environ.get("CIVICSETU_BENCH_PARTITIONS"):  # a quicker look at some of them
        partitions = os.environ["CIVICSETU_BENCH_PARTITIONS"].split(",")
    print(f"state dir {STATE}; partitions {partitions}", flush=True)
    prepare_dagster_home()
    profile = None
    if "--profile" in sys.argv[1:]:
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
    busy = machine_busy()
    began_at = time.time()
    cold, cold_meta, _ = materialize(partitions)
    cold_work = machine_busy() - busy
    print(f"cold run from {time.strftime('%H:%M:%S', time.localtime(began_at))} to "
          f"{time.strftime('%H:%M:%S')} (to read beside vmstat)")  # fmt: skip
    if profile is not None:
        profile.disable()
    cold_runs = list(RUN_IDS)
    runtime = embedding_config_from_env().runtime
    busy = machine_busy()
    ocr_s, ocr_pages = bare_ocr()
    ocr_work = machine_busy() - busy
    busy = machine_busy()
    bare, texts, windows = bare_encoding(runtime)
    bare_work = machine_busy() - busy
    floor = bare + ocr_s
    cores = os.cpu_count() or 1
    rows = total(cold_meta, "legal_chunks", "inserted")
    encode_s = total(cold_meta, "chunk_embeddings", "encode_seconds")
    load_s = total(cold_meta, "legal_chunks", "load_seconds")
    embedded = total(cold_meta, "chunk_embeddings", "embedded_now")
    print()
    print(f"texts {texts}, model windows {windows}, rows loaded {rows:.0f}")
    print(f"cold materialization, all partitions   {cold:8.2f} s")
    print(f"  embedding (inside the asset)          {encode_s:8.2f} s  "
          f"{embedded / encode_s:6.1f} chunks/s")  # fmt: skip
    print(f"  loading into pgvector                 {load_s:8.2f} s  {rows / load_s:6.0f} rows/s")
    print(f"bare model encoding, same windows       {bare:8.2f} s  ({runtime}, the pipeline's)")
    print(f"bare OCR, the same {ocr_pages:3} scanned pages    {ocr_s:8.2f} s  (Tesseract, psm 3)")
    print(f"floor: bare encoding + bare OCR         {floor:8.2f} s")
    print(f"ratio cold / bare encoding              {cold / bare:8.2f}")
    print(f"ratio cold / floor                      {cold / floor:8.2f}  (target <= 1.2)")
    print(f"CPU work (core-seconds, the machine's): cold {cold_work:.1f}, bare encoding "
          f"{bare_work:.1f}, bare OCR {ocr_work:.1f}; beyond the floor's "
          f"{cold_work - bare_work - ocr_work:.1f}")  # fmt: skip
    print(f"cold's work on {cores} cores kept busy     {cold_work / cores:8.2f} s  "
          f"(ratio to the floor {cold_work / cores / floor:.2f}; the cores were busy "
          f"{100 * cold_work / cores / cold:.0f}% of the cold run)", flush=True)  # fmt: skip
    if profile is not None:
        print_profile(profile, step_seconds(cold_runs), cold)
    if os.environ.get("CIVICSETU_BENCH_TIMELINE"):
        print_timeline(cold_runs, began_at)
    if "--cold-only" not in sys.argv[1:]:
        others(partitions, runtime, cold)
    EmbeddedPostgres(STATE).stop()
    shutil.rmtree(STATE, ignore_errors=True)


def others(partitions: list[str], runtime: str, cold: float) -> None:
    """Steps 2 (the other runtime), 3 and 4, printed."""
    other = "torch" if runtime == "onnx" else "onnx"
    bare_other, _, _ = bare_encoding(other)
    warm, _, skipped = materialize(partitions)
    forced, forced_meta, _ = materialize(partitions, force=True)
    mirror, registry = change_one_document()
    os.environ["CIVICSETU_MIRROR_DIRS"] = str(mirror)
    os.environ["CIVICSETU_REGISTRY"] = str(registry)
    changed, changed_meta, _ = materialize(["GUJARAT"])
    print()
    print(f"bare model encoding, {other:5} runtime      {bare_other:8.2f} s")
    print(f"warm materialization (nothing changed)  {warm:8.2f} s  "
          f"{skipped} of {len(partitions)} partitions up to date, skipped")  # fmt: skip
    print(f"forced re-run (nothing changed)         {forced:8.2f} s  re-embedded "
          f"{total(forced_meta, 'chunk_embeddings', 'embedded_now'):.0f}, rows inserted/updated "
          f"{total(forced_meta, 'legal_chunks', 'inserted'):.0f}/"
          f"{total(forced_meta, 'legal_chunks', 'updated'):.0f}")  # fmt: skip
    print(f"one document changed (GUJARAT)          {changed:8.2f} s  "
          f"re-embedded {total(changed_meta, 'chunk_embeddings', 'embedded_now'):.0f} of "
          f"{total(changed_meta, 'chunk_embeddings', 'chunks'):.0f} chunks; new versions "
          f"{changed_meta.get('legal_chunks:GUJARAT', {}).get('new_versions')}")  # fmt: skip
    print(f"ratio cold / bare {other:5} encoding        {cold / bare_other:8.2f}")
    print(f"ratio warm / cold                       {warm / cold:8.3f}  (target <= 0.05)")
    print(f"ratio forced re-run / cold              {forced / cold:8.3f}")


if __name__ == "__main__":
    main()

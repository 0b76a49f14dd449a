"""A generated state of many documents, ingested end to end (issue 46).

Usage: .venv/bin/python bench/bench_large.py [--documents 10000] [--encoder real]
                                             [--jurisdiction GUJARAT] [--seed 46] [--keep]

On a fresh state directory (its own embedded Postgres, parse cache, Dagster home and models):

1. generates ``--documents`` PDFs with ``civicsetu_pipelines_tests.generated_state`` (orders of
   2-30 pages, tribunal appeals, circulars, amending notifications; seeded) and registers them
   in the user registry as ``civicsetu documents add`` would with their kind, title and date
   given (one write for all: ``add`` reads and rewrites the whole registry per document), beside
   one real state rules PDF from ``../shared/corpus`` (the shipped registry's entry, its
   sha256 pinned);
2. cold backfill: ``civicsetu materialize -j J --no-reports`` as a process of its own: wall
   time, peak memory (the largest process, and the process tree sampled), store size
   (``pg_total_relation_size`` of every table), Dagster event-log rows;
3. the floor: bare parse (PyMuPDF ``page.get_text()`` of every page) plus bare encoding (the
   same model, in this process, of the same windows the run embedded), and the ratio;
4. one order added (``documents add`` then ``materialize``), one changed (its corrected version
   pinned under the same key), one removed (``documents remove`` then ``materialize``) and a
   no-op re-run, each beside the same document ingested alone into an empty jurisdiction (the
   same seed and index: the same pages, that state's names) through the same commands.

``--encoder``: ``real`` (the configured runtime of the model) or ``standin``
(``store.embedders.StandInEmbedder``, ``CIVICSETU_EMBED_RUNTIME=standin``: the same tokenizer
and windows, each window's words hashed instead of the model) to measure the pipeline's own cost
at a size the model cannot reach here; the real encoder's cost is then the bare encoding of a
sample, extrapolated in BENCHMARKS.md.
The model is exported once before the cold run (it is not part of any figure: a machine does
it once). Prints per-document and per-window costs for extrapolating to larger states.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

RULES_KEY = "gujarat_general_rules_2017"  # the real rules PDF beside the generated documents
# empty jurisdictions for the documents ingested alone (the first three without a document: a
# resumed state's earlier runs used some)
ALONE_CANDIDATES = ("GOA", "KERALA", "ODISHA", "PUNJAB", "RAJASTHAN", "TAMIL_NADU", "TRIPURA",
                    "MIZORAM", "NAGALAND", "SIKKIM", "MANIPUR", "MEGHALAYA")  # fmt: skip
CLI = Path(sys.executable).parent / "civicsetu"
RUNNING: list[subprocess.Popen[str]] = []  # the civicsetu process now running, if any


@dataclass
class Run:
    """One ``civicsetu`` process: wall seconds, peak RSS of its largest process and of its
    whole tree (the process and its children: the embedding worker; sampled every 0.2 s, the
    Postgres server not included), its output. Not ``ru_maxrss``: a child's starts at the
    high-water mark of the process that forked it (this one, with the model loaded)."""

    seconds: float
    max_rss_mb: float
    tree_rss_mb: float
    output: str

    def __str__(self) -> str:
        return (f"{self.seconds:8.2f} s  (peak {self.max_rss_mb:.0f} MiB, "
                f"tree {self.tree_rss_mb:.0f} MiB)")  # fmt: skip


def civicsetu(*args: str) -> Run:
    import psutil

    started = time.perf_counter()
    proc = subprocess.Popen([str(CLI), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=os.environ.copy())  # fmt: skip
    RUNNING[:] = [proc]
    peak = [0, 0]  # the tree's, the largest process's
    done = threading.Event()

    def sample() -> None:
        try:
            top = psutil.Process(proc.pid)
            while not done.is_set():
                try:
                    rss = [p.memory_info().rss for p in (top, *top.children(recursive=True))]
                    peak[0], peak[1] = max(peak[0], sum(rss)), max(peak[1], *rss)
                except psutil.Error:
                    pass
                done.wait(0.2)
        except psutil.Error:
            return

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    assert proc.stdout is not None
    output = proc.stdout.read()
    proc.wait()
    RUNNING.clear()
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"civicsetu {' '.join(args)} failed ({proc.returncode}):\n{output}")
    return Run(seconds, peak[1] / 2**20, peak[0] / 2**20, output)


def materialize(jurisdiction: str) -> Run:
    run = civicsetu("materialize", "-j", jurisdiction, "--no-reports")
    for line in run.output.splitlines():
        if "FAILED" in line or "check" in line and "failed" in line:
            print(f"    {line.strip()}")
    return run


# -- the state -------------------------------------------------------------------------------


def setup_state(state: Path, models: str) -> None:
    os.environ["CIVICSETU_STATE_DIR"] = str(state)
    os.environ["HF_HUB_OFFLINE"] = "1"
    for name in ("CIVICSETU_DATABASE_URL", "CIVICSETU_PARSE_CACHE", "CIVICSETU_MODELS_DIR",
                 "CIVICSETU_MIRROR_DIRS", "CIVICSETU_ENABLE_SEED_STATES"):  # fmt: skip
        os.environ.pop(name, None)
    if models:  # the extracted and exported model, kept between runs (never parses or rows)
        os.environ["CIVICSETU_MODELS_DIR"] = str(Path(models).expanduser())
    from civicsetu_pipelines.ingest.registry import DOCUMENTS_YAML

    shipped = yaml.safe_load(DOCUMENTS_YAML.read_text())
    (entry,) = [d for d in shipped["documents"] if d["key"] == RULES_KEY]
    base = state / "base_registry.yaml"
    base.write_text(yaml.safe_dump({"schema_version": 1, "documents": [entry]}, sort_keys=False))
    os.environ["CIVICSETU_REGISTRY"] = str(base)


def register(state: Path, docs: list[Any]) -> None:
    """Store each PDF under its sha256 and write the user registry once, with the entries
    ``documents add`` writes (kind, title, date given; an amendment names the rules)."""
    from civicsetu_pipelines.base.settings import pdf_cache_dir
    from civicsetu_pipelines.ingest.registry import load_registry, user_registry_path
    from civicsetu_pipelines.store.embedding import sha256_file
    from civicsetu_pipelines_tests.generated_state import registry_entry

    store = pdf_cache_dir(state)
    store.mkdir(parents=True, exist_ok=True)
    entries = []
    for doc in docs:
        sha = sha256_file(doc.path)
        shutil.copyfile(doc.path, store / f"{sha}.pdf")
        amends = [RULES_KEY] if doc.variety == "amendment" else []
        entries.append(registry_entry(doc, sha, amends=amends))
    path = user_registry_path(state)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"schema_version": 1, "documents": entries}, sort_keys=False,
                                   allow_unicode=True))  # fmt: skip
    assert len(load_registry().documents()) == len(docs) + 1


def add(doc: Any) -> Run:
    """``civicsetu documents add`` with the kind, title, date and key given."""
    return civicsetu("documents", "add", str(doc.path), "-j", doc.jurisdiction, "--kind",
                     doc.kind, "--title", doc.title, "--effective-from", doc.date.isoformat(),
                     "--key", doc.key)  # fmt: skip


def change(state: Path, key: str, changed: Any) -> None:
    """Pin ``key`` to the corrected PDF (the same key, another sha256), as a re-fetched gazette
    with other bytes is pinned."""
    from civicsetu_pipelines.base.settings import pdf_cache_dir
    from civicsetu_pipelines.ingest.registry import user_registry_path
    from civicsetu_pipelines.store.embedding import sha256_file

    sha = sha256_file(changed.path)
    shutil.copyfile(changed.path, pdf_cache_dir(state) / f"{sha}.pdf")
    path = user_registry_path(state)
    data = yaml.safe_load(path.read_text())
    for entry in data["documents"]:
        if entry["key"] == key:
            entry.update(sha256=sha, filename=f"{sha}.pdf", title=changed.title)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


# -- the floor and the store -----------------------------------------------------------------


def bare_parse(paths: list[Path]) -> tuple[float, int]:
    import pymupdf

    started, pages = time.perf_counter(), 0
    for path in paths:
        with pymupdf.open(path) as pdf:
            for page in pdf:
                page.get_text()
                pages += 1
    return time.perf_counter() - started, pages


def bare_encoding(state: Path, jurisdiction: str, embedder: Any) -> tuple[float, int, int]:
    """Encode the windows of every chunk the jurisdiction serves (as ``embed_documents`` orders
    them; read from the store, so a resumed state's chunks count too): seconds, chunks,
    windows."""
    from civicsetu_pipelines.base import Settings
    from civicsetu_pipelines.store import connect, resolve_database_url
    from civicsetu_pipelines.store.embedding import document_text

    with connect(resolve_database_url(Settings.from_env())) as conn:
        rows = conn.execute(
            "SELECT label, title, text FROM legal_chunks WHERE jurisdiction = %s "
            "AND valid_to IS NULL",
            (jurisdiction,),
        ).fetchall()
    texts = [document_text(label, title, text) for label, title, text in rows]
    windows = sorted((w for t in texts for w in embedder.windows(t)), key=len, reverse=True)
    started = time.perf_counter()
    embedder.encode(windows)
    return time.perf_counter() - started, len(texts), len(windows)


def store_figures() -> dict[str, Any]:
    """Store size by table (bytes), current rows of the serving table, Dagster event-log rows."""
    from civicsetu_pipelines.base import Settings
    from civicsetu_pipelines.store import connect, resolve_database_url
    from civicsetu_pipelines.store.database import with_database

    url = resolve_database_url(Settings.from_env())
    with connect(url) as conn:
        sizes = conn.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p') AND n.nspname = 'public' "
            "AND NOT c.relispartition").fetchall()  # fmt: skip
        parts = conn.execute(
            "SELECT i.inhparent::regclass::text, sum(pg_total_relation_size(i.inhrelid)) "
            "FROM pg_inherits i GROUP BY 1").fetchall()  # fmt: skip
        rows = conn.execute("SELECT count(*) FROM legal_chunks").fetchone()[0]
    by_table = {str(name): int(size) for name, size in sizes}
    for parent, size in parts:
        by_table[str(parent)] = by_table.get(str(parent), 0) + int(size)
    with connect(with_database(url, "dagster")) as conn:
        events = conn.execute("SELECT count(*) FROM event_logs").fetchone()[0]
    return {"tables": by_table, "bytes": sum(by_table.values()), "chunk_rows": rows,
            "event_rows": int(events)}  # fmt: skip


# -- the bench -------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=10000)
    parser.add_argument("--encoder", default="real")
    parser.add_argument("--jurisdiction", default="GUJARAT")
    parser.add_argument("--seed", type=int, default=46)
    parser.add_argument("--keep", action="store_true", help="keep the state directory")
    parser.add_argument("--state", default="", help="resume a kept state directory whose cold "
                        "run was stopped: the same documents (written again, byte for byte), "
                        "not registered again; its cold run ends with what is cached")  # fmt: skip
    parser.add_argument("--ops-only", action="store_true", help="with --state: the single-"
                        "document operations only (no floor: the state's floor was printed by "
                        "its cold run)")  # fmt: skip
    parser.add_argument("--models", default="~/.cache/civicsetu/bench-large-models",
                        help="where the model is extracted and exported once ('' : the state "
                        "directory's own, exported again)")  # fmt: skip
    args = parser.parse_args()
    if args.encoder not in ("real", "standin"):
        raise SystemExit(f"--encoder {args.encoder}: use real (the configured runtime) or "
                         "standin (store.embedders.StandInEmbedder: the model's tokenizer and "
                         "windows, words hashed instead of the model)")  # fmt: skip
    if args.encoder == "standin":  # this process and every civicsetu process it starts
        os.environ["CIVICSETU_EMBED_RUNTIME"] = "standin"
    resume = Path(args.state) if args.state else None
    state = resume or Path(tempfile.mkdtemp(prefix="civicsetu-bench-large-"))
    setup_state(state, args.models)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `timeout` stops it cleanly
    try:
        bench(
            state,
            args.jurisdiction,
            args.documents,
            args.seed,
            resume=resume is not None,
            ops_only=args.ops_only and resume is not None,
        )
    finally:
        finish(state, keep=args.keep)


def finish(state: Path, *, keep: bool) -> None:
    """A bench's end, however it ends: the runs it started stopped (a run cut short by SIGTERM:
    its process goes too), the state's Postgres and shared validator stopped, the state removed
    unless ``keep``."""
    for proc in RUNNING:
        proc.terminate()
        proc.wait()
    from civicsetu_pipelines.base import run_dir
    from civicsetu_pipelines.ingest.quality_service import stop_shared_validators
    from civicsetu_pipelines.store.database import EmbeddedPostgres

    EmbeddedPostgres(state).stop()
    stop_shared_validators(run_dir(state))
    if not keep:
        shutil.rmtree(state, ignore_errors=True)
    else:
        print(f"kept {state}")


def bench(
    state: Path, j: str, n: int, seed: int, resume: bool = False, ops_only: bool = False
) -> None:
    from civicsetu_pipelines.base.settings import DEFAULT_MIRROR, Settings, models_dir
    from civicsetu_pipelines.store.embedders import open_embedder
    from civicsetu_pipelines.store.embedding import embedding_config_from_env
    from civicsetu_pipelines_tests.generated_state import (
        write_state,
    )

    print(f"state dir {state}; {n} generated documents of {j} (seed {seed}) + {RULES_KEY}",
          flush=True)  # fmt: skip
    started = time.perf_counter()
    docs = write_state(state / "generated", jurisdiction=j, documents=n, seed=seed)
    generated = time.perf_counter() - started
    pages = sum(d.pages for d in docs)
    print(f"generated {n} PDFs, {pages} pages, {sum(d.paragraphs for d in docs)} numbered "
          f"paragraphs in {generated:.1f} s; {dict(Counter(d.variety for d in docs))}")  # fmt: skip
    started = time.perf_counter()
    if not resume:
        register(state, docs)
        print(f"registered in {time.perf_counter() - started:.1f} s (one registry write)",
              flush=True)  # fmt: skip

    config = embedding_config_from_env()
    settings = Settings.from_env()
    embedder = open_embedder(config, models_dir(state, settings.models_override))
    started = time.perf_counter()
    embedder.encode(["warm-up"])  # the export and load, once per machine: in no figure below
    print(f"model {config.model} ({config.runtime}) exported and loaded in "
          f"{time.perf_counter() - started:.1f} s", flush=True)  # fmt: skip

    cold = materialize(j)
    resumed = " (resumed: parses and vectors from the stopped run's caches)" if resume else ""
    print(f"cold backfill{resumed}                 {cold}", flush=True)
    figures = store_figures()
    if ops_only:
        single_documents(state, j, n, seed, docs, figures["event_rows"])
        return
    rules_pdf = Path(DEFAULT_MIRROR) / "gujrera_general_rules_2017.pdf"
    parse_s, parse_pages = bare_parse([d.path for d in docs] + [rules_pdf])
    encode_s, chunks, windows = bare_encoding(state, j, embedder)
    floor = parse_s + encode_s
    print(f"bare parse                    {parse_s:8.2f} s  ({parse_pages} pages, get_text)")
    print(f"bare encoding                 {encode_s:8.2f} s  ({chunks} chunks, {windows} windows, "
          f"{windows / max(encode_s, 1e-9):.1f} windows/s)")  # fmt: skip
    print(f"floor (parse + encoding)      {floor:8.2f} s")
    print(f"ratio cold / floor            {cold.seconds / floor:8.2f}")
    print(f"store                         {figures['bytes'] / 2**20:8.1f} MiB  "
          f"({figures['chunk_rows']} rows in legal_chunks)")  # fmt: skip
    for table, size in sorted(figures["tables"].items(), key=lambda kv: -kv[1])[:8]:
        print(f"  {table:<28}{size / 2**20:8.1f} MiB")
    print(f"Dagster event-log rows        {figures['event_rows']:8d}")
    print(f"per document: cold {cold.seconds / (n + 1):.3f} s, floor {floor / (n + 1):.3f} s; "
          f"per page: bare parse {1000 * parse_s / parse_pages:.2f} ms; per window: bare "
          f"encoding {1000 * encode_s / max(windows, 1):.1f} ms; "
          f"{windows / (n + 1):.1f} windows and "
          f"{figures['event_rows'] / (n + 1):.1f} event-log rows a document")  # fmt: skip
    single_documents(state, j, n, seed, docs, figures["event_rows"])


def single_documents(state: Path, j: str, n: int, seed: int, docs: list[Any], events: int) -> None:
    """One order added, one changed, one removed and a no-op, each against the same document
    alone in an empty jurisdiction."""
    from civicsetu_pipelines_tests.generated_state import changed_variant, make_document

    print("\none document at a time (the state / the same document alone in an empty one)")
    from civicsetu_pipelines.ingest import load_registry

    registry = load_registry()
    known = {spec.key for spec in registry.specs}
    busy = set(registry.jurisdictions())
    alone = [code for code in ALONE_CANDIDATES if code not in busy][:3]
    fresh = state / "more"
    for folder in (fresh, *(fresh / a for a in alone)):
        folder.mkdir(parents=True, exist_ok=True)
    # add: the next order of the same seed (the kind the state grows by)
    index = next(i for i in range(n, n + 500)
                 if f"{j.lower()}_order_{i:05d}" not in known  # a resumed state's earlier
                 and make_document(fresh, jurisdiction=j, index=i,  # runs added some
                                   seed=seed).variety == "order")  # fmt: skip
    new = make_document(fresh, jurisdiction=j, index=index, seed=seed)
    registered = add(new)
    _say("add one order", registered, materialize(j), new)
    # change: the corrected version of a registered order, pinned under the same key
    from civicsetu_pipelines.store.embedding import sha256_file

    pins = {spec.key: spec.sha256 for spec in registry.specs}
    target = next(d for d in docs  # one not changed by a resumed state's earlier runs
                  if d.variety == "order" and 3 <= d.pages <= 6
                  and pins.get(d.key) == sha256_file(d.path))  # fmt: skip
    corrected = changed_variant(target, fresh, seed=seed)
    change(state, target.key, corrected)
    _say("change one order", None, materialize(j), corrected)
    # remove: another order, out of the registry (its rows retired at once), then the run
    victim = next(d for d in docs if d.variety == "order" and d.key != target.key
                  and 3 <= d.pages <= 6 and d.key in known)  # fmt: skip
    removed = civicsetu("documents", "remove", victim.key)
    _say("remove one order", removed, materialize(j), victim)
    _say("no-op re-run", None, materialize(j), None)  # nothing changed since the last run
    # the same documents alone, each in an empty jurisdiction (registered after the state's
    # runs: a registry change anywhere makes every jurisdiction's next run a full one)
    for what, where, i, corrected_too in (("add", alone[0], index, False),
                                          ("change", alone[1], target.index, True),
                                          ("remove", alone[2], victim.index, False)):  # fmt: skip
        doc = make_document(fresh / where, jurisdiction=where, index=i, seed=seed,
                            changed=corrected_too)  # fmt: skip
        _say(f"{what}: alone", add(doc), materialize(where), doc, where)
    _say("no-op: alone", None, materialize(alone[2]), None, alone[2])
    _say("re-run, registry changed elsewhere", None, materialize(j), None)
    final = store_figures()
    print(f"\nDagster event-log rows after the single-document runs: {final['event_rows']} "
          f"(+{final['event_rows'] - events} for 12 runs and their commands)")  # fmt: skip


def _say(what: str, command: Run | None, run: Run, doc: Any, where: str = "") -> None:
    """One line as soon as it is measured: the command (add, remove) if any, the run."""
    first = f"command {command.seconds:6.2f} s + " if command is not None else ""
    about = f"  ({doc.pages} pages, {doc.paragraphs} paragraphs)" if doc is not None else ""
    print(f"  {what:<36}{first:>26}run {run}  {where} {_status(run)}{about}", flush=True)


def _status(run: Run) -> str:
    """What ``materialize`` said of its partition: up to date, or ok in N s."""
    for line in run.output.splitlines():
        if "up to date" in line or " ok in " in line or "FAILED" in line:
            return line.strip()[:90]
    return ""


if __name__ == "__main__":
    main()

"""A state of many copies of one real document, and one more added (issue 46's first figure).

Usage: .venv/bin/python bench/bench_copies.py [--copies 200] [--source FILE.pdf]
                                              [--jurisdiction GOA] [--keep]

On a fresh state directory (its own embedded Postgres, parse cache and Dagster home; the model
kept under ``~/.cache/civicsetu/bench-large-models``):

1. ``--copies`` copies of a real PDF of ``../shared/corpus`` (default the Gujarat RERA authority
   rules, 21 pages of text layer: the corpus holds no 12-page circular; the 16-page Bihar
   regulations, the first choice, have Hindi pages in a legacy font that the text-layer judge
   re-reads by OCR, minutes a copy here, which no circular of a text layer costs), each
   stamped on its first page with its own number ("Circular No. N/2024") as a series of
   circulars is printed, so each has its own bytes and sha256; registered as ``civicsetu
   documents add`` registers them with kind ``circular``, title and date given (one registry
   write for all);
2. cold: ``civicsetu materialize -j J --no-reports``;
3. one more copy added as the README says (``civicsetu documents add`` with kind, title and
   date, then ``civicsetu materialize -j J``): the two commands' wall time, and what the run
   processed and left as it was;
4. the same copy alone in an empty jurisdiction, through the same two commands.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_large import Run, civicsetu, finish, materialize, setup_state  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "pdfs"


def stamped(source: Path, out: Path, number: int) -> Path:
    """``source`` with "Circular No. <number>/2024" printed in its first page's top margin."""
    import pymupdf

    with pymupdf.open(source) as pdf:
        page = pdf[0]
        page.insert_text((page.rect.width - 190, 28), f"Circular No. {number}/2024", fontsize=10)
        pdf.save(out, garbage=3, deflate=True)
    return out


def entry(path: Path, jurisdiction: str, number: int) -> dict[str, object]:
    """The user registry entry ``documents add`` writes with kind, title and date given."""
    from civicsetu_pipelines.store.embedding import sha256_file

    sha = sha256_file(path)
    return {
        "key": f"{jurisdiction.lower()}_circular_{number:05d}",
        "title": f"Circular No. {number}/2024", "jurisdiction": jurisdiction,
        "doc_type": "circular", "effective_date": f"2024-{1 + number % 12:02d}-01",
        "source_url": path.resolve().as_uri(), "filename": f"{sha}.pdf", "sha256": sha,
        "language": "eng", "status": "in_force",
    }  # fmt: skip


def add(path: Path, jurisdiction: str, number: int) -> Run:
    fields = entry(path, jurisdiction, number)
    return civicsetu("documents", "add", str(path), "-j", jurisdiction, "--kind", "circular",
                     "--title", str(fields["title"]), "--effective-from",
                     str(fields["effective_date"]), "--key", str(fields["key"]))  # fmt: skip


def documents_line(run: Run) -> str:
    return next((line.strip() for line in run.output.splitlines()
                 if line.strip().startswith("documents:")), "")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=200)
    parser.add_argument("--source", default="gujrera_authority_rules_2016.pdf")
    parser.add_argument("--jurisdiction", default="GOA")
    parser.add_argument("--alone", default="KERALA")
    parser.add_argument("--keep", action="store_true", help="keep the state directory")
    args = parser.parse_args()
    source = SHARED / args.source
    if not source.is_file():
        raise SystemExit(f"{source}: not found (the shared corpus sits beside the repository)")
    state = Path(tempfile.mkdtemp(prefix="civicsetu-bench-copies-"))
    setup_state(state, "~/.cache/civicsetu/bench-large-models")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        bench(state, source, args.jurisdiction, args.alone, args.copies)
    finally:
        finish(state, keep=args.keep)


def bench(state: Path, source: Path, j: str, alone: str, copies: int) -> None:
    import pymupdf

    from civicsetu_pipelines.base.settings import pdf_cache_dir
    from civicsetu_pipelines.ingest.registry import user_registry_path

    with pymupdf.open(source) as pdf:
        pages = len(pdf)
    print(f"state dir {state}; {copies} stamped copies of {source.name} ({pages} pages) in {j}",
          flush=True)  # fmt: skip
    folder = state / "copies"
    folder.mkdir()
    store = pdf_cache_dir(state)
    store.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    entries = []
    for n in range(1, copies + 1):
        path = stamped(source, folder / f"circular_{n:05d}.pdf", n)
        fields = entry(path, j, n)
        shutil.copyfile(path, store / str(fields["filename"]))
        entries.append(fields)
    registry = user_registry_path(state)
    registry.parent.mkdir(parents=True, exist_ok=True)
    registry.write_text(yaml.safe_dump({"schema_version": 1, "documents": entries},
                                       sort_keys=False))  # fmt: skip
    print(f"stamped and registered in {time.perf_counter() - started:.1f} s", flush=True)
    cold = materialize(j)
    print(f"cold ({copies} copies)          {cold}  {documents_line(cold)}", flush=True)
    one = stamped(source, folder / "circular_new.pdf", copies + 1)
    added = add(one, j, copies + 1)
    run = materialize(j)
    print(f"one more: documents add        {added}", flush=True)
    print(f"          materialize -j {j:<6}{run}  {documents_line(run)}", flush=True)
    print(f"          served after          {added.seconds + run.seconds:8.2f} s", flush=True)
    # the same circular stamped with the next number (a pinned sha256 is registered once)
    other = stamped(source, folder / "circular_alone.pdf", copies + 2)
    alone_added = add(other, alone, copies + 2)
    alone_run = materialize(alone)
    print(f"the next copy alone in {alone}: add {alone_added.seconds:.2f} s + materialize "
          f"{alone_run.seconds:.2f} s = {alone_added.seconds + alone_run.seconds:.2f} s  "
          f"{documents_line(alone_run)}", flush=True)  # fmt: skip
    noop = materialize(j)
    print(f"no-op re-run                  {noop}", flush=True)


if __name__ == "__main__":
    main()

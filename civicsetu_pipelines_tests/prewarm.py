"""The shared corpus parsed into the tests' parse cache ahead of the tiers that need it.

``scripts/test.sh`` starts this beside the logic tier: the corpus tier's store, the Bihar
gazette's end-to-end test and the others parse the same PDFs with the same fingerprints, and
their scanned pages (OCR, minutes of one core from a cold cache) were the longest wait of the
slow tiers. Parsed here first, they are read from the cache there; a parse a test reaches while
this one makes it waits for it (the cache's lock per document), so no page is OCR'd twice (the
run fails if one is).

Niced (``scripts/test.sh``), and its Tesseract readings niced again, as a run's reading ahead
is: it takes almost no CPU from the two busy logic workers, so most of its OCR runs in the slow
tiers, with the corpus store and the Bihar test waiting on it. Measured both ways in one stop's
fresh-clone runs (BENCHMARKS.md), at the tests' own priority the logic tier took 185 s longer
and the slow tiers 148 s less: the CPU is the same, and the logic tier has no idle core to give.

Run: ``python -m civicsetu_pipelines_tests.prewarm`` (the environment ``scripts/test.sh`` sets:
``CIVICSETU_TEST_RUN_DIR``; the parse cache the tests use, as ``conftest`` chooses it). Best
effort: a document that fails here fails in its own test, with its own error.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from pathlib import Path

from civicsetu_pipelines_tests.conftest import RUN_DIR, shared_parse_cache

# Added in the tests with `documents add` (the fingerprint of its parse: every page, in "eng"),
# not in the shipped registry.
ADDED_IN_TESTS = ("bihar_general_regulations_2021.pdf",)


def main() -> None:
    from civicsetu_pipelines.base.settings import (
        DEFAULT_MIRROR,
        ENV_ENABLE_SEED_STATES,
        ENV_REGISTRY,
        ENV_STATE_DIR,
        pdf_cache_dir,
    )

    if not DEFAULT_MIRROR.is_dir():
        print(f"prewarm: no corpus at {DEFAULT_MIRROR}; nothing to parse", flush=True)
        return
    run_dir = Path(os.environ.get(RUN_DIR) or tempfile.mkdtemp(prefix="civicsetu-prewarm-"))
    state = run_dir / "prewarm-state"
    os.environ[ENV_STATE_DIR] = str(state)  # never the user's state
    os.environ[ENV_ENABLE_SEED_STATES] = "0"  # the registry the corpus tier materializes
    os.environ.pop(ENV_REGISTRY, None)
    cache = shared_parse_cache()

    import pymupdf

    from civicsetu_pipelines.ingest import DocumentSpec, load_registry
    from civicsetu_pipelines.ingest.documents import parse_pages_cached, parse_rows_cached
    from civicsetu_pipelines.ingest.fetch import fetch_document
    from civicsetu_pipelines.ingest.ocr import reading_ahead

    def textless(path: Path) -> int:
        """Pages with no text layer: pages to OCR."""
        with pymupdf.open(path) as pdf:
            return sum(not page.get_text().strip() for page in pdf)

    started = time.monotonic()
    # the scans first: their OCR is the long wait, and the tests reach them early
    documents = load_registry().documents()
    ocr_pages = {spec.key: textless(DEFAULT_MIRROR / spec.filename) for spec in documents}
    specs = sorted(documents, key=lambda spec: -ocr_pages[spec.key])
    scanned = [spec for spec in specs if ocr_pages[spec.key]]

    def parse(spec: DocumentSpec) -> int:
        """Its parse in the cache (1), or 0: a failure here is its own test's to report."""
        try:
            fetched = fetch_document(spec, mirror_dirs=[DEFAULT_MIRROR],
                                     cache_dir=pdf_cache_dir(state), offline=True)  # fmt: skip
            with reading_ahead():  # its Tesseract niced again: the tests' work first
                parse_rows_cached(spec, fetched.path, fetched.sha256, cache)
        except Exception as exc:  # noqa: BLE001 - best effort, said
            print(f"prewarm: {spec.key} not parsed: {exc}", flush=True)
            return 0
        return 1

    done = 0
    for spec in scanned:  # each said when parsed: the log shows when the tests stopped waiting
        done += parse(spec)
        print(f"prewarm: {spec.key} ({ocr_pages[spec.key]} page(s) to OCR) parsed at "
              f"{time.monotonic() - started:.0f} s", flush=True)  # fmt: skip
    for name in ADDED_IN_TESTS:  # then the Bihar gazette (its legacy-font pages are OCR'd)
        path = DEFAULT_MIRROR / name
        if path.is_file():
            sha = hashlib.sha256(path.read_bytes()).hexdigest()
            with pymupdf.open(path) as pdf:
                pages = list(range(pdf.page_count))
            parse_pages_cached(path.stem, path, sha, cache, pages=pages, language="eng")
            done += 1
            print(f"prewarm: {path.name} parsed at {time.monotonic() - started:.0f} s", flush=True)
    done += sum(parse(spec) for spec in specs[len(scanned) :])
    print(f"prewarm: {done} corpus PDF(s) parsed into {cache} in "
          f"{time.monotonic() - started:.0f} s", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()

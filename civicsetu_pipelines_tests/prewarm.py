"""The shared corpus parsed into the tests' parse cache ahead of the tiers that need it.

``scripts/test.sh`` starts this (niced) beside the logic tier: the corpus tier's store, the
Bihar gazette's end-to-end test and the others parse the same PDFs with the same fingerprints,
and their scanned pages (OCR, minutes of one core from a cold cache) were the longest wait of the
slow tiers, on one worker while the other had finished. Parsed here first, they are read from
the cache there; a parse a test reaches while this one makes it waits for it (the cache's lock
per document), so no page is OCR'd twice (the run fails if one is).

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

    from civicsetu_pipelines.ingest import load_registry, prefetch_parses
    from civicsetu_pipelines.ingest.documents import parse_pages_cached

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
    kwargs = {"mirror_dirs": [DEFAULT_MIRROR], "pdf_cache": pdf_cache_dir(state),
              "parse_cache": cache, "offline": True}  # fmt: skip
    done = prefetch_parses(scanned, **kwargs)
    for name in ADDED_IN_TESTS:  # then the Bihar gazette (its legacy-font pages are OCR'd)
        path = DEFAULT_MIRROR / name
        if path.is_file():
            sha = hashlib.sha256(path.read_bytes()).hexdigest()
            with pymupdf.open(path) as pdf:
                pages = list(range(pdf.page_count))
            parse_pages_cached(path.stem, path, sha, cache, pages=pages, language="eng")
            done += 1
    done += prefetch_parses(specs[len(scanned) :], **kwargs)
    print(f"prewarm: {done} corpus PDF(s) parsed into {cache} in "
          f"{time.monotonic() - started:.0f} s", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()

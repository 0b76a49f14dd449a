"""Text layers judged before they are trusted: which pages of the corpus the check flags, the
lowest shares of English words it reads, and what it costs a page.

Usage: .venv/bin/python bench/bench_text_layers.py [PDF ...]

Every English default-registry document (and any PDF named) is parsed as the pipeline parses it
(``parse_pdf``, no cache): the pages whose layer was replaced by OCR or found unreadable are
listed with why; then the share of common English words (``pages.known_word_share``) of every
page with a text layer, lowest first, and the time the check takes a page.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from civicsetu_pipelines.base import DEFAULT_MIRROR
from civicsetu_pipelines.ingest import load_registry
from civicsetu_pipelines.ingest.pages import known_word_share, parse_pdf


def main() -> None:
    documents = [
        (spec.key, DEFAULT_MIRROR / str(spec.filename))
        for spec in load_registry(include_seed=False).documents()
        if spec.language == "eng"
    ] + [(Path(arg).stem, Path(arg)) for arg in sys.argv[1:]]
    shares: list[tuple[float, str, int]] = []
    seconds, judged = 0.0, 0
    for key, path in documents:
        pages = parse_pdf(key, path)
        for page in pages:
            if {"text_layer_replaced", "text_layer_unreadable"} & set(page.flags):
                why = next((r["reason"] for r in page.removed if "text layer" in r["reason"]), "")
                print(f"{key} page {page.page}: {why}")
            if page.method != "pymupdf":
                continue
            began = time.perf_counter()
            share = known_word_share(page.text)
            seconds += time.perf_counter() - began
            judged += 1
            if share is not None:
                shares.append((round(share, 2), key, page.page))
    shares.sort()
    print(f"{len(documents)} documents, {judged} text-layer pages; lowest shares: {shares[:6]}")
    print(f"the check: {1000 * seconds / max(judged, 1):.2f} ms a page")


if __name__ == "__main__":
    main()

"""Parsing speed: our page parser vs bare PyMuPDF text extraction on the same pages.

Usage: .venv/bin/python bench/bench_parse.py [--repeat 3]

For every default registry document with a text layer (OCR'd pages excluded: they measure
Tesseract, reported separately), it times, in the same run:
  * bare:   pymupdf page.get_text() on the ingested pages
  * parse:  civicsetu_pipelines.ingest.pages.parse_pdf (rows, margins, headers, garble detection)
  * chunk:  parse + legal_structure.build_chunks
and prints pages/second and the ratios parse/bare and (parse+chunk)/bare.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import time
from pathlib import Path

import pymupdf

from civicsetu_pipelines.base.settings import DEFAULT_MIRROR
from civicsetu_pipelines.ingest.legal_structure import build_chunks
from civicsetu_pipelines.ingest.pages import parse_pdf
from civicsetu_pipelines.ingest.registry import load_registry


def _best(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = []
    total = {"pages": 0, "bare": 0.0, "parse": 0.0, "chunk": 0.0}
    for spec in load_registry(include_seed=False).documents():
        path = Path(DEFAULT_MIRROR) / str(spec.filename)
        with pymupdf.open(path) as doc:
            pages = spec.pages_to_ingest(doc.page_count)
            if not any(doc[i].get_text().strip() for i in pages):
                ocr = functools.partial(parse_pdf, spec.key, path, pages, spec.language)
                ocr_time = _best(ocr, 1)
                print(f"{spec.key}: {len(pages)} scanned page(s), OCR {ocr_time:.2f}s/page set")
                continue

            def bare(doc: pymupdf.Document = doc, pages: list[int] = pages) -> None:
                for i in pages:
                    doc[i].get_text()

            t_bare = _best(bare, args.repeat)

        parse = functools.partial(parse_pdf, spec.key, path, pages, spec.language)
        t_parse = _best(parse, args.repeat)

        def chunk(spec=spec, path=path, pages=pages):  # type: ignore[no-untyped-def]
            parsed = [
                dataclasses.asdict(p) for p in parse_pdf(spec.key, path, pages, spec.language)
            ]
            build_chunks(
                parsed,
                document_key=spec.key,
                jurisdiction=str(spec.jurisdiction),
                doc_type=str(spec.doc_type),
            )

        t_chunk = _best(chunk, args.repeat)
        n = len(pages)
        rows.append((spec.key, n, n / t_bare, n / t_parse, t_parse / t_bare, t_chunk / t_bare))
        total["pages"] += n
        total["bare"] += t_bare
        total["parse"] += t_parse
        total["chunk"] += t_chunk
    print(f"{'document':48} {'pages':>5} {'bare p/s':>9} {'parse p/s':>9} {'parse/bare':>10} "
          f"{'+chunk/bare':>11}")  # fmt: skip
    for key, n, bare_ps, parse_ps, ratio, ratio_chunk in rows:
        print(f"{key:48} {n:5d} {bare_ps:9.0f} {parse_ps:9.0f} {ratio:10.1f} {ratio_chunk:11.1f}")
    p = total["pages"]
    print(
        f"{'TOTAL':48} {p:5d} {p / total['bare']:9.0f} {p / total['parse']:9.0f} "
        f"{total['parse'] / total['bare']:10.1f} {total['chunk'] / total['bare']:11.1f}"
    )


if __name__ == "__main__":
    main()

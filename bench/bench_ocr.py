"""OCR of a scanned gazette: how much of the page each way of reading it reads, and its cost.

Usage: .venv/bin/python bench/bench_ocr.py [--pages N] [--file NAME]

On the UP Rules 2016 (44 scanned pages, no text layer) by default, in the same run:
  * before:  rendered at 300 dpi, Tesseract's layout analysis (psm 3) only (the reading up to
             issue 13)
  * native:  rendered at the scan's own resolution, psm 3 only
  * now:     the scan's own resolution, psm 3, then the page as one block of rows (psm 6) when
             psm 3 leaves text-like ink unread; the reading with less unread ink is kept
For each: seconds per page, words read, regions of text-like ink no word covers (lost text),
and the rule numbers among the heading rows (`N-(1)`, `N-`, `N.`) the reading yields.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import pymupdf

from civicsetu_pipelines.base.settings import DEFAULT_MIRROR
from civicsetu_pipelines.ingest.ocr import LAYOUTS, ocr_page

_HEADING = re.compile(r"^\W{0,3}(\d{1,2})\s*[-.]")

WAYS = {
    "before": {"dpi": 300, "layouts": LAYOUTS[:1]},
    "native": {"dpi": None, "layouts": LAYOUTS[:1]},
    "now": {"dpi": None, "layouts": LAYOUTS},
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--file", default="up_rera_rules_2016_scanned.pdf")
    parser.add_argument("--pages", type=int, default=18, help="the first N pages (the rules)")
    args = parser.parse_args()
    path = Path(DEFAULT_MIRROR) / args.file
    print(f"{args.file}: first {args.pages} pages")
    print(f"{'way':8} {'s/page':>7} {'words':>7} {'unread':>7} {'block':>6}  numbers found")
    with pymupdf.open(path) as doc:
        pages = range(min(args.pages, doc.page_count))
        for way, options in WAYS.items():
            start = time.perf_counter()
            words = unread = block = 0
            numbers: set[int] = set()
            for index in pages:
                read = ocr_page(doc[index], "eng", **options)  # type: ignore[arg-type]
                words += sum(len(line.text.split()) for line in read.lines)
                unread += read.unread
                block += read.layout == "block"
                for line in read.lines:
                    match = _HEADING.match(line.text)
                    if match and not line.margin and line.x0 < 0.4 * doc[index].rect.width:
                        numbers.add(int(match.group(1)))
            seconds = (time.perf_counter() - start) / len(pages)
            found = sorted(n for n in numbers if n <= 40)
            print(f"{way:8} {seconds:7.2f} {words:7d} {unread:7d} {block:6d}  {found}")


if __name__ == "__main__":
    main()

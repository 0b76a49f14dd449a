"""Tesseract OCR of a page without a text layer: positioned lines and a mean confidence.

Pure domain code (no Dagster). The page is rendered at ``dpi`` with PyMuPDF and read by the
``tesseract`` command (Debian's ``tesseract-ocr`` with the document's language data); word boxes
come back in PDF points so OCR'd lines sit where a text layer's would.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import NamedTuple

import pymupdf

from civicsetu_pipelines.base import canonicalize

COLUMN_GAP_HEIGHTS = 3.0  # a gap wider than three text heights between words separates columns
MIN_WORDS_FOR_COLUMNS = 40  # fewer words than this: no column layout to find
MIN_GUTTER_POINTS = 6  # a gutter is at least this wide (PDF points)
GUTTER_CROSSINGS = 2  # words (a long heading, a stamp) that may cross a gutter
MIN_MARGIN_WORDS = 8  # a margin column holds at least this many words
MAX_MARGIN_SHARE = 0.35  # and at most this share of the page's words


class OcrLine(NamedTuple):
    """One OCR'd line: its text and box (PDF points); ``margin`` when it lies in a margin
    column left of the body (the titles printed beside the rules)."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    margin: bool = False


def tesseract_available() -> bool:
    return shutil.which("tesseract") is not None


def ocr_lines(page: pymupdf.Page, language: str, dpi: int = 300) -> tuple[list[OcrLine], float]:
    """OCR one page with Tesseract: its lines (text and box in PDF points, top to bottom) and
    the mean word confidence (0-100)."""
    pix = page.get_pixmap(dpi=dpi)
    scale = 72.0 / dpi
    with tempfile.TemporaryDirectory() as tmp:
        image = Path(tmp) / "page.png"
        pix.save(image)
        proc = subprocess.run(
            ["tesseract", str(image), "stdout", "-l", language, "--psm", "3", "tsv"],
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
            # Tesseract's OpenMP threads make it ~3x slower on a 2-core machine (5.7 s vs
            # 1.9 s a page, same words and confidence): one thread.
            env={**os.environ, "OMP_THREAD_LIMIT": "1"},
        )
    if proc.returncode != 0:
        raise RuntimeError(f"tesseract failed ({proc.returncode}): {proc.stderr.strip()[:300]}")
    lines: dict[tuple[int, int, int], list[tuple[float, float, float, float, str]]] = {}
    confidences: list[float] = []
    for record in proc.stdout.splitlines()[1:]:
        parts = record.split("\t")
        if len(parts) < 12 or not parts[11].strip():
            continue
        conf = float(parts[10])
        if conf < 0:
            continue
        confidences.append(conf)
        key = (int(parts[2]), int(parts[3]), int(parts[4]))
        left, top, w, h = (float(v) * scale for v in parts[6:10])
        lines.setdefault(key, []).append((left, top, left + w, top + h, parts[11]))
    gutter = _gutter([w for line in lines.values() for w in line], page.rect.width)
    rows = []
    for line in lines.values():
        for words in _split_at_gaps(line, gutter):
            text = canonicalize(" ".join(w[4] for w in words))
            if text:
                rows.append(
                    OcrLine(
                        text,
                        min(w[0] for w in words),
                        min(w[1] for w in words),
                        max(w[2] for w in words),
                        max(w[3] for w in words),
                        gutter is not None and max(w[2] for w in words) <= gutter,
                    )
                )
    rows.sort(key=lambda r: (r.y0, r.x0))
    mean = statistics.fmean(confidences) if confidences else 0.0
    return rows, round(mean, 1)


Word = tuple[float, float, float, float, str]


def _split_at_gaps(words: list[Word], gutter: float | None = None) -> list[list[Word]]:
    """Split one OCR line where a gap between words is a column gap (a margin note beside the
    body: "Information and    3-(1) The promoter ..."), or where it crosses the page's gutter."""
    if len(words) < 2:
        return [words]
    heights = sorted(w[3] - w[1] for w in words)
    gap = COLUMN_GAP_HEIGHTS * heights[len(heights) // 2]
    parts: list[list[Word]] = [[words[0]]]
    for previous, word in zip(words, words[1:], strict=False):
        crosses = gutter is not None and previous[2] <= gutter < (word[0] + word[2]) / 2
        if word[0] - previous[2] > gap or crosses:
            parts.append([])
        parts[-1].append(word)
    return parts


def _gutter(words: list[Word], width: float) -> float | None:
    """The x of a margin column's gutter: the leftmost strip in the left part of the page that
    (almost) no word crosses, with a column of words on its left (a margin) and most words on
    its right. ``None`` for a page of one column."""
    if len(words) < MIN_WORDS_FOR_COLUMNS or width <= 0:
        return None
    cover = [0] * (int(width) + 2)
    for x0, _y0, x1, _y1, _text in words:
        for x in range(max(0, int(x0)), min(len(cover), int(x1) + 1)):
            cover[x] += 1
    start: int | None = None
    for x in range(int(0.05 * width), int(0.45 * width) + 1):
        if cover[x] <= GUTTER_CROSSINGS:
            start = x if start is None else start
            continue
        if start is not None and x - start >= MIN_GUTTER_POINTS:
            middle = (start + x) / 2
            left = sum(1 for w in words if w[2] <= start)
            is_margin = MIN_MARGIN_WORDS <= left <= MAX_MARGIN_SHARE * len(words)
            if is_margin:
                return middle
        start = None
    return None

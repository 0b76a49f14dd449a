"""Tesseract OCR of a page without a text layer: positioned lines, a mean confidence, and the
text the reading lost.

Pure domain code (no Dagster). The page is rendered at ``dpi`` with PyMuPDF and read by the
``tesseract`` command (Debian's ``tesseract-ocr`` with the document's language data); word boxes
come back in PDF points so OCR'd lines sit where a text layer's would.

OCR is bounded per document by an :class:`OcrBudget` (pages, seconds, seconds a page, pixels a
page; ``CIVICSETU_OCR_*``): a page past it raises :class:`OcrSkipped`, which says which budget.

A scanned document's pages are read two at a time (:class:`OcrAhead`): Tesseract's readings of
the next pages run while this one is read, so both cores work; every page's words
are exactly what reading it alone gives (the same command on the same image).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import pymupdf

from civicsetu_pipelines.base import Settings, canonicalize

COLUMN_GAP_HEIGHTS = 3.0  # a gap wider than three text heights between words separates columns
MIN_WORDS_FOR_COLUMNS = 40  # fewer words than this: no column layout to find
MIN_GUTTER_POINTS = 6  # a gutter is at least this wide (PDF points)
GUTTER_CROSSINGS = 2  # words (a long heading, a stamp) that may cross a gutter
MIN_MARGIN_WORDS = 5  # a margin column holds at least this many words of notes
# A word of a margin note ("Budget,", "audit.-"), not a rule number ("35-") or a sub-rule
# marker ("(iii)"): a column of numbers and markers left of the body is part of the body.
MAX_MARK_CHARS = 8  # "22-(1)", "(viii)", "15A-(2)"
_NUMBER = re.compile(r"^\W?(?:\d{1,3}[A-Z]?\s?[-.)–]|\(\w{1,5}\))")  # "22-(1)", "23-", "(a)"
_NOTE_WORD = re.compile(r"^[A-Za-z][a-z]+[.,:;'’\-—]*$")
MAX_MARGIN_SHARE = 0.35  # and at most this share of the page's words
DEFAULT_DPI = 300  # a page that is not one scanned image is rendered at this resolution
MIN_DPI, MAX_DPI = 150, 400  # a scan's own resolution is used inside these bounds


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


def tesseract_identity() -> str:
    """What an OCR'd page depends on besides the page: the ``tesseract`` found on ``PATH``, its
    version and the sha256 of every language data file it reads ("" when there is none).

    Part of the parse cache's key, so a Tesseract or language-data upgrade parses again.
    Computed once per process for each ``tesseract`` executable.
    """
    executable = shutil.which("tesseract")
    return _tesseract_identity(executable) if executable else ""


def tesseract_languages() -> frozenset[str]:
    """The language data the ``tesseract`` on ``PATH`` has (empty when there is none)."""
    executable = shutil.which("tesseract")
    return _language_data(executable)[1] if executable else frozenset()


@functools.cache
def _language_data(executable: str) -> tuple[Path | None, frozenset[str]]:
    """Where ``executable`` reads its language data, and the languages there (one
    ``--list-langs`` a process, for both the parse cache's key and the languages OCR asks for)."""
    done = subprocess.run([executable, "--list-langs"], capture_output=True, text=True, timeout=60)
    lines = (done.stdout + done.stderr).splitlines()
    folder = re.search(r'"([^"]+)"', lines[0]) if lines else None
    languages = frozenset(line.strip() for line in lines[1:] if line.strip())
    return (Path(folder.group(1)) if folder else None), languages


@functools.cache
def _tesseract_identity(executable: str) -> str:
    done = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=60)
    digest = hashlib.sha256((done.stdout + done.stderr).splitlines()[0].encode())
    folder, _ = _language_data(executable)
    for data in sorted(folder.glob("*.traineddata")) if folder else []:
        digest.update(data.name.encode())
        digest.update(hashlib.sha256(data.read_bytes()).digest())
    return digest.hexdigest()


class OcrSkipped(Exception):
    """A page OCR did not read because a budget of :class:`OcrBudget` was spent; ``flag`` names
    which (``ocr_budget_pages``, ``ocr_budget_seconds`` or ``ocr_page_timeout``) and the message
    says it in words."""

    def __init__(self, flag: str, message: str) -> None:
        super().__init__(message)
        self.flag = flag


@dataclass
class OcrBudget:
    """What OCR may spend on one document (``Settings``: ``CIVICSETU_OCR_MAX_PAGES``,
    ``_MAX_SECONDS``, ``_PAGE_TIMEOUT``, ``_MAX_PIXELS``), and what it has spent."""

    max_pages: int
    max_seconds: float
    page_timeout: float
    max_pixels: int
    pages: int = 0
    seconds: float = 0.0
    at_once: int = 1  # pages read at once (``CIVICSETU_OCR_PAGES_AT_ONCE``: :class:`OcrAhead`)

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> OcrBudget:
        s = settings or Settings.from_env()
        return cls(s.ocr_max_pages, s.ocr_max_seconds, s.ocr_page_timeout, s.ocr_max_pixels,
                   at_once=s.ocr_pages_at_once)  # fmt: skip

    def start_page(self) -> float:
        """Before a page is OCR'd: :class:`OcrSkipped` when the document's budget is spent,
        else the seconds the page may take."""
        if self.pages >= self.max_pages:
            raise OcrSkipped("ocr_budget_pages", f"the document's OCR budget of {self.max_pages} "
                             "page(s) is spent (CIVICSETU_OCR_MAX_PAGES)")  # fmt: skip
        left = self.max_seconds - self.seconds
        if left <= 0:
            spent = f"the document's OCR budget of {self.max_seconds:.0f} s is spent"
            raise OcrSkipped("ocr_budget_seconds", f"{spent} (CIVICSETU_OCR_MAX_SECONDS)")
        return min(self.page_timeout, left)

    def max_dpi(self, page: pymupdf.Page) -> int:
        """The highest resolution ``page`` renders at within ``max_pixels`` (at least 1)."""
        area = page.rect.width * page.rect.height / 72.0**2  # square inches
        return max(1, int((self.max_pixels / area) ** 0.5)) if area > 0 else MAX_DPI


BLANK_DPI = 24  # a page is looked at this coarsely for ink (an A4 page: 198 x 281 pixels) ...
BLANK_PIXELS = 4_000_000  # ... in at most this many pixels (a page 200 inches wide: 10 dpi)
PAPER_LEVEL = 200  # a pixel of the coarse look darker than this (0-255) is ink


def is_blank(page: pymupdf.Page) -> bool:
    """Whether ``page`` puts no ink on paper: its content streams are empty, or rendered at
    :data:`BLANK_DPI` no pixel is darker than :data:`PAPER_LEVEL` (a blank scan, a white box).
    Such a page is neither re-read with pdfplumber nor OCR'd (a scanner's thousands of blank
    pages would otherwise be OCR'd at a second or more each)."""
    try:
        if not any((page.parent.xref_stream(x) or b"").strip() for x in page.get_contents()):
            return True
    except Exception:  # noqa: BLE001 - a stream MuPDF cannot decode: look at the page instead
        pass
    inches = page.rect.width * page.rect.height / 72.0**2
    dpi = min(BLANK_DPI, max(1, int((BLANK_PIXELS / inches) ** 0.5))) if inches > 0 else 1
    pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
    return not pix.samples or min(pix.samples) >= PAPER_LEVEL


def scan_dpi(page: pymupdf.Page) -> int:
    """The resolution to OCR ``page`` at: the scan's own when the page is one image that covers
    it (resampling a scan blurs small marks: at 300 dpi Tesseract drops the bare rule numbers
    `12-` and `13-` that it reads at a 200 dpi scan's own resolution), else ``DEFAULT_DPI``."""
    width = page.rect.width
    images = page.get_images(full=True)
    if len(images) != 1 or width <= 0:
        return DEFAULT_DPI
    xref, pixels = images[0][0], images[0][2]
    boxes = page.get_image_rects(xref)
    if not boxes or boxes[0].width < 0.9 * width:
        return DEFAULT_DPI
    dpi = round(pixels * 72.0 / boxes[0].width)
    return min(MAX_DPI, max(MIN_DPI, dpi))


class OcrPage(NamedTuple):
    """A page as OCR read it: its lines, the mean word confidence (0-100), the ``layout`` whose
    reading was kept, ``unread``: regions of text-like ink that no word covers (text the
    reading lost), and ``downscaled``: the resolution it was read at when the pixel budget made
    it lower than the page wanted (0: not lowered)."""

    lines: list[OcrLine]
    confidence: float
    layout: str
    unread: int
    downscaled: int = 0


# Tesseract page-segmentation modes, tried in order: its own layout analysis first; when that
# leaves text unread (on a skewed scan with a binding shadow it dropped 40% of a page as
# "image"), the page read as one block of rows, which reads every row and is split into
# columns below. The reading that leaves less ink unread is kept.
LAYOUTS = (("auto", "3"), ("block", "6"))
MAX_UNREAD = 2  # this many unread ink regions (stamps, initials) is a page read whole
LEAD = 3  # OcrAhead begins at most this many times its readings at once before they are read


def ocr_page(
    page: pymupdf.Page,
    language: str,
    dpi: int | None = None,
    layouts: Sequence[tuple[str, str]] = LAYOUTS,
    budget: OcrBudget | None = None,
    ahead: OcrAhead | None = None,
) -> OcrPage:
    """OCR one page with Tesseract: its lines (text and box in PDF points, top to bottom), the
    mean word confidence and the text-like ink no word covers. ``dpi`` defaults to the scan's
    own (``scan_dpi``); ``layouts`` are tried in order until one leaves (almost) nothing
    unread. ``budget`` (default: one page's, from the settings) bounds the page's pixels and
    seconds and is charged with them; :class:`OcrSkipped` when it is spent."""
    budget = budget or OcrBudget.from_settings()
    seconds = budget.start_page()
    began = time.monotonic()
    try:
        return _ocr_page(page, language, dpi, layouts, budget, began + seconds, ahead)
    except OcrSkipped as skipped:
        if skipped.flag == "ocr_page_timeout" and seconds < budget.page_timeout:
            # it was the document's time budget, not the page's, that ran out
            spent = f"the document's OCR budget of {budget.max_seconds:.0f} s is spent"
            raise OcrSkipped("ocr_budget_seconds", f"{spent} (CIVICSETU_OCR_MAX_SECONDS)"
                             ) from None  # fmt: skip
        raise
    finally:
        budget.pages += 1
        budget.seconds += time.monotonic() - began


def _ocr_page(
    page: pymupdf.Page,
    language: str,
    dpi: int | None,
    layouts: Sequence[tuple[str, str]],
    budget: OcrBudget,
    deadline: float,
    ahead: OcrAhead | None = None,
) -> OcrPage:
    started = ahead.take(page, language, dpi, layouts) if ahead is not None else None
    rendered = started[0] if started is not None else _render(page, dpi, budget)
    best: tuple[int, str, list[_PixelWord]] | None = None
    try:
        for n, (layout, psm) in enumerate(layouts):
            try:
                if n == 0 and started is not None and ahead is not None:  # begun ahead of it
                    words = ahead.wait(started[1], deadline)
                elif ahead is not None:  # off this thread, which meanwhile starts pages ahead
                    words = ahead.wait(ahead.read(rendered.image, language, psm, deadline),
                                       deadline)  # fmt: skip
                else:
                    words = _tesseract_words(rendered.image, language, psm,
                                             deadline - time.monotonic())  # fmt: skip
            except (subprocess.TimeoutExpired, FutureTimeout):
                if best is not None:  # a reading in time is kept
                    break
                raise OcrSkipped("ocr_page_timeout", f"Tesseract read the page for longer than "
                                 f"{budget.page_timeout:.0f} s (CIVICSETU_OCR_PAGE_TIMEOUT)"
                                 ) from None  # fmt: skip
            unread = unread_regions(rendered.ink, words)
            if best is None or unread < best[0]:
                best = (unread, layout, words)
            if unread <= MAX_UNREAD:
                break
    finally:
        shutil.rmtree(rendered.folder, ignore_errors=True)
    assert best is not None
    unread, layout, words = best
    lines, confidence = _lines(words, 72.0 / rendered.dpi, page.rect.width)
    lowered = rendered.dpi if rendered.dpi < rendered.wanted else 0
    return OcrPage(lines, confidence, layout, unread, lowered)


@dataclass
class _Rendered:
    """A page rendered for Tesseract: the folder of its image, its ink, the resolution it was
    rendered at and the one it wanted."""

    folder: Path
    ink: npt.NDArray[np.bool_]
    dpi: int
    wanted: int

    @property
    def image(self) -> Path:
        return self.folder / "page.png"


def _render(page: pymupdf.Page, dpi: int | None, budget: OcrBudget) -> _Rendered:
    wanted = dpi or scan_dpi(page)
    dpi = min(wanted, budget.max_dpi(page))
    pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
    gray = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.stride)
    folder = Path(tempfile.mkdtemp(prefix="civicsetu-ocr-"))
    rendered = _Rendered(folder, gray[:, : pix.width] < INK_LEVEL, dpi, wanted)
    pix.save(rendered.image)
    return rendered


class OcrAhead:
    """A scan's Tesseract readings in ``at_once`` worker threads (the budget's), so that its
    pages are read two at a time on two cores: the first reading of the page being read and of
    the next ones, and a page's second reading (another layout) too. While the caller waits
    for a reading, ``feed`` gives it the next pages to begin, so that a worker that finishes
    finds one (a page's second reading no longer leaves a core idle). Pages are rendered in the
    caller's thread (PyMuPDF is not thread-safe); a page that turns out not to need OCR costs
    one reading. Each page's words are those of reading it alone: the same command, image and
    layout. Close it (a context manager) to stop and clean what was not taken."""

    def __init__(
        self,
        language: str,
        budget: OcrBudget,
        feed: Callable[[], pymupdf.Page | None] | None = None,
    ) -> None:
        self.pages = max(1, budget.at_once)
        self.language = language
        self.budget = budget
        self.psm = LAYOUTS[0][1]
        self.nice = getattr(_AHEAD, "on", False)  # the caller's niceness, in the worker too
        self._pool = ThreadPoolExecutor(max_workers=self.pages, thread_name_prefix="ocr-ahead")
        self._started: dict[int, tuple[_Rendered, Future[list[_PixelWord]]]] = {}
        # The next page the caller will read that needs OCR (None: none left); called, in the
        # caller's thread, to begin pages further ahead while a reading is waited for.
        self._feed = feed

    def read(
        self, image: Path, language: str, psm: str, deadline: float
    ) -> Future[list[_PixelWord]]:
        """A reading of ``image`` by the same workers as the first readings begun ahead (a
        page's second reading, in another layout, or one of a page not begun ahead): at most
        ``pages`` Tesseract processes run at once, whichever reading they make."""
        timeout = deadline - time.monotonic()
        return self._pool.submit(_tesseract_words, image, language, psm, timeout, self.nice)

    def wait(self, future: Future[list[_PixelWord]], deadline: float) -> list[_PixelWord]:
        """``future``'s words by ``deadline`` (``FutureTimeout`` past it). While it runs, the
        pages after those begun are rendered and their first readings queued whenever fewer
        than one more than the readings at once are unfinished (and at most :data:`LEAD` pages
        are begun and not yet read): a worker that finishes finds the next page, even while
        this page's second reading keeps the caller waiting."""
        while not future.done():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            running = [f for _, f in self._started.values() if not f.done()]
            if (self._feed is not None and len(running) <= self.pages
                    and len(self._started) < LEAD * self.pages):  # fmt: skip
                page = self._feed()
                if page is None:
                    self._feed = None
                else:
                    self.start(page)
                continue
            futures.wait([future, *running], timeout=left, return_when=futures.FIRST_COMPLETED)
        return future.result(timeout=max(0.0, deadline - time.monotonic()))

    def start(self, page: pymupdf.Page) -> None:
        """Begin ``page``'s first reading (once), unless the document's budget is spent (its
        pages counting those already begun)."""
        left = self.budget.max_seconds - self.budget.seconds
        begun = self.budget.pages + len(self._started)
        if page.number in self._started or left <= 0 or begun >= self.budget.max_pages:
            return
        rendered = _render(page, None, self.budget)
        timeout = min(self.budget.page_timeout, left)
        future = self._pool.submit(_tesseract_words, rendered.image, self.language, self.psm,
                                   timeout, self.nice)  # fmt: skip
        self._started[int(page.number)] = (rendered, future)

    def take(
        self, page: pymupdf.Page, language: str, dpi: int | None, layouts: Sequence[tuple[str, str]]
    ) -> tuple[_Rendered, Future[list[_PixelWord]]] | None:
        """The rendering and first reading begun for ``page``, when they are the ones its OCR
        asks for (same language, the scan's own resolution, the default layouts)."""
        started = self._started.pop(int(page.number), None)
        if started is None:
            return None
        if language == self.language and dpi is None and tuple(layouts) == LAYOUTS:
            return started
        self._discard(started)
        return None

    def _discard(self, started: tuple[_Rendered, Future[list[_PixelWord]]]) -> None:
        rendered, future = started
        future.cancel()
        with contextlib.suppress(Exception):
            future.result()  # a reading already running ends by itself, within its timeout
        shutil.rmtree(rendered.folder, ignore_errors=True)

    def close(self) -> None:
        for number in list(self._started):
            self._discard(self._started.pop(number))
        self._pool.shutdown(wait=True)

    def __enter__(self) -> OcrAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _PixelWord(NamedTuple):
    line: tuple[int, int, int]  # Tesseract's (block, paragraph, line)
    left: int
    top: int
    width: int
    height: int
    confidence: float
    text: str


# OCR read ahead of its run (the prefetching thread) runs at a lower CPU priority, so that it
# takes the cores the run leaves idle and gives way to what the run waits for (the encoding).
_AHEAD = threading.local()
AHEAD_NICENESS = 10


@contextlib.contextmanager
def reading_ahead() -> Iterator[None]:
    """Tesseract started by this thread inside the block runs at niceness
    :data:`AHEAD_NICENESS` (``nice``): the parses a thread makes ahead of their runs."""
    _AHEAD.on = True
    try:
        yield
    finally:
        _AHEAD.on = False


def _tesseract_words(
    image: Path, language: str, psm: str, timeout: float = 600.0, nice: bool | None = None
) -> list[_PixelWord]:
    if timeout <= 0:
        raise subprocess.TimeoutExpired("tesseract", 0)
    command = ["tesseract", str(image), "stdout", "-l", language, "--psm", psm, "tsv"]
    nice = getattr(_AHEAD, "on", False) if nice is None else nice
    if nice and shutil.which("nice"):
        command = ["nice", "-n", str(AHEAD_NICENESS), *command]
    proc = subprocess.run(
        command,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        # Tesseract's OpenMP threads make it ~3x slower on a 2-core machine (5.7 s vs
        # 1.9 s a page, same words and confidence): one thread.
        env={**os.environ, "OMP_THREAD_LIMIT": "1"},
    )
    if proc.returncode != 0:
        raise RuntimeError(f"tesseract failed ({proc.returncode}): {proc.stderr.strip()[:300]}")
    words = []
    for record in proc.stdout.splitlines()[1:]:
        parts = record.split("\t")
        if len(parts) < 12 or not parts[11].strip() or float(parts[10]) < 0:
            continue
        left, top, width, height = (int(v) for v in parts[6:10])
        line = (int(parts[2]), int(parts[3]), int(parts[4]))
        words.append(_PixelWord(line, left, top, width, height, float(parts[10]), parts[11]))
    return words


INK_LEVEL = 128  # a pixel darker than this (0-255) is ink


def unread_regions(ink: npt.NDArray[np.bool_], words: Sequence[_PixelWord]) -> int:
    """How many regions of text-like ink no word box covers: ink is smeared along rows into
    word-sized blobs, and a blob counts when it is about a text line high, at least a letter
    wide, dense enough to be print and clear of the page's left and right edges (binding
    shadows, punch holes)."""
    from scipy import ndimage  # only a page being OCR'd needs it (0.3 s of every import)

    height = int(np.median([w.height for w in words])) if words else 24
    left = ink.copy()
    for w in words:
        top, x0 = max(0, w.top - 2), max(0, w.left - 2)
        left[top : w.top + w.height + 2, x0 : w.left + w.width + 2] = False
    smear = np.ones((max(1, height // 4), max(1, height // 2)), dtype=bool)
    labels, _count = ndimage.label(ndimage.binary_dilation(left, structure=smear))
    found = 0
    for rows, cols in ndimage.find_objects(labels):
        tall, wide = rows.stop - rows.start, cols.stop - cols.start
        if not (0.5 * height <= tall <= 3 * height and wide >= height):
            continue
        if cols.start <= 2 or cols.stop >= ink.shape[1] - 2:
            continue
        if left[rows, cols].mean() >= 0.08:
            found += 1
    return found


def _lines(words: list[_PixelWord], scale: float, width: float) -> tuple[list[OcrLine], float]:
    """Words (pixels) as lines in PDF points, split at column gaps and at the margin gutter;
    and the words' mean confidence. A line (or column part of one) of nothing but specks is
    dropped; a speck inside a line of real words stays, as printed."""
    lines: dict[tuple[int, int, int], list[Word]] = {}
    specks: set[Word] = set()
    for w in words:
        box = (w.left * scale, w.top * scale, (w.left + w.width) * scale)
        word = (*box, (w.top + w.height) * scale, w.text)
        lines.setdefault(w.line, []).append(word)
        if is_speck(w.text, w.confidence):
            specks.add(word)
    gutter = _gutter([w for line in lines.values() for w in line if w not in specks], width)
    rows = []
    heads: list[Word] = []  # each row's first word
    for line in lines.values():
        for part in _split_at_gaps(sorted(line), gutter):
            text = canonicalize(" ".join(w[4] for w in part))
            if text and not all(w in specks for w in part):
                heads.append(part[0])
                rows.append(
                    OcrLine(
                        text,
                        min(w[0] for w in part),
                        min(w[1] for w in part),
                        max(w[2] for w in part),
                        max(w[3] for w in part),
                        gutter is not None
                        and max(w[2] for w in part if w not in specks) <= gutter
                        and not is_number(part[0][4])
                        # a lone "." or "/" left of the gutter starts no note
                        and any(ch.isalpha() for w in part for ch in w[4]),
                    )
                )
    mean = statistics.fmean(w.confidence for w in words) if words else 0.0
    return _reading_order(rows, heads), round(mean, 1)


def _reading_order(rows: list[OcrLine], heads: Sequence[Word]) -> list[OcrLine]:
    """Rows top to bottom, and left to right within a printed line. A line is placed by where it
    starts (its first word), not by its box: on a skewed scan a long line's box rises towards
    its far end, so its top sits above the rule number printed level with its start ("13-"
    beside "The real estate agent shall ..."), and sorting by the box put the number after the
    line, giving the rule's first line to the rule before it. Rows whose first words' tops are
    within half a word height of each other are one printed line."""
    if not rows:
        return rows
    height = statistics.median(h[3] - h[1] for h in heads)
    order = sorted(range(len(rows)), key=lambda k: (heads[k][1], rows[k].x0))
    out: list[OcrLine] = []
    group: list[int] = []
    anchor = 0.0  # the top of the group's first real word (a speck's box says little)
    for k in order:
        top, tall = heads[k][1], heads[k][3] - heads[k][1] >= LINE_BAND * height
        if group and top - anchor > LINE_BAND * height:
            out += [rows[g] for g in sorted(group, key=lambda g: rows[g].x0)]
            group = []
        if not group or (tall and not any(heads[g][3] - heads[g][1] >= LINE_BAND * height
                                          for g in group)):  # fmt: skip
            anchor = top
        group.append(k)
    out += [rows[g] for g in sorted(group, key=lambda g: rows[g].x0)]
    return out


LINE_BAND = 0.5  # first words whose tops differ by at most this many word heights share a line


Word = tuple[float, float, float, float, str]


def _split_at_gaps(words: list[Word], gutter: float | None = None) -> list[list[Word]]:
    """Split one OCR line where a gap between words is a column gap (a margin note beside the
    body: "Information and    3-(1) The promoter ..."), where it crosses the page's gutter, or
    before a rule number that stands apart from a margin note ("Form for filing Appeal
    25-(1) Every appeal ...": the number starts the body even where it reaches left of the
    gutter)."""
    if len(words) < 2:
        return [words]
    heights = sorted(w[3] - w[1] for w in words)
    height = heights[len(heights) // 2]
    gap = COLUMN_GAP_HEIGHTS * height
    parts: list[list[Word]] = [[words[0]]]
    for previous, word in zip(words, words[1:], strict=False):
        apart = word[0] - previous[2]
        number_apart = (
            gutter is not None and apart > height and word[0] < gutter + gap and is_number(word[4])
        )
        after_number = len(parts[-1]) == 1 and is_number(parts[-1][0][4])
        crosses = (
            gutter is not None
            and previous[2] <= gutter < (word[0] + word[2]) / 2
            and not after_number
        )
        if apart > gap or crosses or number_apart:
            parts.append([])
        parts[-1].append(word)
    return parts


def _gutter(words: list[Word], width: float) -> float | None:
    """The x of a margin column's gutter, or ``None`` for a page of one column.

    Rule numbers and sub-rule markers ("22-(1)", "(iii)") and specks are left out: they stand
    in a column of their own between the notes and the body, and belong to the body. A strip
    of the left part of the page that (almost) no other word crosses is a candidate; its
    gutter is the middle of its widest run of fewest crossings (a margin column of a few short
    notes is itself crossed by at most two words), moved left of any numbers in it (not of
    specks: scans have them anywhere). The gutter has a column of notes on its left and most
    words on its right. Of the candidates, the one
    crossed least and then the widest: a justified note ("Information        and") has gaps of
    its own inside the column, narrower than the gutter."""
    if len(words) < MIN_WORDS_FOR_COLUMNS or width <= 0:
        return None
    cover = [0] * (int(width) + 2)
    numbers = []
    for x0, _y0, x1, _y1, text in words:
        if _is_mark(text):
            if is_number(text):
                numbers.append(x0)
            continue
        for x in range(max(0, int(x0)), min(len(cover), int(x1) + 1)):
            cover[x] += 1
    best: tuple[int, int, float] | None = None  # (crossings, -run width, gutter x)
    first, last = int(0.05 * width), int(0.45 * width)
    for lo, hi in _runs(cover, first, last, lambda n: n <= GUTTER_CROSSINGS):
        if hi - lo < MIN_GUTTER_POINTS:
            continue
        fewest = min(cover[lo:hi])
        runs = _runs(cover, lo, hi - 1, fewest.__eq__)
        run_lo, run_hi = max(runs, key=lambda run: (run[1] - run[0], run[0]))
        inside = [x0 - 1 for x0 in numbers if run_lo < x0 < run_hi]
        gutter = min([(run_lo + run_hi) / 2, *inside])
        left = [w[4] for w in words if w[2] <= gutter]
        notes = sum(1 for text in left if _NOTE_WORD.match(text))
        is_margin = notes >= MIN_MARGIN_WORDS and len(left) <= MAX_MARGIN_SHARE * len(words)
        candidate = (fewest, run_lo - run_hi, gutter)
        if is_margin and (best is None or candidate < best):
            best = candidate
    return best[2] if best else None


def _is_mark(text: str) -> bool:
    """A rule number, a sub-rule marker or a speck: a short token that is not a word."""
    return len(text) <= MAX_MARK_CHARS and not _NOTE_WORD.match(text)


SPECK_CONFIDENCE = 40.0  # below this, a word of at most SPECK_CHARS is a speck read as text
SPECK_CHARS = 3


def is_speck(text: str, confidence: float) -> bool:
    """Scan noise Tesseract read as a short word ("Te", "ue", "“wy", ":" at 9-35% confidence):
    a line of it joined the margin note below ("Te Withdrawal of sums ...") and moved the note
    off its rule's line. Real short English words are read at 80% and more."""
    short = len(text.strip()) <= SPECK_CHARS and not _NUMBER.match(text)  # "24-" is a rule
    return confidence < SPECK_CONFIDENCE and short


def is_number(text: str) -> bool:
    """A rule number or sub-rule marker standing alone ("22-(1)", "23-", "(a)")."""
    return _is_mark(text) and bool(_NUMBER.match(text))


def _runs(
    cover: Sequence[int], first: int, last: int, keep: Callable[[int], bool]
) -> list[tuple[int, int]]:
    """The maximal runs ``[lo, hi)`` of x in ``first..last`` whose cover ``keep`` accepts."""
    runs: list[tuple[int, int]] = []
    lo: int | None = None
    for x in range(first, last + 2):
        if x <= last and keep(cover[x]):
            lo = x if lo is None else lo
        elif lo is not None:
            runs.append((lo, x))
            lo = None
    return runs

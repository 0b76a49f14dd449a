"""PDF pages to clean, positioned body text.

Pure domain code (no Dagster). For each page to ingest it yields the body text as rows (visual
lines, left to right), the margin notes beside the body (the Gazette prints section titles
there), and what was removed and why: running headers and footers, page numbers, text in another
script than the document's language, and legacy-font text that extracts as gibberish. Pages with
no text layer are OCR'd with Tesseract when it is installed, else flagged ``needs_ocr``.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymupdf

from civicsetu_pipelines.base import DocumentError, canonicalize
from civicsetu_pipelines.ingest.glyphs import bbox_of, drop_doubled_glyphs
from civicsetu_pipelines.ingest.margin_numbers import hanging_numbers, is_number_alone, title_starts
from civicsetu_pipelines.ingest.ocr import (
    MAX_UNREAD,
    OcrAhead,
    OcrBudget,
    OcrPage,
    OcrSkipped,
    is_blank,
    ocr_page,
    tesseract_available,
    tesseract_languages,
)
from civicsetu_pipelines.ingest.ocr_layers import (
    MIN_LAYER_SHARE,
    Reading,
    foreign_ocr_layer,
    numbering_gaps,
    prefer_reread,
    structure_faults,
)

TOP_ZONE = 0.11  # share of page height treated as header zone
BOTTOM_ZONE = 0.09
REPEAT_SHARE = 0.3  # a top/bottom row repeated on this share of pages is a running header/footer

_KNOWN_HEADER = re.compile(
    r"THE\s+GAZETTE\s+OF\s+INDIA|\[PART\s+II|^SEC\.\s*\d|PART\s+II\s*[—-]\s*SEC", re.I
)
_PAGE_NUMBER = re.compile(
    r"^(?:page\s+\d+(?:\s+of\s+\d+)?|[-–—]?\s*\d{1,3}\s*[-–—]?|\(\s*\d{1,3}\s*\))$", re.I
)
_MARGIN_CITATION = re.compile(
    r"^(?:(?:[A-Z][A-Za-z.]*\s+)*(?:No\.\s*)?[\dIVXLC]+\s+of\s+\d{4}\.?\s*)+$"
)
_DEVANAGARI = re.compile(r"[\u0900-\u097F]")
_KANNADA = re.compile(r"[\u0C80-\u0CFF]")
_LATIN = re.compile(r"[A-Za-z]")
_WORD = re.compile(r"\S+")
_LEGACY_SYMBOLS = set("ªñ¼½¹ºµ¾¿¡§¶¢£¤¥¦¨©«¬®¯°±²³·¸»ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖ×ØÙÚÛÜÝÞß")
_SCRIPTS = {"hin": _DEVANAGARI, "kan": _KANNADA}


class PdfError(DocumentError):
    """A PDF that cannot be read. The message names the document."""


@dataclass
class Row:
    """One visual line of body text on a page."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    bold: bool = False


@dataclass
class MarginNote:
    text: str
    y0: float
    y1: float
    side: str  # left | right
    kind: str  # title | citation


@dataclass
class ParsedPage:
    page: int  # 1-based page number in the PDF
    text: str  # canonical body text, rows joined by "\n"
    rows: list[dict[str, Any]]  # {start, end, y0, y1, x0, bold} offsets into text
    margin_notes: list[dict[str, Any]]
    removed: list[dict[str, str]]  # {text, reason}
    method: str  # pymupdf | pdfplumber | ocr | none
    flags: list[str] = field(default_factory=list)
    ocr_confidence: float | None = None
    width: float = 0.0
    height: float = 0.0


# What a file that is not a PDF is, by its first bytes (an image saved as .pdf, an error page)
_NOT_PDF = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"PK\x03\x04", "a ZIP archive (a Word or other office file?)"),
    (b"\xd0\xcf\x11\xe0", "an old Microsoft Office file"),
)


def _not_pdf_kind(head: bytes) -> str:
    for magic, kind in _NOT_PDF:
        if head.startswith(magic):
            return kind
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "a WebP image"
    lower = head.lower()
    if b"<html" in lower or b"<!doctype" in lower:
        return "an HTML page"
    return "" if head.strip() else "an empty file"


def pages_without_text(path: Path) -> int:
    """How many of the PDF's pages have no text layer at all: the pages its parse will OCR, as
    a cheap count (no page read as the parse reads it), to order work by; 0 when it does not
    open (its parse reports why)."""
    try:
        with pymupdf.open(path) as pdf:
            return sum(not page.get_text().strip() for page in pdf)
    except Exception:  # noqa: BLE001 - its parse says what is wrong with it
        return 0


def open_pdf(key: str, path: Path) -> pymupdf.Document:
    """Open and validate a PDF; raise :class:`PdfError` naming ``key`` on any defect, in one
    line naming the file: not a PDF (and what it is), encrypted with a password (one whose user
    password is empty opens), zero pages, damaged beyond a faithful reading."""
    try:
        with path.open("rb") as handle:
            head = handle.read(1024)
    except OSError as exc:
        raise PdfError(key, f"cannot read {path}: {exc}") from exc
    if b"%PDF-" not in head:
        kind = _not_pdf_kind(head)
        raise PdfError(key, f"{path.name} is not a PDF{' (it is ' + kind + ')' if kind else ''}")
    try:
        doc = pymupdf.open(path)
    except Exception as exc:  # pymupdf raises its own FileDataError and friends
        why = " ".join(str(exc).split())[:200]
        raise PdfError(key, f"{path.name} is corrupt or truncated: {why}") from exc
    if doc.needs_pass and not doc.authenticate(""):  # an empty user password opens it
        doc.close()
        raise PdfError(key, f"{path.name} is encrypted (password protected): it opens only "
                       "with its password; save a copy without the password")  # fmt: skip
    if doc.needs_pass or doc.is_encrypted:
        doc.close()
        raise PdfError(key, f"{path.name} is encrypted (password protected); cannot extract text")
    if doc.page_count == 0:
        doc.close()
        raise PdfError(key, f"{path.name} has zero pages (truncated or empty PDF)")
    if doc.is_repaired:
        doc.close()
        raise PdfError(
            key,
            f"{path.name} is damaged (truncated or corrupt): its cross-reference table had to "
            "be rebuilt, so pages may be missing or cut short",
        )
    return doc


def is_garbled_line(text: str) -> bool:
    """Legacy (pre-Unicode) Hindi fonts extract as Latin gibberish such as ``jftLVªh lañ``.

    A word is suspicious when one of its letter runs has a lower-to-upper case change inside it,
    or is two or more lower-case letters with no vowel (``Hkkx``, ``dkj``). Symbols of legacy
    font maps (``ª ñ ¼``) count too. A line is garbled when enough of its words are suspicious.
    """
    words = [w for w in _WORD.findall(text) if _LATIN.search(w) and not _IGNORED_WORD.match(w)]
    if not words:
        return False
    legacy = sum(1 for ch in text if ch in _LEGACY_SYMBOLS)
    suspicious = sum(1 for word in words if _suspicious_word(word))
    if legacy >= 2 and suspicious >= 1:
        return True
    return suspicious >= 2 and suspicious / len(words) >= 0.4


# List markers "(xv)", abbreviations "Ph.", "Bldg.", "Sd/-", URLs and e-mail addresses.
_IGNORED_WORD = re.compile(
    r"^[(\[]?[ivxlcdm]+[)\].]?[,;:]?$|^[A-Za-z]{1,5}\.[,;:]?$|^[A-Za-z]{1,3}/-$|.*(?:://|www\.|@)",
    re.I,
)


_NO_VOWEL_OK = {
    "sq",
    "mr",
    "ms",
    "mrs",
    "dr",
    "st",
    "nd",
    "rd",
    "th",
    "ltd",
    "pvt",
    "rs",
    "hrs",
    "http",
    "https",
    "www",
    "html",
    "pdf",
    "nw",
    "sw",
    "ne",
    "se",
}


def _suspicious_word(word: str) -> bool:
    for piece in re.findall(r"[A-Za-z]+", word):
        if re.search(r"[a-z][A-Z]", piece) and not re.fullmatch(r"(Mc|Mac)[A-Z][a-z]+", piece):
            return True
        if (
            len(piece) >= 2
            and not piece.isupper()
            and not re.search(r"[aeiouyAEIOUY]", piece)
            and piece.lower() not in _NO_VOWEL_OK
        ):
            return True
    return False


def _line_text(line: dict[str, Any]) -> str:
    return "".join(span["text"] for span in line["spans"])


def _is_bold(line: dict[str, Any]) -> bool:
    spans = [s for s in line["spans"] if s["text"].strip()]
    return bool(spans) and all(("bold" in s["font"].lower()) or (s["flags"] & 16) for s in spans)


@dataclass
class _Line:
    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    bold: bool


INVISIBLE = 0xFFFFFF  # white text on the white page: in the text layer, not printed


def _footnote_mark(span: dict[str, Any], nxt: dict[str, Any]) -> bool:
    """A small raised number (or asterisk) right before a number: a footnote reference."""
    return (
        bool(re.fullmatch(r"\s*[\d*]{1,3}\s*", span["text"]))
        and nxt["text"][:1].isdigit()
        and span["size"] <= SUPERSCRIPT_SIZE * nxt["size"]
        and nxt["origin"][1] - span["origin"][1] >= 1.0
    )


SUPERSCRIPT_SIZE = 0.75  # a span this much smaller than the next, and raised, is a superscript


# "rawdict" ("dict" with every character's box) without images: their blocks have no lines,
# and decoding them took most of the time of reading a scanned page's text.
TEXT_FLAGS = pymupdf.TEXTFLAGS_RAWDICT & ~pymupdf.TEXT_PRESERVE_IMAGES


def _page_lines(page: pymupdf.Page) -> tuple[list[_Line], int]:
    """The page's text lines, and how many glyphs drawn twice were dropped from them."""
    out: list[_Line] = []
    lines = []
    for block in page.get_text("rawdict", flags=TEXT_FLAGS)["blocks"]:
        for line in block.get("lines", []):
            spans = [s for s in line["spans"] if s.get("color") != INVISIBLE]
            if len(spans) < len(line["spans"]):
                # Invisible spans (word processors leave white list numbers behind: a white "5"
                # before the printed "5)" reads "55)") are not part of what the page says.
                line = {**line, "spans": spans, "bbox": bbox_of(spans) or line["bbox"]}
            for span in spans:
                span["text"] = "".join(ch["c"] for ch in span["chars"])
            lines.append(line)
    lines, doubled = drop_doubled_glyphs(lines)
    for line in lines:
        spans = line["spans"]
        if len(spans) >= 2 and _footnote_mark(spans[0], spans[1]):
            # "¹151. Care to be taken ..." (India Code): the raised footnote number before a
            # section number is a reference mark, not part of the number.
            line = {**line, "spans": spans[1:], "bbox": bbox_of(spans[1:])}
        text = _line_text(line)
        if not text.strip():
            continue
        x0, y0, x1, y1 = line["bbox"]
        out.append(_Line(text, x0, y0, x1, y1, _is_bold(line)))
    return out, doubled


def _body_column(lines: Sequence[_Line], width: float) -> tuple[float, float] | None:
    wide = [ln for ln in lines if ln.x1 - ln.x0 > 0.4 * width]
    if len(wide) < 3:
        return None
    lefts = sorted(ln.x0 for ln in wide)
    rights = sorted(ln.x1 for ln in wide)
    return lefts[len(lefts) // 10], rights[(len(rights) * 9) // 10]


_LIST_MARKER = re.compile(r"^\(?[ivxlcdm]+[.)]?$|^\(?[a-z]{1,2}[.)]$|^\(?\d{1,3}[.)]?$", re.I)


def _split_margin(lines: list[_Line], width: float) -> tuple[list[_Line], list[_Line]]:
    """Separate lines wholly outside the body column (margin notes) from the body lines."""
    column = _body_column(lines, width)
    if column is None:
        return lines, []
    left, right = column
    body: list[_Line] = []
    margin: list[_Line] = []
    for ln in lines:
        stripped = ln.text.strip()
        wordy = bool(
            _LATIN.search(stripped) or re.fullmatch(r"\d{4}\.?|\d+ of \d{4}\.?", stripped)
        ) and not (_LIST_MARKER.match(stripped) or is_number_alone(stripped))
        narrow = ln.x1 - ln.x0 < 0.2 * width
        if wordy and narrow and (ln.x0 >= right + 4 or ln.x1 <= left - 4):
            margin.append(ln)
        else:
            body.append(ln)
    return body, margin


def _margin_notes(
    margin_lines: list[_Line],
    width: float,
    *,
    relative_gap: bool = False,
    numbers: Sequence[tuple[float, float]] = (),
) -> list[MarginNote]:
    """Group margin lines into notes: consecutive lines on one side of the page (no more than
    4 pt apart; with ``relative_gap``, no more than a line's height), a note ending at its
    title's terminator (".-", ":-", ".—": the next rule's note may follow without a gap) and
    starting level with a hanging number (``numbers``: the bands of the body lines they are
    level with; the next rule's title may follow the last one's without a gap or terminator)."""
    starts = title_starts(margin_lines, numbers)
    sides: dict[str, list[_Line]] = {"left": [], "right": []}
    for ln in margin_lines:
        sides["left" if ln.x1 < width / 2 else "right"].append(ln)
    notes: list[MarginNote] = []
    for side, side_lines in sides.items():
        group: list[_Line] = []
        for ln in sorted(side_lines, key=lambda item: item.y0):
            gap = max(4.0, ln.y1 - ln.y0) if relative_gap else 4.0
            level = any(ln is start for start in starts)
            if group and (ln.y0 - group[-1].y1 > gap or _NOTE_END.search(group[-1].text) or level):
                notes.append(_make_note(group, side))
                group = []
            group.append(ln)
        if group:
            notes.append(_make_note(group, side))
    return notes


_NOTE_END = re.compile(r"[.:]\s*[-—–]+\s*$")
_HYPHEN_PREFIXES = {"non", "co", "sub", "self", "inter", "pre", "re", "ex", "quasi", "cross"}


def _make_note(group: list[_Line], side: str) -> MarginNote:
    text = ""
    for ln in group:
        piece = ln.text.strip()
        if text.endswith("-") and piece[:1].islower():
            # "commence-" + "ment." joins; "non-" + "registration" keeps its hyphen.
            prefix = re.search(r"(\w+)-$", text)
            keep = prefix is not None and prefix.group(1).lower() in _HYPHEN_PREFIXES
            text = text + piece if keep else text[:-1] + piece
        else:
            text = f"{text} {piece}".strip()
    text = canonicalize(text)
    kind = "citation" if _MARGIN_CITATION.match(text) else "title"
    return MarginNote(text, group[0].y0, group[-1].y1, side, kind)


def _rows(lines: list[_Line]) -> list[Row]:
    """Group lines sharing a baseline band into rows, left to right."""
    rows: list[list[_Line]] = []
    for ln in sorted(lines, key=lambda item: ((item.y0 + item.y1) / 2, item.x0)):
        mid = (ln.y0 + ln.y1) / 2
        if rows:
            current = rows[-1]
            cy0 = min(item.y0 for item in current)
            cy1 = max(item.y1 for item in current)
            height = max(ln.y1 - ln.y0, 1.0)
            overlap = min(cy1, ln.y1) - max(cy0, ln.y0)
            if cy0 <= mid <= cy1 and overlap >= 0.5 * min(height, cy1 - cy0):
                current.append(ln)
                continue
        rows.append([ln])
    out = []
    for group in rows:
        group.sort(key=lambda item: item.x0)
        text = canonicalize(" ".join(item.text.strip() for item in group))
        if not text:
            continue
        out.append(
            Row(
                text=text,
                x0=group[0].x0,
                y0=min(item.y0 for item in group),
                x1=max(item.x1 for item in group),
                y1=max(item.y1 for item in group),
                bold=all(item.bold for item in group),
            )
        )
    return out


def _header_key(text: str) -> str:
    return re.sub(r"\d+", "#", re.sub(r"\s+", " ", text.lower())).strip()


@dataclass
class _RawPage:
    index: int
    width: float
    height: float
    body_lines: list[_Line]
    margin_lines: list[_Line]
    method: str
    flags: list[str]
    confidence: float | None = None
    fixed_rows: list[Row] | None = None  # rows from OCR or pdfplumber, used as they are
    # a text layer that reads as no English and that OCR could not read either: its rows are
    # removed (recorded with this reason), never served
    unreadable: str | None = None
    replaced: str | None = None  # why OCR replaced the text layer (its rows: replaced_rows)
    replaced_rows: list[Row] = field(default_factory=list)
    # someone else's OCR layer checked against this project's reading and kept: the reading
    # not served, and why (both figures)
    not_kept: list[Row] = field(default_factory=list)
    not_kept_reason: str = ""

    def read_by_ocr(self, read: OcrPage) -> None:
        """Take the page's rows, margin lines and confidence from an OCR reading of it."""
        self.confidence = read.confidence
        self.fixed_rows = [Row(ln.text, ln.x0, ln.y0, ln.x1, ln.y1) for ln in read.lines
                           if not ln.margin]  # fmt: skip
        self.margin_lines = [_Line(ln.text, ln.x0, ln.y0, ln.x1, ln.y1, False)
                             for ln in read.lines if ln.margin]  # fmt: skip
        self.method = "ocr"
        self.flags.append("ocr")
        if read.unread > MAX_UNREAD:
            self.flags.append("ocr_unread")
        if read.downscaled:  # the pixel budget: read at a lower resolution than it wanted
            self.flags.append("ocr_downscaled")

    def layer_rows(self) -> list[Row]:
        """Every row the page's text layer gives, its margin column's included: what a judge of
        the layer reads, and what a reading that replaces it puts on record."""
        return self.rows(True) + _rows(self.margin_lines)

    def rows(self, use_margins: bool) -> list[Row]:
        if self.fixed_rows is not None:
            if use_margins or not self.margin_lines:
                return self.fixed_rows
            # an OCR'd margin column that is not the document's layout stays body text
            return sorted([*self.fixed_rows, *_rows(self.margin_lines)],
                          key=lambda r: (r.y0, r.x0))  # fmt: skip
        return _rows(self.body_lines if use_margins else self.body_lines + self.margin_lines)

    def notes(self, use_margins: bool) -> list[MarginNote]:
        if not use_margins or (self.fixed_rows is not None and self.method != "ocr"):
            return []
        column = _body_column(self.body_lines, self.width)
        numbers = hanging_numbers(self.body_lines, column, self.width) if column else []
        # OCR'd lines keep the scan's line spacing: a note's lines are a line height apart
        return _margin_notes(self.margin_lines, self.width, relative_gap=self.method == "ocr",
                             numbers=numbers)  # fmt: skip


def _pdfplumber_rows(path: Path, index: int) -> list[Row]:
    import pdfplumber

    with pdfplumber.open(path) as pdf:
        page = pdf.pages[index]
        words = page.extract_words(keep_blank_chars=False, use_text_flow=False)
    lines = [_Line(w["text"], w["x0"], w["top"], w["x1"], w["bottom"], False) for w in words]
    return _rows(lines)


def _garbled_share(rows: Sequence[Row]) -> float:
    total = sum(len(r.text) for r in rows)
    bad = sum(len(r.text) for r in rows if is_garbled_line(r.text))
    return bad / total if total else 0.0


def parse_pdf(
    key: str,
    path: Path,
    pages: Sequence[int] | None = None,
    language: str = "eng",
    ocr: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> list[ParsedPage]:
    """Parse the given 0-based ``pages`` of the PDF at ``path`` into clean body pages. OCR
    spends at most the document's :class:`~civicsetu_pipelines.ingest.ocr.OcrBudget`.
    ``progress`` hears (pages read, pages) after each page (a scan's OCR takes minutes)."""
    doc = open_pdf(key, path)
    budget = OcrBudget.from_settings()
    ahead: OcrAhead | None = None
    try:
        indexes = list(range(doc.page_count)) if pages is None else list(pages)
        bad = [i for i in indexes if i < 0 or i >= doc.page_count]
        if bad:
            raise PdfError(key, f"pages {bad} out of range: the PDF has {doc.page_count} pages")
        raw: list[_RawPage] = []
        scanned: dict[int, bool] = {}
        at = [0, 0]  # the page being read, and the next the feed looks at (positions)

        def needs_ocr(index: int) -> bool:
            if index not in scanned:
                scanned[index] = _needs_ocr(doc[index])
            return scanned[index]

        def feed() -> pymupdf.Page | None:
            """The next page after those begun that needs OCR (None: none left)."""
            at[1] = max(at[1], at[0] + (ahead.pages if ahead else 1))
            while at[1] < len(indexes):
                index = indexes[at[1]]
                at[1] += 1
                if needs_ocr(index):
                    return doc[index]
            return None

        ahead = OcrAhead(language, budget, feed) if ocr and tesseract_available() else None
        for position, index in enumerate(indexes):
            at[0] = position
            try:
                if ahead is not None:  # this page's and the next's first reading, at once
                    for upcoming in indexes[position : position + ahead.pages]:
                        if needs_ocr(upcoming):
                            ahead.start(doc[upcoming])
                raw.append(_extract_page(key, doc, path, index, language, ocr, budget, ahead))
                if progress is not None:
                    progress(position + 1, len(indexes))
            except PdfError:
                raise
            except Exception as exc:  # one line, whatever the library said
                why = " ".join(str(exc).split())[:300] or type(exc).__name__
                raise PdfError(key, f"page {index + 1} cannot be read: {why}") from exc
        if ocr:
            reread_numbering_gaps(raw, doc, language, budget)
    finally:
        if ahead is not None:
            ahead.close()
        doc.close()
    return _clean_pages(raw, language)


def _needs_ocr(page: pymupdf.Page) -> bool:
    """Whether ``page`` will be OCR'd: no text layer, yet ink on the paper."""
    return not page.get_text("text").strip() and not is_blank(page)


def _extract_page(
    key: str,
    doc: pymupdf.Document,
    path: Path,
    index: int,
    language: str,
    ocr: bool,
    budget: OcrBudget | None = None,
    ahead: OcrAhead | None = None,
) -> _RawPage:
    page = doc[index]
    width, height = page.rect.width, page.rect.height
    lines, doubled = _page_lines(page)
    body, margin = _split_margin(lines, width)
    result = _RawPage(index, width, height, body, margin, "pymupdf", [])
    if doubled:  # glyphs drawn twice, dropped (drop_doubled_glyphs): how many
        result.flags.append(f"doubled_glyphs:{doubled}")
    rows = _rows(lines)
    if rows and language == "eng" and _garbled_share(rows) > 0.5:
        alt = _pdfplumber_rows(path, index)
        if alt and _garbled_share(alt) < 0.2:
            result.fixed_rows, result.method = alt, "pdfplumber"
            result.flags.append("fallback")
    if rows and language == "eng" and ocr:
        try:
            _judge_text_layer(result, page, language, budget)
        except OcrSkipped as skipped:  # the layer is kept as it is, unjudged: said so
            result.flags += ["ocr_skipped_budget", skipped.flag]
    if rows and foreign_ocr_layer(page):
        result.flags.append("ocr_layer")
        if language == "eng" and ocr and result.method != "ocr":
            layer = "\n".join(r.text for r in result.layer_rows())
            share, faults = known_word_share(layer), structure_faults(layer)
            if faults:
                reread(result, page, language, budget, f"its numbering breaks: {faults[0]}")
            elif share is not None and share < MIN_LAYER_SHARE:
                reread(result, page, language, budget, f"{share:.0%} of its words are English")
    if not rows:
        if is_blank(page):  # no ink at all: nothing to read, by any means
            result.fixed_rows, result.method = [], "none"
            result.flags.append("empty")
            return result
        alt = _pdfplumber_rows(path, index)
        if alt:
            result.fixed_rows, result.method = alt, "pdfplumber"
            result.flags.append("fallback")
        elif ocr and tesseract_available():
            try:
                result.read_by_ocr(ocr_page(page, language, budget=budget, ahead=ahead))
            except OcrSkipped as skipped:  # never silently empty: it still needs OCR
                result.fixed_rows, result.method = [], "none"
                result.flags += ["needs_ocr", "ocr_skipped_budget", skipped.flag]
        else:
            result.fixed_rows, result.method = [], "none"
            has_images = bool(page.get_images(full=False))
            result.flags.append("needs_ocr" if has_images or not ocr else "empty")
    return result


# A text layer is judged before it is trusted: the share of its words (two letters or more)
# that English text uses at all commonly (a wordfreq Zipf frequency of at least KNOWN_ZIPF).
# Over the corpus's English text-layer pages the lowest share is 0.67 (a judgment's page of party
# names); the Bihar gazette's legacy-font Hindi pages read 0.25-0.45 (BENCHMARKS.md, "Text layers
# judged"). Pages of fewer than MIN_JUDGED_WORDS such words are not judged.
KNOWN_ZIPF = 2.5
MIN_KNOWN_SHARE = 0.55
MIN_JUDGED_WORDS = 3
# A page re-read from its image replaces its text layer when Tesseract reads it with at least
# this mean confidence (the Bihar gazette's Hindi pages: 92 with Hindi data, 38 without).
MIN_REREAD_CONFIDENCE = 70.0
_JUDGED_WORD = re.compile(r"[A-Za-z]{2,}")


@functools.lru_cache(maxsize=32)  # a layer judged, then re-read, is asked about twice
def known_word_share(text: str) -> float | None:
    """The share of ``text``'s words that English commonly uses; None for too few words."""
    from wordfreq import zipf_frequency

    words = _JUDGED_WORD.findall(text)
    if len(words) < MIN_JUDGED_WORDS:
        return None
    return sum(zipf_frequency(w.lower(), "en") >= KNOWN_ZIPF for w in words) / len(words)


def _judge_text_layer(
    result: _RawPage, page: pymupdf.Page, language: str, budget: OcrBudget | None = None
) -> None:
    """An English page whose text layer reads as no English (someone's bad OCR, a legacy font)
    is read again from its image, with Hindi beside English (a bilingual gazette's other
    language: its rows then go as ``other_language``, as a Unicode layer's would): kept when
    Tesseract reads it with confidence (flag ``text_layer_replaced``, the layer's text recorded
    in ``removed``), else its rows are removed and the page is flagged
    ``text_layer_unreadable``. Never silent. OCR spends ``budget`` (:class:`OcrSkipped`
    when it is spent: nothing is changed)."""
    layer = result.layer_rows()
    # A page mostly in another script (a bilingual gazette's Hindi page) is not judged: its
    # rows go as `other_language`. Otherwise every Latin row counts, garbled ones included.
    latin: list[Row] = []
    other_words = latin_words = 0
    for row in layer:
        if _DEVANAGARI.search(row.text) or _KANNADA.search(row.text):
            other_words += len(row.text.split())
        else:
            latin.append(row)
            latin_words += len(row.text.split())
    if other_words > latin_words:
        return
    share = known_word_share(" ".join(row.text for row in latin))
    if share is None or share >= MIN_KNOWN_SHARE or not tesseract_available():
        return
    why = f"{share:.0%} of its words are English words"
    read = ocr_page(page, "eng+hin" if "hin" in tesseract_languages() else language,
                    budget=budget)  # fmt: skip
    if read.lines and (read.confidence or 0.0) >= MIN_REREAD_CONFIDENCE:
        result.replaced = (f"text layer replaced by OCR ({why}; OCR confidence "
                           f"{read.confidence:.0f})")  # fmt: skip
        result.replaced_rows = layer
        result.read_by_ocr(read)
        result.flags.insert(result.flags.index("ocr") + 1, "text_layer_replaced")
    else:
        result.unreadable = (f"unreadable text layer ({why}; OCR confidence "
                             f"{read.confidence or 0:.0f})")  # fmt: skip
        result.flags.append("text_layer_unreadable")
        result.body_lines += result.margin_lines  # no margin note of it becomes a title
        result.margin_lines = []


def reread(
    result: _RawPage,
    page: pymupdf.Page,
    language: str,
    budget: OcrBudget | None,
    why: str,
    gap: bool = False,
) -> None:
    """Someone else's OCR layer that fails what the page should be (``why``) read again from its
    image: this project's reading serves when
    :func:`~civicsetu_pipelines.ingest.ocr_layers.prefer_reread` prefers it (``gap``: a page
    where the document's unit numbers skip one; flag ``text_layer_reread``), else the layer
    stays (flag ``text_layer_kept``); both readings' figures and the choice are on record in
    ``removed`` with the text not served. OCR spends ``budget``: when it is spent the layer
    stays, said so."""
    if not tesseract_available():
        return
    layer = result.layer_rows()
    try:
        read = ocr_page(page, language, budget=budget)
    except OcrSkipped as skipped:
        result.flags += ["ocr_skipped_budget", skipped.flag]
        return
    layer_text = "\n".join(r.text for r in layer)
    read_text = "\n".join(line.text for line in read.lines)
    old = Reading.of(layer_text, known_word_share(layer_text))
    new = Reading.of(read_text, known_word_share(read_text))
    if read.lines and prefer_reread(old, new, gap):
        result.replaced = (f"someone else's OCR layer re-read ({why}): the layer had {old}, "
                           f"this project's OCR {new}")  # fmt: skip
        result.replaced_rows = layer
        result.read_by_ocr(read)
        result.flags.append("text_layer_reread")
    else:
        result.flags.append("text_layer_kept")
        result.not_kept = [Row(line.text, line.x0, line.y0, line.x1, line.y1)
                           for line in read.lines]  # fmt: skip
        result.not_kept_reason = (f"OCR of someone else's OCR layer, not kept ({why}): the layer "
                                  f"had {old}, this project's OCR {new}")  # fmt: skip


def reread_numbering_gaps(
    raw: Sequence[_RawPage], doc: pymupdf.Document, language: str, budget: OcrBudget | None
) -> None:
    """Pages of someone else's OCR on which the document's run of unit numbers skips one or
    opens late (hanging numbers the layer dropped: :func:`numbering_gaps`), not yet re-read,
    read again (:func:`reread`)."""
    layered = {rp.index: rp for rp in raw
               if "ocr_layer" in rp.flags and rp.method != "ocr" and "text_layer_kept" not in
               rp.flags}  # fmt: skip
    if not layered or language != "eng":
        return
    texts = [(rp.index, "\n".join(r.text for r in rp.rows(True))) for rp in raw]
    for index in sorted(numbering_gaps(texts) & layered.keys()):
        reread(layered[index], doc[index], language, budget, "the document's unit numbers skip "
               "one here, or start after 1", gap=True)  # fmt: skip


MARGIN_LAYOUT_SHARE = 0.25


def _clean_pages(raw: list[_RawPage], language: str) -> list[ParsedPage]:
    # Margin notes are a layout of the whole document (the Gazette print of an Act): honour
    # them only when they appear on a good share of the pages, else keep such lines as body.
    with_notes = sum(1 for rp in raw if rp.margin_lines)
    use_margins = with_notes >= max(2, MARGIN_LAYOUT_SHARE * len(raw))
    page_rows = {rp.index: rp.rows(use_margins) for rp in raw}
    # Running headers and footers: rows in the top/bottom zones whose shape repeats.
    counts: Counter[str] = Counter()
    for rp in raw:
        seen = set()
        for row in page_rows[rp.index]:
            if _in_edge_zone(row, rp.height):
                seen.add(_header_key(row.text))
        counts.update(seen)
    min_repeats = max(3, int(REPEAT_SHARE * len(raw)))
    repeated = {k for k, n in counts.items() if n >= min_repeats}
    script = _SCRIPTS.get(language)
    pages = []
    for rp in raw:
        kept: list[Row] = []
        removed: list[dict[str, str]] = []
        garbled = 0
        for row in rp.replaced_rows:  # nothing lost: the layer OCR replaced is on record
            removed.append({"text": row.text, "reason": str(rp.replaced)})
        for row in rp.not_kept:  # nor the reading of it that was not kept
            removed.append({"text": row.text, "reason": rp.not_kept_reason})
        for row in page_rows[rp.index]:
            reason = rp.unreadable or _removal_reason(row, rp.height, repeated, language, script)
            if reason is None:
                kept.append(row)
            else:
                removed.append({"text": row.text, "reason": reason})
                garbled += reason == "garbled"
        flags = list(rp.flags)
        if garbled:
            flags.append("garbled")
        text_parts: list[str] = []
        row_meta: list[dict[str, Any]] = []
        offset = 0
        for row in kept:
            text_parts.append(row.text)
            row_meta.append(
                {
                    "start": offset,
                    "end": offset + len(row.text),
                    "y0": round(row.y0, 1),
                    "y1": round(row.y1, 1),
                    "x0": round(row.x0, 1),
                    "bold": row.bold,
                }
            )
            offset += len(row.text) + 1
        notes = [
            {
                "text": n.text,
                "y0": round(n.y0, 1),
                "y1": round(n.y1, 1),
                "side": n.side,
                "kind": n.kind,
            }
            for n in rp.notes(use_margins)
        ]
        pages.append(
            ParsedPage(
                page=rp.index + 1,
                text="\n".join(text_parts),
                rows=row_meta,
                margin_notes=notes,
                removed=removed,
                method=rp.method,
                flags=flags,
                ocr_confidence=rp.confidence,
                width=rp.width,
                height=rp.height,
            )
        )
    return pages


def _in_edge_zone(row: Row, height: float) -> bool:
    return row.y1 <= height * TOP_ZONE or row.y0 >= height * (1 - BOTTOM_ZONE)


def _removal_reason(
    row: Row,
    height: float,
    repeated: set[str],
    language: str,
    script: re.Pattern[str] | None,
) -> str | None:
    if _in_edge_zone(row, height):
        if _header_key(row.text) in repeated:
            return "running_header" if row.y1 <= height * TOP_ZONE else "running_footer"
        if _PAGE_NUMBER.match(row.text):
            return "page_number"
        if _KNOWN_HEADER.search(row.text):
            return "running_header"
    if language == "eng":
        if _DEVANAGARI.search(row.text) or _KANNADA.search(row.text):
            return "other_language"
        if is_garbled_line(row.text):
            return "garbled"
    elif script is not None and not script.search(row.text) and is_garbled_line(row.text):
        return "garbled"
    return None

"""Generate small PDFs with PyMuPDF for the parsing and chunking tests.

The base-14 ``insert_text`` fonts are Latin-1 only (an em dash comes out as ``·``), so text is
written with :class:`pymupdf.TextWriter` and the *embedded* Nimbus Sans that PyMuPDF ships for
``helv``/``hebo``: it has the em dash, typographic quotes and the rest of Latin, and its names
(``NimbusSans-Regular`` / ``NimbusSans-Bold``) are what ``pdf_pages`` sees for regular and bold.
Runs of Devanagari or Kannada are written with MuPDF's built-in Noto fonts for those scripts.

A page is a list of items:

* ``(text, x, y, fontsize, bold)`` -- one line at ``x``; ``y`` is the TOP of the line (about the
  ``y0`` that PyMuPDF reports for it);
* ``Para(text, ...)`` or a plain ``str`` -- a paragraph, wrapped to the body width and flowed
  below the previous item.

:func:`gazette_pages` lays out an Act the way the Gazette of India prints it: a body column with
the section titles as narrow margin notes on the right, level with the first line of their
section.
"""

from __future__ import annotations

import html
import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pymupdf
from pymupdf import mupdf

PAGE_WIDTH = 595.0  # A4
PAGE_HEIGHT = 842.0
LEFT = 72.0
TOP = 100.0  # below the header zone (11% of the page height = 92.6)
BOTTOM = 740.0  # above the footer zone (91% = 766)
BODY_WIDTH = 400.0
LEADING = 1.4  # line step as a multiple of the font size

Line = tuple[str, float, float, float, bool]  # (text, x, y_top, fontsize, bold)

_REGULAR = pymupdf.Font("helv")
_BOLD = pymupdf.Font("hebo")
_DEVANAGARI = pymupdf.Font(script=mupdf.UCDN_SCRIPT_DEVANAGARI)
_KANNADA = pymupdf.Font(script=mupdf.UCDN_SCRIPT_KANNADA)


@dataclass(frozen=True)
class Para:
    """A paragraph flowed below the previous item of the page."""

    text: str
    bold: bool = False
    size: float = 10.0
    indent: float = 0.0  # extra left indent (points)
    space_before: float = 0.0


PageItem = Line | Para | str


def _font_for(ch: str, bold: bool) -> pymupdf.Font:
    code = ord(ch)
    if 0x0900 <= code <= 0x097F:
        return _DEVANAGARI
    if 0x0C80 <= code <= 0x0CFF:
        return _KANNADA
    return _BOLD if bold else _REGULAR


def _runs(text: str, bold: bool) -> list[tuple[str, pymupdf.Font]]:
    runs: list[tuple[str, pymupdf.Font]] = []
    for ch in text:
        font = _font_for(ch, bold)
        if runs and (runs[-1][1] is font or ch == " "):
            runs[-1] = (runs[-1][0] + ch, runs[-1][1])
        else:
            runs.append((ch, font))
    return runs


@cache
def _advance(font: pymupdf.Font, ch: str) -> float:
    """One character's advance at size 1: ``Font.text_length`` is a Python loop over the
    characters (a 37-rule page set's word wrap spent 5 s in it); summed, the same widths."""
    return float(font.text_length(ch, fontsize=1.0))


def text_width(text: str, size: float = 10.0, bold: bool = False) -> float:
    return sum(_advance(font, ch) for run, font in _runs(text, bold) for ch in run) * size


def wrap(text: str, width: float, size: float = 10.0, bold: bool = False) -> list[str]:
    """Greedy word wrap of ``text`` to ``width`` points (explicit newlines are kept)."""
    lines: list[str] = []
    for source in text.split("\n"):
        current = ""
        for word in source.split():
            candidate = f"{current} {word}".strip()
            if current and text_width(candidate, size, bold) > width:
                lines.append(current)
                current = word
            else:
                current = candidate
        if current:
            lines.append(current)
    return lines


def _layout(items: Sequence[PageItem], body_width: float) -> list[Line]:
    out: list[Line] = []
    y = TOP
    for item in items:
        if isinstance(item, tuple):
            text, x, top, size, bold = item
            out.append((text, float(x), float(top), float(size), bool(bold)))
            y = max(y, top + size * LEADING)
            continue
        para = Para(item) if isinstance(item, str) else item
        y += para.space_before
        for piece in wrap(para.text, body_width - para.indent, para.size, para.bold):
            out.append((piece, LEFT + para.indent, y, para.size, para.bold))
            y += para.size * LEADING
    return out


def write_pdf(
    path: Path | str,
    pages: Sequence[Sequence[PageItem]],
    *,
    width: float = PAGE_WIDTH,
    height: float = PAGE_HEIGHT,
    body_width: float = BODY_WIDTH,
    images: Sequence[int] = (),
) -> Path:
    """Write ``pages`` to a PDF at ``path``; ``images`` are 0-based pages that get a picture."""
    path = Path(path)
    doc = pymupdf.open()
    try:
        for index, items in enumerate(pages):
            page = doc.new_page(width=width, height=height)
            writer = pymupdf.TextWriter(page.rect)
            for text, x, top, size, bold in _layout(items, body_width):
                point = pymupdf.Point(x, top + size * _REGULAR.ascender)
                for run, font in _runs(text, bold):
                    _rect, point = writer.append(point, run, font=font, fontsize=size)
            writer.write_text(page)
            if index in images:
                page.insert_image(pymupdf.Rect(72, 72, 272, 172), pixmap=_pixmap())
        doc.save(path, garbage=3, deflate=True)
    finally:
        doc.close()
    return path


def _pixmap() -> pymupdf.Pixmap:
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 40, 20), False)
    pix.set_rect(pix.irect, (200, 30, 30))
    return pix


def write_html_pdf(path: Path | str, pages: Sequence[str]) -> Path:
    """One ``insert_htmlbox`` per page (HTML body text); handy for quick free-form pages."""
    path = Path(path)
    doc = pymupdf.open()
    try:
        for body in pages:
            page = doc.new_page(width=PAGE_WIDTH, height=PAGE_HEIGHT)
            page.insert_htmlbox(
                pymupdf.Rect(LEFT, TOP, LEFT + BODY_WIDTH, BOTTOM),
                body,
                css="* {font-family: sans-serif; font-size: 10px;}",
            )
        doc.save(path)
    finally:
        doc.close()
    return path


def escape(text: str) -> str:
    return html.escape(text, quote=False)


# ------------------------------------------------------------------------------ gazette layout


@dataclass(frozen=True)
class Section:
    """A section of an Act: ``N.`` + body; its title is printed as a margin note."""

    number: str
    title: str
    paragraphs: Sequence[str] = field(default_factory=tuple)


@dataclass(frozen=True)
class Heading:
    """A centred heading row such as ``CHAPTER II`` or ``REGISTRATION OF REAL ESTATE PROJECT``."""

    text: str
    bold: bool = True


GazetteItem = Section | Heading | Para | str

MARGIN_X = LEFT + BODY_WIDTH + 14  # margin notes start right of the body column
MARGIN_WIDTH = 90.0  # narrower than 20% of the page width
MARGIN_SIZE = 7.5
MARGIN_STEP = 8.5  # tight leading so the lines of one note group together


def gazette_pages(
    items: Iterable[GazetteItem],
    *,
    size: float = 10.0,
    header: str | None = "THE GAZETTE OF INDIA EXTRAORDINARY [PART II—",
    page_numbers: bool = True,
) -> list[list[Line]]:
    """Lay out an Act as Gazette pages: body column plus right-margin section titles.

    Sections start with ``N.`` on the first body line; the title's margin note starts at the same
    ``y``. Every page gets the running header (top zone) and a page number (bottom zone).
    """
    step = size * LEADING
    pages: list[list[Line]] = []
    current: list[Line] = []
    y = TOP

    def new_page() -> None:
        nonlocal current, y
        if current:
            pages.append(current)
        current = []
        y = TOP

    def room(lines: float) -> None:
        if y + lines * step > BOTTOM:
            new_page()

    for item in items:
        if isinstance(item, Heading):
            room(2)
            width = text_width(item.text, size, item.bold)
            x = LEFT + max(0.0, (BODY_WIDTH - width) / 2)
            current.append((item.text, x, y, size, item.bold))
            y += step
            continue
        if isinstance(item, Section):
            note = wrap(item.title, MARGIN_WIDTH, MARGIN_SIZE)
            first, *rest = list(item.paragraphs) or [""]
            body = wrap(f"{item.number}. {first}".strip(), BODY_WIDTH, size)
            room(max(len(note) * MARGIN_STEP / step, min(len(body), 3)))
            for k, piece in enumerate(note):
                current.append((piece, MARGIN_X, y + k * MARGIN_STEP, MARGIN_SIZE, False))
            for piece in body:
                room(1)
                current.append((piece, LEFT, y, size, False))
                y += step
            for para in rest:
                for piece in wrap(para, BODY_WIDTH - 10, size):
                    room(1)
                    current.append((piece, LEFT + 10, y, size, False))
                    y += step
            continue
        block = Para(item) if isinstance(item, str) else item
        for piece in wrap(block.text, BODY_WIDTH - block.indent, block.size, block.bold):
            room(1)
            current.append((piece, LEFT + block.indent, y, block.size, block.bold))
            y += step
    new_page()
    for number, page in enumerate(pages, start=1):
        if header:
            page.append((header, LEFT, 50.0, 8.0, False))
        if page_numbers:
            page.append((str(number), PAGE_WIDTH / 2, 790.0, 8.0, False))
    return pages


def write_gazette_pdf(path: Path | str, items: Iterable[GazetteItem], **kwargs: object) -> Path:
    return write_pdf(path, gazette_pages(items, **kwargs))  # type: ignore[arg-type]


def pdf_bytes(pages: Sequence[Sequence[PageItem]], **kwargs: object) -> bytes:
    """The bytes :func:`write_pdf` would write for ``pages``."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return write_pdf(Path(tmp) / "doc.pdf", pages, **kwargs).read_bytes()  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------ bad inputs

HTML_ERROR_PAGE = (
    b"<!DOCTYPE html>\n<html><head><title>404 - File or directory not found.</title></head>"
    b"<body><h2>The resource you are looking for might have been removed, had its name "
    b"changed, or is temporarily unavailable.</h2></body></html>\n"
)


def truncated_pdf(path: Path | str, data: bytes, keep: float = 0.5) -> Path:
    """The first ``keep`` share of a PDF's bytes (a download cut off half-way)."""
    return write_bytes(path, data[: int(len(data) * keep)])


def encrypted_pdf(path: Path | str, pages: Sequence[Sequence[PageItem]]) -> Path:
    """``pages`` saved with AES-256 encryption and a user password (cannot be opened without)."""
    path = Path(path)
    plain = pdf_bytes(pages)
    doc = pymupdf.open(stream=plain, filetype="pdf")
    try:
        doc.save(
            path,
            encryption=pymupdf.mupdf.PDF_ENCRYPT_AES_256,
            user_pw="user-secret",
            owner_pw="owner-secret",
        )
    finally:
        doc.close()
    return path


def zero_page_pdf_bytes() -> bytes:
    """A well-formed PDF whose page tree is empty (PyMuPDF refuses to save zero pages)."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def scanned_pdf(
    path: Path | str, pages: Sequence[Sequence[PageItem]], dpi: int = 150, skew: float = 0.0
) -> Path:
    """``pages`` rendered to greyscale images: a PDF with no text layer at all. ``skew`` turns
    each image by that many degrees (counter-clockwise), as a page fed askew into a scanner."""
    path = Path(path)
    source = pymupdf.open(stream=pdf_bytes(pages), filetype="pdf")
    out = pymupdf.open()
    try:
        for index in range(source.page_count):
            page = source[index]
            pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
            scan = out.new_page(width=page.rect.width, height=page.rect.height)
            if skew:
                from PIL import Image

                image = Image.frombytes("L", (pix.width, pix.height), pix.samples)
                turned = image.rotate(skew, resample=Image.Resampling.BICUBIC, fillcolor=255)
                buffer = io.BytesIO()
                turned.save(buffer, format="PNG", dpi=(dpi, dpi))
                scan.insert_image(scan.rect, stream=buffer.getvalue())
            else:
                scan.insert_image(scan.rect, pixmap=pix)
        out.save(path, deflate=True)
    finally:
        out.close()
        source.close()
    return path


def write_bytes(path: Path | str, data: bytes) -> Path:
    path = Path(path)
    path.write_bytes(data)
    return path


def ocr_layered_pdf(
    path: Path | str,
    pages: Sequence[Sequence[PageItem]],
    layer: Callable[[str], str | None],
    dpi: int = 200,
) -> Path:
    """``pages`` scanned (as :func:`scanned_pdf`) under someone else's OCR: each printed line
    written invisibly (text render mode 3) where it is printed, as ``layer`` read it (its
    numbers dropped or misread; None: the line is missing from the layer)."""
    path = Path(path)
    source = pymupdf.open(stream=pdf_bytes(pages), filetype="pdf")
    out = pymupdf.open()
    try:
        for page in source:
            scan = out.new_page(width=page.rect.width, height=page.rect.height)
            scan.insert_image(scan.rect, pixmap=page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY))
            for block in page.get_text("dict")["blocks"]:
                for line in block.get("lines", []):
                    read = layer("".join(span["text"] for span in line["spans"]))
                    if read:
                        first = line["spans"][0]
                        scan.insert_text(first["origin"], read, fontsize=first["size"],
                                         render_mode=3)  # fmt: skip
        out.save(path, deflate=True)
    finally:
        out.close()
        source.close()
    return path

"""Glyphs drawn twice are read once (``glyphs.drop_doubled_glyphs``, on every parsed page).

Some state government orders draw each line of text in two clipped strips, the glyph at the seam
in both: the text layer reads "fiv ve", "rule e 18", "GOVER RNMENT". "Print to PDF" of
overlapping boxes draws every glyph twice at the same place. The pages here are written by hand
(a content stream with clip rectangles: PyMuPDF's text writers cannot clip), in the standard
Helvetica that MuPDF draws with the metrics of PyMuPDF's ``helv``.

The strips are drawn the way that defeats MuPDF's own check (a glyph drawn again right after
itself): the left strips of all the lines first, then the right ones, so the two copies of a
seam glyph are a page of text apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pymupdf
import pytest

from civicsetu_pipelines.base import canonicalize
from civicsetu_pipelines.ingest.inspection import inspect_pdf
from civicsetu_pipelines.ingest.pages import ParsedPage, parse_pdf
from civicsetu_pipelines_tests.pdfgen import Para, write_pdf

FONT = pymupdf.Font("helv")  # the metrics of the standard Helvetica MuPDF draws /F1 with
SIZE = 10.0
LEFT = 72.0
TOP = 120.0  # below the header zone
STEP = 16.0

SUBSTITUTION = (
    "In sub-rule (2) of rule 18, for the word \u201cthree\u201d the word \u201cfive\u201d shall "
    "be substituted."
)
# (line, the seam glyph's place in it): the glyph both strips draw
EXTEND = "the Authority may extend the time under rule 18 by a further period"
GOVERNMENT = "GOVERNMENT OF UTTAR PRADESH, HOUSING AND URBAN PLANNING DEPARTMENT"
APPEAL = "The Appellate Tribunal shall dispose of the appeal within sixty days."
SEAMED = [
    (SUBSTITUTION, SUBSTITUTION.index("five") + 2),  # "fiv ve"
    (EXTEND, EXTEND.index("rule 18") + 3),  # "rule e 18"
    (GOVERNMENT, GOVERNMENT.index("RNMENT")),  # "GOVER RNMENT"
    (APPEAL, APPEAL.index("dispose") + 3),  # "disp pose"
]
REPEATED = [
    "The committee of the Appellate Tribunal shall meet on 1100 hours of 11-11-2011.",
    "Mississippi, Llull, bookkeeper, addressee: (iii) and (xiii) of sub-rule (11).",
    "A fee of Rs. 1,11,111 shall accompany the application; see rule 111.",
]


def _pdf_string(text: str) -> bytes:
    raw = text.encode("cp1252")  # WinAnsiEncoding: has the typographic quotes
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _show(text: str, x: float, baseline: float, size: float = SIZE, spacing: float = 0.0) -> bytes:
    """Draw ``text`` from ``x`` on ``baseline`` (PyMuPDF's top-down y)."""
    y = 842.0 - baseline
    return (f"BT /F1 {size:g} Tf {spacing:g} Tc {x:.3f} {y:.3f} Td ".encode()
            + _pdf_string(text) + b" Tj ET")  # fmt: skip


def _clipped(x0: float, x1: float, baseline: float, drawn: bytes) -> bytes:
    """``drawn`` inside a clip rectangle from ``x0`` to ``x1`` around the line at ``baseline``."""
    y = 842.0 - baseline - 4.0
    return f"q {x0:.3f} {y:.3f} {x1 - x0:.3f} {SIZE + 8:g} re W n ".encode() + drawn + b" Q"


def _width(text: str, size: float = SIZE) -> float:
    return FONT.text_length(text, fontsize=size)


def write_stream_pdf(path: Path, pages: Sequence[Sequence[bytes]]) -> Path:
    """A PDF whose pages are the given content operators, with the standard Helvetica as /F1."""
    doc = pymupdf.open()
    try:
        font = doc.get_new_xref()
        doc.update_object(font, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica "
                                "/Encoding /WinAnsiEncoding >>")  # fmt: skip
        for ops in pages:
            page = doc.new_page(width=595.0, height=842.0)
            contents = doc.get_new_xref()
            doc.update_object(contents, "<< >>")
            doc.update_stream(contents, b"\n".join(ops))
            doc.xref_set_key(page.xref, "Contents", f"{contents} 0 R")
            doc.xref_set_key(page.xref, "Resources", f"<< /Font << /F1 {font} 0 R >> >>")
        doc.save(path)
    finally:
        doc.close()
    return path


def strips_page(
    lines: Sequence[tuple[str, int]], *, order: str = "left_first", shift: float = 0.0
) -> list[bytes]:
    """Each line drawn as two clipped strips that both draw its seam glyph (the right strip's
    copy ``shift`` points off): all the left strips first, all the right ones first, or
    ``by_line`` (each line's two strips one after the other)."""
    left: list[bytes] = []
    right: list[bytes] = []
    for k, (text, seam) in enumerate(lines):
        baseline = TOP + k * STEP
        before, glyph = _width(text[:seam]), _width(text[seam])
        cut = LEFT + before + glyph / 2  # the strips meet in the middle of the seam glyph
        left.append(_clipped(LEFT - 2, cut + 0.5, baseline,
                             _show(text[: seam + 1], LEFT, baseline)))  # fmt: skip
        right.append(_clipped(cut - 0.5, LEFT + _width(text) + 2, baseline,
                              _show(text[seam:], LEFT + before + shift, baseline)))  # fmt: skip
    if order == "by_line":
        return [op for pair in zip(left, right, strict=True) for op in pair]
    return right + left if order == "right_first" else left + right


def twice_page(lines: Sequence[str], *, shift: float = 0.0) -> list[bytes]:
    """Every line drawn twice at the same place (the second ``shift`` points right), the whole
    page once and then again, as an overlapping box printed to PDF does."""
    once = [_show(text, LEFT, TOP + k * STEP) for k, text in enumerate(lines)]
    again = [_show(text, LEFT + shift, TOP + k * STEP) for k, text in enumerate(lines)]
    return once + again


def _rows(page: ParsedPage) -> list[str]:
    return [page.text[row["start"] : row["end"]] for row in page.rows]


def _doubled(page: ParsedPage) -> int:
    flags = [f for f in page.flags if f.startswith("doubled_glyphs:")]
    return int(flags[0].split(":")[1]) if flags else 0


def _parse(path: Path) -> ParsedPage:
    (page,) = parse_pdf(path.stem, path, ocr=False)
    return page


def test_the_generator_reproduces_the_defect(tmp_path: Path) -> None:
    """Without deduplication the strips read as the gazettes do: MuPDF's text, line by line."""
    path = write_stream_pdf(tmp_path / "strips.pdf", [strips_page(SEAMED)])
    with pymupdf.open(path) as doc:
        text = doc[0].get_text()
    assert "\u201cfiv\n" in text and "\nve\u201d shall" in text
    assert "under rule\n" in text and "\ne 18 by" in text
    assert "GOVER\n" in text and "\nRNMENT" in text


@pytest.mark.parametrize("order", ["left_first", "right_first"])
@pytest.mark.parametrize("shift", [0.0, 0.4], ids=["same_place", "shifted"])
def test_seam_glyph_of_two_strips_read_once(tmp_path: Path, order: str, shift: float) -> None:
    path = write_stream_pdf(
        tmp_path / "strips.pdf", [strips_page(SEAMED, order=order, shift=shift)]
    )
    page = _parse(path)
    assert _rows(page) == [canonicalize(text) for text, _seam in SEAMED]
    assert _rows(page)[0] == (
        'In sub-rule (2) of rule 18, for the word "three" the word "five" shall be substituted.'
    )
    assert _doubled(page) == len(SEAMED)  # one seam glyph a line


def test_seam_on_a_space_or_at_a_word_start(tmp_path: Path) -> None:
    """A seam glyph right after a space, or a space drawn in both strips, leaves one space."""
    text = "the word five shall be substituted for the word three"
    lines = [(text, text.index("five")), (text, text.index("five") + 4)]  # "f", then " "
    page = _parse(write_stream_pdf(tmp_path / "strips.pdf", [strips_page(lines)]))
    assert _rows(page) == [text, text]


@pytest.mark.parametrize("shift", [0.0, 0.2, 0.6], ids=["same_place", "0.2pt", "0.6pt"])
def test_every_glyph_drawn_twice_read_once(tmp_path: Path, shift: float) -> None:
    lines = [SUBSTITUTION, *REPEATED]
    page = _parse(write_stream_pdf(tmp_path / "twice.pdf", [twice_page(lines, shift=shift)]))
    assert _rows(page) == [canonicalize(text) for text in lines]
    assert _doubled(page) == sum(1 for text in lines for ch in text if not ch.isspace())


def test_glyph_drawn_again_inside_its_own_line(tmp_path: Path) -> None:
    """Strips one after the other, the seam glyph's copy a point off: MuPDF, which drops a
    glyph drawn again right where it was, keeps both in one line ("fivve")."""
    ops = strips_page(SEAMED, order="by_line", shift=1.0)
    path = write_stream_pdf(tmp_path / "strips.pdf", [ops])
    with pymupdf.open(path) as doc:
        assert "\u201cfivve\u201d" in doc[0].get_text()  # the defect, without the fix
    page = _parse(path)
    assert _rows(page) == [canonicalize(text) for text, _seam in SEAMED]
    assert _doubled(page) == len(SEAMED)


@pytest.mark.parametrize(
    ("size", "spacing"), [(10.0, 0.0), (6.0, 0.0), (7.0, -0.4)], ids=["10pt", "6pt", "tight"]
)
def test_repeated_letters_untouched(tmp_path: Path, size: float, spacing: float) -> None:
    ops = [_show(text, LEFT, TOP + k * STEP, size, spacing) for k, text in enumerate(REPEATED)]
    page = _parse(write_stream_pdf(tmp_path / "repeated.pdf", [ops]))
    assert _rows(page) == REPEATED
    assert _doubled(page) == 0 and page.flags == []


def test_normal_page_unchanged(tmp_path: Path) -> None:
    """A page of the project's own generator: every row as written, nothing flagged."""
    paragraphs = [SUBSTITUTION, *REPEATED, "Short title and commencement.—(1) These rules may "
                  "be called the Uttar Pradesh Real Estate (Regulation and Development) Rules, "
                  "2016."]  # fmt: skip
    path = write_pdf(tmp_path / "normal.pdf", [[Para(p, space_before=4) for p in paragraphs]])
    page = _parse(path)
    with pymupdf.open(path) as doc:
        lines = [canonicalize(line) for line in doc[0].get_text().splitlines() if line.strip()]
    assert _rows(page) == lines
    assert _doubled(page) == 0 and "doubled_glyphs" not in " ".join(page.flags)


def test_inspect_names_the_pages(tmp_path: Path) -> None:
    path = write_stream_pdf(
        tmp_path / "strips.pdf", [strips_page(SEAMED), twice_page(REPEATED[:1])]
    )
    found = inspect_pdf(path, kind="rules", ocr=False)
    assert found["doubled_glyph_pages"] == [
        {"page": 1, "glyphs": len(SEAMED)},
        {"page": 2, "glyphs": sum(not ch.isspace() for ch in REPEATED[0])},
    ]

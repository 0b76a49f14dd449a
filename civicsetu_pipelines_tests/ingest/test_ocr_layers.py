"""Someone else's OCR (issue 48, item 3): a scanned page under an invisible text layer is known
for what it is, and read again from its image where its words lose the numbering the page
prints (a unit number dropped, a sub-rule "(4)" read "(a)") or are poor English; the reading
the structure and the words prefer is served, both on record. Pages generated with PyMuPDF: a
printed page rendered to an image, its lines written invisibly over it as a poor OCR left them."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from civicsetu_pipelines.ingest.ocr import tesseract_available
from civicsetu_pipelines.ingest.ocr_layers import (
    Reading,
    numbering_gaps,
    prefer_reread,
    structure_faults,
)
from civicsetu_pipelines.ingest.pages import parse_pdf
from civicsetu_pipelines_tests.pdfgen import ocr_layered_pdf

RULES = [
    "3. Application for registration.- The promoter shall apply to the Authority in Form A.",
    "4.",
    "Declaration.- The promoter shall file a declaration with the application.",
    "(1) The declaration shall state the land title of the project.",
    "(2) The declaration shall be signed by the promoter.",
    "(3) The declaration shall be verified before a notary.",
    "(4) The declaration shall be uploaded on the website.",
    "5. Fees.- The fee for registration shall be paid online to the Authority.",
]


def _ocr() -> None:
    if not tesseract_available():
        if os.environ.get("CI"):
            pytest.fail("tesseract is not installed (scripts/setup.sh installs it)")
        pytest.skip("tesseract is not installed")


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_a_numbering_that_skips_or_misreads_is_a_fault() -> None:
    assert structure_faults("(1) a\n(2) b\n(3) c shall,-\n(a) x\n(b) y\n(4) d") == []
    assert structure_faults("(1) a\n(2) b\n(3) c\n(a) The declaration\n(5) e") == ["(3) then (5)"]
    assert structure_faults("(l) The declaration\n(2) b") == ["(l) then (2): a 1 misread"]
    assert numbering_gaps([(1, "3. Title.- x\n4. Next.- y"), (2, "5. Fees.- z")]) == set()
    assert numbering_gaps([(3, "3. Title.- x"), (4, "The text\n(1) y"), (5, "5. Fees")]) == {
        3,
        4,
        5,
    }
    # a run that opens late: the pages before its first number that number sub-units (a
    # column of hanging numbers the layer never read), and that number's page; no number at
    # all: every page that numbers sub-units; a preamble or a run from 1 is no gap
    assert numbering_gaps([(1, "Preamble"), (2, "Text\n(1) a\n(2) b"), (3, "17. T\n(1) x"),
                           (4, "18. U")]) == {2, 3}  # fmt: skip
    assert numbering_gaps([(1, "Text\n(1) a\n(2) b"), (2, "more\n(1) x"), (3, "Form")]) == {
        1, 2}  # fmt: skip
    assert numbering_gaps([(1, "Preamble\n(1) a"), (2, "1. A\n(1) a"), (3, "2. B")]) == set()
    assert numbering_gaps([(1, "Preamble"), (2, "words alone")]) == set()
    layer = Reading.of("3. A\nDeclaration\n(1) x\n(2) y\n5. B", 0.95)
    reread = Reading.of("3. A\n4.\nDeclaration\n(1) x\n(2) y\n5. B", 0.94)
    assert prefer_reread(layer, reread, gap=True) and not prefer_reread(reread, layer, gap=True)
    assert not prefer_reread(layer, reread)  # no gap here: the words decide
    assert not prefer_reread(Reading.of("x", 0.87), Reading.of("x", 0.91))  # within the margin
    # a smaller number starts the next unit's run (its "(1)" printed beside its number)
    assert structure_faults("(1) a\n(2) b\n(3) c\n(4) d\n(2) next section\n(3) e") == []
    assert structure_faults("(1) a\n(2) b\n(3) c\n(3) d") == ["(3) then (3)"]
    assert structure_faults("(1) a\n(2) b\n(2) c") == []  # the next unit's "(1)" inline
    assert prefer_reread(Reading.of("x", 0.80), Reading.of("x", 0.92))


def test_a_dropped_unit_number_is_read_again_from_the_page(tmp_path: Path) -> None:
    """The layer lost rule 4's hanging number and read "(4)" as "(a)": the page is re-read, the
    project's own reading served (rule 4 numbered, its fourth sub-rule right), the layer kept in
    the page's record, and `inspect` names the page and why."""
    _ocr()

    def poor(line: str) -> str | None:
        if line.strip() == "4.":
            return None  # the hanging number, in a column the layer never read
        return line.replace("(4) The declaration", "(a) The declaration")

    pdf = ocr_layered_pdf(tmp_path / "rules.pdf", [RULES], poor)
    (page,) = parse_pdf("rules", pdf)
    assert "ocr_layer" in page.flags and "text_layer_reread" in page.flags, page.flags
    assert re.search(r"^\s*4\s*\.", page.text, re.M), page.text
    assert "(4) The declaration shall be uploaded" in _flat(page.text)
    kept = [r for r in page.removed if r["reason"].startswith("someone else's OCR layer re-read")]
    assert kept and any("(a) The declaration" in r["text"] for r in kept)
    assert "numbering faults" in kept[0]["reason"]  # both readings' figures on record
    from civicsetu_pipelines.ingest.inspection import inspect_pdf

    (judged,) = inspect_pdf(pdf, kind="rules")["text_layers_not_trusted"]
    assert (judged["page"], judged["verdict"]) == (1, "re-read")
    assert "numbering breaks" in judged["why"] or "skip" in judged["why"]


def test_a_sound_layer_is_trusted_and_a_poor_one_is_read_again(tmp_path: Path) -> None:
    """A layer that reads the page whole is kept as it is, never OCR'd again (flag `ocr_layer`
    alone); one whose words came out of a poor OCR is read again and the better words served."""
    _ocr()
    sound = parse_pdf("sound", ocr_layered_pdf(tmp_path / "sound.pdf", [RULES], lambda x: x))
    assert sound[0].flags == ["ocr_layer"] and sound[0].method == "pymupdf"
    assert re.search(r"^\s*4\s*\.", sound[0].text, re.M)

    def garbled(line: str) -> str:  # every fourth word misread
        words = line.split()
        return " ".join(w if i % 4 else "tbe" + w[::-1] for i, w in enumerate(words))

    (poor,) = parse_pdf("poor", ocr_layered_pdf(tmp_path / "poor.pdf", [RULES], garbled))
    assert "ocr_layer" in poor.flags and "text_layer_reread" in poor.flags, poor.flags
    assert "The fee for registration shall be paid online" in _flat(poor.text)

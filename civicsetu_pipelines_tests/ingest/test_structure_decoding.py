"""Structure by the document's own grammar (issue 13): heading styles seen in real gazettes,
written as real PDFs with PyMuPDF; the decoder's sequence; checks that fail loudly; and
``civicsetu inspect`` on generated and corpus PDFs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from civicsetu_pipelines.ingest.headings import title_problem
from civicsetu_pipelines.ingest.inspection import detect_kind, inspect_pdf, parse_page_ranges
from civicsetu_pipelines.ingest.sequence import Position, decode
from civicsetu_pipelines_tests.ingest.test_legal_structure import (
    FILLER,
    PREAMBLE_ROWS,
    by_label,
    pdf_chunks,
    top_level,
)
from civicsetu_pipelines_tests.pdfgen import PageItem, write_pdf

CLI = [sys.executable, "-m", "civicsetu_pipelines.cli"]


def checks_of(report: object) -> dict[str, tuple[bool, str]]:
    return {c.name: (c.passed, c.message) for c in report.checks}  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------- the decoder


def test_decoder_follows_the_sequence_not_the_first_match() -> None:
    # 1 2 [list 1 2 3 inside rule 2] 3 4: the list is not the sequence
    numbers = [1, 2, 1, 2, 3, 3, 4]
    positions = [Position(n) for n in numbers]
    scores = [2.0, 2.0, 1.0, 1.0, 1.0, 2.0, 2.0]
    chosen = decode(positions, scores, list(range(len(numbers))))
    assert [numbers[i] for i in chosen] == [1, 2, 3, 4]
    assert chosen == [0, 1, 5, 6]


def test_decoder_allows_inserted_units_and_survives_one_gap() -> None:
    labels = [Position(1), Position(2), Position(2, "A"), Position(3), Position(5), Position(6)]
    chosen = decode(labels, [2.0] * 6, list(range(6)))
    assert [labels[i].label for i in chosen] == ["1", "2", "2A", "3", "5", "6"]


def test_decoder_does_not_cross_a_form_that_restarts_its_numbering() -> None:
    # rules 1-3, FORM A (offset 35), the form's items 1-9: the body is rules 1-3
    numbers = [1, 2, 3, *range(1, 10)]
    offsets = [10, 20, 30, *range(40, 49)]
    chosen = decode([Position(n) for n in numbers], [2.0] * len(numbers), offsets, [35])
    assert chosen == [0, 1, 2]


# ------------------------------------------------------------------------- heading styles


def _rules(rows: list[PageItem]) -> list[list[PageItem]]:
    return [[*PREAMBLE_ROWS, *rows]]


def test_number_alone_then_title_ending_in_a_colon(tmp_path: Path) -> None:
    rows: list[PageItem] = []
    for n, title in enumerate(["Short title and commencement", "Definitions",
                               "Agreement for sale", "Display boards"], 1):  # fmt: skip
        rows += [f"{n}.", f"{title}:", f"(1) {FILLER}", f"(2) {FILLER}"]
    chunks, report = pdf_chunks(tmp_path, _rules(rows))
    assert report.numbered == ["1", "2", "3", "4"]
    titles = [c.title for c in top_level(chunks)[1:]]
    assert titles == ["Short title and commencement", "Definitions", "Agreement for sale",
                      "Display boards"]  # fmt: skip
    assert report.structure_ok, report.checks


def test_agreement_for_sale_heading_is_a_rule_not_a_form(tmp_path: Path) -> None:
    """'9. Agreement for sale:' once started a form that swallowed rules 9 to 54."""
    rows: list[PageItem] = [f"{n}. Rule {n} heading.- {FILLER}" for n in range(1, 9)]
    rows += ["9. Agreement for sale:", f"(1) The agreement shall be in Form A. {FILLER}"]
    rows += [f"{n}. Rule {n} heading.- {FILLER}" for n in range(10, 14)]
    rows += ["FORM A", "[See rule 9]", "AGREEMENT FOR SALE", "1. Name:", "2. Address:"]
    chunks, report = pdf_chunks(tmp_path, [rows[:7], rows[7:]])
    assert report.numbered == [str(n) for n in range(1, 14)]
    assert by_label(chunks)["Rule 9"].title == "Agreement for sale"
    assert [c.label for c in top_level(chunks)][-1] == "Form A"
    assert report.structure_ok, report.checks


def test_title_and_body_on_one_line(tmp_path: Path) -> None:
    rows: list[PageItem] = [
        "1. Short title: These regulations may be called the Test Regulations, 2019.",
        "2. Display Boards-(1) The promoter shall erect a weather proof display board at the "
        "site of the project.",
        f"(2) {FILLER}",
        f"3. The Authority shall publish the list of projects. {FILLER}",
        f"4. Title: {FILLER}",
    ]
    chunks, report = pdf_chunks(tmp_path, _rules(rows), doc_type="regulations")
    assert report.numbered == ["1", "2", "3", "4"]
    titles = {c.label: c.title for c in top_level(chunks)}
    assert titles["Regulation 1"] == "Short title"
    assert titles["Regulation 2"] == "Display Boards"  # not "Display Boards-(1) The promoter..."
    assert titles["Regulation 3"] == ""  # untitled: never its first sentence
    assert titles["Regulation 4"] == "Title"
    assert report.structure_ok, report.checks


def test_inserted_units_3a_and_3_hyphen_b(tmp_path: Path) -> None:
    rows: list[PageItem] = [
        f"1. Short title.- {FILLER}",
        f"2. Definitions.- {FILLER}",
        f"3. Registration.- {FILLER}",
        f"3A. Inserted rule.- {FILLER}",
        f"3-B. Another inserted rule.- {FILLER}",
        f"4. Fees.- {FILLER}",
    ]
    chunks, report = pdf_chunks(tmp_path, _rules(rows))
    assert report.numbered == ["1", "2", "3", "3A", "3B", "4"]
    assert by_label(chunks)["Rule 3B"].title == "Another inserted rule"
    assert report.structure_ok, report.checks


def test_parenthesis_numbers_and_roman_items_inside(tmp_path: Path) -> None:
    """The Maharashtra style: "1)" alone, the title on the next line, items "i." "ii."."""
    rows: list[PageItem] = []
    for n, title in enumerate(["Short title and Commencement", "Language of the Tribunal",
                               "Sittings"], 1):  # fmt: skip
        rows += [f"{n})", title, f"i. {FILLER}", f"ii. {FILLER}"]
    chunks, report = pdf_chunks(tmp_path, _rules(rows), doc_type="regulations")
    assert report.numbered == ["1", "2", "3"]
    assert [c.title for c in top_level(chunks)[1:]] == [
        "Short title and Commencement", "Language of the Tribunal", "Sittings"]  # fmt: skip


def test_numbered_list_inside_a_unit_is_not_a_unit(tmp_path: Path) -> None:
    rows: list[PageItem] = [
        f"1. Short title.- {FILLER}",
        "2. Documents.- The promoter shall furnish the following documents, namely:-",
        "1. a copy of the PAN card;",
        "2. the audited balance sheet;",
        "3. the sanctioned plan;",
        f"3. Fees.- {FILLER}",
        f"4. Returns.- {FILLER}",
    ]
    chunks, report = pdf_chunks(tmp_path, _rules(rows))
    assert report.numbered == ["1", "2", "3", "4"]
    assert "the audited balance sheet" in by_label(chunks)["Rule 2"].text
    assert by_label(chunks)["Rule 3"].title == "Fees"


def test_forms_citing_rules_and_a_body_that_ends_where_the_forms_begin(tmp_path: Path) -> None:
    rows: list[PageItem] = [f"{n}. Rule {n} heading.- {FILLER}" for n in range(1, 5)]
    form: list[PageItem] = ["FORM A", "[See rule 3 and rule 7]", "APPLICATION"]
    form += [f"{n}. Particular {n} of the project:" for n in range(1, 12)]
    chunks, report = pdf_chunks(tmp_path, [rows, form])
    assert report.numbered == ["1", "2", "3", "4"]  # the form's 5..11 do not continue the rules
    assert top_level(chunks)[-1].label == "Form A"
    checks = checks_of(report)
    assert checks["cited_units"][0] is False and "rule 7" in checks["cited_units"][1]
    assert report.structure_ok  # a missing cited rule is a warning, named


def _forms_document(lost_page: list[PageItem], cite: str = "Form D") -> list[list[PageItem]]:
    rows: list[PageItem] = [f"{n}. Rule {n} heading.- {FILLER}" for n in range(1, 5)]
    rows[2] = f"3. Rejection.- The Authority shall inform the applicant in {cite}. {FILLER}"
    form_c: list[PageItem] = ["FORM C", "[See rule 2]", "REGISTRATION CERTIFICATE",
                              "1. Name of the promoter:", "2. Address:"]  # fmt: skip
    form_e: list[PageItem] = ["FORM E", "[See rule 4]", "APPLICATION FOR EXTENSION",
                              "1. Registration number:", "2. Reasons:"]  # fmt: skip
    return [rows, form_c, lost_page, form_e]


def test_a_form_whose_heading_the_reading_lost_is_named_by_the_rules_citing_it(
    tmp_path: Path,
) -> None:
    """A scan's underlined "FORM D" that OCR dropped: the page opens with the form's own note
    "[See rule 3]" over its title, between Forms C and E, and rule 3 cites "Form D"."""
    lost: list[PageItem] = [
        "[See rule 3]",
        "INTIMATION OF REJECTION",
        "From: the Authority",
        "You are hereby informed that your application is rejected.",
    ]
    chunks, report = pdf_chunks(tmp_path, _forms_document(lost))
    forms = [c for c in top_level(chunks) if c.unit == "form"]
    assert [c.label for c in forms] == ["Form C", "Form D", "Form E"]
    form_d = by_label(chunks)["Form D"]
    assert "label_from_citations" in form_d.flags
    assert "INTIMATION OF REJECTION" in form_d.title and "See rule 3" in form_d.title
    assert "hereby informed" in form_d.text
    assert "hereby informed" not in by_label(chunks)["Form C"].text
    assert report.structure_ok, report.checks


@pytest.mark.parametrize(
    ("case", "cite"),
    [("no rule it names cites the missing form", "Form B"),
     ("the note is not where its page starts", "Form D")],
)  # fmt: skip
def test_a_form_s_own_note_stays_in_the_form(tmp_path: Path, case: str, cite: str) -> None:
    lost: list[PageItem] = ["[See rule 3]", "INTIMATION OF REJECTION", "From: the Authority"]
    if case.startswith("the note"):
        lost = ["3. Particulars of the rejection continued from the page before:", *lost]
    chunks, _report = pdf_chunks(tmp_path, _forms_document(lost, cite))
    forms = [c.label for c in top_level(chunks) if c.unit == "form"]
    assert forms == ["Form C", "Form E"], case
    assert "INTIMATION OF REJECTION" in by_label(chunks)["Form C"].text


@pytest.mark.parametrize("foot", [715.0, 770.0, 805.0])  # in the body, and in the footer zone
def test_a_heading_at_the_foot_of_a_page_keeps_its_body_from_the_next(
    tmp_path: Path, foot: float
) -> None:
    """ "4. Display of sanctioned plans.-" is the last line of page 1 and its sub-rules open page
    2, under the gazette's running header: rule 4 is one unit over the break, with its title,
    and rule 3 does not take its body."""
    header = ("THE GAZETTE OF GUJARAT EXTRAORDINARY, 1ST MAY 2017", 72, 40, 8, False)
    page1: list[PageItem] = [header, *PREAMBLE_ROWS]
    page1 += [f"{n}. Rule {n} heading.- {FILLER}{FILLER}" for n in range(1, 4)]
    page1 += [("4. Display of sanctioned plans.-", 72, foot, 10, False)]
    page2: list[PageItem] = [header, "(1) The promoter shall display the sanctioned plans at the "
                             "site.", f"(2) {FILLER}", f"5. Fees.- {FILLER}"]  # fmt: skip
    page3: list[PageItem] = [header, f"6. Returns.- {FILLER}", f"7. Records.- {FILLER}"]
    chunks, report = pdf_chunks(tmp_path, [page1, page2, page3])
    assert report.numbered == ["1", "2", "3", "4", "5", "6", "7"] and report.structure_ok
    rule4 = by_label(chunks)["Rule 4"]
    assert rule4.title == "Display of sanctioned plans"
    assert (rule4.page_start, rule4.page_end) == (1, 2)
    assert rule4.text.startswith(
        "4. Display of sanctioned plans.-\n(1) The promoter shall display the sanctioned plans"
    )  # the running header of page 2 is not between them
    assert "sanctioned plans" not in by_label(chunks)["Rule 3"].text


# ------------------------------------------------------------- checks that fail loudly


def test_a_gap_fails_the_sequence_check_names_the_place_and_keeps_pages(tmp_path: Path) -> None:
    rows: list[PageItem] = [f"{n}. Rule {n} heading.- {FILLER}" for n in (1, 2, 3, 6, 7, 8)]
    chunks, report = pdf_chunks(tmp_path, [rows[:3], rows[3:]])
    passed, message = checks_of(report)["sequence"]
    assert not passed and "Rule 6" in message and "page 2" in message
    assert not report.structure_ok
    # the document is kept page by page: no unit it cannot vouch for, never one giant unit
    assert {c.unit for c in top_level(chunks)} == {"page"}
    assert [c.label for c in top_level(chunks)] == ["Page 1", "Page 2"]
    assert all("structure_failed" in c.flags for c in chunks)


def test_a_rules_document_with_no_numbered_units_fails_loudly(tmp_path: Path) -> None:
    rows: list[PageItem] = [FILLER, FILLER, FILLER]
    _chunks, report = pdf_chunks(tmp_path, [rows])
    passed, message = checks_of(report)["sequence"]
    assert not passed and "no numbered rules" in message


def test_title_problems() -> None:
    assert title_problem("Short title and commencement") is None
    long_title = (
        "Salary and allowances payable and other terms and conditions of service of the "
        "officers and other employees of the Authority and experts and consultants engaged by "
        "the Authority"
    )
    assert title_problem(long_title) is None  # 28 words, printed so
    assert "marker" in (title_problem("Display Boards-(1) The promoter") or "")
    assert "sentence" in (title_problem("The promoter shall erect a board") or "")
    assert "mid-phrase" in (title_problem("Information to be furnished by the") or "")


# ---------------------------------------------------------------------------------- inspect


def test_detect_kind() -> None:
    assert detect_kind("THE TEST RULES, 2017 ... makes the following rules")[0] == "rules"
    assert detect_kind("TRIBUNAL REGULATIONS, 2019")[0] == "regulations"
    assert detect_kind("IN THE HIGH COURT ... WRIT PETITION ... Petitioners ... "
                       "Respondents ... CORAM ... JUDGMENT")[0] == "judgment"  # fmt: skip
    assert detect_kind("Frequently Asked Questions")[0] == "faq"
    kind, reason = detect_kind("nothing to go by")
    assert kind == "rules" and "assumed" in reason


def test_parse_page_ranges() -> None:
    assert parse_page_ranges("1-3,7") == [0, 1, 2, 6]
    with pytest.raises(ValueError):
        parse_page_ranges("3-1")
    with pytest.raises(ValueError):
        parse_page_ranges("x")


def test_inspect_cli_json_on_a_generated_pdf(tmp_path: Path) -> None:
    rows: list[PageItem] = [f"{n}. Rule {n} heading.- {FILLER}" for n in range(1, 5)]
    path = write_pdf(tmp_path / "rules.pdf", [[*PREAMBLE_ROWS, *rows]])
    proc = subprocess.run([*CLI, "inspect", str(path), "--json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["kind"] == "rules" and "RULES" in found["kind_reason"].upper()
    assert [u["label"] for u in found["units"]] == ["Preamble", "Rule 1", "Rule 2", "Rule 3",
                                                    "Rule 4"]  # fmt: skip
    assert found["units"][1]["title"] == "Rule 1 heading" and found["units"][1]["first_page"] == 1
    assert {c["name"] for c in found["checks"]} >= {"sequence", "swallowed", "titles"}
    assert all({"name", "passed", "severity", "message"} <= set(c) for c in found["checks"])


def test_inspect_cli_exits_1_on_a_broken_structure_and_2_on_bad_input(tmp_path: Path) -> None:
    rows: list[PageItem] = [f"{n}. Rule {n} heading.- {FILLER}" for n in (1, 2, 5, 6)]
    path = write_pdf(tmp_path / "gap.pdf", [[*PREAMBLE_ROWS, *rows]])
    proc = subprocess.run([*CLI, "inspect", str(path), "--kind", "rules"], capture_output=True,
                          text=True)  # fmt: skip
    assert proc.returncode == 1 and "FAIL sequence" in proc.stdout
    not_pdf = tmp_path / "page.pdf"
    not_pdf.write_text("<html>not a pdf</html>")
    proc = subprocess.run([*CLI, "inspect", str(not_pdf)], capture_output=True, text=True)
    assert proc.returncode == 2 and "not a PDF" in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run([*CLI, "inspect", str(path), "--kind", "novel"], capture_output=True,
                          text=True)  # fmt: skip
    assert proc.returncode == 2 and "Unknown kind" in proc.stderr


def test_inspect_maharashtra_regulations_from_the_corpus(corpus_dir: Path) -> None:
    """A table of contents with dotted leaders first, "1)" numbering, invisible (white) list
    numbers in the text layer: 27 regulations in sequence, the contents page not units."""
    found = inspect_pdf(corpus_dir.parent / "pdfs" / "maharashtra_appellate_tribunal_"
                        "regulations_2019.pdf")  # fmt: skip
    assert found["kind"] == "regulations"
    numbered = [u for u in found["units"] if u["label"].startswith("Regulation ")]
    assert [u["number"] for u in numbered] == [str(n) for n in range(1, 28)]
    assert numbered[0]["first_page"] == 3  # not the contents on page 2
    assert {u["label"] for u in found["units"]} >= {"Form A", "Form B", "Form C"}
    assert found["structure_ok"], found["checks"]


def test_a_contents_list_without_leaders_is_not_the_units(tmp_path: Path) -> None:
    """India Code prints "ARRANGEMENT OF SECTIONS" (1. Short title. 2. ...), then the Act."""
    contents: list[PageItem] = ["ARRANGEMENT OF SECTIONS", "SECTIONS"]
    contents += [f"{n}. Section {n} heading." for n in range(1, 7)]
    contents += ["THE SCHEDULE.—[Repealed.]"]
    body: list[PageItem] = ["THE TEST ACT, 2020", "BE IT ENACTED by Parliament as follows:—"]
    body += [f"{n}. Section {n} heading.—{FILLER}" for n in range(1, 7)]
    chunks, report = pdf_chunks(tmp_path, [contents, body], doc_type="act")
    assert report.numbered == [str(n) for n in range(1, 7)]
    assert all(c.page_start == 2 for c in top_level(chunks)[1:])  # the Act, not its contents
    assert report.structure_ok, report.checks


def test_amended_heading_with_its_footnote_bracket(tmp_path: Path) -> None:
    rows: list[PageItem] = [
        f"1. Short title.—{FILLER}",
        f"1[2. Substituted section.—{FILLER}",
        f"3. Application.—{FILLER}",
    ]
    chunks, report = pdf_chunks(tmp_path, [rows], doc_type="act")
    assert report.numbered == ["1", "2", "3"]
    assert by_label(chunks)["Section 2"].title == "Substituted section"


def test_invisible_text_is_not_read(tmp_path: Path) -> None:
    """A white "5" left in the text layer before the printed "5)" must not read "55)"."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    y = 72.0
    for n in range(1, 4):
        page.insert_text((60, y), str(n), fontsize=10, color=(1, 1, 1))  # invisible
        page.insert_text((66, y), f"{n}) Heading number {n}", fontsize=11)
        page.insert_text((80, y + 16), "i. " + FILLER[:80], fontsize=11)
        y += 60
    path = tmp_path / "white.pdf"
    doc.save(path)
    found = inspect_pdf(path, kind="regulations")
    numbered = [u["number"] for u in found["units"] if u["label"].startswith("Regulation")]
    assert numbered == ["1", "2", "3"]
    titles = {u["label"]: u["title"] for u in found["units"]}
    assert titles["Regulation 1"] == "Heading number 1"


def test_ocr_misreadings_around_a_heading_number(tmp_path: Path) -> None:
    """What OCR of a scanned gazette does to "N-(1)" headings and form headings: a speck before
    the number (". 2-(1)", '"" 5-(1)'), the sub-rule marker misread ("3-U)-", "4-()") and
    "FORM A" read "- FORMA". Each heading is still its rule, not an inserted "3U"."""
    rows: list[PageItem] = [
        f"1-(1) These rules may be called the Test Rules. {FILLER}",
        f". 2-(1) In these rules the Act means the Real Estate Act. {FILLER}",
        f"3-U)- The promoter shall furnish the documents. {FILLER}",
        f"4-() The promoter shall disclose the details. {FILLER}",
        f'"" 5-(1) The agent shall apply in writing. {FILLER}',
    ]
    form: list[PageItem] = ["- FORMA", "[See rule 3(2)]", "APPLICATION FOR REGISTRATION",
                            f"1. Particulars of the promoter. {FILLER}"]  # fmt: skip
    chunks, report = pdf_chunks(tmp_path, [[*PREAMBLE_ROWS, *rows], form])
    assert report.numbered == ["1", "2", "3", "4", "5"]
    assert top_level(chunks)[-1].label == "Form A"
    assert report.structure_ok, report.checks


def test_a_printed_title_of_thirty_words_is_a_title() -> None:
    """UP rule 20's printed title runs to 30 words and some 200 characters."""
    title = ("Salary and allowances payable and other terms and conditions of service of the "
             "officers and other employees of the regulatory authority and experts and "
             "consultants engaged by the regulatory authority")  # fmt: skip
    assert title_problem(title) is None
    assert title_problem(f"{title} and {title}") is not None  # a bound remains


def test_ocr_reads_a_scan_at_its_own_resolution_and_counts_unread_ink(tmp_path: Path) -> None:
    """A 200 dpi scan is OCR'd at 200 dpi (resampling blurs small marks); every line of it is
    read; ink that no word covers is counted, so text a reading loses does not go unnoticed."""
    import numpy as np
    import pymupdf

    from civicsetu_pipelines.ingest.ocr import (
        DEFAULT_DPI,
        INK_LEVEL,
        MAX_UNREAD,
        ocr_page,
        scan_dpi,
        unread_regions,
    )
    from civicsetu_pipelines_tests.pdfgen import scanned_pdf

    lines: list[PageItem] = [(f"{n}- Rule {n} of the scanned rules. {FILLER[:50]}", 72,
                              100 + 24 * n, 11, False) for n in range(1, 6)]  # fmt: skip
    path = scanned_pdf(tmp_path / "scan.pdf", [lines], dpi=200)
    with pymupdf.open(path) as doc:
        assert scan_dpi(doc[0]) == 200
        read = ocr_page(doc[0], "eng")
        pix = doc[0].get_pixmap(dpi=200, colorspace=pymupdf.csGRAY)
    text = " ".join(line.text for line in read.lines)
    assert all(f"Rule {n} of the scanned" in text for n in range(1, 6)), text
    assert read.unread <= MAX_UNREAD and read.layout == "auto"
    gray = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.stride)
    assert unread_regions(gray[:, : pix.width] < INK_LEVEL, []) >= 5  # nothing read: all unread
    text_pdf = write_pdf(tmp_path / "text.pdf", [lines])
    with pymupdf.open(text_pdf) as doc:
        assert scan_dpi(doc[0]) == DEFAULT_DPI  # not a scan: the default resolution


def test_a_rule_number_beside_a_skewed_line_starts_that_line(tmp_path: Path) -> None:
    """On a scan fed askew, a long line's box rises towards its far end, so its top sits above
    the rule number printed level with its start. Read by their boxes, "29-(1)" came after the
    first line of rule 29, which then ended rule 28 (UP rules 13 and 30 lost their first lines
    and their titles so)."""
    import pymupdf

    from civicsetu_pipelines.ingest.ocr import ocr_page
    from civicsetu_pipelines_tests.pdfgen import scanned_pdf

    body = "The promoter shall furnish the following information to the Authority without delay"
    lines: list[PageItem] = []
    for n, y in ((28, 120), (29, 200), (30, 280)):
        lines += [(f"{n}-(1)", 50, y, 11, False), (f"{body} {n}.", 90, y, 11, False),
                  ("and this sentence continues on the next line of the rule.", 90, y + 16, 11,
                   False)]  # fmt: skip
    path = scanned_pdf(tmp_path / "skewed.pdf", [lines], dpi=200, skew=0.8)
    with pymupdf.open(path) as doc:
        texts = [line.text for line in ocr_page(doc[0], "eng").lines]
    # each number, then its rule's first line, then the line that continues it
    numbers = [i for i, t in enumerate(texts) if t.endswith("-(1)")]
    assert [texts[i] for i in numbers] == ["28-(1)", "29-(1)", "30-(1)"], texts
    for i, n in zip(numbers, (28, 29, 30), strict=True):
        assert texts[i + 1] == f"{body} {n}.", texts
        assert texts[i + 2].startswith("and this sentence continues"), texts


def test_rows_are_ordered_by_where_their_lines_start() -> None:
    from civicsetu_pipelines.ingest.ocr import OcrLine, _reading_order

    # (text, x0, box top, first word's top): a skewed body line starts lower than its box top
    made = [("or consultants, as the case may be.", 226, 674.6, 678.6),
            (";", 459, 684.0, 684.0),  # a speck first in the band anchors nothing
            ("Additional powers of the", 45, 686.5, 686.5),
            ("The Appellate Tribunal may call upon", 226, 686.2, 688.7),
            ("30-", 201, 689.4, 689.4),
            ("the fields of economics", 226, 699.1, 701.3)]  # fmt: skip
    rows = [OcrLine(t, x, top, x + 100, top + 9) for t, x, top, _ in made]
    heads = [(x, head, x + 20, head + (1.1 if t == ";" else 8.5), t) for t, x, _, head in made]
    ordered = [r.text for r in _reading_order(rows, heads)]
    assert ordered.index("30-") < ordered.index("The Appellate Tribunal may call upon")
    assert ordered[0] == "or consultants, as the case may be."
    assert ordered[-1] == "the fields of economics"


def test_inspect_up_rules_scanned_from_the_corpus(
    corpus_dir: Path, corpus_parse_cache: Path
) -> None:
    """The UP Rules 2016: 44 scanned pages, OCR only; titles in a justified margin column,
    "3-(1)" and bare "12-" numbers. Read at 300 dpi with Tesseract's layout analysis alone,
    whole paragraphs and rules 8, 12, 13, 31, 32, 35 and 36 were lost; now rules 1-36 are all
    found, and every rule the forms cite exists."""
    found = inspect_pdf(corpus_dir.parent / "pdfs" / "up_rera_rules_2016_scanned.pdf",
                        kind="rules", parse_cache=corpus_parse_cache)  # fmt: skip
    numbered = [u for u in found["units"] if u["label"].startswith("Rule ")]
    assert [u["number"] for u in numbered] == [str(n) for n in range(1, 37)]
    titles = {u["label"]: u["title"] for u in numbered}
    assert titles["Rule 3"].startswith("Information and documents")
    assert "Revocation of Registration" in titles["Rule 8"]
    # two notes one under the other are two titles, each ending at its ".-"
    assert titles["Rule 15"].endswith("allottee.-")
    assert titles["Rule 16"] == "Timelines for refund.-"
    assert titles["Rule 36"] == "Report and Returns.-"
    # a line of specks above a note ("Te", "ue" at 20% confidence) does not join it
    assert titles["Rule 6"].startswith("Grant or rejection of registration")
    assert titles["Rule 24"].startswith("Manner of implementation of order")
    # nor does a lone speck ("." or "/") left of the gutter start a note of its own
    assert titles["Rule 5"].startswith("Withdrawal of")
    # a rule number level with the start of a skewed line starts that line: the rule keeps its
    # first line and its margin title (they went to the rule before)
    assert titles["Rule 13"] == "Other functions of a real estate agent.-"
    assert titles["Rule 30"] == "Additional powers of the Appellate Tribunal.-"
    # forms whose underlined headings OCR lost are named from the rules citing them
    forms = {u["label"]: u for u in found["units"] if u["label"].startswith("Form ")}
    assert list(forms) == [f"Form {c}" for c in "ABCDEFGHJLMNOP"]  # I and K: not in this copy
    assert (forms["Form D"]["first_page"], forms["Form N"]["first_page"]) == (24, 36)
    assert forms["Form B"]["title"].startswith("DECLARATION, SUPPORTED BY AN AFFIDAVIT")
    assert titles["Rule 31"].startswith("Administrative powers of")
    checks = {c["name"]: c for c in found["checks"]}
    assert checks["cited_units"]["passed"], checks["cited_units"]
    assert sum(u["label"].startswith("Form ") for u in found["units"]) >= 10
    assert found["ocr_pages"] == 44 and set(found["ocr_unread_pages"]) <= set(range(1, 45))
    assert 3 not in found["ocr_unread_pages"]  # layout analysis alone lost 40% of page 3
    assert found["structure_ok"], found["checks"]


def test_specks_are_not_words_but_rule_numbers_are() -> None:
    from civicsetu_pipelines.ingest.ocr import is_speck

    assert is_speck("Te", 19.9) and is_speck("“wy", 35.3) and is_speck(":", 9.0)
    assert not is_speck("Te", 91.0)  # read with confidence: a word
    assert not is_speck("24-", 30.0) and not is_speck("(a)", 12.0)  # numbers and markers stay
    assert not is_speck("project.-", 20.0)  # longer than a speck


def test_ocr_lines_split_at_the_margin_gutter() -> None:
    """A scanned page with titles in a left margin column: OCR merges "Information and" with
    "3-(1) The promoter ..."; the gutter (the strip no word crosses) separates them."""
    from civicsetu_pipelines.ingest.ocr import _gutter, _split_at_gaps

    words = []
    for line in range(30):
        y = 100.0 + 14 * line
        if line % 5 == 0:
            words += [(30.0, y, 70.0, y + 10, "Margin"), (72.0, y, 110.0, y + 10, "title")]
        words += [(160.0 + 40 * k, y, 195.0 + 40 * k, y + 10, "body") for k in range(8)]
    gutter = _gutter(words, 612.0)
    assert gutter is not None and 110 < gutter < 160
    merged = [
        (30.0, 100.0, 70.0, 110.0, "Information"),
        (72.0, 100.0, 100.0, 110.0, "and"),
        (118.0, 100.0, 150.0, 110.0, "3-(1)"),
        (160.0, 100.0, 200.0, 110.0, "The"),
    ]
    parts = _split_at_gaps(merged, 112.0)
    assert [[w[4] for w in part] for part in parts] == [["Information", "and"], ["3-(1)", "The"]]
    assert _gutter(words[:20], 612.0) is None  # too few words to speak of columns
    # A justified margin note ("Information        and") has a gap of its own inside the
    # column; the gutter is the widest strip, not the first.
    justified = [w for w in words if w[4] == "body"]
    for line in range(0, 30, 3):
        y = 100.0 + 14 * line
        justified += [(30.0, y, 70.0, y + 10, "Information"), (92.0, y, 110.0, y + 10, "and")]
    gutter = _gutter(justified, 612.0)
    assert gutter is not None and 110 < gutter < 160
    # Rule numbers and sub-rule markers in a column of their own ("35-", "(iii)") belong to
    # the body: the gutter is left of them even when the notes are few words.
    numbered = [w for w in words if w[4] == "body"]
    numbered += [(120.0, w[1], 140.0, w[3], "(iii)") for w in numbered if w[0] == 160.0]
    numbered += [(30.0, 100.0 + 14 * k, 100.0, 110.0 + 14 * k, "Budget,") for k in range(6)]
    gutter = _gutter(numbered, 612.0)
    assert gutter is not None and 100 < gutter < 120


def test_number_dash_headings_with_or_without_sub_rules(tmp_path: Path) -> None:
    """The UP style: "3-(1) The promoter ..." and "15- The Authority ..."."""
    rows: list[PageItem] = [
        f"1-(1) These rules may be called the Test Rules. {FILLER}",
        f"2- In these rules the Act means the Real Estate Act. {FILLER}",
        f"3-(1) The promoter shall furnish the documents. {FILLER}",
        f"(2) {FILLER}",
    ]
    _chunks, report = pdf_chunks(tmp_path, _rules(rows))
    assert report.numbered == ["1", "2", "3"]


def test_a_raised_footnote_number_is_not_part_of_the_section_number(tmp_path: Path) -> None:
    """India Code prints "¹151. Care to be taken ..." (a footnote reference before an amended
    section): read as "1151." it broke the sequence."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    y = 90.0
    for n in (1, 2, 3, 4):
        x = 72.0
        if n == 3:  # without the fix: "13."
            page.insert_text((x, y - 4), "1", fontsize=7)  # raised, small
            x += 4
        page.insert_text((x, y), f"{n}. Heading of section {n}.—The bailee shall act.", fontsize=11)
        page.insert_text((72, y + 16), FILLER[:90], fontsize=11)
        y += 60
    path = tmp_path / "footnote.pdf"
    doc.save(path)
    found = inspect_pdf(path, kind="act")
    numbered = [u["number"] for u in found["units"] if u["number"]]
    assert numbered == ["1", "2", "3", "4"]

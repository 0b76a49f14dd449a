"""Legal structure on generated PDFs: parse_pdf -> build_chunks, one heading style at a time.

Every document here is a real PDF written by :mod:`civicsetu_pipelines_tests.pdfgen` and read
back through PyMuPDF; nothing of the package is mocked.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from civicsetu_pipelines.base.canonical import canonicalize
from civicsetu_pipelines.ingest.legal_structure import (
    Chunk,
    StructureReport,
    build_chunks,
    chunk_id,
)
from civicsetu_pipelines.ingest.pages import parse_pdf
from civicsetu_pipelines_tests.pdfgen import (
    Heading,
    PageItem,
    Para,
    Section,
    gazette_pages,
    write_gazette_pdf,
    write_pdf,
)

FILLER = (
    "The promoter shall not accept a sum more than ten per cent of the cost of the apartment, "
    "plot, or building as the case may be, as an advance payment or an application fee, from a "
    "person without first entering into a written agreement for sale with such person. "
)


# ------------------------------------------------------------------------------------ helpers


def parse(path: Path, key: str = "doc") -> list[dict[str, Any]]:
    return [dataclasses.asdict(page) for page in parse_pdf(key, path, ocr=False)]


def chunk(
    pages: Sequence[dict[str, Any]], doc_type: str, key: str = "doc", **kwargs: Any
) -> tuple[list[Chunk], StructureReport]:
    chunks, report = build_chunks(
        pages, document_key=key, jurisdiction="CENTRAL", doc_type=doc_type, **kwargs
    )
    assert report.coverage >= 0.99, (key, report)
    return chunks, report


def pdf_chunks(
    tmp_path: Path, pages: Sequence[Sequence[PageItem]], doc_type: str = "rules", **kwargs: Any
) -> tuple[list[Chunk], StructureReport]:
    path = write_pdf(tmp_path / f"{doc_type}.pdf", pages)
    return chunk(parse(path), doc_type, **kwargs)


def top_level(chunks: Sequence[Chunk]) -> list[Chunk]:
    return [c for c in chunks if c.level == 0]


def by_label(chunks: Sequence[Chunk]) -> dict[str, Chunk]:
    labels = [c.label for c in chunks]
    assert len(labels) == len(set(labels)), f"duplicate labels: {labels}"
    return {c.label: c for c in chunks}


def flat(text: str) -> str:
    return " ".join(text.split())


# ------------------------------------------------------------------------------ the Act fixture

ACT_TITLES = {
    "1": "Short title, extent and commencement.",
    "2": "Definitions.",
    "3": "Prior registration of real estate project with Real Estate Regulatory Authority.",
    "4": "Application for registration of real estate projects.",
    "4A": "Registration of ongoing projects.",
    "5": "Grant of registration.",
    "6": "Extension of registration.",
    "7": "Revocation of registration.",
    "8": "Obligation of Authority consequent upon lapse of or on revocation of registration.",
    "9": "Registration of real estate agents.",
    "10": "Functions of real estate agents.",
    "11": "Functions and duties of promoter.",
    "12": "Obligations of promoter regarding veracity of the advertisement or prospectus.",
    "13": (
        "No deposit or advance to be taken by promoter without first entering into agreement "
        "for sale."
    ),
    "14": "Adherence to sanctioned plans and project specifications by the promoter.",
    "15": "Obligations of promoter in case of transfer of a real estate project to a third party.",
    "16": "Obligations of promoter regarding insurance of real estate project.",
    "17": "Transfer of title.",
    "18": "Return of amount and compensation.",
    "19": "Rights and duties of allottees.",
    "20": "Establishment and incorporation of Real Estate Regulatory Authority.",
}
CHAPTERS = {
    "1": ("CHAPTER I", "PRELIMINARY"),
    "3": ("CHAPTER II", "REGISTRATION OF REAL ESTATE PROJECT"),
    "11": ("CHAPTER III", "FUNCTIONS AND DUTIES OF PROMOTER"),
    "20": ("CHAPTER IV", "REAL ESTATE REGULATORY AUTHORITY"),
}
SECTION_18 = [
    "(1) If the promoter fails to complete or is unable to give possession of an apartment, "
    "plot or building,—",
    "(a) in accordance with the terms of the agreement for sale or, as the case may be, duly "
    "completed by the date specified therein; or",
    "(b) due to discontinuance of his business as a developer on account of suspension or "
    "revocation of the registration under this Act or for any other reason,",
    "he shall be liable on demand to the allottees, in case the allottee wishes to withdraw from "
    "the project, to return the amount received by him in respect of that apartment, plot, "
    "building, as the case may be, with interest at such rate as may be prescribed.",
    "(2) The promoter shall compensate the allottees in case of any loss caused to him due to "
    "defective title of the land, on which the project is being developed or has been "
    "developed, in the manner as provided under this Act, and the claim for compensation under "
    "this subsection shall not be barred by limitation provided under any law for the time "
    "being in force.",
    "(3) If the promoter fails to discharge any other obligations imposed on him under this Act "
    "or the rules or regulations made thereunder or in accordance with the terms and conditions "
    "of the agreement for sale, he shall be liable to pay such compensation to the allottees, in "
    "the manner as provided under this Act.",
]
YEAR_LINE = "2016. The Authority shall publish the list of projects registered in that year."


def act_items() -> list[Any]:
    items: list[Any] = [
        Para("THE REAL ESTATE (REGULATION AND DEVELOPMENT) ACT, 2016", bold=True),
        Para("NO. 16 OF 2016"),
        Para(
            "An Act to establish the Real Estate Regulatory Authority for regulation and "
            "promotion of the real estate sector. BE it enacted by Parliament in the "
            "Sixty-seventh Year of the Republic of India as follows:—"
        ),
    ]
    for number, title in ACT_TITLES.items():
        if number in CHAPTERS:
            items += [Heading(CHAPTERS[number][0]), Heading(CHAPTERS[number][1])]
        if number == "18":
            paragraphs = SECTION_18
        elif number == "5":
            # A year printed at the start of a body line must not start a "section 2016".
            paragraphs = [f"(1) {FILLER}", YEAR_LINE, f"(2) {FILLER}"]
        else:
            paragraphs = [f"(1) {FILLER}", f"(2) {FILLER}"]
        items.append(Section(number, title, paragraphs))
    return items


@pytest.fixture(scope="module")
def act_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_gazette_pdf(tmp_path_factory.mktemp("act") / "act.pdf", act_items())


@pytest.fixture(scope="module")
def act_pages(act_pdf: Path) -> list[dict[str, Any]]:
    return parse(act_pdf, "act")


@pytest.fixture(scope="module")
def act(act_pages: list[dict[str, Any]]) -> tuple[list[Chunk], StructureReport]:
    return chunk(act_pages, "act", key="test_act")


# ------------------------------------------------------------------------------------ the Act


def test_the_generated_gazette_has_margin_notes_on_several_pages(
    act_pages: list[dict[str, Any]],
) -> None:
    assert len(act_pages) >= 3
    with_notes = [p for p in act_pages if p["margin_notes"]]
    assert len(with_notes) >= 3
    note_texts = [n["text"] for p in act_pages for n in p["margin_notes"]]
    assert "Return of amount and compensation." in note_texts
    # the margin notes are not body text
    assert all("Return of amount and compensation" not in p["text"] for p in act_pages)


def test_act_sections_found_once_in_order_with_4a_after_4(
    act: tuple[list[Chunk], StructureReport],
) -> None:
    chunks, report = act
    assert report.numbered == list(ACT_TITLES)
    assert report.gaps == [] and report.duplicates == [] and report.untitled == []
    sections = [c for c in top_level(chunks) if c.unit == "section"]
    assert [c.label for c in sections] == [f"Section {n}" for n in ACT_TITLES]
    four_a = by_label(chunks)["Section 4A"]
    assert four_a.number == "4A"
    assert four_a.text.startswith("4A. (1) The promoter")


def test_act_titles_come_from_the_margin_notes(act: tuple[list[Chunk], StructureReport]) -> None:
    chunks, _ = act
    titles = {c.number: c.title for c in top_level(chunks) if c.unit == "section"}
    assert titles == {n: t.rstrip(".") for n, t in ACT_TITLES.items()}
    # the title is not glued into the text of the section
    s13 = by_label(chunks)["Section 13"]
    assert "No deposit or advance" not in s13.text


def test_chapters_are_attached_to_their_sections(act: tuple[list[Chunk], StructureReport]) -> None:
    chunks, _ = act
    chapter = {c.number: c.chapter for c in top_level(chunks) if c.unit == "section"}
    assert chapter["1"] == "Chapter I — PRELIMINARY"
    assert chapter["2"] == "Chapter I — PRELIMINARY"
    assert chapter["3"] == "Chapter II — REGISTRATION OF REAL ESTATE PROJECT"
    assert chapter["4A"] == "Chapter II — REGISTRATION OF REAL ESTATE PROJECT"
    assert chapter["10"] == "Chapter II — REGISTRATION OF REAL ESTATE PROJECT"
    assert chapter["11"] == "Chapter III — FUNCTIONS AND DUTIES OF PROMOTER"
    assert chapter["20"] == "Chapter IV — REAL ESTATE REGULATORY AUTHORITY"
    # The chapter heading rows are kept (in the first section of the chapter), not lost.
    s3 = by_label(chunks)["Section 3"]
    assert s3.text.startswith("CHAPTER II\nREGISTRATION OF REAL ESTATE PROJECT\n3. (1)")


def test_preamble_running_headers_and_page_numbers(
    act: tuple[list[Chunk], StructureReport], act_pages: list[dict[str, Any]]
) -> None:
    chunks, _ = act
    first = chunks[0]
    assert first.label == "Preamble" and first.unit == "paragraph" and first.number is None
    assert "BE it enacted by Parliament" in first.text
    assert all("GAZETTE OF INDIA" not in c.text for c in chunks)
    for page in act_pages:
        removed = {r["text"]: r["reason"] for r in page["removed"]}
        assert removed == {
            "THE GAZETTE OF INDIA EXTRAORDINARY [PART II—": "running_header",
            # repeated on every page, so a running footer (alone it would be "page_number")
            str(page["page"]): "running_footer",
        }


def test_a_year_at_a_line_start_never_becomes_a_section(
    act: tuple[list[Chunk], StructureReport], act_pages: list[dict[str, Any]]
) -> None:
    chunks, report = act
    assert any(line.startswith("2016.") for p in act_pages for line in p["text"].splitlines()), (
        "the fixture must print the year at the start of a line"
    )
    assert "2016" not in report.numbered
    assert all(c.number != "2016" and "Section 2016" not in c.label for c in chunks)
    holder = [c for c in chunks if YEAR_LINE in flat(c.text)]
    assert [c.section_label for c in holder] == ["Section 5"]


def in_order(labels: Sequence[str], required: Sequence[str], optional: Sequence[str] = ()) -> None:
    """``labels`` holds every ``required`` label, in that order, and nothing but ``optional``."""
    assert [label for label in labels if label in required] == list(required), labels
    extra = [label for label in labels if label not in required and label not in optional]
    assert extra == [], labels


def test_section_split_along_its_numbering_with_markers_kept(
    act_pages: list[dict[str, Any]],
) -> None:
    whole, _ = chunk(act_pages, "act", key="test_act")
    assert [c.label for c in whole if c.section_label == "Section 18"] == ["Section 18"]

    chunks, _ = chunk(act_pages, "act", key="test_act", max_chars=400, min_chars=40)
    s18 = [c for c in chunks if c.section_label == "Section 18"]
    labels = [c.label for c in s18]
    in_order(
        labels,
        ["Section 18", "Section 18(1)(b)", "Section 18(2)", "Section 18(3)"],
        optional=["Section 18(1)", "Section 18(1)(a)"],
    )
    pieces = by_label(s18)
    # The head piece keeps the section number and the lead-in of (1).
    assert pieces["Section 18"].text.startswith("18. (1) If the promoter fails")
    for label in labels[1:]:
        marker = label[len("Section 18") :].rsplit("(", 1)[-1]
        assert pieces[label].text.startswith(f"({marker}"), (label, pieces[label].text[:40])
    # The tail of (1) after its clauses stays with (b), not lost.
    assert "he shall be liable on demand" in pieces["Section 18(1)(b)"].text
    # Nothing of the section is lost or duplicated by the split.
    joined = flat(" ".join(c.text for c in s18))
    original = flat(" ".join(c.text for c in whole if c.section_label == "Section 18"))
    assert joined == original
    assert all(c.title == "Return of amount and compensation" for c in s18)
    assert {c.legal_path for c in s18} >= {"18", "18(1)(b)", "18(2)", "18(3)"}


def test_parent_ids_follow_the_legal_path(act_pages: list[dict[str, Any]]) -> None:
    chunks, _ = chunk(act_pages, "act", key="test_act", max_chars=400, min_chars=40)
    labels = by_label(chunks)
    head = labels["Section 18"]
    assert head.parent_id is None and head.level == 0
    assert head.chunk_id == chunk_id("test_act", "section", "18")
    for label in ("Section 18(2)", "Section 18(3)"):
        assert labels[label].parent_id == head.chunk_id
        assert labels[label].level == 1
        assert labels[label].chunk_id == chunk_id("test_act", "section", label[len("Section ") :])
    # (1)(b)'s parent is the nearest emitted ancestor: (1) if it has a chunk, else the section.
    b = labels["Section 18(1)(b)"]
    assert b.level == 2
    expected = labels["Section 18(1)"].chunk_id if "Section 18(1)" in labels else head.chunk_id
    assert b.parent_id == expected
    ids = [c.chunk_id for c in chunks]
    assert len(ids) == len(set(ids))
    assert {c.parent_id for c in chunks if c.parent_id} <= set(ids)
    by_id = {c.chunk_id: c for c in chunks}
    for c in chunks:
        if c.parent_id:
            parent = by_id[c.parent_id]
            assert c.legal_path.startswith(parent.legal_path) and parent.level < c.level


def test_chunk_positions_point_back_into_the_pages(
    act: tuple[list[Chunk], StructureReport], act_pages: list[dict[str, Any]]
) -> None:
    chunks, _ = act
    text_of = {p["page"]: p["text"] for p in act_pages}
    spanning = 0
    for c in chunks:
        if c.page_start == c.page_end:
            assert canonicalize(text_of[c.page_start][c.char_start : c.char_end]) == c.text
        else:
            spanning += 1
            assert c.page_start < c.page_end
            head = canonicalize(text_of[c.page_start][c.char_start :])
            assert c.text.startswith(head)
    assert spanning >= 1  # the fixture has sections running over a page break
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))


def test_ids_are_deterministic_across_runs(tmp_path: Path, act_pdf: Path) -> None:
    again = write_gazette_pdf(tmp_path / "again.pdf", act_items())
    first, _ = chunk(parse(act_pdf, "act"), "act", key="test_act", max_chars=400, min_chars=40)
    second, _ = chunk(parse(again, "act"), "act", key="test_act", max_chars=400, min_chars=40)
    assert [c.chunk_id for c in first] == [c.chunk_id for c in second]
    assert [c.label for c in first] == [c.label for c in second]
    assert [c.text for c in first] == [c.text for c in second]
    other_key, _ = chunk(parse(again, "act"), "act", key="other_act", max_chars=400, min_chars=40)
    assert not {c.chunk_id for c in first} & {c.chunk_id for c in other_key}


def test_section_18_of_the_act_and_rule_18_of_rules_differ(
    tmp_path: Path, act_pages: list[dict[str, Any]]
) -> None:
    rules = [Para(f"{n}. Rule number {n}.- {FILLER}") for n in range(1, 21)]
    rule_pages = parse(write_pdf(tmp_path / "rules.pdf", [rules[:10], rules[10:]]))
    # Same document key on purpose: only the unit kind tells them apart.
    act_chunks, _ = chunk(act_pages, "act", key="same_key")
    rule_chunks, report = chunk(rule_pages, "rules", key="same_key")
    assert report.numbered == [str(n) for n in range(1, 21)]
    section = next(c for c in act_chunks if c.label == "Section 18")
    rule = next(c for c in rule_chunks if c.label == "Rule 18")
    assert section.legal_path == rule.legal_path == "18"
    assert section.unit == "section" and rule.unit == "rule"
    assert section.chunk_id != rule.chunk_id
    assert not {c.chunk_id for c in act_chunks} & {c.chunk_id for c in rule_chunks}


def test_inline_act_titles_without_margin_notes(tmp_path: Path) -> None:
    """An Act printed without margin notes: ``N. Title.—`` inline."""
    page = [
        Para(f"1. Short title.—(1) This Act may be called the Test Act. {FILLER}"),
        Para(f"2. Definitions.—In this Act, {FILLER}"),
        Para(f"2A. Inserted definitions.—In this Act, {FILLER}"),
        Para(f"3. Application.—{FILLER}"),
    ]
    chunks, report = pdf_chunks(tmp_path, [page], doc_type="act")
    assert report.numbered == ["1", "2", "2A", "3"]
    titles = {c.label: c.title for c in top_level(chunks)}
    assert titles == {
        "Section 1": "Short title",
        "Section 2": "Definitions",
        "Section 2A": "Inserted definitions",
        "Section 3": "Application",
    }


# ------------------------------------------------------------------------------------ rules

PREAMBLE_ROWS = [
    "GOVERNMENT OF GUJARAT",
    "NOTIFICATION",
    "No. GH/V/82 of 2017. In exercise of the powers conferred by section 84 of the Real "
    "Estate (Regulation and Development) Act, 2016, the Government hereby makes the following "
    "rules, namely:-",
]

RULE_STYLES: dict[str, list[PageItem]] = {
    "hyphen": [
        *PREAMBLE_ROWS,
        "1. Short title and commencement.- (1) These rules may be called the Test Rules, 2017.",
        "(2) They shall come into force on the 1st May, 2017.",
        "2. Definitions.- In these rules, unless the context otherwise requires,-",
        '(a) "Act" means the Real Estate (Regulation and Development) Act, 2016;',
        '(b) "Form" means a form appended to these rules;',
        f"3. Information to be furnished by the promoter.- {FILLER}",
    ],
    "em_dash": [
        *PREAMBLE_ROWS,
        "1. Short title and commencement.— (1) These rules may be called the Test Rules, 2017.",
        "(2) They shall come into force on the 1st May, 2017.",
        "2. Definitions.—In these rules, unless the context otherwise requires,—",
        '(a) "Act" means the Real Estate (Regulation and Development) Act, 2016;',
        '(b) "Form" means a form appended to these rules;',
        f"3. Information to be furnished by the promoter.—{FILLER}",
    ],
    "title_on_next_line": [
        *PREAMBLE_ROWS,
        "1.",
        "Short title and commencement.",
        "(1) These rules may be called the Test Rules, 2017.",
        "(2) They shall come into force on the 1st May, 2017.",
        "2. Definitions",
        '(a) "Act" means the Real Estate (Regulation and Development) Act, 2016;',
        '(b) "Form" means a form appended to these rules;',
        "3. Information to be furnished by the",
        "promoter.—",
        FILLER,
    ],
    "rule_word": [
        *PREAMBLE_ROWS,
        "Rule 1. Short title and commencement.— (1) These rules may be called the Test Rules.",
        "(2) They shall come into force on the 1st May, 2017.",
        "Rule 2. Definitions.— In these rules, unless the context otherwise requires,—",
        '(a) "Act" means the Real Estate (Regulation and Development) Act, 2016;',
        '(b) "Form" means a form appended to these rules;',
        f"Rule 3. Information to be furnished by the promoter.— {FILLER}",
    ],
    "rule_word_upper": [
        *PREAMBLE_ROWS,
        "RULE 1",
        "Short title and commencement",
        "(1) These rules may be called the Test Rules, 2017.",
        "(2) They shall come into force on the 1st May, 2017.",
        "RULE 2",
        "Definitions",
        '(a) "Act" means the Real Estate (Regulation and Development) Act, 2016;',
        '(b) "Form" means a form appended to these rules;',
        "RULE 3",
        "Information to be furnished by the promoter",
        FILLER,
    ],
}


def test_a_number_and_a_dash_before_the_text_heads_a_rule_whose_title_is_elsewhere(
    tmp_path: Path,
) -> None:
    """ "2.—The Authority shall ...": the gazette print whose titles stand in a margin (or an
    OCR'd page that lost them) heads each rule with its number, a dash and the text; "3. — of
    the Act" and "4. — 25" stay prose."""
    rows: list[PageItem] = [
        *PREAMBLE_ROWS,
        "1.—(1) These rules may be called the Test Rules, 2017.",
        "(2) They shall come into force on the 1st May, 2017.",
        f"2. — The Authority shall decide the application within thirty days. {FILLER}",
        "as provided in rule 1. — of the Act, and the fee paid under rule",
        "4. — 25 per cent of the fee shall be refunded.",
        f"3.—The promoter shall display the registration number. {FILLER}",
    ]
    chunks, report = pdf_chunks(tmp_path, [rows], max_chars=120, min_chars=10)
    assert report.numbered == ["1", "2", "3"]
    assert report.gaps == [] and report.duplicates == []
    assert [c.label for c in top_level(chunks)] == ["Preamble", "Rule 1", "Rule 2", "Rule 3"]
    assert "25 per cent" in by_label(chunks)["Rule 2"].text


@pytest.mark.parametrize("style", list(RULE_STYLES))
def test_rule_heading_styles(tmp_path: Path, style: str) -> None:
    chunks, report = pdf_chunks(tmp_path, [RULE_STYLES[style]], max_chars=120, min_chars=10)
    assert report.numbered == ["1", "2", "3"]
    assert report.gaps == [] and report.duplicates == []
    tops = top_level(chunks)
    assert [c.label for c in tops] == ["Preamble", "Rule 1", "Rule 2", "Rule 3"]
    assert [c.title for c in tops[1:]] == [
        "Short title and commencement",
        "Definitions",
        "Information to be furnished by the promoter",
    ]
    assert all(c.unit == "rule" for c in tops[1:])
    labels = by_label(chunks)
    # the preamble's "section 84 ... 2016" is not a rule, and stays in the preamble
    assert "section 84" in labels["Preamble"].text
    # sub-rules and clauses are labelled under their rule
    assert labels["Rule 1(2)"].text == "(2) They shall come into force on the 1st May, 2017."
    assert labels["Rule 1(2)"].parent_id == labels["Rule 1"].chunk_id
    assert labels["Rule 2(b)"].text.startswith('(b) "Form" means')
    assert labels["Rule 2(b)"].parent_id == labels["Rule 2"].chunk_id
    act = [c.label for c in chunks if '"Act" means the Real Estate' in c.text]
    assert act in (["Rule 2"], ["Rule 2(a)"])  # the first clause may stay in the head piece


def _rules_up_to_9() -> list[list[PageItem]]:
    rows: list[PageItem] = [f"{n}. Rule {n} heading.- {FILLER}" for n in range(1, 9)]
    rows += [
        "9. Agreement for sale.- (1) The agreement for sale shall be in the form of Annexure A "
        "and shall contain,-",
        f"(a) the particulars of the apartment. {FILLER}",
        f"(b) the payment plan. {FILLER}",
        f"(2) Any clause inconsistent with the Act shall be void. {FILLER}",
    ]
    return [rows[:5], rows[5:]]


def test_rule_9_labels_and_parents(tmp_path: Path) -> None:
    chunks, report = pdf_chunks(tmp_path, _rules_up_to_9(), max_chars=400, min_chars=40)
    assert report.numbered == [str(n) for n in range(1, 10)]
    labels = by_label(chunks)
    rule9 = [c.label for c in chunks if c.section_label == "Rule 9"]
    in_order(rule9, ["Rule 9", "Rule 9(1)(b)", "Rule 9(2)"], optional=["Rule 9(1)", "Rule 9(1)(a)"])
    assert labels["Rule 9(1)(b)"].legal_path == "9(1)(b)"
    assert labels["Rule 9(1)(b)"].text.startswith("(b) the payment plan.")
    assert labels["Rule 9(2)"].parent_id == labels["Rule 9"].chunk_id
    assert labels["Rule 9"].text.startswith("9. Agreement for sale.- (1) The agreement")
    assert all(c.title == "Agreement for sale" for c in chunks if c.section_label == "Rule 9")


def test_first_clause_of_a_split_rule_has_its_own_label(tmp_path: Path) -> None:
    chunks, _ = pdf_chunks(tmp_path, _rules_up_to_9(), max_chars=400, min_chars=40)
    labels = by_label(chunks)
    assert "Rule 9(1)(a)" in labels
    assert labels["Rule 9(1)(a)"].text.startswith("(a) the particulars of the apartment.")
    # The head keeps the rule's heading and lead-in, not the clause.
    assert labels["Rule 9"].text.startswith("9. Agreement for sale.-")
    assert "(a) the particulars" not in labels["Rule 9"].text


def test_head_piece_respects_max_chars_when_it_can_be_split(tmp_path: Path) -> None:
    rows: list[PageItem] = [
        "1. Short title.- These rules may be called the Test Rules, 2017.",
        "2. Disclosures.- The promoter shall disclose the following, namely:-",
        f"(a) the sanctioned plans. {FILLER}",
        f"(b) the approvals. {FILLER}",
        f"(c) the schedule. {FILLER}",
    ]
    max_chars = 320
    chunks, _ = pdf_chunks(tmp_path, [rows], max_chars=max_chars, min_chars=40)
    rule2 = [c for c in chunks if c.section_label == "Rule 2"]
    # every marker-delimited piece fits on its own, so every chunk can
    assert len(rule2) >= 3
    assert all(len(c.text) <= max_chars for c in rule2), [(c.label, len(c.text)) for c in rule2]


DEFINITIONS = [
    "1. Short title.- These rules may be called the Test Rules, 2017.",
    "2. Definitions.- In these rules, unless the context otherwise requires,-",
    *[f'({ch}) "term {ch}" means the meaning of term {ch} in the Act;' for ch in "abcdefgh"],
    '(i) "interest" means the rate of interest prescribed under clause (za) of section 2;',
    '(j) "section" means a section of the Act.',
    "3. Fees.- The fees shall be paid online.",
]


def test_i_after_h_is_clause_i(tmp_path: Path) -> None:
    chunks, _ = pdf_chunks(tmp_path, [DEFINITIONS], max_chars=80, min_chars=5)
    labels = by_label(chunks)
    rule2 = [c.label for c in chunks if c.section_label == "Rule 2"]
    in_order(rule2, ["Rule 2", *[f"Rule 2({ch})" for ch in "bcdefghij"]], optional=["Rule 2(a)"])
    clause_i = labels["Rule 2(i)"]
    assert clause_i.text.startswith('(i) "interest"')
    assert clause_i.legal_path == "2(i)"
    assert clause_i.level == 1 and clause_i.parent_id == labels["Rule 2"].chunk_id
    assert not any("(h)(i)" in label for label in labels)


def test_i_followed_by_ii_is_a_sub_clause(tmp_path: Path) -> None:
    rows: list[PageItem] = [
        "1. Short title.- These rules may be called the Test Rules, 2017.",
        "2. Disclosures.- The promoter shall disclose,-",
        "(a) the sanctioned plans, namely:-",
        "(i) the layout plan of the whole project;",
        "(ii) the building plans of each tower;",
        "(iii) the specifications of the apartments;",
        "(b) the stage-wise schedule of completion of the project;",
        "(c) the names of the contractors of the project;",
        "3. Fees.- The fees shall be paid online.",
    ]
    chunks, _ = pdf_chunks(tmp_path, [rows], max_chars=60, min_chars=5)
    labels = by_label(chunks)
    rule2 = [c.label for c in chunks if c.section_label == "Rule 2"]
    in_order(
        rule2,
        ["Rule 2", "Rule 2(a)(ii)", "Rule 2(a)(iii)", "Rule 2(b)", "Rule 2(c)"],
        optional=["Rule 2(a)", "Rule 2(a)(i)"],
    )
    assert "Rule 2(i)" not in labels and "Rule 2(ii)" not in labels
    sub = labels["Rule 2(a)(ii)"]
    assert sub.level == 2 and sub.legal_path == "2(a)(ii)"
    assert sub.text == "(ii) the building plans of each tower;"
    parent = labels["Rule 2(a)"] if "Rule 2(a)" in labels else labels["Rule 2"]
    assert sub.parent_id == parent.chunk_id
    assert labels["Rule 2(b)"].parent_id == labels["Rule 2"].chunk_id
    assert labels["Rule 2(b)"].level == 1


def test_short_pieces_are_merged_not_lost(tmp_path: Path) -> None:
    rows: list[PageItem] = [
        "1. Short title.- These rules may be called the Test Rules, 2017.",
        f"2. Disclosures.- (1) The promoter shall disclose the plans. {FILLER}",
        "(2) Short.",
        "(3) Also short.",
        f"(4) The Authority may seek further information. {FILLER}",
        "3. Fees.- The fees shall be paid online.",
    ]
    chunks, _ = pdf_chunks(tmp_path, [rows], max_chars=300, min_chars=60)
    rule2 = [c for c in chunks if c.section_label == "Rule 2"]
    labels = [c.label for c in rule2]
    assert labels[-1] == "Rule 2(4)"
    # (2) and (3) are below min_chars: merged into the piece before them (the one holding (1)),
    # their text kept, and no chunk of their own.
    holder = next(c for c in rule2 if "(1) The promoter shall disclose" in c.text)
    assert holder.label in {"Rule 2", "Rule 2(1)-(3)"}
    assert holder.text.endswith("(2) Short.\n(3) Also short.")
    assert not any(c.text.startswith(("(2)", "(3)")) for c in rule2)
    every = " ".join(c.text for c in chunks)
    for row in rows:
        assert flat(str(row)) in flat(every)


def test_merged_siblings_get_a_range_label(tmp_path: Path) -> None:
    rows: list[PageItem] = [
        "1. Short title.- These rules may be called the Test Rules, 2017.",
        f"2. Disclosures.- (1) The promoter shall disclose the plans. {FILLER}",
        f"(2) The promoter shall disclose the approvals. {FILLER}",
        "(3) Short.",
        "(4) Also short.",
        "3. Fees.- The fees shall be paid online.",
    ]
    chunks, _ = pdf_chunks(tmp_path, [rows], max_chars=300, min_chars=60)
    labels = by_label(chunks)
    in_order(
        [c.label for c in chunks if c.section_label == "Rule 2"],
        ["Rule 2", "Rule 2(2)-(4)"],
        optional=["Rule 2(1)"],
    )
    assert labels["Rule 2(2)-(4)"].legal_path == "2(2)"
    assert labels["Rule 2(2)-(4)"].text.startswith("(2) The promoter shall disclose the approvals.")
    assert labels["Rule 2(2)-(4)"].text.endswith("(3) Short.\n(4) Also short.")


# ------------------------------------------------------------------------ forms and annexures


def test_forms_and_annexures_after_the_last_rule(tmp_path: Path) -> None:
    pages: list[list[PageItem]] = [
        [
            "1. Short title.- These rules may be called the Test Rules, 2017.",
            "2. Definitions.- In these rules the Act means the Real Estate Act, 2016.",
            "3. Application.- The promoter shall apply in Form A with the documents listed "
            "in Annexure A.",
            "FORM A",
            "[See rule 3]",
            "APPLICATION FOR REGISTRATION OF PROJECT",
            "1. Name of the promoter:",
            "2. Address of the promoter:",
            "3. Details of the project:",
            "4. Signature:",
        ],
        [
            "FORM B",
            "[See rule 3]",
            "DECLARATION",
            "1. I hereby declare that the above is true.",
            "2. Place:",
            "ANNEXURE A",
            "MODEL AGREEMENT FOR SALE",
            "1. The Promoter agrees to sell.",
            "2. The Allottee agrees to buy.",
            "4. Possession shall be handed over.",
            "5. Definitions.- In this agreement the Act means the Real Estate Act, 2016.",
        ],
    ]
    chunks, report = pdf_chunks(tmp_path, pages)
    assert report.numbered == ["1", "2", "3"]
    assert report.gaps == [] and report.duplicates == []
    tops = top_level(chunks)
    assert [c.label for c in tops] == [
        "Rule 1",
        "Rule 2",
        "Rule 3",
        "Form A",
        "Form B",
        "Annexure A",
    ]
    assert [c.unit for c in tops[3:]] == ["form", "form", "form"]
    labels = by_label(chunks)
    assert flat(labels["Rule 3"].text).endswith(
        "listed in Annexure A."
    )  # a mention is not a heading
    assert "1. Name of the promoter:\n2. Address" in labels["Form A"].text
    assert labels["Form B"].page_start == 2
    assert labels["Annexure A"].title == "MODEL AGREEMENT FOR SALE"
    assert "5. Definitions.- In this agreement" in labels["Annexure A"].text
    assert all(c.unit != "rule" for c in chunks if c.page_start == 2)


def test_long_form_is_cut_into_parts_at_row_boundaries(tmp_path: Path) -> None:
    form_rows: list[PageItem] = [
        f"Particular number {n} of the project to be given:" for n in range(1, 41)
    ]
    pages: list[list[PageItem]] = [
        ["1. Short title.- These rules may be called the Test Rules, 2017.", "FORM A", *form_rows]
    ]
    chunks, _ = pdf_chunks(tmp_path, pages, max_chars=400)
    form = [c for c in chunks if c.section_label == "Form A"]
    assert len(form) >= 3
    assert form[0].label == "Form A"
    assert [c.label for c in form[1:]] == [f"Form A (part {n})" for n in range(2, len(form) + 1)]
    assert all(c.text.split("\n", 1)[0].endswith(":") or c is form[0] for c in form)
    joined = "\n".join(c.text for c in form)
    assert all(str(row) in joined for row in form_rows)


def test_a_model_agreement_is_read_by_its_own_numbered_clauses(tmp_path: Path) -> None:
    """A long form written in numbered paragraphs ("12. DEFECT LIABILITY:") is cut along them:
    each paragraph a unit of its own (cited and scored as ``Annexure A para 12``), a long one
    in parts; a paragraph printed with only its sub-numbers ("4.1 ...") opens at its first; a
    number the print lost leaves its text with the paragraph before; a list that starts again
    at 1 (the witnesses) or a number out of the run (a year) is left where it stands."""
    clause_rows: list[PageItem] = []
    for n in [1, 2, 3, 4, 6, 7]:  # clause 5's number was not printed at a row's start
        clause_rows.append(f"{n}. CLAUSE HEADING {n}:" if n != 4 else "4.1 The first of four.")
        if n == 3:
            clause_rows += ["The promoter shall hand over the records in the year", "2019. (sic)"]
        if n == 4:
            clause_rows += ["3.1 A sub-paragraph out of its place.",
                            "CLAUSE HEADING 5: its number lost in print."]  # fmt: skip
        lines = 12 if n == 6 else 1
        clause_rows += [f"Text of clause {n}, line {i}, as the parties agreed it." for i in
                        range(lines)]  # fmt: skip
    clause_rows += ["WITNESSES:", "1. Signature ________", "2. Signature ________"]
    pages: list[list[PageItem]] = [[
        "1. Short title.- These rules may be called the Test Rules, 2017.",
        "2. Agreement for sale.- The agreement shall be in the form of Annexure A.",
        "ANNEXURE A", "AGREEMENT FOR SALE", "This Agreement is made between the parties.",
        *clause_rows,
    ]]  # fmt: skip
    chunks, _ = pdf_chunks(tmp_path, pages, max_chars=400)
    form = [c for c in chunks if c.unit == "form"]
    assert [c.section_label for c in form] == [
        "Annexure A", "Annexure A para 1", "Annexure A para 2", "Annexure A para 3",
        "Annexure A para 4", "Annexure A para 6", "Annexure A para 6", "Annexure A para 7",
    ]  # fmt: skip
    assert [c.label for c in form][5:7] == ["Annexure A para 6", "Annexure A para 6 (part 2)"]
    by_label = {c.label: c for c in form}
    assert by_label["Annexure A para 4"].text.startswith("4.1 The first of four.")
    assert "3.1 A sub-paragraph" in by_label["Annexure A para 4"].text
    assert "CLAUSE HEADING 5" in by_label["Annexure A para 4"].text
    assert "2019. (sic)" in by_label["Annexure A para 3"].text
    assert "WITNESSES:" in by_label["Annexure A para 7"].text
    assert "1. Signature" in by_label["Annexure A para 7"].text
    assert by_label["Annexure A para 1"].parent_id == by_label["Annexure A"].chunk_id
    clause_6 = by_label["Annexure A para 6"]
    assert by_label["Annexure A para 6 (part 2)"].parent_id == clause_6.chunk_id
    joined = "\n".join(c.text for c in form)
    assert all(str(row) in joined for row in clause_rows)


def test_a_form_with_a_short_numbered_list_is_not_cut_by_it(tmp_path: Path) -> None:
    rows: list[PageItem] = [f"Particular {n} of the project to be stated here:" for n in range(30)]
    rows[5:5] = ["1. Name of the applicant", "2. Address", "3. Telephone"]
    pages: list[list[PageItem]] = [
        ["1. Short title.- These rules may be called the Test Rules, 2017.", "FORM A", *rows]
    ]
    chunks, _ = pdf_chunks(tmp_path, pages, max_chars=400)
    assert {c.section_label for c in chunks if c.unit == "form"} == {"Form A"}


# ----------------------------------------------------------------------------------- FAQ


def test_faq_bold_question_rows(tmp_path: Path) -> None:
    rows: list[PageItem] = [
        ("FREQUENTLY ASKED QUESTIONS", 72, 100, 12, True),
        ("This document answers common questions about the Act of 2016.", 72, 122, 10, False),
        ("1. What is the purpose of the Real Estate", 72, 144, 10, True),
        ("(Regulation and Development) Act, 2016?", 72, 158, 10, True),
        ("The Act protects home buyers and promotes the real estate sector.", 72, 172, 10, False),
        ("2. When did the Act come into force?", 72, 194, 10, True),
        ("Sections 2, 20 to 39 came into force on 1 May 2016.", 72, 208, 10, False),
        ("3. Who must register a project?", 72, 230, 10, True),
        ("Every promoter of a project above 500 square metres.", 72, 244, 10, False),
        ("4. Must agents register?", 72, 266, 10, True),
        ("Yes. 5. Agents must register under section 9.", 72, 280, 10, False),
    ]
    chunks, report = pdf_chunks(tmp_path, [rows], doc_type="faq")
    assert report.numbered == ["1", "2", "3", "4"]
    tops = top_level(chunks)
    assert [c.label for c in tops] == [
        "Preamble",
        "Question 1",
        "Question 2",
        "Question 3",
        "Question 4",
    ]
    assert tops[1].title == (
        "What is the purpose of the Real Estate (Regulation and Development) Act, 2016?"
    )
    assert tops[2].title == "When did the Act come into force?"
    assert all(c.unit == "question" for c in tops[1:])
    assert tops[1].text.endswith("promotes the real estate sector.")
    assert tops[4].text.endswith("Agents must register under section 9.")


def test_faq_rows_that_are_not_bold_are_not_questions(tmp_path: Path) -> None:
    rows: list[PageItem] = [
        ("1. What is the Act?", 72, 100, 10, True),
        ("It is the Act.", 72, 114, 10, False),
        ("2. Is this a question in plain type?", 72, 136, 10, False),
        ("It is part of the answer to question 1.", 72, 150, 10, False),
    ]
    chunks, report = pdf_chunks(tmp_path, [rows], doc_type="faq")
    assert report.numbered == ["1"]
    assert [c.label for c in chunks] == ["Question 1"]
    assert chunks[0].text.endswith("part of the answer to question 1.")


# ----------------------------------------------------------------------------- pages and text


def test_other_script_rows_are_removed_from_english_documents(tmp_path: Path) -> None:
    rows: list[PageItem] = [
        "1. Short title.- These rules may be called the Test Rules, 2017.",
        "भारत का राजपत्र असाधारण",
        "2. Definitions.- In these rules the Act means the Real Estate Act, 2016.",
    ]
    path = write_pdf(tmp_path / "bilingual.pdf", [rows])
    pages = parse(path)
    assert [r["reason"] for r in pages[0]["removed"]] == ["other_language"]
    assert re.search(r"[\u0900-\u097F]", pages[0]["removed"][0]["text"])
    chunks, _ = chunk(pages, "rules")
    assert [c.label for c in chunks] == ["Rule 1", "Rule 2"]
    assert not any(re.search(r"[\u0900-\u097F]", c.text) for c in chunks)


def test_gazette_helper_puts_margin_notes_level_with_their_section() -> None:
    pages = gazette_pages([Section("1", "Short title.", ["This Act may be called the Act."])])
    body = [line for line in pages[0] if line[0].startswith("1. ")]
    note = [line for line in pages[0] if line[0] == "Short title."]
    assert len(body) == 1 and len(note) == 1
    assert body[0][2] == note[0][2]  # same y
    assert note[0][1] > body[0][1] + 300  # in the right margin


def test_short_clause_rows_with_vowelless_markers_are_kept(tmp_path: Path) -> None:
    rows: list[PageItem] = [
        "1. Short title.- These rules may be called the Test Rules, 2017.",
        "2. Amenities.- The promoter shall disclose the following common amenities,-",
        *[
            f"({numeral}) amenity number {n};"
            for n, numeral in enumerate(
                [
                    "i",
                    "ii",
                    "iii",
                    "iv",
                    "v",
                    "vi",
                    "vii",
                    "viii",
                    "ix",
                    "x",
                    "xi",
                    "xii",
                    "xiii",
                    "xiv",
                ],
                start=1,
            )
        ],
        "(xv) lifts;",
        "(xvi) power back-up.",
    ]
    path = write_pdf(tmp_path / "amenities.pdf", [rows])
    pages = parse(path)
    assert pages[0]["removed"] == []
    chunks, _ = chunk(pages, "rules")
    assert "(xv) lifts;" in "\n".join(c.text for c in chunks)


def test_chunks_on_one_legal_path_get_distinct_ids(tmp_path: Path) -> None:
    """A sub-rule number printed twice (a gazette's misprint: "(2)" again where "(3)" was
    meant), the rule too long for one chunk: "Rule 2(2)" and the range "Rule 2(2)-(6)" (the
    second "(2)" with the short sub-rules after it) both sit on legal path "2(2)". Their ids
    differ (a chunk's place among its path's chunks is part of its id: two chunks with one id
    failed a state's whole partition), and the first keeps the id a path always had."""
    first: list[PageItem] = [
        *PREAMBLE_ROWS,
        f"1. Short title.-(1) {FILLER}",
        f"2. Rule with a repeated sub-rule.-(1) {FILLER}",
        f"(2) {FILLER}",
        *[FILLER] * 4,
    ]
    second: list[PageItem] = [
        f"(2) {FILLER}",
        *[FILLER] * 4,
        *(f"({n}) The promoter shall comply, case {n}." for n in range(3, 7)),
        f"3. Next rule.-(1) {FILLER}",
    ]
    chunks, report = pdf_chunks(tmp_path, [first, second])
    on_path = [c for c in chunks if c.legal_path == "2(2)"]
    assert [c.label for c in on_path] == ["Rule 2(2)", "Rule 2(2)-(6)"], [
        (c.label, c.legal_path) for c in chunks
    ]
    ids = [c.chunk_id for c in chunks]
    assert len(ids) == len(set(ids)), "two chunks share an id"
    assert on_path[0].chunk_id == chunk_id("doc", "rule", "2(2)")
    assert on_path[1].chunk_id == chunk_id("doc", "rule", "2(2)", 1)
    assert "case 6." in on_path[1].text


def test_faq_questions_are_known_by_their_layout_not_only_by_a_question_mark(
    tmp_path: Path,
) -> None:
    """A numbered bold question worded without "?" ("3. Registration of projects with phases")
    is a question by its layout (bold, "N.", its plain answer after it): all five questions
    come out in sequence, instead of a gap at 3 that kept the whole FAQ page by page."""
    items: list[PageItem] = [Para("Answers to questions on the Act", bold=False)]
    for n in range(1, 6):
        question = "Registration of projects with phases" if n == 3 else f"Is rule {n} in force?"
        items += [Para(f"{n}. {question}", bold=True), Para(f"Answer: {FILLER}")]
    path = write_pdf(tmp_path / "faq.pdf", [items])
    chunks, report = chunk(parse(path), "faq")
    assert report.structure_ok, report.checks
    assert report.numbered == ["1", "2", "3", "4", "5"]
    assert by_label(top_level(chunks))["Question 3"].title == (
        "Registration of projects with phases"
    )
    # a bold line with no number, or a number with no plain answer after it, is no question
    plain: list[PageItem] = [Para("Answers", bold=True), Para(f"Answer: {FILLER}")]
    chunks, report = chunk(parse(write_pdf(tmp_path / "none.pdf", [plain])), "faq")
    assert report.numbered == []

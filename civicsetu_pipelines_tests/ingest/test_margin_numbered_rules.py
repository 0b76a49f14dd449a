"""Rules whose titles stand in the LEFT margin and whose numbers hang in a narrow column of their
own, in a text layer that is someone's OCR (``(l)`` for ``(1)``, ``2,`` for ``2.``, ``I0.`` for
``10.``, "fumish").

A state's general rules print each rule's title in the left margin ("Information and documents
to be furnished by the promoter for registration of project", wrapped over a few lines) and its
number as a hanging number ("3.") between that title and the body, level with the body's first
line. The real document is not in the corpus: :func:`margin_numbered_pages` writes an equivalent
with PyMuPDF (37 rules over several pages, running header and footer, OCR's confusions in the
numbering and the words), and the tests read it as a user's ``civicsetu inspect`` would.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from civicsetu_pipelines.ingest.inspection import inspect_pdf
from civicsetu_pipelines.ingest.legal_structure import build_chunks, parse_tree, read_structure
from civicsetu_pipelines.ingest.ocr_numbers import ocr_read_heading, parse_read_flag, read_digits
from civicsetu_pipelines_tests.ingest.test_legal_structure import FILLER, PREAMBLE_ROWS, parse
from civicsetu_pipelines_tests.pdfgen import (
    PAGE_WIDTH,
    Line,
    PageItem,
    Para,
    text_width,
    wrap,
    write_pdf,
)

CLI = [sys.executable, "-m", "civicsetu_pipelines.cli"]

# The page: a left margin for the titles, a narrow column for the numbers, then the body.
TITLE_X = 40.0
TITLE_WIDTH = 92.0  # narrower than a fifth of the page
TITLE_SIZE = 8.5
TITLE_STEP = 10.0
NUMBER_GAP = 8.0  # the number column ends this far left of the body
BODY_X = 160.0
BODY_WIDTH = 385.0
CLAUSE_INDENT = 14.0
BODY_SIZE = 10.0
BODY_STEP = 13.0
TOP = 100.0
BOTTOM = 735.0
RULE_SPACE = 3.0  # between the end of one rule (its body or its title) and the next


@dataclass(frozen=True)
class MarginRule:
    """A rule: its number as printed (an OCR'd layer's "2," or "I0."), its margin title and
    its body, paragraph by paragraph (a clause, "\\t(a) ...", is indented)."""

    printed: str
    title: str
    paragraphs: tuple[str, ...] = field(default_factory=tuple)


TITLES = [
    "Short title and commencement.",
    "Definitions.",
    "Information and documents to be furnished by the promoter for registration of project.",
    "Additional disclosure by promoters of ongoing projects.",
    "Separate account for real estate project.",
    "Grant or rejection of registration of project.",
    "Extension of registration of project.",
    "Revocation of registration of project.",
    "Agreement for sale.",
    "Application for registration of real estate agents.",
    "Grant of registration to real estate agents.",
    "Validity of registration of real estate agents.",
    "Renewal of registration of real estate agent.",
    "Revocation of registration of real estate agent.",
    "Other functions of a real estate agent.",
    "Maintenance of books of account, records and documents by real estate agents.",
    "Rate of interest payable by the promoter and the allottee.",
    "Timelines for refund.",
    "Information to be published by the Authority on its website.",
    "Salary and allowances payable to the Chairperson and Members of the Authority.",
    "Administrative powers of the Chairperson of the Authority.",
    "Additional functions of the Authority.",
    "Filing of complaint with the Authority and inquiry by the Authority.",
    "Filing of complaint with the adjudicating officer and inquiry by the adjudicating officer.",
    "Manner of filing an appeal with the Appellate Tribunal.",
    "Salary and allowances payable to the Chairperson and Members of the Appellate Tribunal.",
    "Other terms and conditions of service of the Chairperson and Members of the Tribunal.",
    "Procedure for inquiry of charges against the Chairperson and Members.",
    "Salary and allowances payable to the officers and employees of the Appellate Tribunal.",
    "Additional powers of the Appellate Tribunal.",
    "Administrative powers of the Chairperson of the Appellate Tribunal.",
    "Manner of implementation of order, direction or decision of the adjudicating officer.",
    "Budget and accounts of the Authority.",
    "Annual report of the Authority.",
    "Manner of publication of the annual report.",
    "Report and returns.",
    "Fees for inspection of documents.",
]
# How the OCR'd layer printed some rule numbers: a comma for the full stop, I or l for 1, O for 0.
PRINTED = {2: "2,", 10: "I0.", 11: "l1.", 17: "l7.", 20: "2O.", 25: "25,", 30: "3O.", 31: "3l."}

SENTENCE = (
    "The promoter shall fumish such information and documents as the Authority rnay "
    "specify by regulations, in such form and manner and within such time as may be "
    "specified, and shall upload the same on the website of the Authority"
)


def _rule_paragraphs(number: int) -> tuple[str, ...]:
    """A rule's body: sub-rules "(l)" (OCR's (1)), "(2)", "(3)" with clauses "(a)", "(b)"; the
    definitions run (a) to (m) through a real clause (l); one rule has 22 sub-rules, "(2l)" (OCR's
    (21)) among them; some rules are a single paragraph."""
    if number == 1:
        return (
            "(l) These rules may be called the Test State Real Estate (Regulation and "
            "Development) (General) Rules, 2017.",
            "(2) They shall come into force on the date of their publication in the Official "
            "Gazette.",
        )
    if number == 2:
        terms = "abcdefghijklm"
        return (
            "(l) In these rules, unless the context otherwise requires,-",
            *(
                f'\t({t}) "term {t}" means the term {t} as defined in section {k + 2} of the '
                "Act, read with the rules and regulations made under it and the orders of the "
                "Authority issued from time to time, and with the explanations that the "
                "Government may publish;"
                for k, t in enumerate(terms)
            ),
            "(2) Words and expressions used herein and not defined but defined in the Act shall "
            "have the meanings respectively assigned to them in the Act.",
        )
    if number == 22:
        return tuple(
            f"({'2l' if k == 21 else k if k != 1 else 'l'}) The Authority shall perform function "
            f"number {k} assigned to it by the Government from time to time, and shall report "
            "on it to the Government in its annual report with the particulars of its work."
            for k in range(1, 23)
        )
    if number % 4 == 0:
        return (f"{SENTENCE} for the purposes of rule {number}.",)
    paragraphs = [f"(l) {SENTENCE}, namely:-"]
    paragraphs += [f"\t({c}) the particulars of item {c} of the project, with its documents;"
                   for c in "abc"[: 1 + number % 3]]  # fmt: skip
    paragraphs.append(f"(2) {SENTENCE} within thirty days of the receipt of the application.")
    if number % 3 == 0:
        paragraphs.append(f"(3) {SENTENCE} before the end of each quarter.")
    return tuple(paragraphs)


def margin_rules() -> list[MarginRule]:
    return [
        MarginRule(PRINTED.get(n, f"{n}."), title, _rule_paragraphs(n))
        for n, title in enumerate(TITLES, start=1)
    ]


def margin_numbered_pages(rules: list[MarginRule], *, jitter: float = 0.6) -> list[list[Line]]:
    """Lay the rules out: the preamble across the body column, then each rule with its title
    wrapped in the left margin and its number in a column of its own, both level with the
    body's first line (the number ``jitter`` points lower, as an OCR'd layer places a word);
    running header and footer on every page."""
    pages: list[list[Line]] = []
    current: list[Line] = []
    y = TOP

    def new_page() -> None:
        nonlocal current, y
        pages.append(current)
        current, y = [], TOP

    heading = "THE TEST STATE REAL ESTATE (REGULATION AND DEVELOPMENT) (GENERAL) RULES, 2017"
    current.append((heading, BODY_X, y, BODY_SIZE, True))
    y += 2 * BODY_STEP
    preamble = (
        "No. GH/V/82 of 2017.-In exercise of the powers conferred by section 84 of the Real "
        "Estate (Regulation and Development) Act, 2016 (16 of 2016), the Government of the Test "
        "State hereby makes the following rules, namely:-"
    )
    for piece in wrap(preamble, BODY_WIDTH, BODY_SIZE):
        current.append((piece, BODY_X, y, BODY_SIZE, False))
        y += BODY_STEP
    y += BODY_STEP
    for rule in rules:
        title = wrap(rule.title, TITLE_WIDTH, TITLE_SIZE)
        body: list[tuple[str, float]] = []
        for paragraph in rule.paragraphs:
            indent = CLAUSE_INDENT if paragraph.startswith("\t") else 0.0
            for piece in wrap(paragraph.strip(), BODY_WIDTH - indent, BODY_SIZE):
                body.append((piece, BODY_X + indent))
        if y + max(len(title) * TITLE_STEP, 2 * BODY_STEP) > BOTTOM:
            new_page()
        number_x = BODY_X - NUMBER_GAP - text_width(rule.printed, BODY_SIZE)  # right-aligned
        current.append((rule.printed, number_x, y + jitter, BODY_SIZE, False))
        for k, piece in enumerate(title):
            current.append((piece, TITLE_X, y + k * TITLE_STEP, TITLE_SIZE, False))
        title_end = y + len(title) * TITLE_STEP
        for piece, x in body:
            if y + BODY_STEP > BOTTOM:
                new_page()
                title_end = y
            current.append((piece, x, y, BODY_SIZE, False))
            y += BODY_STEP
        y = max(y, title_end) + RULE_SPACE
    new_page()
    for number, page in enumerate(pages, start=1):
        page.append(("TEST STATE GAZETTE, EXTRAORDINARY, 04-05-2017", BODY_X, 50.0, 8.0, False))
        page.append((f"Page {number} of {len(pages)}", PAGE_WIDTH / 2 - 20, 800.0, 8.0, False))
    return pages


@pytest.fixture(scope="module")
def margin_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("margin") / "margin_numbered_rules.pdf"
    return write_pdf(path, margin_numbered_pages(margin_rules()))


# ------------------------------------------------------------------------------------ the rules


def _rules_of(found: dict[str, Any]) -> list[dict[str, Any]]:
    return [u for u in found["units"] if u["label"].startswith("Rule ")]


def test_rules_numbered_in_the_margin_are_read_in_sequence_with_their_titles(
    margin_pdf: Path,
) -> None:
    """The hanging number is the rule's number, the margin title (wrapped over up to four
    lines, the next rule's title right below it) the rule's title, the body its text. Before,
    29 of the 37 were found: "2," "I0." "l1." "l7." "2O." "25," "3O." "3l." were no numbers,
    and "l7." went into the margin with the title beside it; two titles one under the other
    were one."""
    found = inspect_pdf(margin_pdf, kind="rules")
    rules = _rules_of(found)
    numbers = [int(u["number"]) for u in rules]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    assert len(rules) >= 35, [u["label"] for u in rules]
    titled = [u for u in rules if u["title"] == TITLES[int(u["number"]) - 1].rstrip(".")]
    assert len(titled) >= 35, [(u["label"], u["title"]) for u in rules if u not in titled]
    by_label = {u["label"]: u for u in rules}
    assert by_label["Rule 3"]["title"] == (
        "Information and documents to be furnished by the promoter for registration of project"
    )
    assert (
        by_label["Rule 21"]["title"] == "Administrative powers of the Chairperson of the Authority"
    )
    assert found["structure_ok"], found["checks"]
    assert found["coverage"] >= 0.99


def test_ocr_confused_rule_numbers_are_read_where_the_sequence_expects_them_and_recorded(
    margin_pdf: Path,
) -> None:
    found = inspect_pdf(margin_pdf, kind="rules")
    by_label = {u["label"]: u for u in _rules_of(found)}
    for number, printed in PRINTED.items():
        unit = by_label[f"Rule {number}"]
        assert f"ocr_number_read:{printed}->{number}." in unit["flags"], unit
    assert not any(f.startswith("ocr_number_read") for f in by_label["Rule 3"]["flags"])
    reads = {(r["label"], r["printed"], r["read"]) for r in found["ocr_number_reads"]}
    assert ("Rule 2", "2,", "2.") in reads and ("Rule 10", "I0.", "10.") in reads
    assert any(label.startswith("Rule 22(21)") and printed == "(2l)" for label, printed, _ in reads)


def test_sub_rule_one_is_read_from_an_ocr_l_and_a_clause_l_stays_a_letter(margin_pdf: Path) -> None:
    pages = parse(margin_pdf)
    structure = read_structure(pages, "rules")
    units = {u.label: u for u in structure.decoded.units}
    tree = parse_tree(structure.stream, units["Rule 3"])
    assert [(n.marker, n.printed) for n in tree.children] == [
        ("(1)", "(l)"), ("(2)", None), ("(3)", None)
    ]  # fmt: skip
    assert [n.marker for n in tree.children[0].children] == ["(a)"]
    # the definitions: "(l)" opens sub-rule (1); "(l)" after "(k)" is clause l
    definitions = parse_tree(structure.stream, units["Rule 2"])
    assert [n.marker for n in definitions.children] == ["(1)", "(2)"]
    clauses = definitions.children[0].children
    assert [n.marker for n in clauses] == [f"({c})" for c in "abcdefghijklm"]
    assert clauses[11].printed is None
    chunks, _report = build_chunks(pages, document_key="margin", jurisdiction="TEST",
                                   doc_type="rules", structure=structure)  # fmt: skip
    labels = {c.label: c for c in chunks}
    clause_l = next(c for c in chunks if '"term l"' in c.text)
    assert clause_l.label == "Rule 2(1)(l)", sorted(labels)
    assert "ocr_number_read:(l)->(1)" in clause_l.flags  # the (1) of its label was read so
    assert "Rule 22(21)" in labels, sorted(labels)
    assert "ocr_number_read:(2l)->(21)" in labels["Rule 22(21)"].flags
    assert not any(f.startswith("ocr_number_read") for f in labels["Rule 22(20)"].flags)


@pytest.mark.parametrize("jitter", [-5.0, 0.0, 5.0])
def test_the_number_need_not_sit_exactly_on_the_body_line(tmp_path: Path, jitter: float) -> None:
    """An OCR'd layer places each word where it found it: a hanging number a few points above
    or below its body's first line still opens the rule, and its title still starts there."""
    path = write_pdf(tmp_path / "rules.pdf", margin_numbered_pages(margin_rules(), jitter=jitter))
    found = inspect_pdf(path, kind="rules")
    rules = _rules_of(found)
    assert [u["number"] for u in rules] == [str(n) for n in range(1, 38)]
    assert [u["title"] for u in rules] == [t.rstrip(".") for t in TITLES]


def test_inspect_exits_0_on_the_margin_numbered_rules(margin_pdf: Path) -> None:
    proc = subprocess.run([*CLI, "inspect", str(margin_pdf), "--kind", "rules"],
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Rule 1 to Rule 37, 37 units in sequence" in proc.stdout
    assert "read through OCR's confusions" in proc.stdout and "'I0.' as '10.'" in proc.stdout


# -------------------------------------------------------------------------- never blindly


def _clause_rules(clauses: str, first: str = "(l)") -> list[list[PageItem]]:
    """Rules 1-3 in the usual layout ("N. Title.- ..."): rule 1 opens with ``first`` and goes
    on to "(2)", rule 2 is a list of ``clauses``, rule 3 has a lone "(l)"."""
    rows: list[PageItem] = [
        f"1. Short title.- {first} These rules may be called the Test Rules. {FILLER}",
        "(2) They shall come into force at once.",
        "2. Functions of the promoter.- The promoter shall, namely:-",
        *(
            Para(
                f"({c}) do the thing numbered {c} of the list, as the Authority directs;", indent=14
            )
            for c in clauses
        ),  # fmt: skip
        f"3. Penalty.- (l) {FILLER}",
    ]
    return [[*PREAMBLE_ROWS, *rows]]


@dataclass
class _Row:
    start: int
    end: int
    text: str
    page: int = 1
    y0: float = 100.0
    x0: float = 72.0
    bold: bool = False


def test_a_clause_l_after_k_is_the_letter_l(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "clauses.pdf", _clause_rules("abcdefghijklm"))
    structure = read_structure(parse(path), "rules")
    units = {u.label: u for u in structure.decoded.units}
    tree = parse_tree(structure.stream, units["Rule 2"])
    assert [(n.marker, n.printed) for n in tree.children] == [
        (f"({c})", None) for c in "abcdefghijklm"
    ]
    # and rule 1's "(l)", followed by "(2)", is its sub-rule (1), read so
    rule_1 = parse_tree(structure.stream, units["Rule 1"])
    assert [(n.marker, n.printed) for n in rule_1.children] == [("(1)", "(l)"), ("(2)", None)]


def test_an_l_is_not_read_as_one_where_no_one_is_expected(tmp_path: Path) -> None:
    """Clause (k) lost: "(l)" after "(j)" is no (1) (a list of sub-rules does not start inside
    a list of clauses); nor is a "(l)" that no "(2)" follows. An "(I)" that "(2)" follows is."""
    path = write_pdf(tmp_path / "clauses.pdf", _clause_rules("abcdefghijlm", "(I)"))
    pages = parse(path)
    structure = read_structure(pages, "rules")
    units = {u.label: u for u in structure.decoded.units}
    tree = parse_tree(structure.stream, units["Rule 2"])
    assert [n.marker for n in tree.children] == [f"({c})" for c in "abcdefghij"]
    assert all(n.printed is None for n in tree.children)
    assert parse_tree(structure.stream, units["Rule 3"]).children == []
    rule_1 = parse_tree(structure.stream, units["Rule 1"])
    assert [(n.marker, n.printed) for n in rule_1.children] == [("(1)", "(I)"), ("(2)", None)]
    chunks, _ = build_chunks(pages, document_key="c", jurisdiction="TEST", doc_type="rules",
                             structure=structure)  # fmt: skip
    read = {
        c.section_label for c in chunks if any(f.startswith("ocr_number_read") for f in c.flags)
    }
    assert read == {"Rule 1"}


def test_ocr_number_readings() -> None:
    assert read_digits("I0") == "10" and read_digits("2l") == "21" and read_digits("3O") == "30"
    assert read_digits("l") == "1" and read_digits("O") is None and read_digits("ab") is None
    rows = [_Row(0, 20, "I. Preliminary matters"), _Row(30, 60, "2, Definitions.- In these")]
    options: dict[str, Any] = {"paragraphs": False, "notes": {}, "edge": 72.0}
    assert ocr_read_heading(rows, 0, **options) is None  # a lone "I." is a roman one
    read = ocr_read_heading(rows, 1, **options)
    assert read is not None and read.number == "2" and read.title == "Definitions"
    assert read.flags == ["ocr_number_read:2,->2."]
    assert parse_read_flag(read.flags[0]) == ("2,", "2.")

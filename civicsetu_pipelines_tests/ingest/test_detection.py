"""A document's kind, title, date and what it amends or repeals, read from its own words
(``civicsetu documents add`` without --kind/--title): generated gazettes of each form, then the
real corpus compared with MANIFEST.tsv. Every field carries the words and page it was read from,
or "not found": never a guess."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest

from civicsetu_pipelines.base import Settings, sha256_file
from civicsetu_pipelines.ingest.detection import HIGH, LOW, NOT_FOUND, Detection, detect_document
from civicsetu_pipelines.ingest.documents import parse_pages_cached
from civicsetu_pipelines.ingest.inspection import detect_kind
from civicsetu_pipelines.ingest.pages import open_pdf, parse_pdf
from civicsetu_pipelines.ingest.registry import load_registry
from civicsetu_pipelines_tests.amending_documents import (
    AMENDMENT,
    AMENDMENT_TITLE,
    APRIL,
    GO,
    ORDER_DATE,
    RULES_TITLE,
)
from civicsetu_pipelines_tests.pdfgen import write_pdf

ACT_TITLE = "The Real Estate (Regulation and Development) Act, 2016 (No. 16 of 2016)"
TITLES = {"mz_rules": RULES_TITLE}
CENTRAL = {"rera_act_2016": ACT_TITLE}


def _read(tmp_path: Path, name: str, pages: list[list[Any]], **kwargs: Any) -> Detection:
    """Write ``pages`` as a PDF, parse it as a run does and read its fields."""
    pdf = write_pdf(tmp_path / f"{name}.pdf", pages)
    parsed = [dataclasses.asdict(p) for p in parse_pdf(name, pdf, ocr=False)]
    titles = kwargs.pop("titles", TITLES)
    fallback = kwargs.pop("fallback_titles", CENTRAL)
    return detect_document(parsed, titles=titles, fallback_titles=fallback, **kwargs)


def _plain(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def test_a_state_go_is_read_from_its_abstract_its_dated_line_and_its_enacting_formula(
    tmp_path: Path,
) -> None:
    found = _read(tmp_path, "go", [GO])
    # the kind as `civicsetu inspect` reads it (a G.O. amending rules names "Rules, 2018")
    assert found.kind.value == detect_kind("\n".join(GO))[0] and found.kind.page == 1
    title = str(found.title.value)
    assert title.startswith("G.O.Ms.No. 21: Real Estate (Regulation and Development) Act, 2016")
    assert title.endswith("Amendment - Notification - Orders - Issued"), title
    assert found.title.page == 1 and "ABSTRACT" in found.title.words
    # its own date, not the dates of the orders it reads (27-03-2018, 12-11-2018)
    assert (found.date.value, found.date.confidence) == (ORDER_DATE, HIGH)
    assert "Dated: 28-01-2019" in found.date.words and found.date.page == 1
    assert found.effective_from is found.date  # it names no commencement of its own
    assert not found.in_force.found
    # what it amends, as a run reads it, with the words that name it; not the Act it is made
    # under, which is a fallback only when it names nothing of its own jurisdiction
    assert found.amends.value == ("mz_rules",) and found.amends.confidence == HIGH
    assert "hereinafter referred to as the said rules" in found.amends.words
    assert not found.repeals.found


@pytest.mark.parametrize(
    "abstract",
    [
        # the abstract opens with the department's name in its own case (the department's
        # heading below it, in capitals, ends it)
        ["ABSTRACT", "Municipal Administration & Urban Development Department \u2013 Real Estate "
         "(Regulation and Development) Act, 2016 \u2013 Rules \u2013 Amendment \u2013 Orders "
         "\u2013 Issued.", "MUNICIPAL ADMINISTRATION & URBAN DEVELOPMENT (M2) DEPARTMENT"],
        ["ABSTRACT: Real Estate (Regulation and Development) Act, 2016 - Rules - Amendment - "
         "Orders - Issued.", "URBAN DEVELOPMENT DEPARTMENT"],
    ],
)  # fmt: skip
def test_a_go_subject_is_its_abstract_above_its_read_list(
    tmp_path: Path, abstract: list[str]
) -> None:
    page = ["GOVERNMENT OF MIZORAM", *abstract, "G.O.Ms.No. 202          Dated: 31-07-2017.",
            "Read the following:", "1. G.O.Ms.No. 107, dated 27-03-2017.", "ORDER:",
            "The following notification shall be published."]  # fmt: skip
    found = _read(tmp_path, "go", [page], kind="order")
    title = str(found.title.value)
    assert title.startswith("G.O.Ms.No. 202: ") and _plain(title).endswith("orders issued"), title
    assert "Real Estate (Regulation and Development) Act, 2016" in title
    assert found.title.confidence == HIGH
    assert (found.date.value, found.date.confidence) == (dt.date(2017, 7, 31), HIGH)


def test_a_go_whose_own_date_is_not_printed_is_not_given_a_date_it_cites(tmp_path: Path) -> None:
    undated = [line.replace("Dated: 28-01-2019", "") for line in GO]
    found = _read(tmp_path, "go", [undated])
    assert found.date.confidence == NOT_FOUND and found.date.value is None
    assert not found.effective_from.found and "no date line" in found.date.why()


RULES_PAGE = [
    "GOVERNMENT OF TRIPURA",
    "URBAN DEVELOPMENT DEPARTMENT",
    "NOTIFICATION",
    "Agartala, the 4th May, 2017",
    "No. F.10(2)-UD/2017.\u2014 In exercise of the powers conferred by section 84 of the Real "
    "Estate (Regulation and Development) Act, 2016 (16 of 2016), the Government of Tripura hereby "
    "makes the following rules, namely:\u2014",
    "THE TRIPURA REAL ESTATE (REGULATION AND DEVELOPMENT) (GENERAL) RULES, 2017",
    "CHAPTER I",
    "PRELIMINARY",
]
SHORT_TITLE = [
    "1. Short title and commencement.\u2014 (1) These rules may be called the Tripura Real Estate "
    "(Regulation and Development) (General) Rules, 2017.",
    "(2) They shall come into force on the 1st day of June, 2017.",
    "2. Definitions.\u2014 In these rules, unless the context otherwise requires, the Act means "
    "the Real Estate (Regulation and Development) Act, 2016.",
]


def test_a_rules_gazette_first_page_gives_its_short_title_date_and_commencement(
    tmp_path: Path,
) -> None:
    found = _read(tmp_path, "rules", [RULES_PAGE + SHORT_TITLE])
    assert (found.kind.value, found.kind.confidence) == ("rules", HIGH)
    assert (
        found.title.value
        == "Tripura Real Estate (Regulation and Development) (General) Rules, 2017"
    )
    assert "These rules may be called" in found.title.words and found.title.page == 1
    assert (found.date.value, found.date.confidence) == (dt.date(2017, 5, 4), HIGH)
    assert found.date.words == "Agartala, the 4th May, 2017"
    assert found.in_force.value == dt.date(2017, 6, 1) and "1st day of June" in found.in_force.words
    assert found.effective_from is found.in_force
    assert not found.amends.found and not found.repeals.found  # the Act is only made under


def test_a_rules_heading_is_the_title_when_no_short_title_is_printed(tmp_path: Path) -> None:
    found = _read(tmp_path, "rules", [RULES_PAGE + SHORT_TITLE[2:]])
    assert found.title.value == (
        "The Tripura Real Estate (Regulation and Development) (General) Rules, 2017"
    )
    assert found.title.words.endswith("RULES, 2017") and found.title.page == 1


def test_a_gazette_notification_is_titled_by_its_number_and_the_power_it_is_made_under(
    tmp_path: Path,
) -> None:
    page = [
        "MINISTRY OF HOUSING AND URBAN POVERTY ALLEVIATION",
        "NOTIFICATION",
        "New Delhi, the 19th April, 2017",
        "S.O. 1216(E).\u2014In exercise of the powers conferred by sub-section (3) of section 1 of "
        "the Real Estate (Regulation and Development) Act, 2016 (16 of 2016), the Central "
        "Government hereby appoints the 1st day of May, 2017 as the date on which the following "
        "provisions of the said Act shall come into force, namely:\u2014",
        "1. Sections 3 to 19.",
        "[F. No. O-17034/275/2017-H]",
    ]
    found = _read(tmp_path, "so", [page], titles=CENTRAL, fallback_titles={})
    assert (found.kind.value, found.kind.confidence) == ("notification", HIGH)
    assert found.title.value == (
        "Notification S.O. 1216(E) under sub-section (3) of section 1 "
        "of the Real Estate (Regulation and Development) Act, 2016"
    )
    assert found.title.words.startswith("S.O. 1216(E)")
    assert found.date.value == dt.date(2017, 4, 19) and found.date.confidence == HIGH
    # the day it appoints for the Act's sections is not its own commencement
    assert not found.in_force.found
    assert not found.amends.found and not found.repeals.found


def test_an_amending_notification_names_what_it_amends_and_when(tmp_path: Path) -> None:
    found = _read(tmp_path, "amendment", [AMENDMENT])
    assert found.title.value == AMENDMENT_TITLE
    assert found.amends.value == ("mz_rules",) and "further to amend" in found.amends.words
    assert found.in_force.value == APRIL and found.effective_from is found.in_force
    assert not found.date.found  # no date line: the commencement it names is its date


def test_a_repeal_and_an_act_amended_only_when_nothing_of_the_state_is_named(
    tmp_path: Path,
) -> None:
    regulations = {"mz_regs_2019": "Mizoram Real Estate Regulatory Authority (General) "
                                   "Regulations, 2019"}  # fmt: skip
    page = [
        "MIZORAM REAL ESTATE REGULATORY AUTHORITY",
        "NOTIFICATION",
        "Aizawl, the 2nd March, 2024",
        "No. 5/2024.\u2014 In exercise of the powers conferred by section 85 of the Act, the "
        "Authority hereby makes the following regulations, namely:\u2014",
        "1. Short title.\u2014 These regulations may be called the Mizoram Real Estate Regulatory "
        "Authority (General) Regulations, 2024.",
        "40. Repeal.\u2014 The Mizoram Real Estate Regulatory Authority (General) Regulations, "
        "2019 are hereby repealed.",
    ]
    found = _read(tmp_path, "regs", [page], titles=regulations)
    assert found.repeals.value == ("mz_regs_2019",) and "hereby repealed" in found.repeals.words
    assert not found.amends.found and found.date.value == dt.date(2024, 3, 2)

    state = [
        "GOVERNMENT OF MIZORAM",
        "NOTIFICATION",
        "Aizawl, the 5th May, 2020",
        "No. 7.\u2014 The Governor hereby makes the following amendment further to amend the Real "
        "Estate (Regulation and Development) Act, 2016 in its application to the State of Mizoram:",
        "1. In section 3 of the said Act, for the words \u201csix months\u201d, the words "
        "\u201cthree months\u201d shall be substituted.",
    ]
    act = _read(tmp_path, "act", [state])
    assert act.amends.value == ("rera_act_2016",)  # its own jurisdiction names nothing


def test_what_cannot_be_read_is_not_found_never_guessed(tmp_path: Path) -> None:
    words = "The promoter shall maintain the accounts and produce them when the Authority directs."
    found = _read(tmp_path, "memo", [[words]])
    for field in (found.kind, found.title, found.date, found.in_force, found.amends):
        assert field.confidence == NOT_FOUND and field.value is None, field
        assert field.why(), field  # and why
    assert "no signal" in found.kind.words and "the kind is not known" in found.amends.words
    given = _read(tmp_path, "memo", [["The promoter shall keep the accounts."]], kind="order")
    assert not given.kind.found and not given.title.found  # the kind given reads nothing more


def test_a_judgment_is_titled_by_its_parties_and_dated_when_pronounced(tmp_path: Path) -> None:
    page = [
        "IN THE HIGH COURT OF JUDICATURE AT BOMBAY",
        "WRIT PETITION NO. 2737 OF 2017",
        "Neelkamal Realtors Suburban Pvt. Ltd. and anr. .. Petitioners",
        "Vs.",
        "1. Union of India and ors. .. Respondents",
        "CORAM : A. B. JUDGE, J.",
        "RESERVED ON : NOVEMBER 14, 2017",
        "PRONOUNCED ON : DECEMBER 06, 2017",
        "JUDGMENT",
        "1. The petitioners challenge the provisions of the Act.",
    ]
    found = _read(tmp_path, "wp", [page])
    assert found.kind.value == "judgment"
    assert found.title.value == ("Neelkamal Realtors Suburban Pvt. Ltd. and anr. v. Union of India "
                                 "and ors. (Writ Petition No. 2737 of 2017, High Court of "
                                 "Judicature at Bombay)")  # fmt: skip
    assert found.date.value == dt.date(2017, 12, 6)  # not the day it was reserved
    assert not found.amends.found


ORDER_BODY = [
    "The promoter has not uploaded the quarterly progress report for the project.",
    "The promoter is directed to upload it within fifteen days, failing which action under "
    "section 63 of the Act shall follow.",
]


@pytest.mark.parametrize(
    ("head", "date", "confidence"),
    [
        # an office order's own number before "Dt:" (its kind in the prefix is its own heading)
        (["OFFICE OF THE REAL ESTATE REGULATORY AUTHORITY",
          "Office Order: A/E-1/2020, Dt: 14-05-2020"], dt.date(2020, 5, 14), HIGH),
        (["CIRCULAR", "No. RERA/CIR/7/2025", "Dated: 28/3/2025"], dt.date(2025, 3, 28), HIGH),
        (["Order No. 12/2020 Dt. 14.05.20"], dt.date(2020, 5, 14), HIGH),  # a two-digit year
        # a header table: the label in one cell, the date in the next
        (["Complaint No. 41 of 2023", "Date of decision:", "18.04.2024"],
         dt.date(2024, 4, 18), HIGH),
        (["BEFORE THE AUTHORITY", "(Date: 25-09-2025)"], dt.date(2025, 9, 25), HIGH),
        # a scanned order's opening: read, but a person checks it
        (["ORDER", "On 4th day of August, 2025, the Authority heard the parties."],
         dt.date(2025, 8, 4), LOW),
        # the narrative's "day of" never outweighs the order's own date line
        (["Dated: 01.04.2019", "On 5th day of March, 2019, the complainant booked a flat."],
         dt.date(2019, 4, 1), HIGH),
    ],
)  # fmt: skip
def test_dates_are_read_as_orders_print_them(
    tmp_path: Path, head: list[str], date: dt.date, confidence: str
) -> None:
    found = _read(tmp_path, "order", [head + ORDER_BODY])
    assert (found.date.value, found.date.confidence) == (date, confidence), found.date
    assert found.date.page == 1


def test_an_authority_order_is_titled_by_its_parties_and_case_number(tmp_path: Path) -> None:
    """An order on a complaint, its kind given as `order`: titled as a person cites it."""
    page = ["BEFORE THE REAL ESTATE REGULATORY AUTHORITY, MIZORAM", "Complaint No. 41 of 2023",
            "Lalremruata Sailo ... Complainant", "Versus",
            "Zoram Builders Pvt. Ltd. ... Respondent", "Date of decision:", "18.04.2024",
            "ORDER", *ORDER_BODY]  # fmt: skip
    found = _read(tmp_path, "order", [page], kind="order")
    assert found.title.value == (
        "Lalremruata Sailo v. Zoram Builders Pvt. Ltd. (Complaint No. 41 of 2023, Real Estate "
        "Regulatory Authority, Mizoram)"
    )
    assert found.title.confidence == HIGH
    assert (found.date.value, found.date.confidence) == (dt.date(2024, 4, 18), HIGH)


def test_an_order_dated_only_at_its_foot_is_read_there(tmp_path: Path) -> None:
    """Past the first pages: the foot of the last page, beside the signature. A dated line there
    is sure; a bare date is read for a person to check."""
    body = [[f"{n}. The Authority has considered the submissions of the parties at length."]
            for n in range(1, 11)]  # fmt: skip
    signed = ["11. The complaint is allowed.", "Sd/-", "(A. B. Member)", "Place: Gandhinagar"]
    found = _read(tmp_path, "long", [*body, signed + ["Dated: May 27, 2019"]])
    assert (found.date.value, found.date.confidence, found.date.page) == (
        dt.date(2019, 5, 27),
        HIGH,
        11,
    )
    found = _read(tmp_path, "bare", [*body, signed + ["18.03.2025"]])
    assert (found.date.value, found.date.confidence) == (dt.date(2025, 3, 18), LOW)
    assert "check it" in found.date.words


def test_a_date_deep_in_a_document_never_outweighs_its_head(tmp_path: Path) -> None:
    """An Act dated by its assent on the first page: a heading's date on its last pages (another
    paper printed with it) is not its date; with no date at its head, that heading's date is read
    for a person to check, never as sure."""
    body = [[f"{n}. The provisions of this Act shall apply to the processing of data."]
            for n in range(2, 11)]  # fmt: skip
    tail = ["NOTIFICATION", "The 19th July, 2023.", "S.O. 12(E).- In exercise of the powers."]
    act = ["THE DIGITAL DATA ACT, 2023", "NO. 22 OF 2023", "[11th August, 2023.]",
           "An Act to provide for the processing of digital data."]  # fmt: skip
    found = _read(tmp_path, "act", [act, *body, tail])
    assert (found.date.value, found.date.confidence) == (dt.date(2023, 8, 11), LOW)
    found = _read(tmp_path, "bare", [act[:2] + act[3:], *body, tail])
    assert (found.date.value, found.date.confidence) == (dt.date(2023, 7, 19), LOW)


def test_a_date_whose_day_is_left_blank_is_known_to_the_month_only(tmp_path: Path) -> None:
    """The day written by hand: not found, the month kept for a user who agrees to its first
    day (``documents add --first-of-month``)."""
    found = _read(tmp_path, "rules", [["NOTIFICATION", "DEHRADUN, DATED APRIL, 2017", *ORDER_BODY]])
    assert not found.date.found and found.date.value == "2017-04"
    assert "the day is not printed" in found.date.words and "April 2017" in found.date.words


# -- The real corpus against MANIFEST.tsv -----------------------------------------------------


@pytest.fixture(scope="module")
def manifest(corpus_dir: Path) -> dict[str, dict[str, str]]:
    with open(corpus_dir.parent / "MANIFEST.tsv", encoding="utf-8") as rows:
        return {row["file"]: row for row in csv.DictReader(rows, delimiter="\t")}


def _read_corpus(corpus_dir: Path, name: str) -> Detection:
    """A corpus PDF read as ``documents add`` reads it: the pages its registry entry ingests,
    parsed through the run's parse cache, against its jurisdiction's other documents."""
    registry = load_registry(include_seed=False)
    spec = next(s for s in registry.documents() if s.filename == name)
    path = corpus_dir / name
    with open_pdf(name, path) as doc:
        pages = spec.pages_to_ingest(doc.page_count)
    parsed, _ = parse_pages_cached(name, path, sha256_file(path), Settings.from_env().parse_cache,
                                   pages=pages, language=spec.language)  # fmt: skip
    others = [s for s in registry.documents(spec.jurisdiction) if s.key != spec.key]
    titles = {s.key: s.title for s in others}
    return detect_document(parsed, titles=titles)


CORPUS = [  # file, kind, the manifest title's words the title read must match, date
    ("gujrera_general_rules_2017.pdf", "rules",
     "Gujarat Real Estate (Regulation and Development) (General) Rules, 2017", "04-05-2017"),
    ("rera_commencement_notification_2017.pdf", "notification", "Notification S.O. 1216(E)",
     "19-04-2017"),
    ("rera_removal_of_difficulties_order_2016.pdf", "order",
     "Real Estate (Regulation and Development) (Removal of Difficulties) Order, 2016",
     "28-10-2016"),
    ("rera_act_2016.pdf", "act", "Real Estate (Regulation and Development) Act, 2016",
     "26-03-2016"),
    ("mahareat_order_at10735_2018.pdf", "judgment", "AT006000000010735", "12-02-2024"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "kind", "words", "date"), CORPUS, ids=[c[0] for c in CORPUS])
def test_corpus_documents_read_as_the_manifest_names_them(
    corpus_dir: Path, manifest: dict[str, dict[str, str]], name: str, kind: str, words: str,
    date: str,
) -> None:  # fmt: skip
    found = _read_corpus(corpus_dir, name)
    row = manifest[name]
    assert found.kind.value == kind == row["doc_type"], found.kind
    assert _plain(words) in _plain(str(found.title.value)), found.title
    assert _plain(words) in _plain(row["title"])
    assert isinstance(found.date.value, dt.date) and found.date.value.strftime("%d-%m-%Y") == date
    assert date in row["title"], row["title"]
    for field in (found.kind, found.title, found.date):
        assert field.confidence == HIGH and field.page is not None and field.words, field


def test_the_gujarat_rules_take_effect_from_the_commencement_they_name(corpus_dir: Path) -> None:
    found = _read_corpus(corpus_dir, "gujrera_general_rules_2017.pdf")
    # "Dated the 4th May, 2017"; "It shall come into force with effect from 1st May, 2017"
    assert found.date.words == "Dated the 4th May, 2017" and found.date.page == 1
    assert found.effective_from.value == dt.date(2017, 5, 1) == found.in_force.value
    spec = load_registry(include_seed=False).get("gujarat_general_rules_2017")
    assert spec.effective_date == found.effective_from.value  # as curated by hand


def test_a_corpus_order_margin_note_is_not_read_into_its_title(corpus_dir: Path) -> None:
    found = _read_corpus(corpus_dir, "rera_removal_of_difficulties_order_2016.pdf")
    assert "Short title and" in found.title.words  # printed in the margin, read inline
    assert "Short title" not in str(found.title.value)
    assert found.title.page == 4 and found.date.page == 3
    assert found.kind.confidence in {HIGH, LOW}
    assert LOW not in {found.title.confidence, found.date.confidence}


# -- the jurisdiction, for a source that serves several -----------------------------------------


def _issuer(*pages: str) -> Any:
    from civicsetu_pipelines.ingest.detection import detect_jurisdiction
    from civicsetu_pipelines.ingest.user_documents import issuer_names

    return detect_jurisdiction([{"page": n, "text": text} for n, text in enumerate(pages, 1)],
                               issuer_names())  # fmt: skip


BODY = "The promoter shall keep the accounts of the project and produce them when asked."


def test_the_jurisdiction_is_the_issuer_its_first_page_heads_not_a_place_it_mentions() -> None:
    below = "\n".join([BODY] * 20)  # past the heading's lines
    act = _issuer(f"THE GAZETTE OF INDIA\nEXTRAORDINARY\nMINISTRY OF LAW AND JUSTICE\n{BODY}\n"
                  "(2) It extends to the whole of India except the State of Jammu and "
                  "Kashmir.")  # fmt: skip
    assert (act.value, act.confidence) == ("CENTRAL", HIGH)
    go = _issuer(f"GOVERNMENT OF MIZORAM\nURBAN DEVELOPMENT DEPARTMENT\nORDER\n{BODY}")
    assert (go.value, go.confidence, go.words) == ("MIZORAM", HIGH, "GOVERNMENT OF MIZORAM")
    rules = _issuer(f"NOTIFICATION\n{below}\n1. These rules may be called the Bihar Real Estate "
                    "(Regulation and Development) Rules, 2017.")  # fmt: skip
    assert (rules.value, rules.confidence) == ("BIHAR", LOW)  # the body only: a person confirms
    # the longest name wins: the merged territory, not the Daman and Diu inside its name
    merged = _issuer(f"ADMINISTRATION OF DADRA AND NAGAR HAVELI AND DAMAN AND DIU\n{BODY}")
    assert merged.value == "DADRA_AND_NAGAR_HAVELI_AND_DAMAN_AND_DIU"
    # rules the Union makes for a territory: its gazette heads the page, the territory is named
    # below; read as the territory, with low confidence
    union_made = _issuer(f"PUBLISHED BY AUTHORITY\nNOTIFICATION\n{below}\nThe Central "
                         "Government hereby makes the following rules for the Union territory "
                         f"of Chandigarh.\n{BODY}")  # fmt: skip
    assert (union_made.value, union_made.confidence) == ("CHANDIGARH", LOW)


def test_a_jurisdiction_that_cannot_be_read_is_not_found_and_says_why() -> None:
    assert _issuer(f"NOTIFICATION\n{BODY}").words == (
        "its first pages name no government, governor or gazette"
    )
    below = "\n".join([BODY] * 20)  # past the heading's lines
    both = _issuer(f"NOTIFICATION\n{below}\nThe Government of Goa and the Government of Kerala "
                   "agree.")  # fmt: skip
    assert not both.found and "several as issuer: GOA, KERALA" in both.words
    assert not _issuer("1 2 3").found  # no page with text

"""Amendments and repeals as dated law (issue 30): an amending notification's instructions read
from its own words and applied to the units it names as points in time, on generated text and
on generated PDFs parsed as the pipeline parses them; a missing unit, a place printed twice and
an unread paragraph reported by name; a repeal ending every unit; the corpus unchanged."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from civicsetu_pipelines.ingest.amendments import (
    Address,
    amend_partition,
    amendable_titles,
    apply_amendments,
    in_force_on,
    instrument_of,
    may_be_instrument,
    read_address,
    read_instructions,
)
from civicsetu_pipelines.ingest.documents import chunk_rows, page_records, parse_rows
from civicsetu_pipelines.ingest.registry import DocumentSpec
from civicsetu_pipelines_tests.amending_documents import (
    AMENDMENT,
    AMENDMENT_TITLE,
    APRIL,
    MISSING,
    RULES_TITLE,
    rules_pages,
)
from civicsetu_pipelines_tests.pdfgen import write_pdf


def _spec(key: str, title: str, kind: str, day: str, path: Path) -> DocumentSpec:
    return DocumentSpec(
        key=key, title=title, jurisdiction="MIZORAM", doc_type=kind, effective_date=day,
        source_url=path.as_uri(), filename=path.name,
    )  # fmt: skip


def _parsed(spec: DocumentSpec, path: Path) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
    pages = page_records(parse_rows(spec, path, ocr=False))
    rows, _report = chunk_rows(spec, pages)
    return rows, [(int(p["page"]), str(p["text"])) for p in pages]


@pytest.fixture(scope="module")
def mizoram(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The generated rules and their amending notification, parsed as the pipeline parses."""
    folder = tmp_path_factory.mktemp("mizoram")
    rules_pdf = write_pdf(folder / "rules.pdf", rules_pages())
    amendment_pdf = write_pdf(folder / "amendment.pdf", [[*AMENDMENT, MISSING]])
    rules = _spec("mizoram_rules_2018", RULES_TITLE, "rules", "2018-05-01", rules_pdf)
    amendment = _spec("mizoram_amendment_2024", AMENDMENT_TITLE, "notification", "2024-03-15",
                      amendment_pdf)  # fmt: skip
    rule_rows, _ = _parsed(rules, rules_pdf)
    amendment_rows, amendment_pages = _parsed(amendment, amendment_pdf)
    titles = {rules.key: RULES_TITLE, amendment.key: AMENDMENT_TITLE}
    instrument = instrument_of(amendment.key, AMENDMENT_TITLE, amendment.effective_date,
                               amendment_pages, kind="notification", amends=(), repeals=(),
                               titles=titles)  # fmt: skip
    return {"rules": rule_rows, "amendment": amendment_rows, "instrument": instrument}


def _live(rows: list[dict[str, Any]], day: dt.date) -> dict[str, str]:
    """The text of each rule in force on ``day``, by label."""
    out: dict[str, str] = {}
    for row in sorted(rows, key=lambda r: r["ordinal"]):
        starts = row.get("in_force_from") or dt.date.min
        ends = row.get("in_force_to") or dt.date.max
        if row["document_key"] == "mizoram_rules_2018" and starts <= day < ends:
            out[row["section_label"]] = out.get(row["section_label"], "") + row["text"]
    return {k: " ".join(v.split()) for k, v in out.items()}


def test_addresses_read_inside_out_and_outside_in() -> None:
    assert read_address("clause (a) of sub-rule (2) of rule 18") == Address(
        "rule", "18", ("2", "a")
    )
    assert read_address("rule 18, in sub-rule (2)") == Address("rule", "18", ("2",))
    assert read_address("regulation 5") == Address("regulation", "5", ())
    assert read_address("sub-rule (3)") == Address(None, None, ("3",))
    assert in_force_on("They shall come into force on the 1st day of April, 2024.") == APRIL
    assert in_force_on("shall come into force with effect from 01.04.2024") == APRIL
    assert in_force_on("They shall come into force on the date of publication") is None


def test_every_kind_of_instruction_is_read_with_its_words_and_page(mizoram: dict[str, Any]) -> None:
    instrument = mizoram["instrument"]
    assert instrument is not None, "the notification names the rules it amends in its own words"
    assert instrument.amends == ("mizoram_rules_2018",) and instrument.effective_date == APRIL
    read = read_instructions(instrument.pages)
    kinds = [(i.kind, i.target.label()) for i in read.instructions]
    assert kinds == [("substitute_words", "Rule 7"), ("substitute", "Rule 8(2)"),
                     ("insert", "Rule 4"), ("omit", "Rule 5"), ("omit", "Rule 6(1)(c)"),
                     ("renumber", "Rule 6(3)"), ("omit", "Rule 40(2)")]  # fmt: skip
    words = read.instructions[0]
    assert (words.old_words, words.new_words, words.page) == ("forty-five days", "thirty days", 1)
    assert read.instructions[1].new_text is not None
    assert read.instructions[1].new_text.startswith("(2) The rate of interest")
    assert read.instructions[2].new_text.startswith("4A. Quarterly progress report")  # type: ignore[union-attr]
    assert read.problems == []


def test_applied_instructions_make_points_in_time_and_name_what_they_cannot_apply(
    mizoram: dict[str, Any],
) -> None:
    result = amend_partition(mizoram["rules"] + mizoram["amendment"], [mizoram["instrument"]])
    before, after = _live(result.rows, dt.date(2024, 3, 31)), _live(result.rows, APRIL)
    assert "forty-five days" in before["Rule 7"] and "thirty days" in after["Rule 7"]
    assert "forty-five days" not in after["Rule 7"]
    assert "plus two per cent" in before["Rule 8"] and "plus three per cent" in after["Rule 8"]
    assert "plus two per cent" not in after["Rule 8"] and "(3) The interest" in after["Rule 8"]
    assert "Rule 4A" not in before and "quarterly progress report" in after["Rule 4A"]
    assert "Rule 5" in before and "Rule 5" not in after  # omitted
    assert "display his registration number" in before["Rule 6"]
    assert "display his registration number" not in after["Rule 6"]
    assert "(4) A real estate agent shall help" in after["Rule 6"]
    assert before["Rule 3"] == after["Rule 3"]  # a rule nothing names is untouched
    # each new point in time carries its evidence; the text it replaced ends on the date
    made = [r for r in result.rows if r.get("amendment")]
    assert {r["section_label"] for r in made} == {"Rule 4A", "Rule 6", "Rule 7", "Rule 8"}
    for row in made:
        assert row["in_force_from"] == APRIL and row["amendment"]["by"] == "mizoram_amendment_2024"
        assert row["amendment"]["page"] == 1 and row["amendment"]["instruction"]
    ended = [r for r in result.rows if r.get("in_force_to") == APRIL]
    assert {r["section_label"] for r in ended} == {"Rule 5", "Rule 6", "Rule 7", "Rule 8"}
    assert all(any(f.startswith("ended_by:") for f in json.loads(r["flags"])) for r in ended)
    # the unit it names but the rules lack: reported loudly, by name and words, nothing guessed
    (problem,) = result.problems
    assert "Rule 40(2)" in problem and "no such unit" in problem and "rule 40" in problem
    assert len(result.done) == 6


def test_a_place_printed_twice_or_words_not_there_change_nothing() -> None:
    row = {"chunk_id": "c1", "document_key": "d", "unit": "rule", "number": "3",
           "legal_path": "3", "label": "Rule 3", "section_label": "Rule 3", "ordinal": 1,
           "level": 0, "flags": "[]", "parent_id": None,
           "text": "3. Fees.- (1) A fee.\n(2) Another fee.\n(2) Printed twice."}  # fmt: skip
    text = (
        "2. In rule 3 of the said rules, sub-rule (2) shall be omitted.\n3. In rule 3 of the "
        "said rules, for the words \u201cninety days\u201d, the words \u201cten days\u201d "
        "shall be substituted.\n4. In rule 3 of the said rules, in the proviso, for the "
        "existing text the following shall be substituted, namely:- \u201cProvided that no "
        "fee is due.\u201d."
    )
    read = read_instructions([(2, text)])
    assert [i.kind for i in read.instructions] == ["omit", "substitute_words"]
    assert read.problems and "proviso" in read.problems[0]  # spoke of amending, matched nothing
    applied = apply_amendments([row], read.instructions, by="x", date=APRIL)
    assert applied.rows == [row] and not applied.done
    assert "more than one" in applied.problems[0] or "not printed" in applied.problems[0]
    assert "ninety days" in applied.problems[1]


def test_a_repeal_ends_every_unit_of_the_repealed_instrument(mizoram: dict[str, Any]) -> None:
    pages = [(1, "The Mizoram Real Estate (Regulation and Development) Rules, 2018 are hereby "
                 "repealed. These regulations shall come into force on the 1st day of April, "
                 "2024.")]  # fmt: skip
    titles = {"mizoram_rules_2018": RULES_TITLE, "mizoram_general_regulations_2024": "x"}
    instrument = instrument_of("mizoram_general_regulations_2024", "Mizoram General Regulations, "
                               "2024", dt.date(2024, 1, 1), pages, kind="regulations", amends=(),
                               repeals=(),
                               titles=titles)  # fmt: skip
    assert instrument is not None and instrument.repeals == ("mizoram_rules_2018",)
    result = amend_partition(mizoram["rules"], [instrument])
    assert all(r["in_force_to"] == APRIL for r in result.rows)
    assert _live(result.rows, APRIL) == {} and _live(result.rows, dt.date(2024, 3, 1))
    assert result.repealed == [
        {
            "document": "mizoram_rules_2018",
            "by": "mizoram_general_regulations_2024",
            "date": "2024-04-01",
        }
    ]


def _corpus_pages(spec: DocumentSpec) -> list[tuple[int, str]]:
    """A corpus document's pages as the pipeline reads them (text layer; no OCR)."""
    from civicsetu_pipelines.base.settings import DEFAULT_MIRROR

    rows = page_records(parse_rows(spec, DEFAULT_MIRROR / str(spec.filename), ocr=False))
    return [(int(p["page"]), str(p["text"] or "")) for p in rows]


@pytest.fixture(scope="module")
def corpus_registry() -> Any:
    import os

    from civicsetu_pipelines.base.settings import DEFAULT_MIRROR
    from civicsetu_pipelines.ingest.registry import load_registry

    if not DEFAULT_MIRROR.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"corpus missing at {DEFAULT_MIRROR} (CI must have ../shared)")
        pytest.skip(f"corpus missing at {DEFAULT_MIRROR}")
    return load_registry(include_seed=False)


def test_no_corpus_document_reads_as_an_amending_instrument(corpus_registry: Any) -> None:
    """Nothing in the shipped corpus names, in an enacting formula, a document it amends or
    repeals: every document's pages are read as the pipeline reads them and no instrument is
    found, so nothing served changes. (The Removal of Difficulties Order says "it is considered
    necessary to amend the proviso", and names no title there.)"""
    read = 0
    for jurisdiction in corpus_registry.jurisdictions():
        specs = corpus_registry.documents(jurisdiction)
        titles = amendable_titles(specs)
        for spec in specs:
            # the pages of a kind that never amends (the Act, the FAQ, the judgments: a 330-page
            # judgment was half this test's time) are not read by instrument_of: not parsed
            speaks = may_be_instrument(str(spec.doc_type), spec.amends, spec.repeals)
            read += speaks
            pages = _corpus_pages(spec) if speaks else []
            found = instrument_of(spec.key, spec.title, spec.effective_date, pages,
                                  kind=str(spec.doc_type), amends=spec.amends,
                                  repeals=spec.repeals, titles=titles)  # fmt: skip
            assert found is None, (spec.key, found.amends if found else None)
    assert read >= 10  # the rules, regulations, orders and notifications were read


def test_the_corpus_order_that_amends_the_act_applies_or_names_each_instruction(
    corpus_registry: Any,
) -> None:
    """The Removal of Difficulties Order, 2016 amends the Act (sections 4, 6, 17, 31, 84, 85). An
    analyst who registers `amends: rera_act_2016` for it gets each of its nine instructions
    applied or named: none skipped. One is named: its printed margin note runs into the words
    of the first ("specified by the certain sections regulations ...")."""
    act = corpus_registry.get("rera_act_2016")
    order = corpus_registry.get("rera_removal_of_difficulties_order_2016")
    rows, _ = chunk_rows(act, page_records(parse_rows(act, _path(act), ocr=False)))
    instrument = instrument_of(order.key, order.title, order.effective_date, _corpus_pages(order),
                               kind="order", amends=(act.key,), repeals=(), titles={})  # fmt: skip
    assert instrument is not None and instrument.effective_date == order.effective_date
    result = amend_partition(rows, [instrument])
    done = [(d["kind"], d["label"]) for d in result.done]
    assert done == [("substitute_words", "Section 6"), ("substitute_words", "Section 17(2)"),
                    ("substitute_words", "Section 31(2)"), ("substitute", "Section 84(2)(a)"),
                    ("insert", "Section 84(2)(o)"), ("omit", "Section 85(2)(a)"),
                    ("omit", "Section 85(2)(b)"), ("omit", "Section 85(2)(g)")]  # fmt: skip
    (problem,) = result.problems
    assert "certain sections" in problem
    # clause (oa) lands after (o) and before (p), in the chunk of 84(2) that holds them
    (inserted,) = [r["text"] for r in result.rows if (r.get("amendment") or {}).get("kind")
                   == "insert"]  # fmt: skip
    assert inserted.index("(o) the salaries") < inserted.index("(oa) the form, manner and fees")
    assert inserted.index("(oa) the form") < inserted.index("(p) the details")
    section_6 = " ".join(r["text"] for r in result.rows if r.get("amendment")
                         and r["section_label"] == "Section 6")  # fmt: skip
    assert "prescribed" in section_6 and "specified by regulations made" not in section_6


def _path(spec: DocumentSpec) -> Path:
    from civicsetu_pipelines.base.settings import DEFAULT_MIRROR

    return DEFAULT_MIRROR / str(spec.filename)


def test_other_drafting_styles_read_the_same_way() -> None:
    """ "The principal rules", a chain of "in"s, figures, a heading per paragraph, and new text
    printed without quotes (its own number out of the instrument's run, up to the signature)."""
    text = (
        "In exercise of the powers conferred by section 84 of the Act (16 of 2016), the "
        "Government makes the following rules further to amend the X Rules, 2017, namely:-\n"
        "1. Short title and commencement.- (1) These rules may be called the X (Amendment) "
        "Rules, 2019.\n(2) They shall come into force with effect from 1st April, 2019.\n"
        "2. Amendment of rule 3.- In the X Rules, 2017 (hereinafter referred to as the "
        'principal rules), in rule 3, in sub-rule (3), in clause (a), for the figures "5", the '
        'figures "10" shall be substituted.\n'
        "3. In rule 4 of the principal rules, after sub-rule (2), the following sub-rule shall "
        "be inserted, namely:-\n(2A) The promoter shall also file a quarterly report.\n"
        '4. In rule 5 of the principal rules, in sub-rule (1), the words "and the Authority" '
        "shall be omitted.\n"
        "5. For rule 16 of the principal rules, the following rule shall be substituted, "
        "namely:\u2014\n16. Timelines for refund.- Any refund shall be paid within thirty days.\n"
        "By order of the Governor,\nSecretary to Government\n"
    )
    read = read_instructions([(1, text)])
    assert read.in_force_on == dt.date(2019, 4, 1) and read.problems == []
    got = [(i.kind, i.target.label(), i.old_words, i.new_words, i.new_text)
           for i in read.instructions]  # fmt: skip
    assert got == [
        ("substitute_words", "Rule 3(3)(a)", "5", "10", None),
        ("insert", "Rule 4(2)", None, None,
         "(2A) The promoter shall also file a quarterly report."),
        ("omit_words", "Rule 5(1)", "and the Authority", None, None),
        ("substitute", "Rule 16", None, None,
         "16. Timelines for refund.- Any refund shall be paid within thirty days."),
    ]  # fmt: skip


def test_an_order_that_breaks_its_words_across_lines_amends_from_its_date(tmp_path: Path) -> None:
    """A G.O. as print breaks it: a lead-in ("In the principal Rules,-"), "sub-" ending a line,
    "sub- rule" with a stray space, "substi-" / "tuted", straight and curly quotes. Parsed as
    the pipeline parses a PDF, what it amends is read from its own words (no --amends) and the
    rules change from its date: both versions stand, each on its days."""
    order = [
        "GOVERNMENT OF MIZORAM", "NOTIFICATION",
        f"The Governor of Mizoram hereby makes the following amendment to the {RULES_TITLE} "
        "(hereinafter referred to as the principal Rules).",
        "In the principal Rules,-",
        "(a) in rule 3, in sub-",
        "rule (2), for the word \u201cten\u201d the word \u201ctwenty\u201d shall be substituted;",
        "(b) in rule 8, in sub- rule (2), for the words \"plus two per cent\" the words \"plus "
        "three per cent\" shall be substi-",
        "tuted.",
        "By order of the Governor,",
    ]  # fmt: skip
    rules_pdf = write_pdf(tmp_path / "rules.pdf", rules_pages())
    order_pdf = write_pdf(tmp_path / "order.pdf", [order])
    rules = _spec("mizoram_rules_2018", RULES_TITLE, "rules", "2018-05-01", rules_pdf)
    go = _spec("mizoram_go_2024", "G.O. 2024", "order", "2024-04-01", order_pdf)
    rule_rows, _ = _parsed(rules, rules_pdf)
    order_rows, order_pages = _parsed(go, order_pdf)
    printed = "\n".join(text for _, text in order_pages)
    assert "sub-\nrule" in printed and "sub- rule" in printed and "substi-\ntuted" in printed
    assert read_instructions(order_pages).problems == []
    instrument = instrument_of(go.key, go.title, go.effective_date, order_pages, kind="order",
                               amends=(), repeals=(), titles={rules.key: RULES_TITLE})  # fmt: skip
    assert instrument is not None and instrument.amends == (rules.key,)
    result = amend_partition(rule_rows + order_rows, [instrument])
    before, after = _live(result.rows, dt.date(2024, 3, 31)), _live(result.rows, APRIL)
    assert "fee of ten rupees" in before["Rule 3"] and "fee of twenty rupees" in after["Rule 3"]
    assert "plus two per cent" in before["Rule 8"] and "plus three per cent" in after["Rule 8"]
    assert result.problems == [] and len(result.done) == 2

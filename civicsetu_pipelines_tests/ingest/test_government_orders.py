"""Government orders read as printed (issue 35): a G.O.'s framing is not instructions, an
instruction in no numbered paragraph is read, a quoted table is new text, a corrigendum whose
place cannot be found is named with its words, and a notification that establishes or appoints
under the Act amends nothing."""

from __future__ import annotations

import datetime as dt

from civicsetu_pipelines.ingest.amendments import (
    Address,
    instrument_of,
    operative_span,
    read_instructions,
)
from civicsetu_pipelines_tests.amending_documents import GO, RULES_TITLE

TITLES = {
    "mz_rules": RULES_TITLE,
    "rera_act_2016": "The Real Estate (Regulation and Development) Act, 2016",
}


def _instrument(text: str, kind: str = "order") -> object:
    return instrument_of("x", "X", dt.date(2019, 1, 28), [(1, text)], kind=kind, amends=(),
                         repeals=(), titles=TITLES)  # fmt: skip


def test_a_go_framing_is_not_read_and_its_unnumbered_instruction_is() -> None:
    text = "\n".join(GO)
    start, end = operative_span(text)
    operative = text[start:end]
    assert operative.strip().startswith("In sub-rule (2) of rule 3")
    assert "Read the following" not in operative and "Copy to" not in operative
    read = read_instructions([(2, text)])
    assert read.problems == []
    (one,) = read.instructions
    assert (one.kind, one.target, one.old_words, one.new_words, one.page) == (
        "substitute_words",
        Address("rule", "3", ("2",)),
        "ten",
        "twenty",
        2,
    )
    inst = _instrument(text)
    assert inst is not None and inst.amends == ("mz_rules",)  # type: ignore[attr-defined]


def test_no_numbered_paragraph_and_no_framing_at_all() -> None:
    text = ('In sub-rule (2) of rule 18 of the said rules, for the word "three" the word "five" '
            "shall be substituted.")  # fmt: skip
    (one,) = read_instructions([(1, text)]).instructions
    assert one.target == Address("rule", "18", ("2",)) and one.new_words == "five"
    # after an enacting formula and a place-date line, the instruction's words are its own
    framed = "\n".join(["NOTIFICATION", "Gandhinagar, the 1st March, 2024.",
                         "The Government hereby makes the following rules further to amend the "
                         "X Rules, 2016, namely:-", text, "By order of the Governor,"])  # fmt: skip
    (one,) = read_instructions([(1, framed)]).instructions
    assert one.words == text


def test_a_quoted_table_is_the_new_text_of_a_substitution() -> None:
    text = "\n".join([
        "NOTIFICATION",
        f"The Government hereby makes the following amendment to the {RULES_TITLE} "
        "(hereinafter referred to as the said rules).",
        "In the said rules, for rule 3, the following shall be substituted, namely:-",
        "\u201c3. Fee for registration.- The promoter shall pay the fee in the table below:",
        "Sl. No.   Kind of project      Fee per square metre",
        "1.        Group housing        Rs. 5",
        "2.        Commercial           Rs. 20",
        "3.        Mixed                Rs. 10\u201d.",
        "By order of the Governor,",
        "A. SECRETARY",
    ])  # fmt: skip
    read = read_instructions([(1, text)])
    assert read.problems == []
    (one,) = read.instructions
    assert one.kind == "substitute" and one.target == Address("rule", "3")
    assert one.new_text is not None
    assert one.new_text.splitlines()[-1].split() == ["3.", "Mixed", "Rs.", "10"]
    assert "SECRETARY" not in one.new_text


def test_a_corrigendum_to_another_orders_annexure_is_named_never_guessed() -> None:
    text = "\n".join([
        "GOVERNMENT OF MIZORAM",
        "CORRIGENDUM",
        "In the Annexure to G.O.Ms.No. 21, UD&PA Department, dated 28-01-2019, for item 3, the "
        "following item shall be substituted, namely:-",
        "\u201c3. Commercial projects: Rs. 25 per square metre\u201d.",
        "By order of the Governor,",
    ])  # fmt: skip
    read = read_instructions([(1, text)])
    assert read.instructions == []
    assert len(read.problems) == 1 and "for item 3" in read.problems[0]
    assert _instrument(text) is None  # it names no registered document it amends


def test_a_notification_that_establishes_or_appoints_amends_nothing() -> None:
    text = "\n".join([
        "GOVERNMENT OF MIZORAM",
        "NOTIFICATION",
        "In exercise of the powers conferred by section 20 of the Real Estate (Regulation and "
        "Development) Act, 2016, the Government of Mizoram hereby establishes the Mizoram Real "
        "Estate Regulatory Authority and appoints Shri X as its Chairperson. The "
        f"{RULES_TITLE} shall apply to its proceedings.",
        "By order of the Governor,",
    ])  # fmt: skip
    assert _instrument(text, kind="notification") is None
    assert read_instructions([(1, text)]).instructions == []

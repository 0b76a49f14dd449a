"""Where the states depart (issue 29): values read from rules' words, the divergences over the
states, and on the corpus the Gujarat/Chandigarh interest difference with both quotes."""

from __future__ import annotations

from typing import Any

import pytest

from civicsetu_pipelines.graph.matters import Matter
from civicsetu_pipelines.provisions.asking import matter_asked
from civicsetu_pipelines.provisions.table import (
    PER_KIND_UNIT,
    Provision,
    _read_value,
    divergences,
    load_matter_specs,
    read_provisions,
)
from civicsetu_pipelines.provisions.values import (
    number_value,
    read_days,
    read_rate,
    read_rupees,
    read_years,
    sentence_at,
)


@pytest.mark.parametrize(
    ("words", "number"),
    [("45", 45), ("forty-five", 45), ("one lakh", 100_000), ("1,00,000", 100_000),
     ("two hundred and fifty", 250), ("twenty five thousand", 25_000), ("2.5", 2.5)],
)  # fmt: skip
def test_numbers_in_figures_and_in_words(words: str, number: float) -> None:
    assert number_value(words) == number


def test_values_of_each_kind_are_read_from_the_rules_words() -> None:
    mclr = read_rate("shall be the State Bank of India highest Marginal Cost of Lending Rate plus "
                     "two per cent.: Provided that")  # fmt: skip
    assert mclr is not None and (mclr.text, mclr.number) == ("SBI MCLR + 2%", 2.0)
    contract = read_rate("the rate of interest shall be the contractual rate of interest as may "
                         "be mutually agreed to between the promoter and the allottee")  # fmt: skip
    assert contract is not None and contract.unit == "contractual"
    assert read_rate("the promoter shall pay interest") is None  # nothing fixed, nothing guessed
    days = read_days("payable to the allottee within forty-five days from the date")
    assert days is not None and days.text == "45 days"
    years = read_years("shall be valid for a period of five years.")
    assert years is not None and years.text == "5 years"
    before = read_rupees("(a) in case of group housing project,- five rupees per square meter")
    after = read_rupees("a registration fee of rupees ten thousand by demand draft")
    assert before is not None and before.text == "Rs 5 per square metre"
    assert after is not None and after.text == "Rs 10000"
    text = "First sentence here. (2) The fee shall be Rs. 25,000/- for an individual. Next."
    fee = read_rupees(text)
    assert fee is not None
    assert (
        sentence_at(text, fee.start, fee.end)
        == "(2) The fee shall be Rs. 25,000/- for an individual."
    )


def test_a_fee_by_project_kind_is_read_as_its_schedule_quoted_from_first_item_to_last() -> None:
    (spec,) = [s for s in load_matter_specs() if s.key == "project_registration_fee"]
    text = (
        "(1) Every application shall be in Form A.\n"
        "(2) The promoter shall pay a fee by demand draft for a sum calculated at the rate of,-\n"
        "(a) for plotted development projects, seven rupees per square meter; and\n"
        "(b) for mixed development (residential and commercial) projects, Rs. 12 per sq. m.\n"
        "where the area exceeds one thousand square meters, fifteen rupees per square meter;\n"
        "(c) rupees thirty per square meter for commercial projects.\n"
        "(3) The promoter shall pay a late fee of Rs. 2 per square meter.\n"
    )
    value = _read_value(spec, text)
    assert value is not None
    assert value.text == ("Rs 7 per square metre (plotted); Rs 12 per square metre (mixed); "
                          "Rs 30 per square metre (commercial)")  # fmt: skip
    assert value.unit == PER_KIND_UNIT and value.number == 7
    quote = sentence_at(text, value.start, value.end)
    assert quote.startswith("(a) for plotted") and quote.endswith("commercial projects.")
    assert "late fee" not in quote  # the list ends where sub-rule (3) begins
    one = _read_value(spec, "(2) The promoter shall pay a fee of ten rupees per square meter "
                            "for group housing projects.")  # fmt: skip
    assert one is not None and one.text == "Rs 10 per square metre (group housing)"


@pytest.mark.parametrize(
    ("question", "matter"),
    [
        ("Do Punjab and Kerala charge the same rate of interest on delayed possession?",
         "interest_rate"),
        ("Within how many days must a refund be paid in each state?", "refund_timeline"),
        ("Which state charges a developer the least to register a housing project?",
         "project_registration_fee"),
        ("Is the broker registration fee higher in Goa or in Assam?", "agent_registration_fee"),
        ("For how many years is an agent's licence valid in different states?",
         "agent_registration_validity"),
        # other matters, and none: left to retrieval
        ("What does it cost to extend a project's registration in Goa and Assam?", None),
        ("Compare the compounding fee for an offence in Goa and Assam.", None),
        ("Compare the appeal procedures of Goa and Assam.", None),
    ],
)  # fmt: skip
def test_a_question_names_the_matter_it_compares_states_on(question: str, matter: str) -> None:
    found = matter_asked(question, load_matter_specs())
    assert (found.key if found else None) == matter


def _provision(j: str, value: str | None, unit: str | None = "percent over SBI MCLR",
               draft: bool = False) -> Provision:  # fmt: skip
    if value is None:
        return Provision(j, "interest_rate", "not_found")
    return Provision(j, "interest_rate", "found", value, None, unit, f"{j} quote",
                     f"{j.lower()}_rules", "Rule 15", f"c-{j}", 3, "title", draft)  # fmt: skip


HEADS = [Matter("84(2)(g)", "rules", "the rate of interest payable under section 12",
                "the rate of interest payable", ("Section 12",), "a1", 30)]  # fmt: skip


def test_divergences_flag_a_different_rate_a_contract_an_unfilled_matter_and_a_draft() -> None:
    specs = [s for s in load_matter_specs() if s.key == "interest_rate"]
    provisions = [
        _provision("ALPHA", "SBI MCLR + 2%"),
        _provision("BETA", "SBI MCLR + 2%"),
        _provision("GAMMA", "SBI MCLR + 3%"),  # a state that fixes a different rate
        _provision("DELTA", "contractual rate, as mutually agreed", "contractual"),
        _provision("EPSILON", None),  # one that leaves the matter unfilled
        _provision("ZETA", "SBI MCLR + 2%", draft=True),  # one in draft
    ]
    flags = {(f.jurisdiction, f.kind): f for f in divergences(provisions, specs, HEADS)}
    assert set(flags) == {("GAMMA", "differs"), ("DELTA", "contractual"), ("DELTA", "differs"),
                          ("EPSILON", "unfilled"), ("ZETA", "draft")}  # fmt: skip
    differs = flags[("GAMMA", "differs")]
    assert "SBI MCLR + 3%" in differs.message and "3 of 5" in differs.message
    assert [e["jurisdiction"] for e in differs.evidence] == ["GAMMA", "ALPHA"]  # both quotes
    assert all(e["quote"] for e in differs.evidence)
    contract = flags[("DELTA", "contractual")]
    assert "84(2)(g)" in contract.message and "not legal advice" in contract.message
    assert not flags[("EPSILON", "unfilled")].evidence


def test_the_matters_file_names_heads_the_act_has(tmp_path: Any) -> None:
    specs = load_matter_specs()
    assert {s.key for s in specs} >= {"interest_rate", "refund_timeline",
                                      "project_registration_fee", "agent_registration_fee",
                                      "agent_registration_validity",
                                      "registration_decision_time"}  # fmt: skip
    bad = tmp_path / "matters.yaml"
    bad.write_text("schema_version: 1\nmatters:\n  - {key: x_y, name: Nothing, value: days}\n")
    with pytest.raises(ValueError, match="names no head and no section"):
        load_matter_specs(bad)


# --------------------------------------------------------------------------- on the corpus


def test_gujarat_leaves_interest_to_the_contract_where_chandigarh_fixes_mclr_plus_two(
    corpus_store: Any,
) -> None:
    from civicsetu_pipelines.answer import quote_in
    from civicsetu_pipelines.graph import prescribed_matters, stored_act_chunks
    from civicsetu_pipelines.store.database import connect

    specs = load_matter_specs()
    with connect(corpus_store.database_url) as conn:
        heads = prescribed_matters(stored_act_chunks(conn, "rera_act_2016"))
        provisions = [p for j in ("CHANDIGARH", "DAMAN_AND_DIU", "GUJARAT", "UTTAR_PRADESH")
                      for p in read_provisions(conn, j, specs, heads)]  # fmt: skip
        by = {(p.jurisdiction, p.matter): p for p in provisions}
        for p in provisions:  # every value's quote is verbatim in its chunk
            if p.status != "not_found":
                (text,) = conn.execute("SELECT text FROM legal_chunks WHERE chunk_id = %s",
                                       (p.chunk_id,)).fetchone()  # fmt: skip
                assert quote_in(str(p.quote), text), p
    assert by[("CHANDIGARH", "interest_rate")].value == "SBI MCLR + 2%"
    assert by[("DAMAN_AND_DIU", "interest_rate")].value == "SBI MCLR + 2%"
    assert by[("GUJARAT", "interest_rate")].unit == "contractual"
    assert by[("GUJARAT", "interest_rate")].label == "Rule 16"
    for j in ("CHANDIGARH", "GUJARAT", "DAMAN_AND_DIU", "UTTAR_PRADESH"):
        assert by[(j, "refund_timeline")].value == "45 days"
    assert by[("GUJARAT", "agent_registration_validity")].value == "5 years"
    # a fee schedule by project kind, and an amount OCR misspelt ("Tupees twenty-five thousand")
    assert by[("GUJARAT", "project_registration_fee")].value.count("per square metre (") == 4
    assert by[("UTTAR_PRADESH", "project_registration_fee")].value == (
        "Rs 20 per square metre (commercial); Rs 10 per square metre (residential)")  # fmt: skip
    assert by[("UTTAR_PRADESH", "agent_registration_fee")].value == "Rs 25000"
    # no rule fixes the time to decide a registration: the Act's section 5(1) does, marked so
    decide = by[("GUJARAT", "registration_decision_time")]
    assert (decide.status, decide.value, decide.label) == ("act", "30 days (the Act)", "Section 5")
    assert "within a period of thirty days" in str(decide.quote)
    flags = divergences(provisions, specs, heads)
    assert not [f for f in flags if f.matter == "registration_decision_time"]
    (contract,) = [f for f in flags if f.kind == "contractual"]
    assert contract.jurisdiction == "GUJARAT"
    (differs,) = [f for f in flags if f.kind == "differs" and f.matter == "interest_rate"]
    quotes = {e["jurisdiction"]: e["quote"] for e in differs.evidence}
    assert "contractual rate of interest" in quotes["GUJARAT"]
    assert "Marginal Cost of Lending Rate plus two per cent" in next(
        q for j, q in quotes.items() if j != "GUJARAT")  # fmt: skip

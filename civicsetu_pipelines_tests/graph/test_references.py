"""Reference extraction and resolution (issue 4, first part): the forms used in Indian statutes
and rules, external enactments, finest-unit resolution and rule-to-Act derivation phrases."""

from __future__ import annotations

from pathlib import Path

import pytest

from civicsetu_pipelines.graph.references import (
    UnitIndex,
    derivation,
    extract_references,
    is_framing_rule,
    resolve,
)
from civicsetu_pipelines.graph.statutes import load_statutes


def refs(text: str) -> list[tuple[str, str | None]]:
    return [(r.kind, r.label or r.external) for r in extract_references(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("as provided in section 18", [("section", "Section 18")]),
        ("under sub-section (2) of section 4", [("section", "Section 4(2)")]),
        ("clause (b) of sub-section (1) of section 9", [("section", "Section 9(1)(b)")]),
        ("sub-clause (i) of clause (zk) of section 2", [("section", "Section 2(zk)(i)")]),
        (
            "sections 12, 14 and 18",
            [("section", "Section 12"), ("section", "Section 14"), ("section", "Section 18")],
        ),
        (
            "sections 12 to 14",
            [("section", "Section 12"), ("section", "Section 13"), ("section", "Section 14")],
        ),
        ("section 4A", [("section", "Section 4A")]),
        ("section 18(2)", [("section", "Section 18(2)")]),
        ("rule 3", [("rule", "Rule 3")]),
        ("sub-rule (2) of rule 5", [("rule", "Rule 5(2)")]),
        (
            "sub-sections (1) and (2) of section 4",
            [("section", "Section 4(1)"), ("section", "Section 4(2)")],
        ),
        ("as per Form 'A' in triplicate", [("form", "Form A")]),
        ("in these rules", [("these_rules", None)]),
        ("the provisions of this Act", [("this_act", None)]),
    ],
)
def test_reference_forms(text: str, expected: list[tuple[str, str | None]]) -> None:
    assert refs(text) == expected


def test_proviso_is_marked() -> None:
    (ref,) = extract_references("the proviso to section 18")
    assert ref.kind == "section" and ref.label == "Section 18" and ref.proviso


def test_evidence_offsets_quote_the_phrase() -> None:
    text = "The promoter shall, under sub-section (2) of section 4, enclose the documents."
    (ref,) = extract_references(text)
    assert text[ref.start : ref.end] == ref.phrase == "sub-section (2) of section 4"


@pytest.mark.parametrize(
    ("text", "name"),
    [
        (
            "within the meaning of section 300 of the Code of Criminal Procedure, 1973",
            "section 300 of Code of Criminal Procedure, 1973",
        ),
        (
            "punishable under section 420 of the Indian Penal Code",
            "section 420 of Indian Penal Code, 1860",  # the data file's name for it
        ),
        ("a company registered under the Companies Act, 2013", "Companies Act, 2013"),
        ("under the Consumer Protection Act, 1986", "Consumer Protection Act, 1986"),
    ],
)
def test_other_enactments_are_external_never_rera_sections(text: str, name: str) -> None:
    found = extract_references(text)
    assert [r.kind for r in found] == ["external"]
    assert found[0].external == name
    assert found[0].number is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("orders passed under Section 14B of the EPF Act on or after",
         ["section 14B of Employees' Provident Funds and Miscellaneous Provisions Act, 1952"]),
        ("sections 4 and 5 of the Cr.P.C. apply",
         ["section 4 of Code of Criminal Procedure, 1973",
          "section 5 of Code of Criminal Procedure, 1973"]),
        ("under section 7 of MOFA the promoter",
         ["section 7 of Maharashtra Ownership Flats (Regulation of the Promotion of Construction, "
          "Sale, Management and Transfer) Act, 1963"]),
        ("a company under the Companies Act 2013 and an offence under the IPC",
         ["Companies Act, 2013", "Indian Penal Code, 1860"]),
    ],
)  # fmt: skip
def test_abbreviations_and_short_titles_name_the_statute_of_the_data_file(
    text: str, expected: list[str]
) -> None:
    """data/statutes.yaml names each enactment once, whichever way a document writes it."""
    found = extract_references(text)
    assert [r.kind for r in found] == ["external"] * len(expected)
    assert [r.external for r in found] == expected


def test_an_abbreviation_in_lower_case_is_a_word_not_a_statute() -> None:
    assert extract_references("the ipc and mofa words, a bns test") == []


def test_section_of_this_act_or_rera_stays_internal() -> None:
    assert refs("section 71 of the Act")[0] == ("section", "Section 71")
    text = "section 2 of the Real Estate (Regulation and Development) Act, 2016"
    assert refs(text)[0] == ("section", "Section 2")


def test_resolution_goes_to_the_finest_existing_unit() -> None:
    act = UnitIndex.from_chunks(
        [("Section 13", "s13"), ("Section 13(2)", "s13-2"), ("Section 2(b)-(d)", "s2bd")]
    )
    rules = UnitIndex.from_chunks([("Rule 9", "r9"), ("Form A", "fa")])
    indexes = {"act": act, "rules": rules}

    def target(text: str) -> tuple[str | None, str | None, str | None]:
        (ref,) = extract_references(text)
        res = resolve(ref, document_key="rules", doc_type="rules", act_key="act", indexes=indexes)
        assert res is not None
        return res.target_document, res.target_label, res.target_chunk

    # In rules, "section N" is the Act's section N; "rule N" and forms are the rules' own.
    assert target("sub-section (2) of section 13") == ("act", "Section 13(2)", "s13-2")
    assert target("clause (a) of sub-section (1) of section 13") == ("act", "Section 13", "s13")
    assert target("clause (c) of section 2") == ("act", "Section 2(c)", "s2bd")  # range label
    assert target("sub-rule (3) of rule 9") == ("rules", "Rule 9", "r9")
    assert target("Form 'A'") == ("rules", "Form A", "fa")
    assert target("section 99") == ("act", "Section 99", None)  # unresolved, kept as evidence


def test_derivation_from_the_rules_own_words() -> None:
    text = (
        "9. Agreement for sale.- For the purpose of sub-section (2) of section 13, the agreement "
        "for sale shall be as per Annexure A."
    )
    found = derivation(text)
    assert found is not None and [r.label for r in found.references] == ["Section 13(2)"]
    assert (found.confidence, found.basis) == (1.0, "phrase")
    found = derivation("25. Appeal.- An appeal under sub-section (1) of section 44 shall be filed")
    assert found is not None and found.references[0].label == "Section 44(1)"
    assert derivation("2. Definitions.- In these rules, unless the context requires,-") is None


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("8. (1) Upon the revocation of registration as per section 7 the", "Section 7"),
        ("22. (1) In addition to the powers specified in clause (iv) of sub-section (2) of "
         "section 35, the Authority", "Section 35(2)(iv)"),
        ("9. Subject to the provisions of sub-section (1) of section 40, the", "Section 40(1)"),
        ("4. Upon the notification for commencement of sub-section (1) of section 3, the",
         "Section 3(1)"),
        ("24. (1) The Council shall make recommendation on the matters set out in sub-section (1) "
         "of section 42.", "Section 42(1)"),
    ],
)  # fmt: skip
def test_derivation_phrases(text: str, label: str) -> None:
    found = derivation(text)
    assert found is not None and found.references[0].label == label
    assert found.basis == "phrase"


def test_a_derivation_phrase_wins_over_an_earlier_mention() -> None:
    text = "7. (1) Where registration was revoked under section 7, for the purposes of section 6"
    found = derivation(text)
    assert found is not None and found.references[0].label == "Section 7"  # "under" is a phrase
    text = "6. (1) The fees of section 9 are payable. For the purposes of section 6, the promoter"
    found = derivation(text)
    assert found is not None and found.references[0].label == "Section 6"


def test_derivation_by_mention_has_lower_confidence() -> None:
    found = derivation("11. Grant.- Upon the registration of an agent, section 9 applies.")
    assert found is not None and found.references[0].label == "Section 9"
    assert (found.confidence, found.basis) == (0.8, "mention")


def test_a_list_derives_from_every_section_in_it() -> None:
    text = "16. (1) For the purpose of payment of interest under sections 12, 18 and 19 of the Act"
    found = derivation(text)
    assert found is not None
    assert [r.label for r in found.references] == ["Section 12", "Section 18", "Section 19"]


def test_framing_rules_and_other_acts_derive_from_nothing() -> None:
    text = '(c) "Authority" means the Authority established under sub-section (1) of section 20'
    assert derivation(text, title="Definitions") is None
    assert derivation("1. (1) These rules may be called ...", title="Short title") is None
    assert derivation("14. in accordance with section 44AB of the Income-tax Act, 1961") is None
    assert is_framing_rule("Definitions") and not is_framing_rule("Agreement for sale")


def test_sections_of_another_code_across_a_bridge_are_external() -> None:
    text = (
        "judicial proceedings within the meaning of sections 193, 219 and 228 for the purposes "
        "of section 196\nof the Indian Penal Code, and a civil court for the purposes of section "
        "195 and Chapter XXVI of the Code of Criminal Procedure, 1973, under section 18 for the "
        "purposes of section 19 of the Act"
    )
    found = [(r.kind, r.label or r.external) for r in extract_references(text)]
    assert ("external", "section 193 of Indian Penal Code, 1860") in found
    assert ("external", "section 228 of Indian Penal Code, 1860") in found
    assert ("external", "section 195 of Code of Criminal Procedure, 1973") in found
    assert ("section", "Section 18") in found and ("section", "Section 19") in found


def test_capitalized_regulation_in_a_title_is_no_reference() -> None:
    # A margin label interleaved with the text: "(Regulation and Development)" is a name.
    assert refs("conferred by section\n(Regulation 84 of the Real Estate") == []
    assert refs("under regulation 5") == [("regulation", "Regulation 5")]


def test_a_list_of_sections_of_another_act_across_a_line_break_is_external() -> None:
    text = "subject to sections 123 and 124 of the Indian\nEvidence Act, 1872 (1 of 1872)"
    found = extract_references(text)
    assert [r.kind for r in found] == ["external", "external"]
    assert found[0].external == "section 123 of Indian Evidence Act, 1872"


def test_a_us_reports_citation_is_no_section() -> None:
    """A judgment cites "West Virginia vs. Barnette, 319 U.S. 624 (1943)": the "S. 624" of
    "U.S." was read as a citation of the RERA Act's (missing) section 624."""
    assert extract_references("West Virginia vs. Barnette, 319 U.S. 624 (1943)") == []
    assert [r.label for r in extract_references("see s. 12 and S. 14")] == [
        "Section 12",
        "Section 14",
    ]


def test_rupee_amounts_are_not_sections() -> None:
    """Judgments and OCR'd rules print amounts as "Rs. 600" and "Rs.10,000": read as "s. 600"
    and "s.10" they were citations of sections that do not exist."""
    text = "a fee of Rs. 600, a deposit of Rs.10,000 and Rs.1,46,10,000 under s. 124, 126"
    assert [r.label for r in extract_references(text)] == ["Section 124", "Section 126"]


def test_a_statute_alias_that_would_match_ordinary_words_is_refused(tmp_path: Path) -> None:
    """An unquoted YAML alias with a comma splits in two ("... (Construction" and "Sale) Act"):
    the file is refused, naming the piece that names no enactment, rather than matching
    ordinary words."""
    bad = tmp_path / "statutes.yaml"
    bad.write_text(
        "schema_version: 1\nstatutes:\n"
        "  - name: Maharashtra Ownership Flats Act, 1963\n"
        "    aliases: [Maharashtra Ownership Flats (Construction, Sale) Act, MOFA]\n"
    )
    with pytest.raises(ValueError, match=r"statute #1") as refused:
        load_statutes(bad)
    assert "alias 'Maharashtra Ownership Flats (Construction' names no Act" in str(refused.value)

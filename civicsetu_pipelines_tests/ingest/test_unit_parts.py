"""The one spelling of a piece of a longer unit: what the structure writes, every reader reads."""

from __future__ import annotations

import re

import pytest

from civicsetu_pipelines.ingest import split_paragraph, split_part, unit_eid, whole_form
from civicsetu_pipelines.ingest.unit_parts import (
    PARAGRAPH_PATTERN,
    PART_PATTERN,
    paragraph_word,
    part_word,
)


@pytest.mark.parametrize("number", [1, 7, 12, 133])
def test_each_word_is_read_back_as_written(number: int) -> None:
    assert split_part(f"Form A{part_word(number)}") == ("Form A", number)
    assert split_paragraph(f"Agreement For Sale{paragraph_word(number)}") == (
        "Agreement For Sale",
        number,
    )
    assert re.fullmatch(PART_PATTERN, part_word(number))
    assert re.fullmatch(PARAGRAPH_PATTERN, paragraph_word(number))


def test_a_paragraphs_part_is_of_its_paragraph_and_its_form() -> None:
    label = f"Annexure A{paragraph_word(7)}{part_word(2)}"
    whole, part = split_part(label)
    assert (whole, part) == ("Annexure A para 7", 2)
    assert split_paragraph(whole) == ("Annexure A", 7)
    assert whole_form(label) == "Annexure A"
    assert unit_eid("form", label) == "att_annexure-a__para_7__p_2"


def test_what_is_no_piece_is_left_as_it_is() -> None:
    for path in ("Section 18(2)", "Form A", "Rule 4 (a)", "Paragraph 3", "KARNATAKA:Rule 12"):
        assert split_part(path) == (path, None)
        assert split_paragraph(path) == (path, None)
        assert whole_form(path) == path
    assert whole_form("KARNATAKA:Agreement For Sale para 12") == "KARNATAKA:Agreement For Sale"

"""The lay-to-legal vocabulary (data/vocabulary.yaml) and Snowball stems: every legal term is the
Act's own wording (checked against the stored Act), lay phrases are found on stems, longest
first, and a bad entry is refused naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from civicsetu_pipelines.answer.candidates import scoring_terms, term_overlap
from civicsetu_pipelines.answer.questions import understand
from civicsetu_pipelines.answer.vocabulary import (
    content_stems,
    load_vocabulary,
    stem_words,
    stems,
)
from civicsetu_pipelines.store.database import connect
from civicsetu_pipelines_tests.conftest import CorpusStore


def test_every_legal_term_is_the_acts_own_wording(corpus_store: CorpusStore) -> None:
    """A legal term that the Act does not use would send searches after words no provision has."""
    with connect(corpus_store.database_url) as conn:
        (act,) = conn.execute(
            "SELECT string_agg(coalesce(title, '') || ' ' || text, ' ') FROM legal_chunks "
            "WHERE status = 'current' AND doc_type = 'act' AND jurisdiction = 'CENTRAL'"
        ).fetchone()
    have = stems(str(act))
    missing = [
        legal
        for entry in load_vocabulary().entries
        for legal in entry.legal
        if not all(s in have for s in content_stems(legal))
    ]
    assert missing == []


def test_every_entry_has_a_source_and_no_lay_term_is_in_two_entries() -> None:
    seen: dict[tuple[str, ...], int] = {}
    for index, entry in enumerate(load_vocabulary().entries):
        assert "Act" in entry.source or "FAQ" in entry.source, entry.source
        for lay in entry.lay:
            key = tuple(stem_words(lay))
            assert seen.setdefault(key, index) == index, f"{lay!r} is in two entries"


def test_reading_finds_lay_phrases_on_stems_longest_first() -> None:
    reading = load_vocabulary().read(
        "My builder has delayed possession by two years. Can I get my money back?"
    )
    assert [lay for lay, _ in reading.matched] == ["builder", "delayed", "get my money back"]
    assert reading.legal_terms[:2] == (
        "promoter",
        "fails to complete or is unable to give possession",
    )
    assert "return the amount" in reading.legal_terms
    assert reading.rewrite is not None and reading.rewrite.startswith("My promoter has fails")
    # inflections meet on stems: "builders", "Flats"
    plural = load_vocabulary().read("Builders selling Flats")
    assert [legal for _, legal in plural.matched] == ["promoter", "apartment"]
    assert load_vocabulary().read("What does section 18 provide?").rewrite is None


def test_a_question_carries_its_lay_terms_and_they_weigh_as_one() -> None:
    query = understand("Can I get my money back from the builder?", known_jurisdictions=["CENTRAL"])
    assert query.lay_terms == ("get my money back", "builder")
    assert "promoter" in query.legal_terms and query.rewrite
    terms = scoring_terms(query)
    assert "get my money back" in terms and "money" not in terms
    # the Act's heading "Return of amount and compensation" answers "get my money back"
    assert term_overlap(["get my money back"], "Return of amount and compensation") == 1.0


def test_a_bad_vocabulary_file_is_refused_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "vocabulary.yaml"
    bad.write_text("schema_version: 1\nterms:\n  - lay: [builder]\n    legal: []\n", "utf-8")
    with pytest.raises(ValueError, match=r"vocabulary.yaml: term #1"):
        load_vocabulary.__wrapped__(bad)
    bad.write_text("terms: []\n", "utf-8")
    with pytest.raises(ValueError, match="schema_version"):
        load_vocabulary.__wrapped__(bad)


def test_anchors_name_parties_and_the_property_not_matters() -> None:
    vocabulary = load_vocabulary()
    assert not vocabulary.names_a_matter("builder") and not vocabulary.names_a_matter("flats")
    assert vocabulary.names_a_matter("delayed") and vocabulary.names_a_matter("money back")
    assert not vocabulary.names_a_matter("weather")  # not in the vocabulary at all

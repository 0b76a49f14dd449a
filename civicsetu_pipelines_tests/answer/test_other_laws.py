"""Subjects other enactments govern (data/other_laws.yaml): found in a question on stems as whole
phrases, never on a word the RERA Act uses for its own matters; a bad entry is refused naming the
file. And the state check's test of a unit that only matches its own document's name."""

from __future__ import annotations

from pathlib import Path

import pytest

from civicsetu_pipelines.answer.candidates import scoring_terms
from civicsetu_pipelines.answer.other_laws import load_other_laws
from civicsetu_pipelines.answer.questions import understand
from civicsetu_pipelines.answer.verdict import speaks_beyond_its_name
from civicsetu_pipelines.answer.vocabulary import stem_words
from civicsetu_pipelines.store.database import connect
from civicsetu_pipelines_tests.conftest import CorpusStore


@pytest.mark.parametrize(
    ("question", "subject"),
    [
        ("What stamp duties apply when I buy a flat?", "stamp duty"),
        ("Is GST charged on an under-construction apartment?", "goods and services tax"),
        ("How are capital gains taxed when I sell my flat?", "income tax"),
        ("Who pays the property tax before possession?", "property tax"),
        ("What should a rent agreement for my flat say?", "tenancy and rent"),
        (
            "Can a FIR be filed against my builder?",
            "criminal offences under the general criminal law",
        ),
    ],
)
def test_a_subject_is_found_on_stems_as_a_whole_phrase(question: str, subject: str) -> None:
    law = load_other_laws().subject_of(question)
    assert law is not None and law.subject == subject


@pytest.mark.parametrize(
    "question",
    [
        "What is the registration fee for a project in Gujarat?",  # RERA's own fee
        "Can the builder mortgage my flat to a bank for a loan?",  # RERA s.11(4)(h)
        "Is the promoter liable to pay interest for every month of delay?",
        "Can the stamp on my allotment letter be a seal of the promoter?",  # "stamp" alone
    ],
)
def test_the_acts_own_matters_name_no_other_law(question: str) -> None:
    assert load_other_laws().subject_of(question) is None


def test_speaks_of_reads_the_subjects_phrases_on_stems() -> None:
    laws = load_other_laws()
    law = laws.subject_of("stamp duty")
    assert law is not None
    assert laws.speaks_of("the stamp duties and registration charges payable", law)
    assert not laws.speaks_of("duty of the promoter to stamp the plans", law)


def test_no_phrase_names_a_matter_the_act_governs(corpus_store: CorpusStore) -> None:
    """A phrase in a heading of the stored Act would mark a question the Act answers as out of
    scope."""
    with connect(corpus_store.database_url) as conn:
        titles = [str(t) for (t,) in conn.execute(
            "SELECT DISTINCT title FROM legal_chunks WHERE status = 'current' "
            "AND doc_type = 'act' AND jurisdiction = 'CENTRAL' AND title IS NOT NULL"
        ).fetchall()]  # fmt: skip
    assert len(titles) > 80
    laws = load_other_laws()
    assert [t for t in titles if laws.subject_of(t) is not None] == []


def test_every_subject_has_a_source_and_no_phrase_is_in_two_subjects() -> None:
    seen: dict[tuple[str, ...], str] = {}
    for law in load_other_laws().entries:
        assert law.governed_by and len(law.source) >= 10
        for phrase in law.phrases:
            key = tuple(stem_words(phrase))
            assert seen.setdefault(key, law.subject) == law.subject, phrase


def test_a_bad_other_laws_file_is_refused_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "other_laws.yaml"
    bad.write_text(
        "schema_version: 1\nsubjects:\n  - subject: stamp duty\n    phrases: []\n", "utf-8"
    )
    with pytest.raises(ValueError, match=r"other_laws.yaml: subject #1"):
        load_other_laws.__wrapped__(bad)


def test_a_unit_matching_only_its_documents_name_is_no_evidence() -> None:
    query = understand("How long is a real estate agent's registration valid in Karnataka?",
                       known_jurisdictions=["CENTRAL", "KARNATAKA"])  # fmt: skip
    terms = scoring_terms(query)
    name = "Karnataka Real Estate (Regulation and Development) Rules, 2017"
    short_title = {"document_title": name, "title": "Short title and commencement",
                   "text": "(1) These rules may be called the Karnataka Real Estate (Regulation "
                   "and Development) Rules, 2017."}  # fmt: skip
    assert not speaks_beyond_its_name(terms, short_title)
    agents = {**short_title, "title": "Registration of real estate agents",
              "text": "The registration granted to a real estate agent shall be valid for five "
              "years."}  # fmt: skip
    assert speaks_beyond_its_name(terms, agents)

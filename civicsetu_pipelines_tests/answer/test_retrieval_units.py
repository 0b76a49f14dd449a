"""Retrieval and answer building, the pure parts (no database, no model): full-text query text,
label chains, reciprocal rank fusion, diversity, the deterministic reranker, the reranker
factory, term overlap, and the extractive answer's refusal / verdict / quotes / confidence."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from civicsetu_pipelines.answer.answers import model_distances
from civicsetu_pipelines.answer.candidates import Candidate, term_overlap, unit_summary
from civicsetu_pipelines.answer.citations import quote_in
from civicsetu_pipelines.answer.compose import (
    MAX_QUOTE_CHARS,
    MAX_QUOTES,
    _trim,
    choose_quotes,
    min_confidence,
    render_answer,
    shown_confidence,
)
from civicsetu_pipelines.answer.confidence import (
    LEVELS,
    TARGET_PRECISION,
    ConfidenceError,
    confidence,
    read_model,
)
from civicsetu_pipelines.answer.questions import Query, understand
from civicsetu_pipelines.answer.ranking import (
    AUTHORITY_WEIGHT,
    NATIONAL_BONUS,
    STATE_BONUS,
    CrossEncoderReranker,
    DeterministicReranker,
    diversify,
    make_reranker,
)
from civicsetu_pipelines.answer.retrieval import (
    RetrievalSettings,
    _label_chain,
    fulltext_query,
    fuse,
)
from civicsetu_pipelines.answer.verdict import (
    DISCLAIMER,
    EvidenceReading,
    evidence_refusal,
    evidence_verdict,
    refusal,
    state_verdict,
)
from civicsetu_pipelines.answer.vocabulary import stem
from civicsetu_pipelines.store.embedding import EmbeddingConfig, EvidenceDistances

KNOWN = ["CENTRAL", "GUJARAT", "CHANDIGARH", "KARNATAKA"]
ACT = "rera_act_2016"
ACT_TITLE = "The Real Estate (Regulation and Development) Act, 2016"
GUJARAT_RULES = "gujarat_rera_rules_2017"


def ask(question: str) -> Query:
    return understand(question, known_jurisdictions=KNOWN)


def row(
    chunk_id: str,
    *,
    label: str = "Section 18",
    section: str | None = None,
    title: str = "",
    text: str = "",
    document: str = ACT,
    jurisdiction: str = "CENTRAL",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "chunk_id": chunk_id,
        "document_key": document,
        "jurisdiction": jurisdiction,
        "label": label,
        "section_label": section or label.split("(")[0],
        "title": title,
        "text": text,
        **extra,
    }


def cand(chunk_id: str, **kwargs: Any) -> Candidate:
    """A Candidate; Candidate fields (ranks, distance, fused, score, exact, via) go to it, the
    rest to its row."""
    names = {f.name for f in dataclasses.fields(Candidate)} - {"row"}
    own = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
    return Candidate(row=row(chunk_id, **kwargs), **own)


def ids(candidates: Sequence[Candidate]) -> list[str]:
    return [c.chunk_id for c in candidates]


# ---------------------------------------------------------------------------------------------
# fulltext_query


def test_fulltext_query_or_semantics() -> None:
    assert fulltext_query(["refund", "interest"]) == "refund or interest"
    assert fulltext_query(["allottee"]) == "allottee"
    assert fulltext_query(("carpet", "area", "apartment")) == "carpet or area or apartment"


def test_fulltext_query_strips_query_metacharacters() -> None:
    terms = ["refund'", "interest;", "a&b", "x|y", "!not", "prefix:*", "(group", 'quo"te', "<>"]
    assert (
        fulltext_query(terms) == "refund or interest or ab or xy or not or prefix or group or quote"
    )
    # a term of several words is a quoted phrase of its safe words
    assert fulltext_query(["'; DROP TABLE legal_chunks; --"]) == '"DROP TABLE legal_chunks"'
    assert fulltext_query(["refund", "return the amount"]) == 'refund or "return the amount"'
    assert fulltext_query(['"quoted" phrase']) == '"quoted phrase"'
    assert fulltext_query(["18(2)(a)", "Rs.10,000"]) == "182a or Rs10000"


def test_fulltext_query_keeps_word_characters_and_hyphens() -> None:
    assert (
        fulltext_query(["sub-section", "real_estate", "4A"]) == "sub-section or real_estate or 4A"
    )
    # A leading hyphen would be websearch negation: stripped, so every term can only add.
    assert fulltext_query(["<->", "-interest"]) == "interest"
    assert all("-" not in t for t in ask("Is a sub-section (2) refund due?").terms)


def test_fulltext_query_empty() -> None:
    assert fulltext_query([]) == ""
    assert fulltext_query(["", "'", ";", "!!", "(*)", " "]) == ""
    assert fulltext_query(["", "refund", "&"]) == "refund"


def test_fulltext_query_keeps_indic_terms_whole() -> None:
    terms = ask("नियम क्या है?").terms
    assert "नियम" in terms
    assert fulltext_query(["नियम", "ಕರ್ನಾಟಕ"]) == "नियम or ಕರ್ನಾಟಕ"


# ---------------------------------------------------------------------------------------------
# _label_chain


@pytest.mark.parametrize(
    ("label", "chain"),
    [
        ("Section 18(2)(a)", ["Section 18(2)(a)", "Section 18(2)", "Section 18"]),
        ("Section 18", ["Section 18"]),
        ("Section 4A(2)", ["Section 4A(2)", "Section 4A"]),
        ("Rule 9(1)(a)(ii)", ["Rule 9(1)(a)(ii)", "Rule 9(1)(a)", "Rule 9(1)", "Rule 9"]),
        ("Form N", ["Form N"]),
    ],
)
def test_label_chain(label: str, chain: list[str]) -> None:
    assert _label_chain(label) == chain


# ---------------------------------------------------------------------------------------------
# fuse (reciprocal rank fusion)


def test_fuse_scores_by_hand() -> None:
    ranked = {
        "vector": [
            row("a", distance=0.21),
            row("b", distance=0.30),
            row("c", distance=0.44),
        ],
        "fulltext": [row("b", rank=0.8), row("d", rank=0.5)],
    }
    fused = fuse(ranked, k=60)
    assert ids(fused) == ["b", "a", "d", "c"]
    by_id = {c.chunk_id: c for c in fused}
    assert by_id["b"].fused == pytest.approx(1 / 62 + 1 / 61)
    assert by_id["a"].fused == pytest.approx(1 / 61)
    assert by_id["d"].fused == pytest.approx(1 / 62)
    assert by_id["c"].fused == pytest.approx(1 / 63)
    assert by_id["b"].ranks == {"vector": 2, "fulltext": 1}
    assert by_id["d"].ranks == {"fulltext": 2}
    # the vector distance is carried over; a full-text-only unit has none
    assert by_id["a"].distance == 0.21
    assert by_id["b"].distance == 0.30
    assert by_id["d"].distance is None
    assert all(not c.exact and c.via is None and c.score == 0.0 for c in fused)


def test_fuse_unit_in_both_lists_outranks_one_in_a_single_list_at_the_same_rank() -> None:
    ranked = {"vector": [row("a"), row("z")], "fulltext": [row("z")]}
    fused = fuse(ranked)
    assert ids(fused) == ["z", "a"]
    assert fused[0].fused == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1].fused == pytest.approx(1 / 61)


def test_fuse_three_lists_default_k_is_60() -> None:
    ranked = {
        "reference": [row("e")],
        "vector": [row("a", distance=0.3), row("e", distance=0.35)],
        "fulltext": [row("a"), row("f"), row("e")],
    }
    fused = fuse(ranked)
    scores = {c.chunk_id: c.fused for c in fused}
    assert scores == pytest.approx(
        {"e": 1 / 61 + 1 / 62 + 1 / 63, "a": 1 / 61 + 1 / 61, "f": 1 / 62}
    )
    assert ids(fused) == ["e", "a", "f"]
    assert fused[0].ranks == {"reference": 1, "vector": 2, "fulltext": 3}
    assert fused[0].distance == 0.35


def test_fuse_other_k() -> None:
    fused = fuse({"vector": [row("a"), row("b")], "fulltext": [row("b")]}, k=1)
    assert [c.fused for c in fused] == pytest.approx([1 / 3 + 1 / 2, 1 / 2])


def test_fuse_ties_broken_by_chunk_id() -> None:
    fused = fuse({"vector": [row("y"), row("q")], "fulltext": [row("x"), row("p")]})
    assert ids(fused) == ["x", "y", "p", "q"]
    assert fused[0].fused == fused[1].fused


def test_fuse_first_rank_of_a_retriever_counts_once() -> None:
    (only,) = fuse({"vector": [row("a", distance=0.2), row("a", distance=0.4)]})
    assert only.ranks == {"vector": 1}
    assert only.fused == pytest.approx(1 / 61)
    assert only.distance == 0.2  # the nearest distance is kept


def test_fuse_distance_from_a_later_retriever_and_none_never_overwrites() -> None:
    ranked = {
        "fulltext": [row("a", rank=0.9)],
        "vector": [row("a", distance=0.27)],
        "reference": [row("a", distance=None)],
    }
    (only,) = fuse(ranked)
    assert only.distance == 0.27
    assert only.row["rank"] == 0.9  # the first row seen is the unit's row (a copy)
    assert only.row is not ranked["fulltext"][0]


def test_fuse_nothing() -> None:
    assert fuse({}) == []
    assert fuse({"vector": [], "fulltext": []}) == []


# ---------------------------------------------------------------------------------------------
# diversify


def _docs(*documents: str, exact: Sequence[int] = ()) -> list[Candidate]:
    return [
        cand(f"{i:02d}", document=doc, exact=i in exact, score=10.0 - i)
        for i, doc in enumerate(documents)
    ]


def test_diversify_caps_units_per_document() -> None:
    ranked = _docs("act", "act", "act", "act", "guj", "guj", "kar")
    chosen = diversify(ranked, k=4, per_document=2)
    assert ids(chosen) == ["00", "01", "04", "05"]


def test_diversify_exact_matches_are_always_kept() -> None:
    ranked = _docs("act", "act", "act", "guj", "kar", exact=[2])
    chosen = diversify(ranked, k=4, per_document=2)
    assert ids(chosen) == ["00", "01", "02", "03"]  # the exact "02" beyond the cap of 2
    chosen = diversify(_docs("act", "act", "act", "act", exact=[0, 1, 2]), k=4, per_document=1)
    assert ids(chosen) == ["00", "01", "02", "03"]


def test_diversify_fills_to_k_by_score_when_the_cap_leaves_fewer() -> None:
    ranked = _docs("act", "act", "act", "act", "act", "guj")
    chosen = diversify(ranked, k=4, per_document=2)
    assert ids(chosen) == ["00", "01", "05", "02"]  # the cap first, then the best of the rest
    assert ids(diversify(ranked, k=10, per_document=1)) == ["00", "05", "01", "02", "03", "04"]


def test_diversify_small_inputs() -> None:
    assert diversify([], k=5, per_document=3) == []
    ranked = _docs("act", "guj")
    assert ids(diversify(ranked, k=5, per_document=3)) == ["00", "01"]
    assert ids(diversify(ranked, k=1, per_document=3)) == ["00"]


def _units(*units: tuple[str, str, str]) -> list[Candidate]:
    """Candidates in score order from (document, kind, label): the Act's sections, a state's
    rules, a judgment's paragraphs."""
    return [
        cand(f"{i:02d}", document=doc, doc_type=kind, label=label, score=10.0 - i,
             jurisdiction="CENTRAL" if doc == ACT else "GUJARAT")
        for i, (doc, kind, label) in enumerate(units)
    ]  # fmt: skip


# Issue 36: the Act's governing Section 23 scores below three sibling sections and above two
# state rules; a cap of three units per document pushed it below both.
_ACT_AND_RULES = (
    (ACT, "act", "Section 43"),
    (ACT, "act", "Section 44"),
    (ACT, "act", "Section 45"),
    (ACT, "act", "Section 23"),
    (GUJARAT_RULES, "rules", "Rule 4"),
    (GUJARAT_RULES, "rules", "Rule 5"),
)


def test_diversify_by_provision_keeps_the_governing_section_among_its_siblings() -> None:
    ranked = _units(*_ACT_AND_RULES)
    assert ids(diversify(ranked, k=4, per_document=3, rule="document")) == ["00", "01", "02", "04"]
    for rule in ("provision", "legislation"):  # each section is a provision of its own
        assert ids(diversify(ranked, k=4, per_document=3, rule=rule)) == ["00", "01", "02", "03"]
        assert all(c.gave_way is None for c in diversify(ranked, 6, 3, rule))


def test_diversify_by_provision_caps_the_units_of_one_section() -> None:
    ranked = _units(
        (ACT, "act", "Section 18(1)"),
        (ACT, "act", "Section 18(2)"),
        (ACT, "act", "Section 18(3)"),
        (ACT, "act", "Section 18"),
        (GUJARAT_RULES, "rules", "Rule 4"),
    )
    assert ids(diversify(ranked, k=4, per_document=3, rule="provision")) == ["00", "01", "02", "04"]
    assert ids(diversify(ranked, k=4, per_document=3, rule="legislation")) == [
        "00",
        "01",
        "02",
        "03",
    ]


def test_diversify_still_caps_a_judgments_paragraphs() -> None:
    judgment = "newtech_promoters_2021"
    ranked = _units(
        *((judgment, "judgment", f"Para {n}") for n in (40, 41, 42, 43)),
        (ACT, "act", "Section 18"),
    )
    for rule in ("provision", "legislation", "document"):
        assert ids(diversify(ranked, k=4, per_document=3, rule=rule)) == ["00", "01", "02", "04"]


def test_diversify_names_the_rule_and_the_unit_each_moved_unit_gave_way_to() -> None:
    ranked = _units(*_ACT_AND_RULES)
    chosen = diversify(ranked, k=6, per_document=3, rule="document")
    assert ids(chosen) == ["00", "01", "02", "04", "05", "03"]
    moved = {c.chunk_id: c.gave_way for c in chosen if c.gave_way}
    assert list(moved) == ["03"]
    assert str(moved["03"]) == (
        f"gave way to GUJARAT Rule 4 ({GUJARAT_RULES}): at most 3 units of one document"
    )
    assert unit_summary(chosen[-1])["moved"] == str(moved["03"])
    assert "moved" not in unit_summary(chosen[0])
    sections = _units(*((ACT, "act", f"Section 18({n})") for n in (1, 2, 3, 4)),
                      (GUJARAT_RULES, "rules", "Rule 4"))  # fmt: skip
    chosen = diversify(sections, k=5, per_document=3, rule="provision")
    assert [str(c.gave_way) for c in chosen if c.gave_way] == [
        f"gave way to GUJARAT Rule 4 ({GUJARAT_RULES}): at most 3 units of one provision"
    ]
    # a later pass forgets what an earlier one moved
    assert all(c.gave_way is None for c in diversify(sections, k=5, per_document=5))


def test_diversify_rejects_an_unknown_rule() -> None:
    with pytest.raises(ValueError, match="diversity 'section'"):
        diversify(_units(*_ACT_AND_RULES), k=4, per_document=3, rule="section")


# ---------------------------------------------------------------------------------------------
# term_overlap and the stemmer


@pytest.mark.parametrize(
    ("words", "meet"),
    [
        # Snowball (Porter2): inflections of one word meet ...
        (("refunds", "refund", "refunded"), True),
        (("allottees", "allottee"), True),
        (("penalties", "penalty"), True),
        (("delayed", "delay", "delays", "delaying"), True),
        (("apartments", "apartment"), True),
        (("registration", "registrations"), True),
        (("compensation", "compensate", "compensated"), True),
        (("charges", "charge", "charged"), True),
        # ... different words do not
        (("refund", "fund"), False),
        (("register", "registration"), False),
        (("promoter", "promise"), False),
    ],
)
def test_snowball_stems(words: tuple[str, ...], meet: bool) -> None:
    assert (len({stem(w) for w in words}) == 1) is meet


def test_term_overlap_with_stems() -> None:
    assert term_overlap(["refunds"], "the promoter shall refund the amount") == 1.0
    assert term_overlap(["refund"], "REFUNDS of amount") == 1.0
    assert term_overlap(["registering"], "a registered agent") == 1.0
    # Snowball: "registration" stems to "registr", "register" to "regist": they do not meet
    assert term_overlap(["registration"], "the promoter shall register the project") == 0.0
    assert term_overlap(["registration"], "Registrations granted") == 1.0


def test_term_overlap_counts_the_statutes_words_for_lay_terms() -> None:
    # data/vocabulary.yaml: builder -> promoter, flat -> apartment, money back -> return the amount
    assert term_overlap(["builder"], "the promoter shall return the amount") == 1.0
    assert term_overlap(["flat", "builder"], "an apartment sold by the promoter") == 1.0
    assert term_overlap(["refund"], "the promoter shall return the amount received") == 1.0
    assert term_overlap(["builder"], "the allottee shall pay") == 0.0


def test_term_overlap_shares_and_edge_cases() -> None:
    text = "The promoter shall refund the amount with interest."
    assert term_overlap(["refund", "interest", "possession", "delayed"], text) == 0.5
    assert term_overlap(["refund", "refunds", "Refund"], text) == 1.0  # one stem, counted once
    assert term_overlap(["refund", ""], text) == 1.0
    assert term_overlap([], text) == 0.0
    assert term_overlap([""], text) == 0.0
    assert term_overlap(["refund"], None) == 0.0
    assert term_overlap(["refund"], "") == 0.0
    assert term_overlap(["section", "2"], "under sub-section (2)") == 1.0
    assert term_overlap(["fund"], "refund") == 0.0  # whole words only


@pytest.mark.parametrize(
    ("term", "text"),
    [
        ("allottees", "the allottee shall be entitled to claim the refund"),
        ("allottee", "rights and duties of allottees"),
        ("penalties", "penalty for non-registration under section 3"),
        ("estates", "real estate project"),
    ],
)
def test_term_overlap_singular_and_plural_meet(term: str, text: str) -> None:
    assert term_overlap([term], text) == 1.0


# ---------------------------------------------------------------------------------------------
# DeterministicReranker


def test_reranker_score_formula_by_hand() -> None:
    query = ask("Can the allottee get a refund with interest?")
    assert query.terms == ("allottee", "refund", "interest")
    c = cand(
        "a",
        fused=1 / 61,
        ranks={"vector": 1},
        title="Return of amount and compensation",
        label="Section 18(1)",
        text="The promoter shall refund the amount with interest.",
    )
    low = cand("b", fused=1 / 122, ranks={"fulltext": 30}, title="Other", text="nothing")
    ranked = DeterministicReranker().rerank(query, [low, c])
    assert ids(ranked) == ["a", "b"]
    # fused/top 1.0 + 0.35 * title 1/3 ("return the amount" is the statute's words for a refund:
    # data/vocabulary.yaml) + 0.25 * text 2/3 + NATIONAL_BONUS (no state named, a CENTRAL unit)
    assert c.score == pytest.approx(1.0 + 0.35 / 3 + 0.25 * 2 / 3 + NATIONAL_BONUS)
    assert low.score == pytest.approx(0.5 + NATIONAL_BONUS)
    assert c.why["intent"] == NATIONAL_BONUS and c.why["title"] == pytest.approx(0.35 / 3)
    assert DeterministicReranker().name == "deterministic"


def test_reranker_exact_match_first() -> None:
    query = ask("What does Section 18 say about refunds?")
    strong = cand(
        "a",
        fused=2 / 61,
        ranks={"vector": 1, "fulltext": 1},
        label="Section 19(4)",
        title="Rights and duties of allottees: refunds",
        text="The allottee shall be entitled to claim the refund of amount paid.",
    )
    exact = cand(
        "z",
        fused=1 / 61,
        ranks={"reference": 1},
        exact=True,
        label="Section 18",
        title="Return of amount and compensation",
        text="If the promoter fails to complete or is unable to give possession.",
    )
    ranked = DeterministicReranker().rerank(query, [strong, exact])
    assert ids(ranked) == ["z", "a"]
    assert exact.score > strong.score
    assert exact.score >= 1.0 + 0.5


def test_reranker_title_overlap_matters() -> None:
    query = ask("Can the allottee get a refund with interest?")
    text = "The amount shall be returned as prescribed."
    plain = cand("a", fused=1 / 61, ranks={"vector": 1}, title="Obligations of promoter", text=text)
    titled = cand("z", fused=1 / 61, ranks={"vector": 1}, title="Refund with interest", text=text)
    ranked = DeterministicReranker().rerank(query, [plain, titled])
    assert ids(ranked) == ["z", "a"]
    assert titled.score - plain.score == pytest.approx(0.35 * 2 / 3)
    # the label counts as title too; "refund" is in the label, not in the text ("returned" alone
    # is not "return the amount")
    by_label = cand("b", fused=1 / 61, ranks={"vector": 1}, label="Refund", text=text)
    DeterministicReranker().rerank(query, [by_label])
    assert by_label.score == pytest.approx(1.0 + 0.35 / 3 + 0.25 / 3 + NATIONAL_BONUS)


def test_reranker_penalty_provision_boosted_for_a_penalty_question() -> None:
    query = ask("What is the penalty for not registering a project?")
    assert "penalty" in query.intents
    plain_query = dataclasses.replace(query, intents=frozenset())

    def units() -> list[Candidate]:
        return [
            cand(
                "a",
                fused=1 / 61,
                ranks={"vector": 1},
                label="Section 3",
                title="Prior registration of real estate project with Real Estate Regulatory "
                "Authority",
                text="No promoter shall advertise or sell without registering the real estate "
                "project with the Real Estate Regulatory Authority.",
            ),
            cand(
                "b",
                fused=1 / 62,
                ranks={"vector": 2},
                label="Section 59",
                title="Punishment for non-registration under section 3",
                text="If any promoter contravenes the provisions of section 3, he shall be liable "
                "to a penalty which may extend up to ten per cent of the estimated cost of the "
                "real estate project.",
            ),
            cand(
                "c",
                fused=1 / 63,
                ranks={"vector": 3},
                label="Section 4",
                title="Application for registration of real estate projects",
                text="A penalty is mentioned in this text, not in its title.",
            ),
        ]

    without = {c.chunk_id: c for c in DeterministicReranker().rerank(plain_query, units())}
    ranked = DeterministicReranker().rerank(query, units())
    with_intent = {c.chunk_id: c for c in ranked}
    assert ids(ranked)[0] == "b"
    assert ids(DeterministicReranker().rerank(plain_query, units()))[0] == "a"
    assert with_intent["b"].score - without["b"].score == pytest.approx(0.3)
    assert with_intent["a"].score == pytest.approx(without["a"].score)
    assert with_intent["c"].score == pytest.approx(without["c"].score)  # text does not count


def test_reranker_derived_from_neighbour_boosted_for_an_implementation_question() -> None:
    query = ask("Which Gujarat rules implement section 4?")
    assert "implementation" in query.intents
    rule_text = "The promoter shall furnish the following information along with the application."

    def units() -> list[Candidate]:
        common = {"document": GUJARAT_RULES, "jurisdiction": "GUJARAT", "text": rule_text}
        return [
            cand("d2", via="graph:DERIVED_FROM", graph_depth=2, label="Rule 6", **common),
            cand("z1", via="graph:DERIVED_FROM", graph_depth=1, label="Rule 3", **common),
            cand("r1", via="graph:REFERENCES", graph_depth=1, label="Rule 5", **common),
        ]

    ranked = DeterministicReranker().rerank(query, units())
    scores = {c.chunk_id: c.score for c in ranked}
    assert ids(ranked)[0] == "z1"
    assert scores["z1"] - scores["d2"] == pytest.approx(0.5)
    assert scores["r1"] == pytest.approx(scores["d2"])  # REFERENCES gets no implementation bonus
    plain = DeterministicReranker().rerank(dataclasses.replace(query, intents=frozenset()), units())
    assert ids(plain) == ["d2", "r1", "z1"]  # equal scores without the bonus: by chunk_id
    assert len({round(c.score, 9) for c in plain}) == 1


def test_reranker_references_neighbour_boosted_for_a_cross_reference_question() -> None:
    query = ask("Which sections refer to section 18?")
    assert "cross_reference" in query.intents
    one = cand("r1", via="graph:REFERENCES", graph_depth=1, label="Section 71", text="x")
    two = cand("r0", via="graph:REFERENCES", graph_depth=2, label="Section 72", text="x")
    DeterministicReranker().rerank(query, [one, two])
    assert one.score - two.score == pytest.approx(0.3)


def test_reranker_section_2_boosted_for_a_definition_question() -> None:
    query = ask("What is the meaning of carpet area?")
    assert "definition" in query.intents
    text = '"carpet area" means the net usable floor area of an apartment'
    definition = cand(
        "z", fused=1 / 62, ranks={"vector": 2}, label="Section 2(k)", section="Section 2", text=text
    )
    other = cand(
        "a", fused=1 / 61, ranks={"vector": 1}, label="Rule 2(1)(c)", section="Rule 2", text=text
    )
    ranked = DeterministicReranker().rerank(query, [other, definition])
    assert ids(ranked) == ["z", "a"]
    assert definition.score - other.score == pytest.approx(0.3 + (1 / 62) / (1 / 61) - 1.0)


def test_reranker_expanded_only_units_penalized() -> None:
    query = ask("Can the allottee get a refund with interest?")
    text = "The promoter shall refund the amount with interest."
    hit = cand("a", text=text)  # neither ranked nor expanded
    family = cand("b", via="family", text=text)
    ranked_family = cand("c", via="family", ranks={"fulltext": 4}, text=text)
    DeterministicReranker().rerank(query, [hit, family, ranked_family])
    assert hit.score - family.score == pytest.approx(0.15)
    assert ranked_family.score == pytest.approx(hit.score)  # fused is 0 for all: top is 1.0


def test_reranker_empty_and_all_expanded() -> None:
    query = ask("Can the allottee get a refund with interest?")
    assert DeterministicReranker().rerank(query, []) == []
    only = cand("a", via="family", text="refund")
    (ranked,) = DeterministicReranker().rerank(query, [only])  # fused 0: no division by zero
    assert ranked.score == pytest.approx(0.25 / 3 - 0.15 + NATIONAL_BONUS)


# ---------------------------------------------------------------------------------------------
# make_reranker


def test_make_reranker_default_and_missing_model(tmp_path: Path) -> None:
    assert isinstance(make_reranker(None), DeterministicReranker)
    assert isinstance(make_reranker(""), DeterministicReranker)
    missing = make_reranker(str(tmp_path / "no-such-model"))
    assert isinstance(missing, DeterministicReranker)
    assert missing.name == "deterministic"


def test_make_reranker_existing_path_is_a_cross_encoder(tmp_path: Path) -> None:
    reranker = make_reranker(str(tmp_path))
    assert isinstance(reranker, CrossEncoderReranker)
    assert reranker.model_path == str(tmp_path)
    assert reranker.name == "cross-encoder"
    assert reranker._model is None  # nothing loaded until it reranks


# ---------------------------------------------------------------------------------------------
# answers: refusal


def test_refusal_shape() -> None:
    related = [
        {"jurisdiction": "CENTRAL", "document": ACT, "label": "Section 18", "chunk_id": "a"},
        {"jurisdiction": "GUJARAT", "document": GUJARAT_RULES, "label": "Rule 16"},
    ]
    retrieved = [cand("a", label="Section 18(1)", score=1.23456)]
    out = refusal("out_of_scope", "Nothing on this.", related=related, retrieved=retrieved)
    assert set(out) == {
        "status",
        "refusal_reason",
        "answer",
        "confidence",
        "citations",
        "retrieved",
        "related",
        "disclaimer",
    }
    assert out["status"] == "refused"
    assert out["refusal_reason"] == "out_of_scope"
    assert out["answer"] == "Nothing on this."
    assert out["confidence"] is None
    assert out["citations"] == []
    assert out["disclaimer"] == DISCLAIMER and "not legal advice" in DISCLAIMER
    assert out["related"] == [{**r, "relation": "related, not answering"} for r in related]
    assert "relation" not in related[0]  # the caller's dicts are not changed
    assert out["retrieved"] == [
        {
            "jurisdiction": "CENTRAL",
            "document": ACT,
            "label": "Section 18(1)",
            "section": "Section 18",
            "chunk_id": "a",
            "score": 1.2346,
            "authority": "form",  # a row without a kind of document ranks with forms
            "why": {},
        }
    ]


def test_refusal_minimal_and_with_problems() -> None:
    out = refusal("no_relevant_data", "No.")
    assert out["related"] == [] and out["retrieved"] == [] and out["citations"] == []
    assert "problems" not in out
    out = refusal("validation_failed", "Bad quote.", problems=("quote 1 not verbatim",))
    assert out["problems"] == ["quote 1 not verbatim"]


# ---------------------------------------------------------------------------------------------
# answers: evidence_verdict

REFUND_TEXT = "The allottee shall be entitled to a refund with interest."
D = EvidenceDistances(answer=0.50, near=0.55, domain=0.62)  # as a model's in data/models.yaml


def _reason(query: Query, ranked: Sequence[Candidate]) -> str | None:
    verdict = evidence_verdict(query, ranked, D)
    return verdict[0] if verdict else None


def _never(terms: Sequence[str]) -> list[str]:
    raise AssertionError("unknown_terms must not be consulted")


def test_verdict_exact_reference_is_always_evidence() -> None:
    query = ask("What does Section 18 say?")
    ranked = [cand("a", distance=0.95), cand("b", exact=True, text="unrelated")]
    assert evidence_verdict(query, ranked, D, _never) is None


@pytest.mark.parametrize("distance", [0.1, 0.35, D.answer])
def test_verdict_near_distance_answers(distance: float) -> None:
    query = ask("Can the allottee get a refund with interest?")
    ranked = [cand("a", distance=distance, text="nothing in common")]
    assert evidence_verdict(query, ranked, D, _never) is None


def test_verdict_uses_the_nearest_distance_of_all() -> None:
    query = ask("Can the allottee get a refund with interest?")
    ranked = [cand("a", distance=0.9), cand("b"), cand("c", distance=0.4)]
    assert evidence_verdict(query, ranked, D, _never) is None


def test_verdict_far_with_unknown_terms_is_out_of_scope() -> None:
    query = ask("What is the quantum flux capacitor levy?")
    ranked = [cand("a", distance=0.8, ranks={"vector": 1, "fulltext": 1}, text="levy")]
    asked: list[Sequence[str]] = []

    def unknown(terms: Sequence[str]) -> list[str]:
        asked.append(terms)
        return ["quantum", "capacitor"]

    reason, message = evidence_verdict(query, ranked, D, unknown) or ("", "")
    assert reason == "out_of_scope"
    assert "quantum, capacitor occur nowhere in it" in message
    assert asked == [query.terms]


def test_verdict_far_without_fulltext_match_is_out_of_scope() -> None:
    query = ask("Can the allottee get a refund with interest?")
    ranked = [cand("a", distance=0.8, ranks={"vector": 1}, text=REFUND_TEXT)]
    reason, message = evidence_verdict(query, ranked, D) or ("", "")
    assert reason == "out_of_scope"
    assert "occur nowhere" not in message
    assert _reason(query, []) == "out_of_scope"


def test_verdict_far_known_words_some_fulltext_is_no_relevant_data() -> None:
    query = ask("Can the allottee get a refund with interest?")
    ranked = [
        cand("a", distance=0.8, ranks={"vector": 1}, text=REFUND_TEXT),
        cand("b", ranks={"fulltext": 1}, text="interest"),
    ]
    reason, message = evidence_verdict(query, ranked, D, lambda _t: []) or ("", "")
    assert reason == "no_relevant_data"
    assert "listed as related" in message
    # no vector distance at all counts as far
    assert _reason(query, ranked[1:]) == "no_relevant_data"


def test_verdict_a_little_farther_answers_with_high_overlap() -> None:
    query = ask("Can the allottee get a refund with interest?")
    between = (D.answer + D.near) / 2
    full = [cand("a", distance=between, ranks={"vector": 1, "fulltext": 1}, text=REFUND_TEXT)]
    assert evidence_verdict(query, full, D) is None
    edge = [cand("a", distance=D.near, ranks={"fulltext": 1}, text=REFUND_TEXT)]
    assert evidence_verdict(query, edge, D) is None
    # the overlap may come from another ranked unit than the nearest
    split = [
        cand("a", distance=between, ranks={"vector": 1}, text="nothing"),
        cand("b", ranks={"fulltext": 1}, text=REFUND_TEXT),
    ]
    assert evidence_verdict(query, split, D) is None


def test_verdict_a_little_farther_needs_more_than_two_thirds_and_no_unknown_words() -> None:
    query = ask("Is the allottee entitled to interest?")  # the statute's words only
    assert not query.lay_terms
    between = (D.answer + D.near) / 2
    two_of_three = [cand("a", distance=between, ranks={"fulltext": 1}, text="allottee, interest")]
    assert _reason(query, two_of_three) == "no_relevant_data"
    full = [cand("a", distance=between, ranks={"fulltext": 1}, text=REFUND_TEXT)]
    verdict = evidence_verdict(query, full, D, lambda _t: ["allottee"])
    assert verdict is not None and verdict[0] == "out_of_scope"
    beyond = [cand("a", distance=D.near + 0.01, ranks={"fulltext": 1}, text=REFUND_TEXT)]
    assert _reason(query, beyond) == "no_relevant_data"


def test_verdict_a_buyers_words_answer_up_to_the_domain_distance() -> None:
    """A question the vocabulary reads a lay term for a matter in (delayed) is in the statute's
    domain: answered up to D.domain even when no unit shares its words, unless most of its
    words occur nowhere in the corpus; the same distance refuses a question in the statute's
    words, and one whose only lay word names the property."""
    query = ask("My builder delayed the flat, do I get interest?")
    assert query.lay_terms
    at = [cand("a", distance=D.domain, ranks={"vector": 1, "fulltext": 1}, text="x")]
    assert evidence_verdict(query, at, D, lambda _t: ["interest"]) is None
    beyond = [cand("a", distance=D.domain + 0.01, ranks={"vector": 1, "fulltext": 1},
                   text="x")]  # fmt: skip
    assert _reason(query, beyond) == "no_relevant_data"
    story = ask("My builder's feng shui astrologer delayed the keys to an auspicious date")
    assert story.lay_terms
    unknown = ["feng", "shui", "astrologer", "auspicious"]
    mostly_unknown = evidence_verdict(story, at, D, lambda _t: unknown)
    assert mostly_unknown is not None and mostly_unknown[0] == "out_of_scope"
    legal = ask("Is the allottee entitled to interest?")
    assert _reason(legal, at) == "no_relevant_data"
    # words for a party and the property alone (flat) name no matter the statute regulates
    loan = ask("Which bank gives the cheapest home loan for a flat?")
    assert loan.lay_terms == ("home", "flat")
    assert _reason(loan, at) == "no_relevant_data"


def test_one_evidence_reading_is_decided_under_each_models_distances() -> None:
    """The same evidence answers under one model's distances and not under a model whose
    vectors lie nearer (its distances are smaller); the corpus is asked for unknown words once,
    and only when the nearest distance alone does not decide."""
    query = ask("My builder delayed the flat, do I get interest?")
    asked: list[Sequence[str]] = []

    def unknown(terms: Sequence[str]) -> list[str]:
        asked.append(terms)
        return []

    ranked = [cand("a", distance=0.58, ranks={"vector": 1, "fulltext": 1}, text="x")]
    reading = EvidenceReading(query, ranked, unknown)
    assert reading.verdict(EvidenceDistances(0.60, 0.60, 0.60)) is None
    assert asked == []  # decided by the distance alone
    assert reading.verdict(D) is None  # a buyer's matter, within the domain distance
    tighter = reading.verdict(EvidenceDistances(0.30, 0.35, 0.45))
    assert tighter is not None and tighter[0] == "no_relevant_data"
    assert asked == [query.terms]
    for bad in ((0.0, 0.5, 0.5), (0.5, 0.4, 0.6), (0.5, 0.6, 0.4), (0.5, 0.6, 2.1)):
        with pytest.raises(ValueError, match="evidence distances"):
            EvidenceDistances(*bad)


def test_the_evidence_verdict_reads_every_candidate_not_the_units_diversity_kept() -> None:
    """Issue 36: the nearest unit in meaning decides whatever the diversity pass kept, so
    moving units down (or another diversity rule) never turns an answer into a refusal."""
    query = ask("What must a promoter disclose when registering a project?")
    far = [cand(f"act{i}", distance=0.9, ranks={"fulltext": 1}, text="x") for i in range(3)]
    near = cand("faq", distance=0.2, ranks={"vector": 1}, text="y")
    tight = EvidenceDistances(0.30, 0.35, 0.45)
    refused = evidence_verdict(query, far, tight)
    assert refused is not None and refused[0] == "no_relevant_data"
    everything = [*far, near]
    for kept in (far, far[::-1], [near, *far[:2]], everything):
        assert evidence_verdict(query, kept, tight, candidates=everything) is None
    assert EvidenceReading(query, far, candidates=everything).nearest == 0.2


def test_diversity_counts_provisions_for_every_question_unless_set_otherwise() -> None:
    assert (
        RetrievalSettings().diversity_for(ask("Who can appeal against the Authority's order?"))
        == RetrievalSettings().diversity_for(ask("Who can appeal in Gujarat?"))
        == "provision"
    )
    settings = RetrievalSettings(diversity="provision", named_state_diversity="document")
    assert settings.diversity_for(ask("Who can appeal in Gujarat?")) == "document"
    assert settings.diversity_for(ask("Who can appeal against the Authority's order?")) == (
        "provision"
    )


def test_a_model_never_calibrated_borrows_the_default_models_distances_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    default = EmbeddingConfig().evidence_distances
    with caplog.at_level(logging.WARNING, logger="civicsetu.answers"):
        assert model_distances(None) == model_distances(EmbeddingConfig()) == default
        assert not caplog.records
        assert model_distances(EmbeddingConfig(model="intfloat/e5-small-v2")) == default
    assert "intfloat/e5-small-v2 has no evidence distances calibrated" in caplog.text


def test_state_verdict_wants_the_states_own_evidence_among_the_units_that_answer() -> None:
    """Whatever top-k was asked: a Karnataka unit that speaks of the matter but scores less
    than half the best is never quoted, so it does not save a Karnataka question answered from
    the Act; one scoring at least half as well does, wherever it was served."""
    query = ask("How long is a real estate agent's registration valid in Karnataka?")
    stored = ["CENTRAL", "KARNATAKA"]
    act = [
        cand(f"act{i}", text="registration of real estate agents", score=2.0 - i / 10)
        for i in range(5)
    ]  # fmt: skip  (scores 2.0 ... 1.6)
    name = "Karnataka Real Estate (Regulation and Development) Rules, 2017"
    state = {"jurisdiction": "KARNATAKA", "document": "karnataka_rules", "document_title": name}

    def agents(score: float) -> Candidate:
        return cand("ka", text="The registration of an agent is valid for five years.",
                    score=score, **state)  # fmt: skip

    assert state_verdict(query, [agents(2.5), *act], stored) is None
    assert state_verdict(query, [*act, agents(1.0)], stored) is None  # half the best
    below = state_verdict(query, [*act, agents(0.9)], stored)
    assert below is not None and below[0] == "no_relevant_data" and "KARNATAKA" in below[1]
    # by score, not by place: served first, it still scores below half the best
    assert state_verdict(query, [agents(0.9), *act], stored) == below
    short_title = cand("ka1", text=f"These rules may be called the {name}.", score=2.5, **state)
    named_only = state_verdict(query, [short_title, *act], stored)
    assert named_only is not None and named_only[0] == "no_relevant_data"


def test_a_verdict_reads_the_evidence_not_the_places_diversity_gave_it() -> None:
    """The verdict on a question is the same for every order of the units served, and under
    every diversity rule: it reads every candidate by score and the served units as a set.
    The case is one the document cap reorders: a state question whose own evidence (the
    state's fourth-best unit of one document) the cap moves below the Act's unit."""
    query = ask("How long is a real estate agent's registration valid in Karnataka?")
    stored = ["CENTRAL", "KARNATAKA"]
    name = "Karnataka Real Estate (Regulation and Development) Rules, 2017"
    state = {"jurisdiction": "KARNATAKA", "document": "karnataka_rules", "document_title": name,
             "doc_type": "rules"}  # fmt: skip
    own = [cand(f"ka{i}", text=f"These rules may be called the {name}.", score=3.0 - i / 10,
                label=f"Rule {i}", distance=0.3, ranks={"fulltext": i + 1}, **state)
           for i in range(3)]  # fmt: skip
    agents = cand("ka9", text="The registration of an agent is valid for five years.",
                  score=2.6, label="Rule 9", distance=0.3, ranks={"fulltext": 4},
                  **state)  # fmt: skip
    act = [cand(f"act{i}", text="registration of real estate agents", score=2.0 - i / 10,
                distance=0.35, ranks={"vector": i + 1}, label=f"Section {i + 9}", doc_type="act")
           for i in range(1)]  # fmt: skip
    candidates = sorted([*own, agents, *act], key=lambda c: -c.score)
    d = EvidenceDistances(answer=0.5, near=0.6, domain=0.7)
    verdicts = set()
    for rule in ("document", "provision", "legislation"):
        served = diversify(candidates, 5, 3, rule)
        assert agents in served
        for order in (served, served[::-1], served[1:] + served[:1]):
            evidence = EvidenceReading(query, order, candidates=candidates)
            refused = evidence_refusal(evidence, d, stored)
            verdicts.add(None if refused is None else refused["refusal_reason"])
    assert verdicts == {None}  # answered, whatever the order and the rule
    # the document cap did move it: served fifth, below the Act's unit that scores less
    served = diversify(candidates, 5, 3, "document")
    assert served.index(agents) == 4 and served[3].score < agents.score
    # and without the state's evidence among the units that answer, every order refuses
    weak = [c for c in candidates if c is not agents]
    for order in (weak, weak[::-1]):
        refused = evidence_refusal(EvidenceReading(query, order, candidates=weak), d, stored)
        assert refused is not None and refused["refusal_reason"] == "no_relevant_data"


# ---------------------------------------------------------------------------------------------
# answers: confidence and min_confidence


def test_confidence_levels() -> None:
    """The named unit is high; otherwise the packaged model's probability decides, and a
    stronger reading of the same unit (both lists first, all terms, a clear lead) is never
    less sure than a weaker one; below medium the answer says it is not sure."""
    query = ask("Can the allottee get a refund with interest?")  # 3 terms
    assert confidence(query, []) == ("low", 0.0)
    assert confidence(query, [cand("a", exact=True, text="nothing")]) == ("high", 1.0)
    strong = [cand("a", ranks={"vector": 1, "fulltext": 1}, distance=0.2, score=3.0,
                   text="refund with interest"),
              cand("b", label="Section 19", score=1.0, text="x")]  # fmt: skip
    weak = [cand("a", ranks={"vector": 9}, distance=0.6, score=1.2, text="a refund"),
            cand("b", label="Section 19", score=1.19, text="x")]  # fmt: skip
    (level_strong, p_strong), (level_weak, p_weak) = (
        confidence(query, strong),
        confidence(query, weak),
    )
    assert p_strong > p_weak and LEVELS.index(level_strong) >= LEVELS.index(level_weak)
    assert level_weak == "low"
    shown = shown_confidence([confidence(query, weak)], weak)
    assert shown["confidence"] == "low" and shown["confidence_probability"] == round(p_weak, 3)
    assert shown["not_sure"]["message"].startswith("Not sure")
    assert [r["label"] for r in shown["not_sure"]["may_be_relevant"]] == [
        weak[0].label,
        weak[1].label,
    ]
    exact = [cand("a", exact=True, text="nothing")]
    assert "not_sure" not in shown_confidence([confidence(query, exact)], exact)


def test_the_confidence_model_is_read_from_its_file_or_named_missing(tmp_path: Path) -> None:
    model = read_model()
    assert set(model.thresholds) == {"medium", "high"} and model.provenance["golden_sha256"]
    assert model.provenance["dev"]["selective_precision"] >= TARGET_PRECISION["medium"]
    with pytest.raises(ConfidenceError, match="missing.yaml.*calibrate_confidence"):
        read_model(tmp_path / "missing.yaml")
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump({**model.as_yaml(), "features": ["score"]}))
    with pytest.raises(ConfidenceError, match="features"):
        read_model(other)


def test_min_confidence() -> None:
    assert min_confidence(["high", "low", "medium"]) == "low"
    assert min_confidence(["high", "medium", "high"]) == "medium"
    assert min_confidence(["high"]) == "high"
    assert min_confidence([]) == "low"
    with pytest.raises(ValueError):
        min_confidence(["certain"])


# ---------------------------------------------------------------------------------------------
# answers: choose_quotes, _trim, render_answer

S18 = (
    "(1) The promoter shall refund the amount received with interest at such rate as may be "
    "prescribed. (2) The Authority shall publish its orders on its website. (3) Where the "
    "possession is delayed, the allottee may withdraw from the project."
)
S19 = (
    "(1) The allottee shall be entitled to obtain the information relating to sanctioned plans. "
    "(2) The allottee shall be entitled to know stage-wise time schedule of completion. "
    "(3) The allottee shall be entitled to claim the possession of the apartment."
)


def test_choose_quotes_one_quote_per_unit_its_best_sentence() -> None:
    query = ask("Can the allottee get a refund with interest if possession is delayed?")
    # terms: allottee, refund, interest, possession, delayed; sentence (3) holds three of them
    # (possession, delayed, allottee), sentence (1) two (refund, interest)
    best = cand("a", score=2.0, text=S18)
    chosen = choose_quotes(query, [best])
    assert [q for _, q in chosen] == [
        "(3) Where the possession is delayed, the allottee may withdraw from the project."
    ]
    assert all(c is best and quote_in(q, S18) for c, q in chosen)


def test_choose_quotes_the_sentence_with_the_words_its_heading_lacks() -> None:
    """The heading says what the unit is about ("Interest payable by promoter"), not which of
    its sentences answers: asked for the *rate*, the sentence that fixes the rate is quoted,
    not the opening one that repeats the heading's words."""
    query = ask("What is the rate of interest payable by the promoter?")
    text = ("Interest payable by promoter and allottee.— (1) Interest is payable under sections "
            "12, 18 and 19 of the Act. (2) The rate of interest shall be the State Bank of India "
            "highest marginal cost of lending rate plus two per cent.")  # fmt: skip
    unit = cand("r8", score=2.0, text=text, label="Rule 8",
                title="Interest payable by promoter and allottee")  # fmt: skip
    ((_, quote),) = choose_quotes(query, [unit])
    assert quote == ("(2) The rate of interest shall be the State Bank of India highest marginal "
                     "cost of lending rate plus two per cent.")  # fmt: skip
    # without the heading, the sentence holding most of the question's words still wins
    plain = cand("r8", score=2.0, text=text, label="Rule 8", title="")
    ((_, opening),) = choose_quotes(query, [plain])
    assert "Interest is payable under sections" in opening and quote_in(opening, text)


def test_choose_quotes_two_equally_good_sentences_make_one_contiguous_quote() -> None:
    query = ask("Is the allottee entitled to anything?")  # every sentence holds both terms
    (pair,) = choose_quotes(query, [cand("a", score=2.0, text=S19)])
    assert pair[1] == (
        "(1) The allottee shall be entitled to obtain the information relating to sanctioned "
        "plans. (2) The allottee shall be entitled to know stage-wise time schedule of completion."
    )
    assert quote_in(pair[1], S19)


def test_choose_quotes_exact_units_give_their_opening_sentences() -> None:
    query = ask("What does Section 19 say?")
    exact = cand("b", exact=True, score=0.1, label="Section 19", text=S19)
    top = cand("a", score=2.0, text=S18)
    chosen = choose_quotes(query, [top, exact])
    assert [(c.chunk_id, q) for c, q in chosen] == [
        ("b", "(1) The allottee shall be entitled to obtain the information relating to "
         "sanctioned plans. (2) The allottee shall be entitled to know stage-wise time schedule "
         "of completion."),
    ]  # fmt: skip


def test_choose_quotes_skips_units_without_matching_words_and_weak_units() -> None:
    query = ask("Can the allottee get a refund with interest if possession is delayed?")
    unrelated = cand("x", score=3.0, label="Section 34", text="The Authority shall publish.")
    best = cand("a", score=2.0, text=S18)
    weak = cand("w", score=0.9, label="Section 19", text=S19)  # below half of the best score
    chosen = choose_quotes(query, [unrelated, best, weak])
    assert {c.chunk_id for c, _ in chosen} == {"a"}
    assert choose_quotes(query, [unrelated]) == []
    assert choose_quotes(query, []) == []


def test_choose_quotes_at_most_the_limit_one_per_unit_only_verbatim() -> None:
    query = ask("Can the allottee get a refund with interest if possession is delayed?")
    ranked = [
        cand("a", score=2.0, text=S18),
        cand("b", score=1.9, label="Section 19", text=S19),
        cand("c", score=1.8, label="Section 20", text=S18.replace("promoter", "developer")),
        cand("d", score=1.7, label="Section 21", text=S18.replace("promoter", "builder")),
        cand("e", score=1.6, label="Section 22", text=S18.replace("promoter", "person")),
    ]
    chosen = choose_quotes(query, ranked)
    assert len(chosen) == MAX_QUOTES
    assert [c.chunk_id for c, _ in chosen] == ["a", "b", "c", "d"]
    for c, q in chosen:
        assert quote_in(q, str(c.row["text"]))
    assert len(choose_quotes(query, ranked, limit=3)) == 3
    assert [q for _, q in choose_quotes(query, ranked, limit=1)] == [chosen[0][1]]
    assert choose_quotes(query, ranked, limit=0) == []


def test_choose_quotes_lead_with_the_law_then_guidance() -> None:
    query = ask("Can the allottee get a refund with interest if possession is delayed?")
    faq = cand("f", score=2.0, label="Question 53", doc_type="faq", unit="question", text=S18)
    act = cand("s", score=1.5, label="Section 18", doc_type="act", unit="section", text=S18)
    form = cand("m", score=2.2, label="Annexure A", doc_type="rules", unit="form", text=S18)
    rule = cand("r", score=1.2, label="Rule 16", doc_type="rules", unit="rule", text=S18)
    chosen = choose_quotes(query, [form, faq, act, rule])
    assert [c.chunk_id for c, _ in chosen] == ["s", "r", "f", "m"]


def test_choose_quotes_trims_long_sentences_verbatim() -> None:
    query = ask("Can the allottee get a refund with interest?")
    long_sentence = (
        "The promoter shall refund the amount with interest "
        + "and the allottee may withdraw from the project " * 20
        + "as may be prescribed."
    )
    (pair,) = choose_quotes(query, [cand("a", score=1.0, text=long_sentence)], limit=1)
    assert pair[1] == _trim(long_sentence)
    assert len(pair[1]) <= MAX_QUOTE_CHARS and quote_in(pair[1], long_sentence)


def test_trim() -> None:
    short = "The promoter shall refund the amount."
    assert _trim(short) == short
    exact = ("x" * 99 + " ") * 6
    exact = exact[:MAX_QUOTE_CHARS]
    assert _trim(exact) == exact
    sentence = "The allottee shall be entitled to claim the refund of amount paid " * 12
    trimmed = _trim(sentence)
    assert len(trimmed) <= MAX_QUOTE_CHARS
    assert sentence.startswith(trimmed)
    assert sentence[len(trimmed)] == " "  # cut at a word boundary
    assert not trimmed.endswith(" ")
    assert len(trimmed) > MAX_QUOTE_CHARS - 20
    assert quote_in(trimmed, sentence)
    # no space at all in the first MAX_QUOTE_CHARS: a plain prefix
    blob = "x" * (MAX_QUOTE_CHARS + 50)
    assert _trim(blob) == "x" * MAX_QUOTE_CHARS


def test_render_answer() -> None:
    citations: list[dict[str, Any]] = [
        {"n": 1, "document": ACT, "document_title": ACT_TITLE, "label": "Section 18(1)",
         "quote": "The promoter shall refund the amount."},
        {"n": 2, "document": ACT, "document_title": ACT_TITLE, "label": "Section 18(1)",
         "quote": "with interest at such rate as may be prescribed"},
        {"n": 3, "document": GUJARAT_RULES, "document_title": "Gujarat Real Estate Rules, 2017",
         "label": "Rule 16", "quote": "The rate of interest payable shall be SBI MCLR plus 2%."},
        {"n": 4, "document": ACT, "document_title": ACT_TITLE, "label": "Section 18(1)",
         "quote": "he shall be liable on demand to the allottees"},
    ]  # fmt: skip
    text = render_answer(citations)
    assert text == (
        f"Section 18(1) ({ACT_TITLE}):\n"
        '  "The promoter shall refund the amount." [1]\n'
        '  "with interest at such rate as may be prescribed" [2]\n'
        "Rule 16 (Gujarat Real Estate Rules, 2017):\n"
        '  "The rate of interest payable shall be SBI MCLR plus 2%." [3]\n'
        f"Section 18(1) ({ACT_TITLE}):\n"
        '  "he shall be liable on demand to the allottees" [4]'
    )
    # nothing but labels, titles, quotes and [n] markers
    rest = text
    for c in citations:
        for piece in (c["label"], c["document_title"], c["quote"], f"[{c['n']}]"):
            rest = rest.replace(piece, "")
    assert set(rest) <= set(' ():"\n')
    assert render_answer([]) == ""


def test_reranker_authority_prior_puts_the_law_before_guidance_not_filtering_it() -> None:
    query = ask("Can the allottee get a refund with interest?")
    text = "The promoter shall refund the amount with interest."
    faq = cand("f", fused=1 / 61, ranks={"vector": 1}, doc_type="faq", unit="question", text=text)
    act = cand("s", fused=1 / 62, ranks={"vector": 2}, doc_type="act", unit="section", text=text)
    form = cand("m", fused=1 / 61, ranks={"fulltext": 1}, doc_type="rules", unit="form", text=text)
    ranked = DeterministicReranker().rerank(query, [faq, form, act])
    assert ids(ranked) == ["s", "f", "m"]  # guidance and forms stay, below the law
    assert act.why["authority"] == pytest.approx(AUTHORITY_WEIGHT)
    assert faq.why["authority"] == pytest.approx(AUTHORITY_WEIGHT / 6)
    assert form.why["authority"] == 0.0
    summary = unit_summary(act)
    assert summary["authority"] == "act" and summary["why"]["authority"] == AUTHORITY_WEIGHT
    # a question about the model agreement itself ranks the model agreement as law
    asked = ask("Under the Karnataka draft model agreement, can the buyer get a refund?")
    DeterministicReranker().rerank(asked, [form, act])
    assert form.why["authority"] == pytest.approx(AUTHORITY_WEIGHT)


def test_reranker_the_named_state_first_else_the_act() -> None:
    text = "The promoter shall refund the amount with interest."
    rule = cand("r", fused=1 / 61, ranks={"vector": 1}, jurisdiction="GUJARAT", doc_type="rules",
                unit="rule", text=text)  # fmt: skip
    act = cand("s", fused=1 / 61, ranks={"vector": 1}, doc_type="act", unit="section", text=text)
    DeterministicReranker().rerank(ask("Refund with interest in Gujarat?"), [rule, act])
    assert rule.why["intent"] == STATE_BONUS and act.why.get("intent", 0.0) == 0.0
    DeterministicReranker().rerank(ask("Refund with interest?"), [rule, act])
    assert act.why["intent"] == NATIONAL_BONUS and rule.why.get("intent", 0.0) == 0.0


def test_a_unit_naming_another_law_does_not_answer_a_word_the_corpus_lacks() -> None:
    """The Act names the Indian Penal Code where it deems the Tribunal's proceedings judicial:
    that unit speaks of the Code, so a question about the Code it answers stays answerable; one
    that asks of a word the corpus never holds (murder) is refused as another law's."""
    from civicsetu_pipelines.answer.verdict import external_verdict

    section = cand("53", label="Section 53(5)", score=3.0, text="All proceedings before the "
                   "Appellate Tribunal shall be deemed to be judicial proceedings within the "
                   "meaning of section 196 of the Indian Penal Code.")  # fmt: skip
    query = ask("What is the punishment for murder under the Indian Penal Code?")
    refused = external_verdict(query, [section], lambda: ["murder"])
    assert refused is not None and refused[0] == "out_of_scope" and "Penal Code" in refused[1]
    asked = ask(
        "Are proceedings before the Appellate Tribunal judicial under the Indian Penal Code?"
    )
    assert external_verdict(asked, [section], lambda: []) is None
    assert external_verdict(asked, [cand("18", score=3.0, text="refund")]) is not None

"""Citation checks (pure, no database): verbatim quotes, sentence spans with source offsets, and
placing quotes on the pages they are printed on (also across a page break)."""

from __future__ import annotations

import pytest

from civicsetu_pipelines.answer.citations import (
    Sentence,
    all_verbatim,
    page_of_quote,
    quote_in,
    sentences,
    split_across_pages,
)

# Section 18 of the RERA Act, 2016 as a gazette prints it (line breaks, typographic dashes).
SECTION_18 = (
    "CHAPTER III\n"
    "FUNCTIONS AND DUTIES OF PROMOTER\n"
    "18. (1) If the promoter fails to complete or is unable to give possession of an "
    "apartment, plot or building,\u2014\n"
    "(a) in accordance with the terms of the agreement for sale or, as the case may be, duly "
    "completed by the date specified therein; or\n"
    "(b) due to discontinuance of his business as a developer on account of suspension or "
    "revocation of the registration under this Act or for any other reason,\n"
    "he shall be liable on demand to the allottees, in case the allottee wishes to withdraw "
    "from the project, without prejudice to any other remedy available, to return the amount "
    "received by him in respect of that apartment, plot, building, as the case may be, with "
    "interest at such rate as may be prescribed in this behalf including compensation in the "
    "manner as provided under this Act:\n"
    "Provided that where an allottee does not intend to withdraw from the project, he shall be "
    "paid, by the promoter, interest for every month of delay, till the handing over of the "
    "possession, at such rate as may be prescribed.\n"
    "(2) The promoter shall compensate the allottees in case of any loss caused to him due to "
    "defective title of the land, on which the project is being developed or has been "
    "developed, in the manner as provided under this Act, and the claim for compensation under "
    "this sub-section shall not be barred by limitation provided under any law for the time "
    "being in force.\n"
    "(3) The rights of the allottee under s. 19 of the Real Estate (Regulation and Development) "
    "Act, 2016 (No. 16 of 2016) shall be in addition to the rights under this section, i.e. "
    "30 days from the date of demand shall be the period of refund. A fee of Rs. 10,000 shall "
    "accompany a complaint under sub-section (2). The Authority may waive it.\n"
    "See."
)


def _texts(text: str) -> list[str]:
    return [s.text for s in sentences(text)]


# ---------------------------------------------------------------------------------------------
# quote_in: verbatim after the one canonicalization, nothing looser

SOURCE = (
    "19. (4) The allottee shall be entitled to claim the refund of amount paid along with "
    "interest at such rate as may be prescribed and compensation in the manner as provided "
    "under this Act, from the promoter, if the promoter fails to comply or is unable to give "
    "possession of the apartment, plot or building, as the case may be, in accordance with the "
    "terms of agreement for sale or due to discontinuance of his business as a developer on "
    "account of suspension or revocation of his registration under the provisions of this Act "
    "or the rules or regulations made thereunder."
)
QUOTE = "The allottee shall be entitled to claim the refund of amount paid along with interest"


def test_quote_in_exact_substring() -> None:
    assert quote_in(QUOTE, SOURCE)
    assert quote_in(SOURCE, SOURCE)
    assert quote_in("19. (4)", SOURCE)


@pytest.mark.parametrize(
    ("quote", "source"),
    [
        # typographic quotes in the source, ASCII in the quote (and the other way round)
        (
            'the expression "carpet area" means the net usable floor area',
            "the expression \u201ccarpet area\u201d means the net usable floor area of a flat",
        ),
        (
            "the allottee\u2019s right",
            "nothing shall affect the allottee's right to claim compensation",
        ),
        # en dash, figure dash and horizontal bar are one em dash
        ("apartment, plot or building,\u2014", "apartment, plot or building,\u2013\n(a) in"),
        ("building,\u2013", "apartment, plot or building,\u2014 (a)"),
        ("building,\u2012 (a)", "building,\u2015 (a)"),
        # hyphen look-alikes are "-"
        ("sub-section (2)", "under sub\u2011section (2) of section 4"),
        ("sub-section (2)", "under sub\u2010section (2) of section 4"),
        # line breaks, repeated spaces, tabs and non-breaking spaces fold to one space
        ("with interest at such rate", "with interest\nat such\n\nrate as may be prescribed"),
        ("with interest at such rate", "with  interest \t at\u00a0such \n rate"),
        ("Rs. 10,000", "a fee of Rs.\u00a010,000 shall accompany"),
        ("with   interest\nat such rate", "with interest at such rate"),
        # NFKC: ligatures and full-width letters; invisible characters removed
        ("specified therein", "by the date speci\ufb01ed therein"),
        ("Section 18", "under \uff33\uff45\uff43\uff54\uff49\uff4f\uff4e 18 of the Act"),
        ("registration", "revocation of the regis\u00adtration"),
        ("registration", "revocation of the regis\u200btration"),
        ("registration", "\ufeffregistration of real estate agents"),
    ],
)
def test_quote_in_canonical_differences_match(quote: str, source: str) -> None:
    assert quote_in(quote, source)


@pytest.mark.parametrize(
    "quote",
    [
        # case matters: no case folding
        "the allottee shall be entitled to claim the refund of amount paid along with interest",
        "THE ALLOTTEE SHALL BE ENTITLED",
        # one changed word
        "The allottee shall be entitled to claim the return of amount paid along with interest",
        "The allottee may be entitled to claim the refund of amount paid along with interest",
        # a dropped word
        "The allottee shall be entitled to claim refund of amount paid along with interest",
        "The allottee shall entitled to claim the refund of amount paid along with interest",
        # an added word, a changed number, reordered words, a small typo
        "The allottee shall be entitled to claim the full refund of amount paid",
        "20. (4) The allottee",
        "shall the allottee be entitled",
        "The alottee shall be entitled",
        # punctuation is part of the text
        "as may be prescribed, and compensation",
        # empty and white-space-only quotes are never verbatim
        "",
        "   ",
        "\n\t",
        "\u200b\u00ad",
    ],
)
def test_quote_in_rejects_anything_but_verbatim(quote: str) -> None:
    assert not quote_in(quote, SOURCE)


def test_quote_in_no_dehyphenation_and_hyphen_is_not_a_dash() -> None:
    # Documented strictness: a word hyphenated over a line break is not rejoined, and an ASCII
    # hyphen is not the em dash (en dashes and bars fold to the em dash, "-" stays "-").
    assert not quote_in("registration", "revocation of the regis-\ntration")
    assert quote_in("regis- tration", "revocation of the regis-\ntration")
    assert not quote_in("building,-", "apartment, plot or building,\u2014")
    assert not quote_in("2016-17", "the financial year 2016\u201317")


def test_quote_in_empty_source() -> None:
    assert not quote_in("promoter", "")
    assert not quote_in("", "")


@pytest.mark.parametrize(
    ("quote", "source"),
    [
        ('the "carpet area"', "the \u2033carpet area\u2033 means"),
        ("allottee's right", "nothing shall affect the allottee\u00b4s right"),
    ],
)
def test_quote_in_double_prime_and_acute_fold_like_the_table_says(quote: str, source: str) -> None:
    assert quote_in(quote, source)


# ---------------------------------------------------------------------------------------------
# sentences


def test_sentences_offsets_map_back_to_the_source() -> None:
    spans = sentences(SECTION_18)
    assert spans and all(isinstance(s, Sentence) for s in spans)
    for s in spans:
        assert SECTION_18[s.start : s.end] == s.text
        assert s.text == s.text.strip()
        assert quote_in(s.text, SECTION_18)
    starts = [s.start for s in spans]
    assert starts == sorted(starts)
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:], strict=False))


def test_sentences_realistic_statute_text() -> None:
    texts = _texts(SECTION_18)
    assert len(texts) == 6
    first, proviso, sub2, sub3a, sub3b, sub3c = texts
    # 18(1) with its clauses (a) and (b) ("; or" does not end it) up to the ":" before a proviso
    assert first.startswith("(1) If the promoter fails to complete")
    assert "(a) in accordance with the terms" in first
    assert "therein; or\n(b) due to discontinuance" in first
    assert first.endswith("in the manner as provided under this Act:")
    assert proviso.startswith("Provided that where an allottee does not intend")
    assert proviso.endswith("at such rate as may be prescribed.")
    assert sub2.startswith("(2) The promoter shall compensate") and sub2.endswith("in force.")
    # "s. 19", "No. 16 of 2016" and "i.e. 30 days" do not end a sentence
    assert sub3a.startswith("(3) The rights of the allottee under s. 19 of the Real Estate")
    assert "(No. 16 of 2016) shall be in addition" in sub3a
    assert sub3a.endswith("i.e. 30 days from the date of demand shall be the period of refund.")
    # "Rs. 10,000" does not; "sub-section (2)." before a new sentence does
    assert sub3b == "A fee of Rs. 10,000 shall accompany a complaint under sub-section (2)."
    assert sub3c == "The Authority may waive it."


def test_sentences_drop_capitalised_headings_and_short_fragments() -> None:
    texts = _texts(SECTION_18)
    assert not any("CHAPTER" in t or "FUNCTIONS AND DUTIES" in t for t in texts)
    assert not any(t in {"18.", "See."} for t in texts)
    assert all(len(t) >= 12 for t in texts)
    heading = (
        "CHAPTER II REGISTRATION OF REAL ESTATE PROJECT AND REGISTRATION OF REAL ESTATE AGENTS."
        " 3. (1) No promoter shall advertise, market, book, sell or offer for sale any plot."
    )
    assert _texts(heading) == [
        "(1) No promoter shall advertise, market, book, sell or offer for sale any plot."
    ]
    assert sentences("CHAPTER II REGISTRATION OF REAL ESTATE PROJECT") == ()
    assert sentences("Too short. Also short. Fine.") == ()


def test_sentences_min_chars_is_configurable() -> None:
    text = "Short one. Another sentence that is long enough."
    assert _texts(text) == ["Another sentence that is long enough."]
    assert [s.text for s in sentences(text, min_chars=5)] == [
        "Short one.",
        "Another sentence that is long enough.",
    ]


def test_sentences_split_clauses_ending_in_semicolons_and_provisos() -> None:
    text = (
        "11. (4) The promoter shall\u2014\n"
        "(a) be responsible for all obligations, responsibilities and functions under the "
        "provisions of this Act;\n"
        "(b) obtain the completion certificate from the relevant competent authority:\n"
        "Provided that the responsibility of the promoter shall continue for five years;\n"
        "Provided further that nothing in this clause shall apply to a plot. (5) The promoter "
        "may cancel the allotment only in terms of the agreement for sale."
    )
    texts = _texts(text)
    assert texts == [
        "(4) The promoter shall\u2014\n(a) be responsible for all obligations, "
        "responsibilities and functions under the provisions of this Act;",
        "(b) obtain the completion certificate from the relevant competent authority:",
        "Provided that the responsibility of the promoter shall continue for five years;",
        "Provided further that nothing in this clause shall apply to a plot.",
        "(5) The promoter may cancel the allotment only in terms of the agreement for sale.",
    ]
    for s in sentences(text):
        assert text[s.start : s.end] == s.text


def test_sentences_no_opener_no_split_and_whole_text_is_one_span() -> None:
    text = "the promoter shall pay. interest at such rate as may be prescribed"
    assert _texts(text) == [text]  # a lower-case word after "." is no new sentence
    padded = "   \n  The promoter shall pay interest.  \n"
    (only,) = sentences(padded)
    assert only.text == "The promoter shall pay interest."
    assert padded[only.start : only.end] == only.text
    assert sentences("") == ()


# ---------------------------------------------------------------------------------------------
# page_of_quote and split_across_pages

PAGE_11 = (
    "17. (1) The promoter shall execute a registered conveyance deed in favour of the allottee "
    "along with the undivided proportionate title in the common areas to the association of "
    "the allottees or the competent authority, as the case may be, and hand over the physical "
    "possession of the plot, apartment of building, as the case may be, to the allottees, "
    "within specified period as per sanctioned plans as provided under the local laws:"
)
PAGE_12 = (
    "Provided that, in the absence of any local law, conveyance deed in favour of the allottee "
    "or the association of the allottees or the competent authority, as the case may be, under "
    "this section shall be carried out by the promoter within three months from date of issue "
    "of occupancy certificate."
)
PAGES = {11: PAGE_11, 12: PAGE_12}


def _rebuilds(pieces: list[tuple[int, str]], quote: str, pages: dict[int, str]) -> None:
    """Every piece is verbatim on its page, pages ascend, and the pieces give the quote's words."""
    assert pieces
    for page, part in pieces:
        assert quote_in(part, pages[page]), (page, part)
    numbers = [p for p, _ in pieces]
    assert numbers == sorted(set(numbers))
    assert " ".join(part for _, part in pieces).split() == quote.split()


def test_page_of_quote() -> None:
    assert page_of_quote("execute a registered conveyance deed", PAGES) == 11
    assert page_of_quote("within three months from date of issue", PAGES) == 12
    assert page_of_quote("as provided under the local laws: Provided that", PAGES) is None
    assert page_of_quote("the promoter shall refund", PAGES) is None
    assert page_of_quote("", PAGES) is None
    assert page_of_quote("promoter", {}) is None


def test_page_of_quote_first_page_by_number_not_by_insertion_order() -> None:
    pages = {14: "as the case may be, the Authority", 3: "as the case may be, the promoter"}
    assert page_of_quote("as the case may be", pages) == 3


def test_split_quote_on_one_page_is_one_piece() -> None:
    quote = "conveyance deed in favour of the allottee"
    assert split_across_pages(quote, PAGES) == [(11, quote)]
    quote = "carried out by the promoter within three months"
    assert split_across_pages(quote, PAGES) == [(12, quote)]


def test_split_quote_over_a_page_break() -> None:
    quote = (
        "as per sanctioned plans as provided under the local laws: Provided that, in the "
        "absence of any local law, conveyance deed"
    )
    pieces = split_across_pages(quote, PAGES)
    assert pieces == [
        (11, "as per sanctioned plans as provided under the local laws:"),
        (12, "Provided that, in the absence of any local law, conveyance deed"),
    ]
    _rebuilds(pieces, quote, PAGES)


def test_split_quote_over_two_page_breaks() -> None:
    pages = {
        20: "(2) The Authority shall dispose of the application within a period of",
        21: "sixty days from the date of its receipt",
        22: "and record its reasons in writing for any delay.",
    }
    quote = "within a period of sixty days from the date of its receipt and record its reasons"
    pieces = split_across_pages(quote, pages)
    assert pieces == [
        (20, "within a period of"),
        (21, "sixty days from the date of its receipt"),
        (22, "and record its reasons"),
    ]
    _rebuilds(pieces, quote, pages)


def test_split_with_typographic_differences_between_quote_and_pages() -> None:
    pages = {
        5: "the expression \u201ccarpet area\u201d means the net usable floor area of an\n"
        "apartment, excluding the area covered by the external walls, areas under services\u2013",
        6: "shafts, exclusive balcony or verandah area and exclusive open terrace area, but\n"
        "includes the area covered by the internal partition walls of the apartment;",
    }
    quote = (
        'the expression "carpet area" means the net usable floor area of an apartment, '
        "excluding the area covered by the external walls, areas under services\u2014 shafts, "
        "exclusive balcony or verandah area"
    )
    pieces = split_across_pages(quote, pages)
    assert [p for p, _ in pieces] == [5, 6]
    assert pieces[1][1] == "shafts, exclusive balcony or verandah area"
    _rebuilds(pieces, quote, pages)


def test_split_quote_on_no_page_is_empty() -> None:
    assert split_across_pages("the promoter shall refund the booking amount", PAGES) == []
    assert split_across_pages("Provided that, in the absence of any local law", {11: PAGE_11}) == []
    assert split_across_pages("the local laws:", {}) == []
    assert split_across_pages("", PAGES) == []
    # the words are on the pages, but not in this order
    assert split_across_pages("local law, conveyance deed in favour of the allottees", PAGES) == []


def test_split_break_before_the_last_word() -> None:
    quote = "as per sanctioned plans as provided under the local laws: Provided"
    pieces = split_across_pages(quote, PAGES)
    assert pieces == [
        (11, "as per sanctioned plans as provided under the local laws:"),
        (12, "Provided"),
    ]
    _rebuilds(pieces, quote, PAGES)


def test_split_break_after_the_first_word() -> None:
    pages = {
        30: "he shall be liable to pay such compensation,",
        31: "in the manner as provided under this Act, to the allottee.",
    }
    quote = "compensation, in the manner as provided under this Act"
    pieces = split_across_pages(quote, pages)
    assert pieces == [(30, "compensation,"), (31, "in the manner as provided under this Act")]
    _rebuilds(pieces, quote, pages)


def test_split_head_shorter_than_twelve_characters_is_not_placed() -> None:
    # Documented rule: the part on the first page must hold at least 12 characters, so a break
    # right after a short first word ("laws:") cannot be placed and is never cited.
    assert split_across_pages("laws: Provided that, in the absence of any local law", PAGES) == []
    assert split_across_pages("local laws: Provided", PAGES) == []
    pieces = split_across_pages("the local laws: Provided", PAGES)  # head of 15 characters
    assert pieces == [(11, "the local laws:"), (12, "Provided")]


def test_split_pieces_are_the_quote_words_not_the_page_text() -> None:
    pages = {1: "interest at such\nrate as may be", 2: "prescribed \u2014 in this behalf"}
    quote = "interest at  such rate as may be prescribed \u2013 in"
    pieces = split_across_pages(quote, pages)
    assert pieces == [(1, "interest at such rate as may be"), (2, "prescribed \u2013 in")]
    _rebuilds(pieces, quote, pages)


def test_split_cites_the_page_the_quote_is_printed_on() -> None:
    pages = {
        10: "(2) In such a case the promoter shall compensate the allottees for any loss.",
        11: "(3) In the event of delay the promoter shall",
        12: "pay interest to the allottees at such rate as may be prescribed.",
    }
    quote = "the promoter shall pay interest to the allottees"
    assert split_across_pages(quote, pages) == [
        (11, "the promoter shall"),
        (12, "pay interest to the allottees"),
    ]


# ---------------------------------------------------------------------------------------------
# all_verbatim


def test_all_verbatim() -> None:
    good = [QUOTE, "as may be prescribed and compensation", "registration under the provisions"]
    assert all_verbatim(good, SOURCE)
    assert all_verbatim(("the refund\nof amount paid",), SOURCE)
    # one bad quote fails them all
    assert not all_verbatim([*good, "as may be prescribed or compensation"], SOURCE)
    assert not all_verbatim([*good, ""], SOURCE)
    # no quotes is no evidence
    assert not all_verbatim([], SOURCE)
    assert not all_verbatim([QUOTE], "")

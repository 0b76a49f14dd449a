"""Citation checks: is a quote verbatim in its source, and on which page.

Pure domain code (no Dagster). "Verbatim" means: after the one shared canonicalization
(:func:`civicsetu_pipelines.base.canonical.canonical_flat`, which also folds line breaks), the
quote is a substring of the source. Nothing looser: no fuzzy matching, no case folding.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from civicsetu_pipelines.base import canonical_flat

# Abbreviations after which a full stop does not end a sentence in Indian statutes.
_ABBREVIATIONS = re.compile(
    r"(?:\b(?:s|ss|r|rr|no|nos|cl|sub-cl|art|arts|sec|secs|viz|i\.e|e\.g|etc|rs|re|vol|pp|p|ltd"
    r"|govt|dept|dr|mr|mrs|ms|sh|smt|st|vs|v)\.|\b[A-Z]\.)$",
    re.IGNORECASE,
)
# A sentence ends at ". ", ": " before a new clause, or ";" - then white space and an opener.
_END = re.compile(r"(?<=[.;:])\s+(?=[(\"'A-Z0-9\u2014-])")


@dataclass(frozen=True)
class Sentence:
    text: str
    start: int  # offsets into the source text
    end: int


@functools.lru_cache(maxsize=4096)
def _flat(text: str) -> str:
    """``canonical_flat``, memoized: stored chunk and page texts are checked again and again."""
    return canonical_flat(text)


def quote_in(quote: str, source: str) -> bool:
    """Whether ``quote`` appears verbatim in ``source`` (after canonicalization)."""
    needle = canonical_flat(quote)
    return bool(needle) and needle in _flat(source)


@functools.lru_cache(maxsize=2048)
def sentences(text: str, *, min_chars: int = 12) -> tuple[Sentence, ...]:
    """Split legal text into sentence-like spans (sentences, clauses ending in ";" or ":").

    Full stops after abbreviations ("s.", "No.", "i.e.", "Rs.") and inside numbering ("18(2).")
    do not split; each span is stripped and keeps its offsets into ``text``.
    """
    spans: list[Sentence] = []
    start = 0
    for match in _END.finditer(text):
        before = text[start : match.start()]
        if _ABBREVIATIONS.search(before):
            continue
        spans.append(_span(text, start, match.start()))
        start = match.end()
    spans.append(_span(text, start, len(text)))
    return tuple(s for s in spans if len(s.text) >= min_chars and not _heading(s.text))


def _heading(text: str) -> bool:
    """A heading printed in capitals ("CHAPTER II REGISTRATION OF ...") is no sentence."""
    letters = [ch for ch in text if ch.isalpha()]
    return bool(letters) and sum(ch.isupper() for ch in letters) > 0.8 * len(letters)


def _span(text: str, start: int, end: int) -> Sentence:
    piece = text[start:end]
    lead = len(piece) - len(piece.lstrip())
    return Sentence(piece.strip(), start + lead, start + lead + len(piece.strip()))


def page_of_quote(quote: str, pages: Mapping[int, str]) -> int | None:
    """The first page whose text holds the whole quote verbatim, else None."""
    for number in sorted(pages):
        if quote_in(quote, pages[number]):
            return number
    return None


def split_across_pages(quote: str, pages: Mapping[int, str]) -> list[tuple[int, str]]:
    """``quote`` as (page, part) pieces, each verbatim on its page.

    A quote on one page is one piece. A quote running over a page break is cut at a word
    boundary into a part that ENDS one page and a rest that STARTS the next page (or runs on
    over further breaks). Returns [] when the quote cannot be placed that way: then it must not
    be cited (no page is ever guessed).
    """
    found = page_of_quote(quote, pages)
    if found is not None:
        return [(found, quote)]
    words = quote.split()
    numbers = sorted(pages)
    for number in numbers:
        if number + 1 not in pages:
            continue
        ending = _flat(pages[number]).rstrip()
        for cut in range(len(words) - 1, 0, -1):
            head = " ".join(words[:cut])
            if len(canonical_flat(head)) < 12 or not ending.endswith(canonical_flat(head)):
                continue
            rest = " ".join(words[cut:])
            following = _flat(pages[number + 1]).lstrip()
            if following.startswith(canonical_flat(rest)):
                return [(number, head), (number + 1, rest)]
            if canonical_flat(rest).startswith(following):
                later = {n: t for n, t in pages.items() if n > number}
                tail = split_across_pages(rest, later)
                if tail and tail[0][0] == number + 1:
                    return [(number, head), *tail]
    return []


def all_verbatim(quotes: Sequence[str], source: str) -> bool:
    """Whether every quote is verbatim in ``source`` (one bad quote fails them all)."""
    return bool(quotes) and all(quote_in(q, source) for q in quotes)

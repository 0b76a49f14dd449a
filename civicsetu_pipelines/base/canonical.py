"""The one canonicalization shared by ingestion, queries and citation checks.

A quote is "verbatim" when ``canonicalize(quote)`` is a substring of ``canonicalize(source)``.
Stored chunk text is already canonical, so ``canonicalize`` is idempotent by design.
"""

from __future__ import annotations

import re
import unicodedata

_TRANSLATE = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u00b4": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "\u2014",
        "\u2013": "\u2014",
        "\u2015": "\u2014",
        "\u2212": "-",
        "\u00a0": " ",
        "\u2002": " ",
        "\u2003": " ",
        "\u2009": " ",
        "\u202f": " ",
        "\t": " ",
        "\u00ad": None,  # soft hyphen
        "\u200b": None,  # zero-width space
        "\u200c": None,
        "\u200d": None,
        "\ufeff": None,
    }
)
_SPACES = re.compile(r"[ \f\v]+")
_SPACE_AROUND_NEWLINE = re.compile(r" *\n *")
_MANY_NEWLINES = re.compile(r"\n{3,}")


def canonicalize(text: str) -> str:
    """Return the canonical form of ``text``.

    NFKC normalization; typographic quotes to ASCII quotes; en/em dashes and bars to one em dash;
    hyphen look-alikes to ``-``; invisible characters removed; runs of spaces collapsed; at most
    one blank line; no leading or trailing white space. Line breaks are kept.
    """
    # Translate before NFKC too: NFKC would turn a double prime into two primes and an acute
    # accent into a space and a combining mark before the table maps them to quotes.
    text = unicodedata.normalize("NFKC", text.translate(_TRANSLATE)).translate(_TRANSLATE)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _SPACES.sub(" ", text)
    text = _SPACE_AROUND_NEWLINE.sub("\n", text)
    text = _MANY_NEWLINES.sub("\n\n", text)
    return text.strip()


def canonical_flat(text: str) -> str:
    """Canonical text with every line break folded into one space (for matching quotes)."""
    return _SPACES.sub(" ", canonicalize(text).replace("\n", " "))

"""Which matter of the table a question asks about, and whether it asks across states. Pure
domain code (no Dagster, no database).

``ask`` answers a question that compares states on a named matter ("Is the interest rate for
late payment the same in Chandigarh and Daman?", "How long does each state give a builder to pay
a refund?") from the provisions table: each state's value beside its verbatim quote. The words
that ask for a matter are data (``asked`` in ``data/matters.yaml``); a question that asks for
two matters equally, or for none, is left to retrieval.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from civicsetu_pipelines.provisions.table import MatterSpec

# "across states", "each state", "which states", "state-wise": a question about every state
ACROSS_STATES = re.compile(
    r"\b(?:across|each|every|all|different|various|other)\s+(?:the\s+)?(?:states?|"
    r"jurisdictions?|union\s+territor(?:y|ies))\b|\bwhich\s+(?:states?|jurisdictions?)\b|"
    r"\bstate[\s-]?wise\b|\bstate\s+by\s+state\b|\bin\s+different\s+states\b",
    re.IGNORECASE,
)


def _words(text: str) -> tuple[list[str], str]:
    words = re.findall(r"[a-z]+", text.lower())
    return words, " ".join(words)


def _uses(item: str, words: Sequence[str], flat: str) -> bool:
    """``item`` in the question: a phrase as words in order, a word as the prefix of a word."""
    if " " in item:
        return f" {item} " in f" {flat} "
    return any(w.startswith(item) for w in words)


def asks_for(spec: MatterSpec, text: str) -> int:
    """How many of the matter's word groups ``text`` meets: all of them, or 0 (none of its
    ``none`` words may be used either)."""
    words, flat = _words(text)
    if not spec.asked.all or any(_uses(w, words, flat) for w in spec.asked.none):
        return 0
    if all(any(_uses(w, words, flat) for w in group) for group in spec.asked.all):
        return len(spec.asked.all)
    return 0


def matter_asked(text: str, specs: Sequence[MatterSpec]) -> MatterSpec | None:
    """The one matter ``text`` asks for (the one meeting the most word groups); None when none
    does, or two do equally."""
    scored = sorted(((asks_for(s, text), s.key, s) for s in specs), key=lambda t: -t[0])
    if not scored or scored[0][0] == 0:
        return None
    if len(scored) > 1 and scored[1][0] == scored[0][0]:
        return None
    return scored[0][2]

"""Decoding a document's top-level numbering as one sequence: the best path over candidates.

Pure domain code. Every row that *could* open a numbered unit (``9.``, ``9)``, ``Rule 9``, a
number alone on its line, a bold FAQ question) is a candidate with a heading score from its own
evidence (a title with its terminator, a margin note, bold type, indentation). The decoder picks
the chain of candidates, in document order, that maximizes the summed scores minus the cost of
breaking the sequence:

* ``N`` after ``N-1`` and an inserted ``NA`` after ``N`` (``NB`` after ``NA``) cost nothing;
* each number skipped costs :data:`GAP_COST` (so one missing rule is survivable when the
  headings around it are strong, and a stray ``47.`` inside rule 9 is not);
* continuing (or starting) the chain past a strong appendix heading (``FORM 'A'``,
  ``ANNEXURE``) costs :data:`BARRIER_COST`: forms begin where the numbered body ends, and the
  numbers inside a form (its items, the rules it cites) do not continue the rules.

So one bad line cannot swallow the rest: a candidate out of sequence is simply not on the path,
and a numbered list inside a unit (``1. 2. 3.`` inside rule 9) cannot continue ``10, 11 ...``.
The decoder is exact (dynamic programming over candidates indexed by number), O(candidates x
:data:`MAX_JUMP`).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

GAP_COST = 1.5  # per number the chain skips
SUFFIX_COST = 1.0  # a chain that starts at, or jumps to, an inserted number ("3A" after "1")
BARRIER_COST = 2.5  # per strong appendix heading the chain continues past
MAX_JUMP = 30  # numbers a chain may skip at once
STYLE_COST = 0.5  # a chain that changes heading style ("9." then "Rule 10")


@dataclass(frozen=True)
class Position:
    """A number in a sequence: ``9`` is (9, ""), ``3A`` / ``3-A`` is (3, "A")."""

    number: int
    suffix: str = ""

    @property
    def label(self) -> str:
        return f"{self.number}{self.suffix}"


def transition_cost(previous: Position | None, nxt: Position) -> float | None:
    """What continuing the sequence from ``previous`` to ``nxt`` costs; ``None`` if it cannot
    follow (the same number again, or a lower one)."""
    if previous is None:
        return GAP_COST * (nxt.number - 1) + (SUFFIX_COST if nxt.suffix else 0.0)
    if nxt.number == previous.number:
        if nxt.suffix and _suffix_rank(nxt.suffix) == _suffix_rank(previous.suffix) + 1:
            return 0.0  # 3A after 3, 3B after 3A
        if nxt.suffix and _suffix_rank(nxt.suffix) > _suffix_rank(previous.suffix):
            return GAP_COST * (_suffix_rank(nxt.suffix) - _suffix_rank(previous.suffix) - 1)
        return None
    if nxt.number < previous.number or nxt.number - previous.number > MAX_JUMP:
        return None
    gap = nxt.number - previous.number - 1
    return GAP_COST * gap + (SUFFIX_COST if nxt.suffix else 0.0)


def _suffix_rank(suffix: str) -> int:
    """ "" = 0, A = 1, B = 2 ... Z = 26, AA = 27."""
    rank = 0
    for ch in suffix:
        rank = rank * 26 + (ord(ch) - ord("A") + 1)
    return rank


def decode(
    positions: Sequence[Position],
    scores: Sequence[float],
    offsets: Sequence[int],
    barriers: Sequence[int] = (),
    *,
    may_cross: Sequence[bool] | None = None,
    start_before: int | None = None,
    styles: Sequence[str] | None = None,
) -> list[int]:
    """Indexes of the best chain among candidates given in document order.

    ``positions[i]``, ``scores[i]`` and ``offsets[i]`` describe candidate ``i``; ``barriers`` are
    the offsets of strong appendix headings. A candidate joins the chain only if it pays for
    itself: its score must exceed what reaching it costs. Only candidates with ``may_cross[i]``
    (a real heading, not a bare list item) can be reached across a barrier, and only when the
    appendix they sit in has not restarted its own numbering below the chain's; no chain starts
    at or after ``start_before`` (the first appendix heading that follows a credible heading:
    the body comes before the forms). ``styles`` name each candidate's heading style ("9.",
    "Rule 9", "9)"): a document keeps its style, so a change of style costs :data:`STYLE_COST`.
    """
    barrier_list = sorted(barriers)

    def crossed(offset: int) -> int:
        return bisect_left(barrier_list, offset)

    # The lowest number seen since the latest barrier before each candidate: an appendix that
    # restarts its own numbering ("1." after ANNEXURE A) is not continued by the body's chain.
    floors: list[float] = []
    lowest: dict[int, int] = {}
    for position, offset in zip(positions, offsets, strict=True):
        region = crossed(offset)
        floors.append(lowest.get(region, math.inf))
        lowest[region] = min(lowest.get(region, position.number), position.number)
    best: list[float] = []
    back: list[int | None] = []
    # For each position, the best (value + BARRIER_COST * barriers before it, index) so far: the
    # barrier term makes the cost of the barriers between two candidates a difference of two
    # prefix counts, so each predecessor position needs only its best candidate.
    style_of = list(styles) if styles is not None else [""] * len(positions)
    by_position: dict[tuple[Position, str], tuple[float, int]] = {}
    by_number: dict[int, list[tuple[Position, str]]] = {}
    for i, (position, score, offset) in enumerate(zip(positions, scores, offsets, strict=True)):
        here = crossed(offset)
        crossing = True if may_cross is None else may_cross[i]
        start = transition_cost(None, position) or 0.0
        # A chain that only starts after an appendix heading pays for it too: a form's own
        # numbered items are not the document's body.
        value, parent = score - start - BARRIER_COST * here, None
        if start_before is not None and offset >= start_before:
            value = -math.inf
        for number in range(max(1, position.number - MAX_JUMP), position.number + 1):
            for key in by_number.get(number, ()):
                previous, style = key
                cost = transition_cost(previous, position)
                if cost is None:
                    continue
                if style != style_of[i]:
                    cost += STYLE_COST
                stored, j = by_position[key]
                if offsets[j] >= offset:
                    continue  # two readings of one row (an OCR'd "2O." as 2O or 20): one unit
                if crossed(offsets[j]) < here and (not crossing or floors[i] <= previous.number):
                    continue
                candidate = stored - BARRIER_COST * here + score - cost
                if candidate > value:
                    value, parent = candidate, j
        best.append(value)
        back.append(parent)
        keyed = value + BARRIER_COST * here
        key = (position, style_of[i])
        if key not in by_position:
            by_number.setdefault(position.number, []).append(key)
        if key not in by_position or keyed > by_position[key][0]:
            by_position[key] = (keyed, i)
    if not best:
        return []
    end = max(range(len(best)), key=lambda k: (best[k], -k))
    if best[end] <= 0:
        return []
    chain: list[int] = []
    cursor: int | None = end
    while cursor is not None:
        chain.append(cursor)
        cursor = back[cursor]
    return chain[::-1]

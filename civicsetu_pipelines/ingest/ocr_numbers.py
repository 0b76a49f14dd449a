"""Numbers as an OCR'd text layer prints them: ``2,`` for ``2.``, ``I0.`` for ``10.``, ``(l)``
for ``(1)``, ``(2l)`` for ``(21)``.

Pure domain code. Someone's OCR confuses a few glyphs in numbering: ``l`` and ``I`` for ``1``,
``O`` and ``o`` for ``0``, a comma for the full stop after a number. Such a token is never
rewritten blindly: it is read as the number it stands for only where the document's own
sequence expects that number, and the reading is recorded (the flag
``ocr_number_read:<printed>-><read>`` on the unit, or on the chunks of the sub-unit, whose
number was read), so nothing is silently changed:

* a unit's number (:func:`ocr_read_heading`): the row is read a second time with the number's
  digits, as one more candidate heading, a little weaker than one printed right
  (:data:`OCR_READ_COST`); the decoder (:mod:`~civicsetu_pipelines.ingest.sequence`) takes it
  only when it continues the sequence, where the number printed right would have stood. A token
  needs one real digit to be read (``I0.``, ``2,``, ``3l.``); a lone ``I.`` or ``l.`` stays
  what it reads as (a roman one, a letter);
* a sub-unit's marker (:func:`marker_readings`): ``(l)`` is read as ``(1)`` only where neither
  a letter nor a roman numeral fits the markers around it and a ``(1)`` is expected there (a
  new list of sub-rules that goes on to ``(2)``), or as the next number of a list of sub-rules
  (``(2l)`` after ``(20)``). So ``(l)`` after ``(k)`` stays clause l.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

from civicsetu_pipelines.ingest.headings import Heading, Row, numbered_heading

READ_FLAG = "ocr_number_read"
OCR_READ_COST = 0.5  # a heading whose number was read through OCR's confusions is weaker
_CONFUSED = str.maketrans({"l": "1", "I": "1", "O": "0", "o": "0"})
_DIGITS = re.compile(r"[0-9lIOo]{1,3}")
# A unit's number at the start of a row: "I0.", "2,", "3l." (the grammar reads "10." itself).
_UNIT_NUMBER = re.compile(r"^(\s*)([0-9lIOo]{1,3})([.,])(?=\s|$)")
# A marker that only a reading of its digits makes a marker: "(2l)", "(I)", "(l0)".
OCR_MARKER = re.compile(r"^\(\s*([0-9lIOo]{1,3})\s*\)\s*")


def read_digits(token: str) -> str | None:
    """The digits an OCR'd ``token`` stands for ("I0" -> "10", "2l" -> "21", "l" -> "1"), or
    None when it is not made of digits and their look-alikes (or reads as a leading zero)."""
    if not _DIGITS.fullmatch(token):
        return None
    digits = token.translate(_CONFUSED)
    return None if digits.startswith("0") else digits


def read_flag(printed: str, read: str) -> str:
    """The flag recording that ``printed`` was read as ``read``."""
    return f"{READ_FLAG}:{printed}->{read}"


def parse_read_flag(flag: str) -> tuple[str, str] | None:
    """(printed, read) of a :func:`read_flag`, or None for any other flag."""
    kind, _, value = flag.partition(":")
    if kind != READ_FLAG or "->" not in value:
        return None
    printed, _, read = value.rpartition("->")
    return printed, read


@dataclass
class _ReadRow:
    """A row with its number read: the same place, the same length of text."""

    start: int
    end: int
    page: int
    y0: float
    x0: float
    bold: bool
    text: str


class _WithRow(Sequence[Row]):
    """``rows`` with row ``index`` replaced (a view: nothing is copied)."""

    def __init__(self, rows: Sequence[Row], index: int, row: Row) -> None:
        self._rows, self._index, self._row = rows, index, row

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, key: int) -> Row: ...
    @overload
    def __getitem__(self, key: slice) -> Sequence[Row]: ...
    def __getitem__(self, key: int | slice) -> Row | Sequence[Row]:
        if isinstance(key, slice):
            return [self[k] for k in range(*key.indices(len(self)))]
        if key < 0:
            key += len(self)
        return self._row if key == self._index else self._rows[key]

    def __iter__(self) -> Iterator[Row]:
        return (self[k] for k in range(len(self)))


def ocr_read_heading(rows: Sequence[Row], i: int, **options: Any) -> Heading | None:
    """Row ``i`` read as a numbered heading with its number's OCR confusions read as digits
    ("I0. The promoter ..." as "10. The promoter ..."), flagged and a little weaker; None when
    the row has no such number or, read so, is no heading. ``options``: those of
    :func:`~civicsetu_pipelines.ingest.headings.numbered_heading`."""
    row = rows[i]
    match = _UNIT_NUMBER.match(row.text)
    if match is None:
        return None
    token, punct = match.group(2), match.group(3)
    if token.isdigit() and punct == ".":
        return None  # printed right: the grammar reads it as it is
    if not any(ch.isdigit() for ch in token):
        return None  # "I." / "l." alone: a roman one or a letter, not a number read into one
    digits = read_digits(token)
    if digits is None:
        return None
    text = row.text[: match.start(2)] + digits + "." + row.text[match.end(3) :]
    read = _ReadRow(row.start, row.end, row.page, row.y0, row.x0, row.bold, text)
    heading = numbered_heading(_WithRow(rows, i, read), i, **options)
    if heading is None:
        return None
    heading.score -= OCR_READ_COST
    heading.flags.append(read_flag(token + punct, digits + "."))
    return heading


def marker_readings(token: str) -> list[tuple[str, int, str]]:
    """The reading of a sub-unit marker's ``token`` through OCR's confusions, to try after its
    literal readings (a letter, a roman numeral): ("num", value, the marker as printed), or
    none for a number printed right or a token that is no number."""
    digits = None if token.isdigit() else read_digits(token)
    return [] if digits is None else [("num", int(digits), f"({token})")]


def next_number_follows(tokens: Sequence[str], value: int) -> bool:
    """Whether a later marker among ``tokens`` is the number after ``value``, printed right or
    read ("(2)" after a "(l)" read as (1)): a list of sub-rules that goes on."""
    wanted = str(value + 1)
    return any(token == wanted or read_digits(token) == wanted for token in tokens)

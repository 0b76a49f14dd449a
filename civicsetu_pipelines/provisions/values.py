"""Values a state rule fixes, read deterministically from its words: a rate of interest, a
period in days or years, an amount in rupees. Pure domain code (no Dagster, no database).

Each reader returns the value normalized for comparison (``SBI MCLR + 2%``, ``45 days``,
``Rs 10 per square metre``) with the span of the text it was read from; the quote a table shows
is the sentence holding that span, verbatim. Nothing is guessed: a rule whose words hold no
value of the matter's kind gives None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_UNITS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
          "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
          "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
          "nineteen": 19}  # fmt: skip
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
         "eighty": 80, "ninety": 90}  # fmt: skip
_SCALES = {"hundred": 100, "thousand": 1000, "lakh": 100_000, "lakhs": 100_000}
_WORD = "|".join(sorted([*_UNITS, *_TENS, *_SCALES], key=len, reverse=True))
# a number in figures ("45", "1,00,000", "2.5") or in words ("forty-five", "one lakh")
NUMBER = rf"(?:\d[\d,]*(?:\.\d+)?|(?:(?:{_WORD}|and)[\s-]*)+)"


def number_value(text: str) -> float | None:
    """``text`` (figures or English number words, Indian scales) as a number."""
    text = text.strip().lower()
    if re.fullmatch(r"\d[\d,]*(?:\.\d+)?", text):
        return float(text.replace(",", ""))
    total, current = 0, 0
    words = [w for w in re.split(r"[\s-]+", text) if w and w != "and"]
    if not words:
        return None
    for word in words:
        if word in _UNITS:
            current += _UNITS[word]
        elif word in _TENS:
            current += _TENS[word]
        elif word == "hundred":
            current = (current or 1) * 100
        elif word in _SCALES:
            total += (current or 1) * _SCALES[word]
            current = 0
        else:
            return None
    return float(total + current)


@dataclass(frozen=True)
class Value:
    """A value read from a rule: normalized text, the number and unit, and where it was read."""

    text: str  # "SBI MCLR + 2%", "45 days", "Rs 10 per square metre"
    number: float | None
    unit: str  # "percent over SBI MCLR", "contractual", "days", "years", "rupees per square metre"
    start: int
    end: int


def _fmt(n: float) -> str:
    return str(int(n)) if n == int(n) else str(n)


_MCLR = re.compile(
    rf"state\s+bank\s+of\s+india\s+highest\s+marginal\s+cost\s+of\s+lending\s+rate\s+plus\s+"
    rf"(?P<n>{NUMBER})\s*(?:per\s*cent|percent|%)",
    re.IGNORECASE,
)
_CONTRACTUAL = re.compile(r"contractual\s+rate\s+of\s+interest|rate\s+of\s+interest\s+as\s+may\s+"
                          r"be\s+mutually\s+agreed", re.IGNORECASE)  # fmt: skip
_PER_ANNUM = re.compile(rf"(?P<n>{NUMBER})\s*(?:per\s*cent|percent|%)\s+per\s+annum", re.I)


def read_rate(text: str) -> Value | None:
    """A rate of interest: the SBI MCLR formula, a contractual rate, or N% per annum (the
    first in the text)."""
    found: list[Value] = []
    if m := _MCLR.search(text):
        n = number_value(m.group("n"))
        if n is not None:
            found.append(Value(f"SBI MCLR + {_fmt(n)}%", n, "percent over SBI MCLR", m.start(),
                               m.end()))  # fmt: skip
    if m := _CONTRACTUAL.search(text):
        found.append(Value("contractual rate, as mutually agreed", None, "contractual",
                           m.start(), m.end()))  # fmt: skip
    if m := _PER_ANNUM.search(text):
        n = number_value(m.group("n"))
        if n is not None:
            found.append(Value(f"{_fmt(n)}% per annum", n, "percent per annum", m.start(),
                               m.end()))  # fmt: skip
    return min(found, key=lambda v: v.start) if found else None


def _period(unit: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-])(?P<n>{NUMBER})\s*(?:\(\s*\d+\s*\)\s*)?{unit}s?\b",
                      re.IGNORECASE)  # fmt: skip


_DAYS, _YEARS = _period("day"), _period("year")


def _read_period(pattern: re.Pattern[str], unit: str, text: str) -> Value | None:
    for m in pattern.finditer(text):
        n = number_value(m.group("n"))
        if n is not None and n > 0:
            return Value(f"{_fmt(n)} {unit}", n, unit, m.start(), m.end())
    return None


def read_days(text: str) -> Value | None:
    """A period in days ("within forty-five days", "30 days")."""
    return _read_period(_DAYS, "days", text)


def read_years(text: str) -> Value | None:
    """A period in years ("for a period of five years")."""
    return _read_period(_YEARS, "years", text)


# "rupees" as OCR reads it too: its first letter misread ("Tupees") or an e read as c ("rupces")
_RUPEE_WORD = r"\b[a-z]up[ec]es\b"
_RUPEES = re.compile(
    rf"(?:{_RUPEE_WORD}|rs\.?|₹|inr)\s*(?P<n>{NUMBER})(?:\s*/-)?"
    r"(?P<per>\s*(?:per|for\s+every)\s+(?:square\s+met(?:re|er)|sq\.?\s*m(?:tr?)?\.?|application))?",
    re.IGNORECASE,
)


_RUPEES_AFTER = re.compile(
    rf"(?<![\w-])(?P<n>{NUMBER})\s*{_RUPEE_WORD}"
    r"(?P<per>\s*(?:per|for\s+every)\s+(?:square\s+met(?:re|er)|sq\.?\s*m(?:tr?)?\.?|application))?",
    re.IGNORECASE,
)


def read_rupees(text: str) -> Value | None:
    """An amount in rupees, with what it is per ("rupees ten per square meter", "five rupees
    per square meter", "Rs. 25,000/-"): the first in the text."""
    matches = sorted([*_RUPEES.finditer(text), *_RUPEES_AFTER.finditer(text)],
                     key=lambda m: m.start())  # fmt: skip
    for m in matches:
        n = number_value(m.group("n"))
        if n is None or n <= 0:
            continue
        per = (m.group("per") or "").lower()
        unit = ("rupees per square metre" if "sq" in per else
                "rupees per application" if "application" in per else "rupees")  # fmt: skip
        shown = f"Rs {_fmt(n)}" + unit.removeprefix("rupees")
        return Value(shown, n, unit, m.start(), m.end())
    return None


READERS = {"rate": read_rate, "days": read_days, "years": read_years, "rupees": read_rupees}

_SENTENCE_END = re.compile(r"(?<=[.;:])\s+(?=[A-Z(\u2014])|\n(?=\(\w{1,4}\)\s)")


def sentence_at(text: str, start: int, end: int) -> str:
    """The sentences of ``text`` that hold [start, end), verbatim (lines joined)."""
    bounds = [0, *(m.end() for m in _SENTENCE_END.finditer(text)), len(text)]
    a = max((b for b in bounds if b <= start), default=0)
    b = min((b for b in bounds if b >= end), default=len(text))
    # OCR debris after the last word ("individual. \\ | , | :") is not part of the sentence
    return " ".join(text[a:b].split()).rstrip(" |\\,:;'")

"""How a unit's path is spelled when the unit is a piece of a longer one.

Pure domain code. Two pieces are written into a unit's legal path and label, and only here:

* a part cut by size from a long unit, `` (part N)`` (``Form A (part 2)``: the further parts of a
  unit longer than a chunk may be; the first keeps the unit's own path);
* a form's own numbered paragraph, `` para N`` (``Agreement For Sale para 12``: a model agreement
  is read by its clauses, :func:`~civicsetu_pipelines.ingest.legal_structure.form_paragraphs`).

A paragraph may itself be cut into parts: ``Agreement For Sale para 7 (part 2)``. The structure
builds these words (:func:`part_word`, :func:`paragraph_word`), and everything that reads them
back -- the Akoma Ntoso eIds, the golden split's groups, the graph picture's short labels, the
label check -- reads them with :func:`split_part` and :func:`split_paragraph` or the patterns
below, so the spelling has one home.
"""

from __future__ import annotations

import re

# The words as a regular expression (the label check composes its pattern of them).
PART_PATTERN = r" \(part \d+\)"
PARAGRAPH_PATTERN = r" para \d{1,3}"

_PART = re.compile(r"^(.*?)\s*\(part (\d+)\)$")
_PARAGRAPH = re.compile(r"^(.*?)\s+para (\d+)$")


def part_word(number: int) -> str:
    """What a unit's path gains for its ``number``-th part (`` (part 2)``)."""
    return f" (part {number})"


def paragraph_word(number: int) -> str:
    """What a form's path gains for its paragraph ``number`` (`` para 12``)."""
    return f" para {number}"


def split_part(path: str) -> tuple[str, int | None]:
    """``"Form A (part 2)"`` -> (``"Form A"``, 2); a path that is no part -> (path, None)."""
    match = _PART.match(path)
    return (match.group(1), int(match.group(2))) if match else (path, None)


def split_paragraph(path: str) -> tuple[str, int | None]:
    """``"Agreement For Sale para 12"`` -> (``"Agreement For Sale"``, 12); a path that is no
    form's paragraph -> (path, None). A part is not a paragraph: split the part first."""
    match = _PARAGRAPH.match(path)
    return (match.group(1), int(match.group(2))) if match else (path, None)


def whole_form(path: str) -> str:
    """The form a paragraph (or a paragraph's part) is of: ``"Annexure A para 7 (part 2)"`` ->
    ``"Annexure A"``; any other path as it is."""
    base, part = split_part(path)
    form, paragraph = split_paragraph(base)
    return form if paragraph is not None else path

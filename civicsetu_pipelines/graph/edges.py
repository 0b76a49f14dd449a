"""The legal graph: edges from chunks, stored in Postgres, and neighbourhood queries.

Pure domain code over psycopg (no Dagster). Nodes are documents (by key) and chunks (by id).
Edges: ``HAS_PART`` (document -> top-level unit -> sub-unit), ``REFERENCES`` (unit -> the finest
existing unit it cites), ``DERIVED_FROM`` (a state rule -> the Act section it implements, from
the rule's own words) and ``EXTERNAL_REFERENCE`` (unit -> another enactment, by name). Every
reference edge keeps its evidence: the chunk, character offsets and the quoted phrase.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple

import psycopg
from psycopg.types.json import Jsonb

from civicsetu_pipelines.base import SetAside, contained
from civicsetu_pipelines.graph.matters import MATTER_CONFIDENCE, MatterIndex
from civicsetu_pipelines.graph.references import (
    TITLE_CONFIDENCE,
    ActTitles,
    Reference,
    Resolution,
    UnitIndex,
    derivation,
    extract_references,
    is_framing_rule,
    resolve,
)
from civicsetu_pipelines.ingest import CuratedDerivation

EDGE_FIELDS = (
    "edge_type", "source_document", "source_id", "source_label", "target_document", "target_id",
    "target_label", "evidence_chunk", "evidence_start", "evidence_end", "evidence_phrase",
    "confidence", "basis", "note",
)  # fmt: skip
CURATED_CONFIDENCE = 0.9
# A section the RERA Act lacks, in a unit that names another enactment: that enactment's.
CONTEXT_CONFIDENCE = 0.7


@dataclass(frozen=True)
class Edge:
    edge_type: str
    source_document: str
    source_id: str
    source_label: str
    target_document: str | None
    target_id: str | None
    target_label: str
    evidence_chunk: str | None = None
    evidence_start: int | None = None
    evidence_end: int | None = None
    evidence_phrase: str | None = None
    confidence: float = 1.0
    # structure (HAS_PART) | text (the document's words) | curated | context (another
    # enactment's section, named by the enactment its unit names)
    basis: str = "text"
    note: str | None = None  # why, for curated edges


@dataclass
class GraphBuild:
    edges: list[Edge] = field(default_factory=list)
    unresolved: list[dict[str, Any]] = field(default_factory=list)
    internal: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # per document
    rules: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # per document
    framing: set[tuple[str, str]] = field(default_factory=set)  # (document, rule) of definitions
    curated_problems: list[dict[str, Any]] = field(default_factory=list)
    set_aside: list[SetAside] = field(default_factory=list)  # documents whose edges raised

    def mark(self) -> tuple[int, int, int, frozenset[tuple[str, str]]]:
        """Where the build stands, to take one document's edges back (:meth:`rollback`)."""
        return (len(self.edges), len(self.unresolved), len(self.curated_problems),
                frozenset(self.framing))  # fmt: skip

    def rollback(self, mark: tuple[int, int, int, frozenset[tuple[str, str]]], key: str) -> None:
        """Take back what was added since ``mark`` for the document ``key``."""
        del self.edges[mark[0] :], self.unresolved[mark[1] :], self.curated_problems[mark[2] :]
        self.framing = set(mark[3])
        self.internal.pop(key, None)
        self.rules.pop(key, None)

    def unresolved_rate(self, document_key: str) -> float:
        total = self.internal.get(document_key, 0)
        missing = sum(1 for u in self.unresolved if u["document"] == document_key)
        return missing / total if total else 0.0

    def missing_targets(self) -> list[dict[str, Any]]:
        """Each unresolved target once per document, with how often and where it is cited."""
        grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for item in self.unresolved:
            grouped[(item["document"], item["reference"])].append(item)
        return [
            {"document": doc, "target": target, "citations": len(items),
             "cited_in": sorted({i["label"] for i in items}), "phrase": items[0]["phrase"]}
            for (doc, target), items in sorted(grouped.items())
        ]  # fmt: skip

    def derivation_coverage(self) -> dict[str, dict[str, Any]]:
        """Per rules document: how many of its rules derive from an Act section, over all rules
        and over the substantive ones (not definitions or short title)."""
        derived: dict[str, set[str]] = defaultdict(set)
        for edge in self.edges:
            if edge.edge_type == "DERIVED_FROM":
                derived[edge.source_document].add(edge.source_label)
        out = {}
        for doc, rules in sorted(self.rules.items()):
            done = [r for r in rules if r in derived[doc]]
            substantive = [r for r in rules if (doc, r) not in self.framing]
            out[doc] = {
                "substantive_derived": sum(r in derived[doc] for r in substantive),
                "rules": len(rules),
                "derived": len(done),
                "share": round(len(done) / len(rules), 4) if rules else 0.0,
                "substantive_rules": len(substantive),
                "substantive_share": round(
                    sum(r in derived[doc] for r in substantive) / len(substantive), 4
                )
                if substantive
                else 1.0,
                "not_derived": [r for r in rules if r not in derived[doc]],
            }
        return out


def build_edges(
    chunks: Sequence[Mapping[str, Any]],
    *,
    doc_types: Mapping[str, str],
    act_key: str,
    indexes: Mapping[str, UnitIndex],
    curated: Sequence[CuratedDerivation] = (),
    act_titles: ActTitles | None = None,
    matters: MatterIndex | None = None,
    rules_documents: Sequence[str] | None = None,
) -> GraphBuild:
    """Edges of one jurisdiction's chunks. ``indexes`` must hold every document referred to
    (the jurisdiction's own and the Act's). ``curated`` derivations apply only to rules whose
    opening names no Act section. A rule that neither its words nor the table derive derives
    from the sections named by the Act's rule-making head its title restates (``matters``),
    else from the section whose title it restates (``act_titles``). ``rules_documents`` are
    the jurisdiction's rules an order's "rule N" resolves into (default: those among
    ``chunks``; given when ``chunks`` are some of the documents only)."""
    build = GraphBuild()
    by_rule = {(c.document, c.rule): c for c in curated}
    by_doc: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for chunk in chunks:
        by_doc[str(chunk["document_key"])].append(chunk)
    if rules_documents is None:
        rules_documents = sorted(k for k in by_doc if doc_types[k] == "rules")
    # the forms each document prints ("Form A", "Form 1"): a form cited by a document that
    # prints none may be printed by another of its jurisdiction (_form_elsewhere)
    forms_of = {k: {str(c["label"]) for c in v if str(c["label"]).startswith("Form ")}
                for k, v in by_doc.items()}  # fmt: skip

    def document_edges(key: str, doc_chunks: list[Mapping[str, Any]]) -> None:
        doc_type = doc_types[key]
        labels = {str(c["chunk_id"]): str(c["label"]) for c in doc_chunks}
        rule_text: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        ordered = sorted(doc_chunks, key=lambda c: int(c["ordinal"]))
        refs_of = {str(c["chunk_id"]): extract_references(str(c["text"])) for c in ordered}
        # Other enactments each unit names, in reading order (chunk, offset): a reference to a
        # section the Act lacks belongs to the nearest one (a judgment's paragraph in parts).
        named: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
        for c in ordered:
            named[str(c["section_label"])] += [
                    (int(c["ordinal"]), r.start, r.enactment)
                    for r in refs_of[str(c["chunk_id"])] if r.enactment
                ]  # fmt: skip
        for chunk in ordered:
            cid, label = str(chunk["chunk_id"]), str(chunk["label"])
            parent = chunk.get("parent_id")
            if isinstance(parent, str) and parent in labels:
                parent_label = labels[str(parent)]
                build.edges.append(
                    Edge(
                        "HAS_PART",
                        key,
                        str(parent),
                        parent_label,
                        key,
                        cid,
                        label,
                        basis="structure",
                    )  # fmt: skip
                )
            else:
                build.edges.append(
                    Edge("HAS_PART", key, key, key, key, cid, label, basis="structure")
                )
            if chunk["unit"] == "rule":
                rule_text[str(chunk["section_label"])].append(chunk)
            for ref in refs_of[cid]:
                if ref.kind == "external":
                    build.edges.append(
                        Edge(
                            "EXTERNAL_REFERENCE",
                            key,
                            cid,
                            label,
                            None,
                            None,
                            str(ref.external),
                            cid,
                            ref.start,
                            ref.end,
                            ref.phrase,
                        )  # fmt: skip
                    )
                    continue
                if ref.kind == "rule" and doc_type != "rules":
                    # A judgment's, order's or regulation's "rule N" is the state's rules'.
                    res = _resolve_in_rules(ref, rules_documents, indexes)
                    if res is None:  # the corpus holds no rules of this jurisdiction
                        build.edges.append(rules_not_held_edge(key, cid, label, ref, chunk))
                        continue
                else:
                    res = resolve(ref, document_key=key, doc_type=doc_type, act_key=act_key,
                                      indexes=indexes)  # fmt: skip
                if res is not None and ref.kind == "form" and not res.resolved:
                    res = _form_elsewhere(ref, key, forms_of, indexes) or res
                    if not res.resolved and not forms_of.get(key):
                        # the document prints no form at all, and no other of its
                        # jurisdiction prints this one: published apart, not in the corpus
                        build.edges.append(forms_not_held_edge(key, cid, label, ref))
                        continue
                if res is None:
                    continue
                at = (int(chunk["ordinal"]), ref.start)
                other = _other_enactment(ref, res, named[str(chunk["section_label"])], at,
                                             act_key, indexes)  # fmt: skip
                if other is not None:
                    build.edges.append(other_enactment_edge(key, cid, label, ref, other))
                    continue
                build.internal[key] += 1
                if not res.resolved:
                    build.unresolved.append(
                        {
                            "document": key,
                            "chunk": cid,
                            "label": label,
                            "reference": ref.label,
                            "phrase": ref.phrase,
                        }  # fmt: skip
                    )
                    continue
                if res.target_chunk == cid:
                    continue  # a unit citing itself ("this section") is no edge
                build.edges.append(
                    Edge(
                        "REFERENCES",
                        key,
                        cid,
                        label,
                        res.target_document,
                        res.target_chunk,
                        str(res.target_label),
                        cid,
                        ref.start,
                        ref.end,
                        ref.phrase,
                    )  # fmt: skip
                )
        for rule_label, parts in rule_text.items():
            build.rules[key].append(rule_label)
            if is_framing_rule(str(parts[0].get("title") or ""), str(parts[0]["text"])):
                build.framing.add((key, rule_label))
            derived = _derive(parts[0], key, doc_type, act_key, indexes)
            entry = by_rule.get((key, rule_label))
            if derived and entry:
                build.curated_problems.append(
                        {"document": key, "rule": rule_label, "problem": "redundant: the rule's "
                         f"text names {derived[0].target_label}; the curated entry is ignored"}
                    )  # fmt: skip
            derived = derived or _curated(entry, parts[0], act_key, indexes, build)
            if not derived and (key, rule_label) not in build.framing:
                if matters is not None:
                    derived = _from_matter(parts[0], key, act_key, indexes, matters)
                if not derived and act_titles is not None:
                    derived = _from_title(parts[0], key, act_key, indexes, act_titles)
            build.edges.extend(derived)
        for doc, rule in by_rule:
            if doc == key and rule not in rule_text:
                build.curated_problems.append(
                    {"document": doc, "rule": rule, "problem": "no such rule in the document"}
                )

    # A document is the unit of failure: one whose edges raise is set aside (named with the
    # error), what it added so far is taken back, and the other documents' edges are built.
    for key, doc_chunks in sorted(by_doc.items()):
        mark = build.mark()
        _, aside = contained("graph", key, partial(document_edges, key, doc_chunks))
        if aside is not None:
            build.rollback(mark, key)
            build.set_aside.append(aside)
    return build


def _other_enactment(
    ref: Reference,
    res: Resolution,
    named: Sequence[tuple[int, int, str]],
    at: tuple[int, int],
    act_key: str,
    indexes: Mapping[str, UnitIndex],
) -> str | None:
    """The other enactment an unresolved "section N" belongs to, read from its unit's words:
    when the RERA Act has no section N at all (not even without its sub-section) and the unit
    names other enactments (``named``: (chunk ordinal, offset, name), "... under Section 14B ...
    the EPF Act"), the nearest one named before the reference (at ``at``), else the first
    after it. None otherwise: a missing RERA section stays unresolved, and visible."""
    if res.resolved or ref.kind != "section" or res.target_document != act_key:
        return None
    act = indexes.get(act_key)
    if act is None or act.finest(f"Section {ref.number}") is not None or not named:
        return None
    before = [name for ordinal, start, name in named if (ordinal, start) < at]
    return before[-1] if before else named[0][2]


def _resolve_in_rules(
    ref: Reference, rules_documents: Sequence[str], indexes: Mapping[str, UnitIndex]
) -> Resolution | None:
    """``ref`` (a rule) in the first of the jurisdiction's rules documents that has it; left
    unresolved against the first when none has it; None when the build holds no rules."""
    if not rules_documents or ref.label is None:
        return None
    for document in rules_documents:
        index = indexes.get(document)
        found = index.finest(ref.label) if index else None
        if found:
            return Resolution(ref, document, found[0], found[1])
    return Resolution(ref, rules_documents[0], ref.label, None)


def rules_not_held_edge(
    key: str, cid: str, label: str, ref: Reference, chunk: Mapping[str, Any]
) -> Edge:
    """EXTERNAL_REFERENCE to a rule of a state whose rules the corpus does not hold."""
    state = chunk.get("jurisdiction") or "the jurisdiction"
    target = f"{str(ref.label).lower()} of the rules of {state} (not in the corpus)"
    return Edge(
        "EXTERNAL_REFERENCE", key, cid, label, None, None, target, cid, ref.start, ref.end,
        ref.phrase, confidence=CONTEXT_CONFIDENCE, basis="context",
        note=f"a {state} document cites its state's rules; no rules of {state} are registered",
    )  # fmt: skip


def forms_not_held_edge(key: str, cid: str, label: str, ref: Reference) -> Edge:
    """EXTERNAL_REFERENCE to a form of a document that prints no form, which no other document
    of its jurisdiction prints either: published apart, not in the corpus."""
    return Edge(
        "EXTERNAL_REFERENCE", key, cid, label, None, None,
        f"{str(ref.label).lower()} of {key} (not printed with it; not in the corpus)", cid,
        ref.start, ref.end, ref.phrase, confidence=CONTEXT_CONFIDENCE, basis="context",
        note="the document cites its forms but prints none, and no other document of its "
        "jurisdiction prints this one",
    )  # fmt: skip


def _form_elsewhere(
    ref: Reference,
    key: str,
    forms_of: Mapping[str, set[str]],
    indexes: Mapping[str, UnitIndex],
) -> Resolution | None:
    """A form the citing document does not print, found in the one other document of its
    jurisdiction that prints it (None: none does, or several do and the words do not say
    which)."""
    if forms_of.get(key) or ref.label is None:
        return None  # a document printing forms cites its own: left as it resolved
    holders = [k for k, forms in forms_of.items() if k != key and ref.label in forms]
    index = indexes.get(holders[0]) if len(holders) == 1 else None
    found = index.finest(ref.label) if index else None
    return Resolution(ref, holders[0], found[0], found[1]) if found else None


def other_enactment_edge(key: str, cid: str, label: str, ref: Reference, enactment: str) -> Edge:
    """EXTERNAL_REFERENCE to "section N of <enactment>", read from the unit's context."""
    path = "".join(ref.path)
    return Edge(
        "EXTERNAL_REFERENCE", key, cid, label, None, None,
        f"section {ref.number}{path} of {enactment}", cid, ref.start, ref.end, ref.phrase,
        confidence=CONTEXT_CONFIDENCE, basis="context",
        note=f"the RERA Act has no section {ref.number}; the unit names the {enactment}",
    )  # fmt: skip


def _derive(
    head: Mapping[str, Any],
    key: str,
    doc_type: str,
    act_key: str,
    indexes: Mapping[str, UnitIndex],
) -> list[Edge]:
    """DERIVED_FROM edges of a rule from its opening part's own words."""
    found = derivation(str(head["text"]), str(head.get("title") or ""))
    if found is None:
        return []
    edges = []
    for ref in found.references:
        res = resolve(ref, document_key=key, doc_type=doc_type, act_key=act_key, indexes=indexes)
        if res is not None and res.resolved:
            edges.append(
                Edge(
                    "DERIVED_FROM",
                    key,
                    str(head["chunk_id"]),
                    str(head["section_label"]),
                    res.target_document,
                    res.target_chunk,
                    str(res.target_label),
                    str(head["chunk_id"]),
                    ref.start,
                    ref.end,
                    ref.phrase,
                    found.confidence,
                )  # fmt: skip
            )
    return edges


def _from_title(
    head: Mapping[str, Any],
    key: str,
    act_key: str,
    indexes: Mapping[str, UnitIndex],
    act_titles: ActTitles,
) -> list[Edge]:
    """DERIVED_FROM the Act section whose title the rule's printed title restates."""
    title = str(head.get("title") or "")
    found = act_titles.derive(title)
    index = indexes.get(act_key)
    target = index.finest(found[0]) if found and index else None
    if found is None or target is None:
        return []
    note = f"the rule's title restates the title of {target[0]} (score {found[1]})"
    return [_title_edge(head, key, act_key, target, TITLE_CONFIDENCE, note)]


def _title_edge(
    head: Mapping[str, Any],
    key: str,
    act_key: str,
    target: tuple[str, str],
    confidence: float,
    note: str,
) -> Edge:
    """A DERIVED_FROM edge read from the rule's printed title (the title is its evidence)."""
    return Edge(
        "DERIVED_FROM",
        key,
        str(head["chunk_id"]),
        str(head["section_label"]),
        act_key,
        target[1],
        target[0],
        str(head["chunk_id"]),
        None,
        None,
        str(head.get("title") or ""),
        confidence=confidence,
        basis="text",
        note=note,
    )


def _from_matter(
    head: Mapping[str, Any],
    key: str,
    act_key: str,
    indexes: Mapping[str, UnitIndex],
    matters: MatterIndex,
) -> list[Edge]:
    """DERIVED_FROM the sections named by the Act's rule-making head the rule's title restates
    ("(g) the rate of interest payable under section 12")."""
    title = str(head.get("title") or "")
    found = matters.match(title)
    index = indexes.get(act_key)
    if found is None or index is None:
        return []
    edges: list[Edge] = []
    for matter in found[0]:
        for label in matter.sections:
            target = index.finest(label)
            if target is None or any(e.target_id == target[1] for e in edges):
                continue
            note = (f"the rule's title restates the Act's {matter.instrument}-making head "
                    f'{matter.key}, "{matter.text}" (score {found[1]})')  # fmt: skip
            edges.append(_title_edge(head, key, act_key, target, MATTER_CONFIDENCE, note))
    return edges


def _curated(
    entry: CuratedDerivation | None,
    head: Mapping[str, Any],
    act_key: str,
    indexes: Mapping[str, UnitIndex],
    build: GraphBuild,
) -> list[Edge]:
    """DERIVED_FROM edges of a rule from the curated table (its note is the evidence)."""
    if entry is None:
        return []
    edges = []
    index = indexes.get(act_key)
    for label in entry.sections:
        found = index.finest(label) if index else None
        if found is None:
            build.curated_problems.append(
                {"document": entry.document, "rule": entry.rule,
                 "problem": f"{label} is not in {act_key}"}
            )  # fmt: skip
            continue
        edges.append(
            Edge(
                "DERIVED_FROM",
                entry.document,
                str(head["chunk_id"]),
                entry.rule,
                act_key,
                found[1],
                found[0],
                confidence=CURATED_CONFIDENCE,
                basis="curated",
                note=entry.note,
            )  # fmt: skip
        )
    return edges


SUMMED = ("internal_references", "unresolved", "rules", "rules_derived", "substantive_rules",
          "substantive_derived")  # fmt: skip
DOCUMENT_FIELDS = ("document_key", "internal_references", "unresolved", "unresolved_rate",
                   "rules", "rules_derived", "substantive_rules", "substantive_derived",
                   "missing_targets")  # fmt: skip


def document_rows(build: GraphBuild) -> list[dict[str, Any]]:
    """Per document of a build: references made and unresolved, rules and rules derived."""
    coverage = build.derivation_coverage()
    missing = build.missing_targets()
    keys = sorted(set(build.internal) | set(build.rules))
    return [
        {
            "document_key": key,
            "internal_references": build.internal.get(key, 0),
            "unresolved": sum(1 for u in build.unresolved if u["document"] == key),
            "unresolved_rate": round(build.unresolved_rate(key), 4),
            "rules": coverage.get(key, {}).get("rules", 0),
            "rules_derived": coverage.get(key, {}).get("derived", 0),
            "substantive_rules": coverage.get(key, {}).get("substantive_rules", 0),
            "substantive_derived": coverage.get(key, {}).get("substantive_derived", 0),
            "missing_targets": [m for m in missing if m["document"] == key],
        }
        for key in keys
    ]


def replace_edges(
    conn: psycopg.Connection[Any],
    jurisdiction: str,
    edges: Iterable[Edge],
    documents: Sequence[Mapping[str, Any]] = (),
    *,
    only: Sequence[str] | None = None,
) -> int:
    """Replace a jurisdiction's edges (and its per-document figures, see :func:`document_rows`)
    in one transaction under its advisory lock: all of them, or those whose source is one of the
    ``only`` documents (an incremental run's; the others' edges stay)."""
    rows = [(jurisdiction, *(getattr(e, f) for f in EDGE_FIELDS)) for e in edges]
    keys = None if only is None else list(only)
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"graph:{jurisdiction}",))
        cur.execute(
            "DELETE FROM graph_edges WHERE jurisdiction = %s "
            "AND (%s::text[] IS NULL OR source_document = ANY(%s))",
            (jurisdiction, keys, keys),
        )
        # COPY: a cold state of 1,000 orders has ~200,000 edges (executemany took 115 s)
        with cur.copy(
            f"COPY graph_edges (jurisdiction, {', '.join(EDGE_FIELDS)}) FROM STDIN"
        ) as copy:
            for row in rows:
                copy.write_row(row)
        cur.execute(
            "DELETE FROM graph_documents WHERE jurisdiction = %s "
            "AND (%s::text[] IS NULL OR document_key = ANY(%s))",
            (jurisdiction, keys, keys),
        )
        cur.executemany(
            f"INSERT INTO graph_documents (jurisdiction, {', '.join(DOCUMENT_FIELDS)}) "
            f"VALUES (%s, {', '.join(['%s'] * len(DOCUMENT_FIELDS))})",
            [
                (
                    jurisdiction,
                    *(Jsonb(d[f]) if f == "missing_targets" else d[f] for f in DOCUMENT_FIELDS),
                )
                for d in documents
            ],  # fmt: skip
        )
    return len(rows)


def cited_from_elsewhere(
    conn: psycopg.Connection[Any], jurisdiction: str, keys: Sequence[str]
) -> list[str]:
    """Those of ``keys`` another document's edges of ``jurisdiction`` point into (a reference
    resolved to one of their units): their edges cannot be made again alone."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT DISTINCT target_document FROM graph_edges WHERE jurisdiction = %s "
            "AND target_document = ANY(%s) AND NOT (source_document = ANY(%s))",
            (jurisdiction, list(keys), list(keys)),
        )
        return sorted(str(row[0]) for row in cur.fetchall())


def edge_documents(conn: psycopg.Connection[Any], jurisdiction: str) -> set[str]:
    """The documents of ``jurisdiction`` the graph holds edges from."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT DISTINCT source_document FROM graph_edges WHERE jurisdiction = %s",
            (jurisdiction,),
        )
        return {str(row[0]) for row in cur.fetchall()}


def unit_labels(
    conn: psycopg.Connection[Any], keys: Sequence[str]
) -> dict[str, list[tuple[str, str]]]:
    """(label, chunk id) of the current units of each of ``keys``: the indexes references
    resolve into (:class:`UnitIndex`)."""
    out: dict[str, list[tuple[str, str]]] = {}
    with conn.cursor() as cur:
        cur.execute(
            "SELECT document_key, label, chunk_id::text FROM legal_chunks "
            "WHERE status = 'current' AND document_key = ANY(%s) ORDER BY document_key, ordinal",
            (list(keys),),
        )
        for key, label, chunk_id in cur.fetchall():
            out.setdefault(str(key), []).append((str(label), str(chunk_id)))
    return out


def drop_document_edges(
    conn: psycopg.Connection[Any], jurisdiction: str, keys: Sequence[str], *, whole: bool = False
) -> int:
    """Take out the edges from or to the documents ``keys`` (retired from ``jurisdiction``), in
    any jurisdiction, and their per-document figures; with ``whole``, every edge of
    ``jurisdiction`` (it has no document left). The next run of a jurisdiction rebuilds its
    edges from its registered documents, which no longer include them. Returns the edges taken
    out."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"graph:{jurisdiction}",))
        cur.execute(
            "DELETE FROM graph_edges WHERE source_document = ANY(%s) "
            "OR target_document = ANY(%s) OR (%s AND jurisdiction = %s)",
            (list(keys), list(keys), whole, jurisdiction),
        )
        removed = cur.rowcount
        cur.execute(
            "DELETE FROM graph_documents WHERE document_key = ANY(%s) "
            "OR (%s AND jurisdiction = %s)",
            (list(keys), whole, jurisdiction),
        )
    return removed


_NEIGHBOURS = """
WITH RECURSIVE walk(node, depth, path) AS (
    SELECT %(start)s::text, 0, ARRAY[%(start)s::text]
  UNION ALL
    SELECT CASE WHEN e.source_id = w.node THEN e.target_id ELSE e.source_id END,
           w.depth + 1,
           w.path || CASE WHEN e.source_id = w.node THEN e.target_id ELSE e.source_id END
    FROM walk w
    JOIN graph_edges e
      ON e.edge_type = ANY(%(types)s)
     AND ((%(outgoing)s AND e.source_id = w.node) OR (%(incoming)s AND e.target_id = w.node))
    WHERE w.depth < %(depth)s AND e.target_id IS NOT NULL
      AND NOT (CASE WHEN e.source_id = w.node THEN e.target_id ELSE e.source_id END
               = ANY(w.path))
)
SELECT DISTINCT ON (e.edge_id) e.edge_type, e.source_label, e.source_document, e.target_label,
       e.target_document, e.evidence_phrase, w.depth + 1 AS depth
FROM walk w
JOIN graph_edges e
  ON e.edge_type = ANY(%(types)s)
 AND ((%(outgoing)s AND e.source_id = w.node) OR (%(incoming)s AND e.target_id = w.node))
WHERE w.depth < %(depth)s
ORDER BY e.edge_id
"""


def neighbours(
    conn: psycopg.Connection[Any],
    node_id: str,
    *,
    types: Sequence[str] = ("REFERENCES", "DERIVED_FROM"),
    direction: str = "both",
    depth: int = 1,
) -> list[dict[str, Any]]:
    """Edges within ``depth`` (at most 2) of a node, following ``types`` in ``direction``."""
    if direction not in {"out", "in", "both"}:
        raise ValueError(f"direction must be out, in or both, not {direction!r}")
    params = {
        "start": node_id,
        "types": list(types),
        "outgoing": direction in {"out", "both"},
        "incoming": direction in {"in", "both"},
        "depth": max(1, min(int(depth), 2)),
    }
    with conn.cursor() as cur:
        cur.execute(_NEIGHBOURS, params)
        names = [d.name for d in cur.description or []]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


_CITATIONS_OF = (
    "SELECT edge_type, source_document, source_label, target_label, evidence_phrase "
    "FROM graph_edges WHERE target_document = %s AND source_document <> %s "
    "AND edge_type IN ('REFERENCES', 'DERIVED_FROM') "
    "ORDER BY source_document, source_label, target_label"
)


def citations_of(conn: psycopg.Connection[Any], document_key: str) -> list[dict[str, Any]]:
    """The stored edges by which other documents cite ``document_key`` (references and
    derivations): what becomes unresolved if it is removed."""
    with conn.cursor() as cur:
        cur.execute(_CITATIONS_OF, (document_key, document_key))
        names = [d.name for d in cur.description or []]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


# The Act's chunk fields its titles, index and prescribed matters are read from.
ACT_FIELDS = ("document_key", "chunk_id", "label", "section_label", "unit", "legal_path", "text",
              "title", "chapter", "page_start", "ordinal")  # fmt: skip
_ACT_ROWS = (
    "SELECT document_key, chunk_id::text, label, section_label, unit, legal_path, text, title, "
    "chapter, page_start, ordinal FROM legal_chunks WHERE document_key = %s AND status = 'current'"
)


def stored_act_chunks(conn: psycopg.Connection[Any], act_key: str) -> list[dict[str, Any]]:
    """The Act's current chunks as served (the fields of :data:`ACT_FIELDS`)."""
    return [dict(zip(ACT_FIELDS, row, strict=True))
            for row in conn.execute(_ACT_ROWS, (act_key,)).fetchall()]  # fmt: skip


def graph_stats(conn: psycopg.Connection[Any]) -> dict[str, list[dict[str, Any]]]:
    """Edges by jurisdiction and type; per jurisdiction, internal references, unresolved count
    and rate, and rules derived; per document, the same with its missing targets."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT jurisdiction, edge_type, count(*) FROM graph_edges "
            "GROUP BY jurisdiction, edge_type ORDER BY jurisdiction, edge_type"
        )
        edges = [{"jurisdiction": j, "edge_type": t, "edges": n} for j, t, n in cur.fetchall()]
        cur.execute(
            f"SELECT jurisdiction, {', '.join(DOCUMENT_FIELDS)} FROM graph_documents "
            "ORDER BY jurisdiction, document_key"
        )
        names = [d.name for d in cur.description or []]
        documents = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
    by_jurisdiction: dict[str, dict[str, Any]] = {}
    for doc in documents:
        row = by_jurisdiction.setdefault(
            doc["jurisdiction"],
            {"jurisdiction": doc["jurisdiction"], "internal_references": 0, "unresolved": 0,
             "rules": 0, "rules_derived": 0, "substantive_rules": 0, "substantive_derived": 0},
        )  # fmt: skip
        for key in SUMMED:
            row[key] += doc[key]
    for row in [*by_jurisdiction.values(), *documents]:
        total = row["internal_references"]
        row["unresolved_rate"] = round(row["unresolved"] / total, 4) if total else 0.0
        rules = row["substantive_rules"]
        row["derived_share"] = round(row["substantive_derived"] / rules, 4) if rules else None
    return {"edges": edges, "jurisdictions": list(by_jurisdiction.values()),
            "documents": documents}  # fmt: skip


class ReferenceLink(NamedTuple):
    """A resolved cross-reference's phrase in its chunk and the unit it leads to."""

    start: int
    end: int
    target_document: str
    target_eid: str
    target_since: dt.date | None


_REFERENCE_LINKS = (
    "SELECT DISTINCT e.evidence_chunk, e.evidence_start, e.evidence_end, e.target_document, "
    "t.eid, t.valid_from FROM graph_edges e JOIN legal_chunks t ON t.chunk_id::text = e.target_id "
    "AND t.status = 'current' WHERE e.edge_type = 'REFERENCES' "
    "AND e.source_document = ANY(%s) AND e.evidence_start IS NOT NULL AND t.eid IS NOT NULL "
    "ORDER BY e.evidence_chunk, e.evidence_start"
)


def reference_links(
    conn: psycopg.Connection[Any], document_keys: Sequence[str]
) -> dict[str, list[ReferenceLink]]:
    """The cross-references the graph resolved in ``document_keys``' units, by the chunk that
    makes each: (start, end) of its phrase in the chunk's text, the target's document, eId and
    the day it came into force (for the ``<ref>`` links of the Akoma Ntoso export)."""
    out: dict[str, list[ReferenceLink]] = defaultdict(list)
    with conn.cursor() as cur:
        cur.execute(_REFERENCE_LINKS, (list(document_keys),))
        for chunk, start, end, target_document, eid, since in cur.fetchall():
            out[str(chunk)].append(
                ReferenceLink(int(start), int(end), str(target_document), str(eid), since)
            )
    return dict(out)

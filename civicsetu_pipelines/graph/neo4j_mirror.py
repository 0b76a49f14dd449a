"""The legal graph in Neo4j: a live sync with the official driver, and CSV files for
``neo4j-admin database import full``.

Pure domain code (no Dagster). The graph is read from Postgres as a :class:`GraphSnapshot`
(``documents``, current ``legal_chunks`` and ``graph_edges`` of one jurisdiction, or of all) and
written to Neo4j as

* ``(:Document {key})``, ``(:Unit {chunk_id})`` and ``(:Enactment {name})`` nodes (the external
  enactments that ``EXTERNAL_REFERENCE`` edges name), and
* ``HAS_PART``, ``REFERENCES``, ``DERIVED_FROM`` and ``EXTERNAL_REFERENCE`` relationships, each
  carrying a stable :func:`edge_key`, the ``jurisdiction`` that owns it and its evidence.

``graph_edges`` is replaced wholesale on every materialization (its ``edge_id`` changes each
time), so relationships are identified by :func:`edge_key`, computed from what the edge *is*.
:func:`sync_to_neo4j` is idempotent: it MERGEs everything in the snapshot, then deletes the
jurisdiction's relationships, units and documents that are no longer in it.

Cypher cannot take labels or relationship types as parameters. Every statement is therefore a
module-level constant built only from the fixed names below; data goes in as parameters only.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg

if TYPE_CHECKING:  # the driver is needed only to sync, not to read or export
    import neo4j

from civicsetu_pipelines.base import directory_lock
from civicsetu_pipelines.graph.edges import EDGE_FIELDS
from civicsetu_pipelines.store import is_chunk_id, unit_uris

# --------------------------------------------------------------------------------------------
# Snapshot of the Postgres graph
# --------------------------------------------------------------------------------------------

EDGE_TYPES = ("HAS_PART", "REFERENCES", "DERIVED_FROM", "EXTERNAL_REFERENCE", "AMENDED_BY",
              "REPEALED_BY")  # fmt: skip

DOCUMENT_COLUMNS = ("key", "jurisdiction", "title", "doc_type", "source_url")
UNIT_COLUMNS = (
    "chunk_id", "document_key", "jurisdiction", "doc_type", "unit", "number", "label",
    "section_label", "title", "page_start", "page_end", "eid",
)  # fmt: skip
EDGE_COLUMNS = ("jurisdiction", *EDGE_FIELDS)

_DOCUMENT_SELECT = "SELECT key, jurisdiction, title, doc_type, source_url FROM documents"
_UNIT_SELECT = (
    "SELECT chunk_id::text AS chunk_id, document_key, jurisdiction, doc_type, unit, number, label,"
    " section_label, title, page_start, page_end, eid FROM legal_chunks"
)
_ORDER_UNITS = " ORDER BY document_key, ordinal, chunk_id"

SNAPSHOT_DOCUMENTS_SQL = (
    _DOCUMENT_SELECT
    + " WHERE %(jurisdiction)s::text IS NULL OR jurisdiction = %(jurisdiction)s ORDER BY key"
)
SNAPSHOT_UNITS_SQL = (
    _UNIT_SELECT
    + " WHERE status = 'current'"
    + " AND (%(jurisdiction)s::text IS NULL OR jurisdiction = %(jurisdiction)s)"
    + _ORDER_UNITS
)
SNAPSHOT_EDGES_SQL = (
    f"SELECT {', '.join(EDGE_COLUMNS)} FROM graph_edges"
    " WHERE %(jurisdiction)s::text IS NULL OR jurisdiction = %(jurisdiction)s ORDER BY edge_id"
)
UNITS_BY_ID_SQL = (
    _UNIT_SELECT + " WHERE status = 'current' AND chunk_id = ANY(%(ids)s::uuid[])" + _ORDER_UNITS
)
# the source of an AMENDED_BY edge that is not served today (a text an amendment replaced or
# omitted: the history the edge records): its latest row
PAST_UNITS_BY_ID_SQL = (
    f"SELECT {', '.join(UNIT_COLUMNS)} FROM (SELECT DISTINCT ON (chunk_id) chunk_id::text AS "
    "chunk_id, document_key, jurisdiction, doc_type, unit, number, label, section_label, title, "
    "page_start, page_end, eid, valid_from, ordinal FROM legal_chunks "
    "WHERE chunk_id = ANY(%(ids)s::uuid[]) "
    "ORDER BY chunk_id, valid_from DESC) u" + _ORDER_UNITS
)
DOCUMENTS_BY_KEY_SQL = _DOCUMENT_SELECT + " WHERE key = ANY(%(keys)s::text[]) ORDER BY key"


@dataclass
class GraphSnapshot:
    """Documents, current units and edges as plain dicts (columns as in Postgres).

    ``documents`` have :data:`DOCUMENT_COLUMNS`, ``units`` :data:`UNIT_COLUMNS` (``chunk_id`` as
    text) and their Akoma Ntoso ``uri`` (expression and eId, as citations show it; None for a
    unit without a catalogued document), and ``edges`` :data:`EDGE_COLUMNS`.
    """

    documents: list[dict[str, Any]] = field(default_factory=list)
    units: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)


def _fetch(cur: psycopg.Cursor[Any], query: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    cur.execute(query, params)  # constant SQL; values only as parameters
    names = [d.name for d in cur.description or []]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def read_snapshot(conn: psycopg.Connection[Any], jurisdiction: str | None = None) -> GraphSnapshot:
    """The graph of ``jurisdiction`` (every jurisdiction when None) as it is in Postgres.

    Documents and current units of the jurisdiction, its edges, and also the current units (and
    their documents) that its edges reach in other jurisdictions (a state rule's
    ``DERIVED_FROM`` the central Act), so that no edge of the snapshot dangles, except one whose
    endpoint is not current any more (see :func:`plan_edges`).

    When the connection is idle, everything is read in one REPEATABLE READ, READ ONLY
    transaction: one consistent view even while a materialization replaces the edges.
    """
    params = {"jurisdiction": jurisdiction}
    # On an idle connection conn.transaction() issues a bare BEGIN, so SET TRANSACTION is then
    # the first statement, as Postgres requires. Inside a transaction the caller already began,
    # it is a savepoint instead: read there as it is.
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    with conn.transaction(), conn.cursor() as cur:
        if idle:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        documents = _fetch(cur, SNAPSHOT_DOCUMENTS_SQL, params)
        units = _fetch(cur, SNAPSHOT_UNITS_SQL, params)
        edges = _fetch(cur, SNAPSHOT_EDGES_SQL, params)
        unit_ids = {str(u["chunk_id"]) for u in units}
        wanted: set[str] = set()
        for edge in edges:
            for end in (edge["source_id"], edge["target_id"]):
                if end is not None and str(end) not in unit_ids and is_chunk_id(end):
                    wanted.add(str(end))
        if wanted:
            units += _fetch(cur, UNITS_BY_ID_SQL, {"ids": sorted(wanted)})
        unit_ids = {str(u["chunk_id"]) for u in units}
        past = {str(e["source_id"]) for e in edges if e["edge_type"] == "AMENDED_BY"
                and str(e["source_id"]) not in unit_ids
                and is_chunk_id(e["source_id"])}  # fmt: skip
        if past:
            units += _fetch(cur, PAST_UNITS_BY_ID_SQL, {"ids": sorted(past)})
        doc_keys = {str(d["key"]) for d in documents}
        missing_docs = {str(u["document_key"]) for u in units} - doc_keys
        if missing_docs:
            documents += _fetch(cur, DOCUMENTS_BY_KEY_SQL, {"keys": sorted(missing_docs)})
        # each unit's expression URI with its eId, as every citation shows it
        uris = unit_uris(conn, [str(u["chunk_id"]) for u in units])
    for unit in units:
        unit["uri"] = uris.get(str(unit["chunk_id"]))
    for edge in edges:
        if edge["confidence"] is not None:
            edge["confidence"] = float(edge["confidence"])
    return GraphSnapshot(documents=documents, units=units, edges=edges)


# --------------------------------------------------------------------------------------------
# Edge keys and the plan: which node each edge joins
# --------------------------------------------------------------------------------------------

DOCUMENT, UNIT, ENACTMENT = "Document", "Unit", "Enactment"
ID_PROPERTY = {DOCUMENT: "key", UNIT: "chunk_id", ENACTMENT: "name"}
START_SPACES = (DOCUMENT, UNIT)
END_SPACES = (DOCUMENT, UNIT, ENACTMENT)

EDGE_PROPERTIES = (
    "jurisdiction", "source_document", "source_label", "target_document", "target_label",
    "evidence_chunk", "evidence_phrase", "evidence_start", "evidence_end", "confidence",
    "basis", "note",
)  # fmt: skip
DOCUMENT_PROPERTIES = ("title", "jurisdiction", "doc_type", "source_url")
UNIT_PROPERTIES = (
    "document_key", "jurisdiction", "doc_type", "unit", "number", "label", "section_label",
    "title", "page_start", "page_end", "eid", "uri",
)  # fmt: skip


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def edge_key(edge: Mapping[str, Any]) -> str:
    """A stable key of an edge: the same edge gets the same key in every materialization.

    sha256 (first 32 hex digits) of edge type, source id, target id (the enactment's name for an
    external reference), evidence chunk and evidence offsets. Never the ``edge_id``, which the
    wholesale replacement of a jurisdiction's edges renumbers each time.
    """
    target = edge.get("target_id")
    parts = [
        str(edge["edge_type"]),
        str(edge["source_id"]),
        str(target) if target is not None else str(edge["target_label"]),
        _str_or_none(edge.get("evidence_chunk")),
        _int_or_none(edge.get("evidence_start")),
        _int_or_none(edge.get("evidence_end")),
    ]
    payload = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class PlannedEdge:
    """An edge with its key and the ID spaces (node labels) of its two ends."""

    key: str
    edge_type: str
    start_space: str
    start_id: str
    end_space: str
    end_id: str
    properties: dict[str, Any]

    def sort_key(self) -> tuple[str, str, str, str]:
        return (self.edge_type, self.start_id, self.end_id, self.key)


@dataclass
class EdgePlan:
    edges: list[PlannedEdge] = field(default_factory=list)
    dangling: list[dict[str, Any]] = field(default_factory=list)  # an end not in the snapshot
    duplicates: int = 0  # edges of the same key as an earlier one (kept once)

    @property
    def enactments(self) -> list[str]:
        return sorted({e.end_id for e in self.edges if e.end_space == ENACTMENT})


def _edge_properties(edge: Mapping[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = {name: edge.get(name) for name in EDGE_PROPERTIES}
    props["evidence_start"] = _int_or_none(props["evidence_start"])
    props["evidence_end"] = _int_or_none(props["evidence_end"])
    confidence = props["confidence"]
    props["confidence"] = 1.0 if confidence is None else float(confidence)
    return props


def plan_edges(snapshot: GraphSnapshot) -> EdgePlan:
    """Resolve each edge's ends to nodes of the snapshot.

    A source is a ``Unit`` (by chunk id) or a ``Document`` (by key: ``HAS_PART`` from a document
    to its top-level units); a target a ``Unit``, a ``Document`` or, for an
    ``EXTERNAL_REFERENCE`` (no target id), the ``Enactment`` its ``target_label`` names. Edges
    with an end missing from the snapshot are left out (``dangling``); so is an edge whose key
    repeats an earlier one.
    """
    units = {str(u["chunk_id"]) for u in snapshot.units}
    documents = {str(d["key"]) for d in snapshot.documents}

    def space(node_id: str) -> str | None:
        if node_id in units:
            return UNIT
        if node_id in documents:
            return DOCUMENT
        return None

    plan = EdgePlan()
    seen: set[str] = set()
    for edge in snapshot.edges:
        edge_type = str(edge["edge_type"])
        if edge_type not in EDGE_TYPES:
            raise ValueError(f"unknown edge type {edge_type!r}")
        start_id = str(edge["source_id"])
        start_space = space(start_id)
        target = edge.get("target_id")
        end_space: str | None
        if target is None:
            end_id = str(edge["target_label"])
            end_space = ENACTMENT if edge_type == "EXTERNAL_REFERENCE" else None
        else:
            end_id = str(target)
            end_space = space(end_id)
        if start_space is None or end_space is None:
            plan.dangling.append(dict(edge))
            continue
        key = edge_key(edge)
        if key in seen:
            plan.duplicates += 1
            continue
        seen.add(key)
        plan.edges.append(
            PlannedEdge(
                key, edge_type, start_space, start_id, end_space, end_id, _edge_properties(edge)
            )
        )
    return plan


def _unique(rows: Sequence[Mapping[str, Any]], id_column: str) -> list[Mapping[str, Any]]:
    """Rows with a distinct ``id_column``, the first of each, sorted by it."""
    by_id: dict[str, Mapping[str, Any]] = {}
    for row in rows:
        by_id.setdefault(str(row[id_column]), row)
    return [by_id[k] for k in sorted(by_id)]


# --------------------------------------------------------------------------------------------
# Live sync with the Neo4j driver
# --------------------------------------------------------------------------------------------

SCHEMA_STATEMENTS: tuple[str, ...] = (
    "CREATE CONSTRAINT civicsetu_document_key IF NOT EXISTS "
    "FOR (d:Document) REQUIRE d.key IS UNIQUE",
    "CREATE CONSTRAINT civicsetu_unit_chunk_id IF NOT EXISTS "
    "FOR (u:Unit) REQUIRE u.chunk_id IS UNIQUE",
    "CREATE CONSTRAINT civicsetu_enactment_name IF NOT EXISTS "
    "FOR (x:Enactment) REQUIRE x.name IS UNIQUE",
    "CREATE INDEX civicsetu_document_jurisdiction IF NOT EXISTS "
    "FOR (d:Document) ON (d.jurisdiction)",
    "CREATE INDEX civicsetu_unit_jurisdiction IF NOT EXISTS FOR (u:Unit) ON (u.jurisdiction)",
    *(
        f"CREATE INDEX civicsetu_{t.lower()}_{prop} IF NOT EXISTS FOR ()-[r:{t}]-() ON (r.{prop})"
        for t in EDGE_TYPES
        for prop in ("key", "jurisdiction")
    ),
)

MERGE_DOCUMENTS = (
    "UNWIND $rows AS row MERGE (d:Document {key: row.key}) SET d += row.props "
    "RETURN count(d) AS written"
)
MERGE_UNITS = (
    "UNWIND $rows AS row MERGE (u:Unit {chunk_id: row.chunk_id}) SET u += row.props "
    "RETURN count(u) AS written"
)
MERGE_ENACTMENTS = (
    "UNWIND $rows AS row MERGE (x:Enactment {name: row.name}) RETURN count(x) AS written"
)


def _merge_edge_statement(edge_type: str, start: str, end: str) -> str:
    return (
        "UNWIND $rows AS row "
        f"MATCH (a:{start} {{{ID_PROPERTY[start]}: row.start}}) "
        f"MATCH (b:{end} {{{ID_PROPERTY[end]}: row.end}}) "
        f"MERGE (a)-[r:{edge_type} {{key: row.key}}]->(b) SET r += row.props "
        "RETURN count(r) AS written"
    )


# One statement per (relationship type, start label, end label): the whitelist. Only these
# fixed names are ever formatted into Cypher.
MERGE_EDGES: dict[tuple[str, str, str], str] = {
    (t, s, e): _merge_edge_statement(t, s, e)
    for t in EDGE_TYPES
    for s in START_SPACES
    for e in END_SPACES
}

DELETE_STALE_EDGES: dict[str, str] = {
    t: (
        f"MATCH ()-[r:{t}]->() WHERE r.jurisdiction = $jurisdiction AND NOT r.key IN $keys "
        "WITH r LIMIT $batch DELETE r RETURN count(*) AS removed"
    )
    for t in EDGE_TYPES
}
DELETE_STALE_UNITS = (
    "MATCH (u:Unit) WHERE u.jurisdiction = $jurisdiction AND NOT u.chunk_id IN $keys "
    "WITH u LIMIT $batch DETACH DELETE u RETURN count(*) AS removed"
)
DELETE_STALE_DOCUMENTS = (
    "MATCH (d:Document) WHERE d.jurisdiction = $jurisdiction AND NOT d.key IN $keys "
    "WITH d LIMIT $batch DETACH DELETE d RETURN count(*) AS removed"
)
DELETE_ORPHAN_ENACTMENTS = (
    "MATCH (x:Enactment) WHERE NOT EXISTS { (x)--() } "
    "WITH x LIMIT $batch DELETE x RETURN count(*) AS removed"
)


def _batches(rows: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def _write(tx: neo4j.ManagedTransaction, statement: str, params: dict[str, Any]) -> int:
    """Transaction function: run one statement, return its single count."""
    record = tx.run(statement, params).single()
    return int(record[0]) if record is not None else 0


def _props(row: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    return {name: row.get(name) for name in names}


def sync_to_neo4j(
    driver: neo4j.Driver,
    snapshot: GraphSnapshot,
    jurisdiction: str,
    *,
    database: str | None = None,
    batch_size: int = 1000,
) -> dict[str, int]:
    """Make Neo4j hold ``snapshot`` for ``jurisdiction``; idempotent.

    ``driver`` is a ``neo4j.Driver``. Creates the uniqueness constraints and indexes, MERGEs the
    documents, units, enactments and relationships in managed write transactions of
    ``batch_size`` rows, then deletes the jurisdiction's relationships whose key is not in the
    snapshot, its units and documents not in it (with their relationships) and enactments no
    relationship refers to any more. Nodes of other jurisdictions that the snapshot holds (the
    targets of cross-jurisdiction edges) are MERGEd but never deleted here.

    Returns counts: ``documents``, ``units``, ``externals`` (enactments) and ``edges`` written,
    ``edges_removed``, ``units_removed``, ``documents_removed``, ``externals_removed``, and
    ``edges_skipped`` (dangling or duplicate edges of the snapshot, not written).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    plan = plan_edges(snapshot)
    documents = _unique(snapshot.documents, "key")
    units = _unique(snapshot.units, "chunk_id")
    document_rows = [
        {"key": str(d["key"]), "props": _props(d, DOCUMENT_PROPERTIES)} for d in documents
    ]
    unit_rows = [
        {"chunk_id": str(u["chunk_id"]), "props": _props(u, UNIT_PROPERTIES)} for u in units
    ]
    enactment_rows = [{"name": name} for name in plan.enactments]
    edge_rows: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for edge in sorted(plan.edges, key=PlannedEdge.sort_key):
        props = dict(edge.properties)
        if props.get("jurisdiction") is None:
            props["jurisdiction"] = jurisdiction
        props["key"] = edge.key
        edge_rows.setdefault((edge.edge_type, edge.start_space, edge.end_space), []).append(
            {"key": edge.key, "start": edge.start_id, "end": edge.end_id, "props": props}
        )
    keep_edges = sorted(edge.key for edge in plan.edges)
    keep_units = [row["chunk_id"] for row in unit_rows]
    keep_documents = [row["key"] for row in document_rows]

    counts = {
        "documents": 0, "units": 0, "externals": 0, "edges": 0, "edges_removed": 0,
        "units_removed": 0, "documents_removed": 0, "externals_removed": 0,
        "edges_skipped": len(plan.dangling) + plan.duplicates,
    }  # fmt: skip
    with driver.session(database=database) as session:
        for statement in SCHEMA_STATEMENTS:
            session.run(statement).consume()

        def merge(statement: str, rows: Sequence[dict[str, Any]]) -> int:
            return sum(
                session.execute_write(_write, statement, {"rows": list(batch)})
                for batch in _batches(rows, batch_size)
            )

        def remove(statement: str, params: dict[str, Any]) -> int:
            total = 0
            while True:
                removed = session.execute_write(_write, statement, {**params, "batch": batch_size})
                total += removed
                if removed < batch_size:
                    return total

        counts["documents"] = merge(MERGE_DOCUMENTS, document_rows)
        counts["units"] = merge(MERGE_UNITS, unit_rows)
        counts["externals"] = merge(MERGE_ENACTMENTS, enactment_rows)
        for combo in sorted(edge_rows):
            counts["edges"] += merge(MERGE_EDGES[combo], edge_rows[combo])

        for edge_type in EDGE_TYPES:
            counts["edges_removed"] += remove(
                DELETE_STALE_EDGES[edge_type], {"jurisdiction": jurisdiction, "keys": keep_edges}
            )
        counts["units_removed"] = remove(
            DELETE_STALE_UNITS, {"jurisdiction": jurisdiction, "keys": keep_units}
        )
        counts["documents_removed"] = remove(
            DELETE_STALE_DOCUMENTS, {"jurisdiction": jurisdiction, "keys": keep_documents}
        )
        counts["externals_removed"] = remove(DELETE_ORPHAN_ENACTMENTS, {})
    return counts


# --------------------------------------------------------------------------------------------
# CSV export for neo4j-admin database import full
# --------------------------------------------------------------------------------------------

DOCUMENTS_HEADER = ("key:ID(Document)", ":LABEL", *DOCUMENT_PROPERTIES)
_INT_PROPERTIES = {"page_start", "page_end"}
UNITS_HEADER = (
    "chunk_id:ID(Unit)",
    ":LABEL",
    *(f"{p}:int" if p in _INT_PROPERTIES else p for p in UNIT_PROPERTIES),
)
ENACTMENTS_HEADER = ("name:ID(Enactment)", ":LABEL")
_EDGE_CSV_PROPERTIES = (
    "key", "jurisdiction", "source_document", "source_label", "target_document", "target_label",
    "evidence_chunk", "evidence_phrase", "evidence_start:int", "evidence_end:int",
    "confidence:double", "basis", "note",
)  # fmt: skip
# (neo4j-admin's "float" is 32-bit: "double" keeps the confidence exactly as the live sync does.)

NODE_FILES = {DOCUMENT: "documents.csv", UNIT: "units.csv", ENACTMENT: "enactments.csv"}
# Relationship files by (start ID space, end ID space); these three are always written.
RELATIONSHIP_FILES = {
    (DOCUMENT, UNIT): "has_part_document.csv",
    (UNIT, UNIT): "edges_unit_unit.csv",
    (UNIT, ENACTMENT): "edges_unit_enactment.csv",
}
IMPORT_SCRIPT = "import.sh"
_SCRIPT_MARK = "# generated by civicsetu_pipelines.graph.neo4j_mirror.export_csv"


def relationship_header(start: str, end: str) -> tuple[str, ...]:
    return (f":START_ID({start})", f":END_ID({end})", ":TYPE", *_EDGE_CSV_PROPERTIES)


def _relationship_file(start: str, end: str) -> str:
    return RELATIONSHIP_FILES.get((start, end), f"edges_{start.lower()}_{end.lower()}.csv")


def _cell(value: Any) -> str:
    """A CSV field: empty for NULL (imported as no property with --ignore-empty-strings)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _write_rows(path: Path, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
        writer.writerow(header)
        writer.writerows([_cell(v) for v in row] for row in rows)


def import_command(relationship_files: Sequence[str]) -> list[str]:
    """The ``neo4j-admin database import full`` arguments for the files of an export.

    The database name goes right after ``full`` (the variadic ``--nodes``/``--relationships``
    would take a trailing one for a file, Neo4j 5.19+). ``--multiline-fields`` for evidence
    phrases across lines; ``--ignore-empty-strings`` so an empty field is no property, as a NULL
    is in the live sync.
    """
    return [
        "neo4j-admin", "database", "import", "full", '"$DATABASE"',
        "--id-type=string", "--multiline-fields=true", "--ignore-empty-strings=true",
        *(f"--nodes={label}={NODE_FILES[label]}" for label in (DOCUMENT, UNIT, ENACTMENT)),
        *(f"--relationships={name}" for name in relationship_files),
        '"$@"',
    ]  # fmt: skip


def _import_script(relationship_files: Sequence[str]) -> str:
    args = import_command(relationship_files)
    command = " \\\n    ".join([" ".join(args[:5]), *args[5:]])
    return (
        "#!/bin/sh\n"
        f"{_SCRIPT_MARK}\n"
        "# Bulk-loads this directory into a new (or empty, stopped) Neo4j database:\n"
        "#   ./import.sh [DATABASE] [more neo4j-admin options, e.g. --overwrite-destination=true]\n"
        "# DATABASE defaults to neo4j; neo4j-admin must be on PATH ($NEO4J_HOME/bin). On Neo4j\n"
        "# Enterprise, run CREATE DATABASE for a new name afterwards.\n"
        "set -eu\n"
        'cd "$(dirname "$0")"\n'
        'DATABASE="${1:-neo4j}"\n'
        "[ $# -gt 0 ] && shift\n"
        f"{command}\n"
    )


def _write_export(snapshot: GraphSnapshot, directory: Path) -> list[str]:
    """Write every file of an export into ``directory``; return the file names."""
    plan = plan_edges(snapshot)
    documents = _unique(snapshot.documents, "key")
    units = _unique(snapshot.units, "chunk_id")
    _write_rows(
        directory / NODE_FILES[DOCUMENT],
        DOCUMENTS_HEADER,
        [(d["key"], DOCUMENT, *(d.get(p) for p in DOCUMENT_PROPERTIES)) for d in documents],
    )
    _write_rows(
        directory / NODE_FILES[UNIT],
        UNITS_HEADER,
        [(u["chunk_id"], UNIT, *(u.get(p) for p in UNIT_PROPERTIES)) for u in units],
    )
    _write_rows(
        directory / NODE_FILES[ENACTMENT],
        ENACTMENTS_HEADER,
        [(name, ENACTMENT) for name in plan.enactments],
    )
    groups: dict[tuple[str, str], list[PlannedEdge]] = {combo: [] for combo in RELATIONSHIP_FILES}
    for edge in plan.edges:
        groups.setdefault((edge.start_space, edge.end_space), []).append(edge)
    relationship_files: list[str] = []
    for (start, end), edges in sorted(groups.items(), key=lambda g: _relationship_file(*g[0])):
        name = _relationship_file(start, end)
        rows = [
            (
                e.start_id,
                e.end_id,
                e.edge_type,
                e.key,
                *(e.properties.get(p.split(":")[0]) for p in _EDGE_CSV_PROPERTIES[1:]),
            )
            for e in sorted(edges, key=PlannedEdge.sort_key)
        ]
        _write_rows(directory / name, relationship_header(start, end), rows)
        relationship_files.append(name)
    script = directory / IMPORT_SCRIPT
    script.write_text(_import_script(relationship_files), encoding="utf-8")
    script.chmod(0o755)
    return [*NODE_FILES.values(), *relationship_files, IMPORT_SCRIPT]


def _refuse_unless_replaceable(out_dir: Path) -> None:
    if out_dir.exists() and not _replaceable(out_dir):
        raise ValueError(f"{out_dir} exists and is not an earlier graph export: not replacing it")


def _replaceable(directory: Path) -> bool:
    """An existing ``directory`` may be replaced: empty, or an earlier export."""
    if not directory.is_dir():
        return False
    if not any(directory.iterdir()):
        return True
    script = directory / IMPORT_SCRIPT
    try:
        return _SCRIPT_MARK in script.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


def export_csv(snapshot: GraphSnapshot, out_dir: Path) -> dict[str, Path]:
    """Write ``snapshot`` as CSV files for ``neo4j-admin database import full`` into ``out_dir``.

    Files: ``documents.csv``, ``units.csv``, ``enactments.csv`` (nodes, ID spaces ``Document``,
    ``Unit`` and ``Enactment``), one relationship file per (start, end) ID space pair
    (``has_part_document.csv``, ``edges_unit_unit.csv``, ``edges_unit_enactment.csv``, always;
    any other pair only when it occurs) and ``import.sh`` with the import command. Rows are
    sorted, so the same snapshot gives byte-identical files. Dangling edges are left out.

    The files are written to a temporary directory beside ``out_dir`` which then takes its
    place: a failed export leaves ``out_dir`` as it was. An existing ``out_dir`` is replaced
    only when it is empty or an earlier export (ValueError otherwise).

    Returns the path of each file by its name without extension (``documents``, ...,
    ``import``).
    """
    out_dir = Path(out_dir)
    # Checked under the lock the move takes: another export of the jurisdiction moves the
    # directory aside and back under it (checked outside it, the directory could be seen to
    # exist and then not to be one). Once before writing, to fail early; again at the move.
    with directory_lock(out_dir.parent):
        _refuse_unless_replaceable(out_dir)
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", suffix=".tmp", dir=out_dir.parent))
    try:
        work.chmod(0o755)
        names = _write_export(snapshot, work)
        with directory_lock(out_dir.parent):  # two exports of one jurisdiction at once
            _refuse_unless_replaceable(out_dir)
            _move_into_place(work, out_dir)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return {name.rsplit(".", 1)[0]: out_dir / name for name in names}


def _move_into_place(work: Path, out_dir: Path) -> None:
    """Rename ``work`` to ``out_dir``; an existing ``out_dir`` is moved aside first and
    restored if the rename fails."""
    if not out_dir.exists():
        os.rename(work, out_dir)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", suffix=".old", dir=out_dir.parent))
    old.rmdir()
    os.rename(out_dir, old)
    try:
        os.rename(work, out_dir)
    except BaseException:
        os.rename(old, out_dir)
        raise
    shutil.rmtree(old, ignore_errors=True)

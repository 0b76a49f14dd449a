"""The legal graph exported to Neo4j: snapshot from Postgres, edge keys, CSV bulk-import files
and the live sync.

* ``read_snapshot`` runs against the real embedded Postgres (a fresh database per test).
* The CSV export is written and read back with the csv module, and ``import.sh`` is executed
  with a stand-in ``neo4j-admin`` that records its arguments.
* ``sync_to_neo4j`` runs against an in-memory stand-in of the driver that carries out exactly
  the module's whitelisted statements (any other statement fails the test), and, when
  ``NEO4J_URI`` is set, against a real Neo4j server.
"""

from __future__ import annotations

import copy
import csv
import dataclasses
import datetime as dt
import os
import re
import stat
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from civicsetu_pipelines.graph import neo4j_mirror
from civicsetu_pipelines.graph.edges import Edge, replace_edges
from civicsetu_pipelines.graph.neo4j_mirror import (
    DELETE_ORPHAN_ENACTMENTS,
    DELETE_STALE_DOCUMENTS,
    DELETE_STALE_EDGES,
    DELETE_STALE_UNITS,
    MERGE_DOCUMENTS,
    MERGE_EDGES,
    MERGE_ENACTMENTS,
    MERGE_UNITS,
    SCHEMA_STATEMENTS,
    GraphSnapshot,
    edge_key,
    export_csv,
    plan_edges,
    read_snapshot,
    sync_to_neo4j,
)
from civicsetu_pipelines.store.database import connect

TRICKY_PHRASE = 'sub-section (2) of section 13, "as prescribed",\nread with rule 9; C:\\path'
EXTERNAL = "Companies Act, 2013"

# --------------------------------------------------------------------------------------------
# A hand-made snapshot: a state's rules citing the central Act
# --------------------------------------------------------------------------------------------


def _cid(jurisdiction: str, name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"civicsetu-test/{jurisdiction}/{name}"))


def _edge(jurisdiction: str, edge_type: str, source: tuple[str, str], target: tuple[str, str]
          | None, *, source_document: str, target_document: str | None, evidence: tuple[int,
          int, str] | None = None, external: str | None = None) -> dict[str, Any]:  # fmt: skip
    start, end, phrase = evidence if evidence else (None, None, None)
    return {
        "jurisdiction": jurisdiction,
        "edge_type": edge_type,
        "source_document": source_document,
        "source_id": source[0],
        "source_label": source[1],
        "target_document": target_document,
        "target_id": target[0] if target else None,
        "target_label": target[1] if target else external,
        "evidence_chunk": source[0] if evidence else None,
        "evidence_start": start,
        "evidence_end": end,
        "evidence_phrase": phrase,
        "confidence": 1.0,
    }


def hand_snapshot(state: str, central: str) -> GraphSnapshot:
    """Rules of ``state`` (Rule 9, Form A) citing Section 13 of ``central``'s Act."""
    rules, act = f"{state.lower()}_rules", f"{central.lower()}_act"
    r9, fa, s13 = _cid(state, "r9"), _cid(state, "fa"), _cid(central, "s13")
    documents: list[dict[str, Any]] = [
        {"key": rules, "jurisdiction": state, "title": "Real Estate Rules, 2017",
         "doc_type": "rules", "source_url": "https://example.invalid/rules.pdf"},
        {"key": act, "jurisdiction": central, "title": "Real Estate Act, 2016",
         "doc_type": "act", "source_url": None},
    ]  # fmt: skip
    unit = {"doc_type": "rules", "number": None, "page_end": 2}
    units = [
        {**unit, "chunk_id": r9, "document_key": rules, "jurisdiction": state, "unit": "rule",
         "number": "9", "label": "Rule 9", "section_label": "Rule 9",
         "title": "Agreement for sale", "page_start": 1},
        {**unit, "chunk_id": fa, "document_key": rules, "jurisdiction": state, "unit": "form",
         "label": "Form A", "section_label": "Form A", "title": None, "page_start": 2},
        {**unit, "chunk_id": s13, "document_key": act, "jurisdiction": central,
         "doc_type": "act", "unit": "section", "number": "13", "label": "Section 13",
         "section_label": "Section 13", "title": "No deposit without agreement",
         "page_start": 5, "page_end": 5},
    ]  # fmt: skip
    edges = [
        _edge(state, "HAS_PART", (rules, rules), (r9, "Rule 9"), source_document=rules,
              target_document=rules),
        _edge(state, "HAS_PART", (rules, rules), (fa, "Form A"), source_document=rules,
              target_document=rules),
        _edge(state, "REFERENCES", (fa, "Form A"), (r9, "Rule 9"), source_document=rules,
              target_document=rules, evidence=(8, 18, "See rule 9")),
        _edge(state, "REFERENCES", (r9, "Rule 9"), (s13, "Section 13"), source_document=rules,
              target_document=act, evidence=(30, 42, TRICKY_PHRASE)),
        _edge(state, "DERIVED_FROM", (r9, "Rule 9"), (s13, "Section 13"),
              source_document=rules, target_document=act, evidence=(30, 42, TRICKY_PHRASE)),
        _edge(state, "EXTERNAL_REFERENCE", (r9, "Rule 9"), None, source_document=rules,
              target_document=None, evidence=(60, 83, f'the "{EXTERNAL}"'), external=EXTERNAL),
    ]  # fmt: skip
    return GraphSnapshot(documents=documents, units=units, edges=edges)


# --------------------------------------------------------------------------------------------
# edge_key and plan_edges
# --------------------------------------------------------------------------------------------


def test_edge_key_is_stable_and_ignores_edge_id() -> None:
    edge = Edge("REFERENCES", "rules", "c-1", "Rule 9", "act", "c-2", "Section 13", "c-1", 3, 9,
                "section 13")  # fmt: skip
    as_dict = dataclasses.asdict(edge)
    key = edge_key(as_dict)
    # Fixed: a change of the recipe would orphan every relationship already in Neo4j.
    assert key == "32384c69d9762cfd78491cf08118dd6d"
    assert len(key) == 32 and re.fullmatch(r"[0-9a-f]{32}", key)
    assert edge_key({**as_dict, "edge_id": 1}) == edge_key({**as_dict, "edge_id": 999}) == key
    # Offsets read back as text still give the same key; labels and phrases are no part of it.
    assert edge_key({**as_dict, "evidence_start": "3", "evidence_end": "9"}) == key
    assert edge_key({**as_dict, "source_label": "R9", "evidence_phrase": "x"}) == key


def test_edge_key_distinguishes_edges() -> None:
    base = dataclasses.asdict(
        Edge("REFERENCES", "rules", "c-1", "Rule 9", "act", "c-2", "Section 13", "c-1", 3, 9)
    )
    variants = [
        base,
        {**base, "edge_type": "DERIVED_FROM"},
        {**base, "source_id": "c-3"},
        {**base, "target_id": "c-4"},
        {**base, "evidence_chunk": "c-5"},
        {**base, "evidence_start": 4},
        {**base, "evidence_end": 10},
        {**base, "evidence_start": None, "evidence_end": None, "evidence_chunk": None},
        {**base, "edge_type": "EXTERNAL_REFERENCE", "target_id": None, "target_label": "A"},
        {**base, "edge_type": "EXTERNAL_REFERENCE", "target_id": None, "target_label": "B"},
    ]
    keys = [edge_key(v) for v in variants]
    assert len(set(keys)) == len(keys)


def test_plan_edges_resolves_ends_and_leaves_out_dangling_and_duplicates() -> None:
    snap = hand_snapshot("STATE", "CENTRAL")
    gone = _edge("STATE", "REFERENCES", (_cid("STATE", "r9"), "Rule 9"),
                 (_cid("STATE", "old"), "Rule 10"), source_document="state_rules",
                 target_document="state_rules", evidence=(1, 2, "rule 10"))  # fmt: skip
    snap.edges += [gone, dict(snap.edges[2], edge_id=77)]
    plan = plan_edges(snap)
    assert len(plan.edges) == 6
    assert plan.dangling == [gone] and plan.duplicates == 1
    spaces = {(e.edge_type, e.start_space, e.end_space) for e in plan.edges}
    assert spaces == {
        ("HAS_PART", "Document", "Unit"),
        ("REFERENCES", "Unit", "Unit"),
        ("DERIVED_FROM", "Unit", "Unit"),
        ("EXTERNAL_REFERENCE", "Unit", "Enactment"),
    }
    assert plan.enactments == [EXTERNAL]
    with pytest.raises(ValueError, match="unknown edge type"):
        plan_edges(GraphSnapshot(edges=[{**snap.edges[0], "edge_type": "CITES"}]))


# --------------------------------------------------------------------------------------------
# read_snapshot on the real Postgres
# --------------------------------------------------------------------------------------------


def _insert_document(conn: Any, key: str, jurisdiction: str, doc_type: str) -> int:
    conn.execute(
        "INSERT INTO documents (key, jurisdiction, title, doc_type, source_url, ingest_status) "
        "VALUES (%s, %s, %s, %s, %s, 'ok')",
        (key, jurisdiction, key.replace("_", " ").title(), doc_type, f"https://x.invalid/{key}"),
    )
    row = conn.execute(
        "INSERT INTO document_versions (document_key, jurisdiction, sha256, valid_from, status) "
        "VALUES (%s, %s, %s, %s, 'current') RETURNING version_id",
        (key, jurisdiction, "0" * 64, dt.date(2017, 5, 1)),
    ).fetchone()
    return int(row[0])


def _insert_chunk(
    conn: Any,
    version: int,
    doc: str,
    jurisdiction: str,
    doc_type: str,
    label: str,
    unit: str,
    ordinal: int,
    *,
    status: str = "current",
) -> str:
    cid = str(uuid.uuid4())
    conn.execute(
        "INSERT INTO legal_chunks (chunk_id, version_id, document_key, jurisdiction, doc_type,"
        " unit, number, legal_path, label, section_label, title, text, page_start, page_end,"
        " char_start, char_end, ordinal, level, row_sha256, content_sha256, status, valid_from)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
        " %s, %s, %s)",
        (cid, version, doc, jurisdiction, doc_type, unit, label.split()[-1], label, label, label,
         f"Title of {label}", f"{label} text", ordinal + 1, ordinal + 2, 0, 10, ordinal, 1,
         "a" * 64, "b" * 64, status, dt.date(2017, 5, 1)),
    )  # fmt: skip
    return cid


@pytest.fixture
def graph_db(store_db: str) -> Iterator[tuple[str, dict[str, str]]]:
    """A store holding the central Act and Maharashtra's rules, with their graph edges."""
    act, rules = "central_rera_act_2016", "maharashtra_rera_rules_2017"
    ids: dict[str, str] = {}
    with connect(store_db) as conn:
        v_act = _insert_document(conn, act, "CENTRAL", "act")
        v_rules = _insert_document(conn, rules, "MAHARASHTRA", "rules")
        sections = [("s13", "Section 13"), ("s13_2", "Section 13(2)"), ("s18", "Section 18"),
                    ("s99", "Section 99")]  # fmt: skip
        for ordinal, (name, label) in enumerate(sections):
            ids[name] = _insert_chunk(conn, v_act, act, "CENTRAL", "act", label, "section", ordinal)
        ids["r9"] = _insert_chunk(conn, v_rules, rules, "MAHARASHTRA", "rules", "Rule 9", "rule", 0)
        ids["fa"] = _insert_chunk(conn, v_rules, rules, "MAHARASHTRA", "rules", "Form A", "form", 1)
        ids["old"] = _insert_chunk(conn, v_rules, rules, "MAHARASHTRA", "rules", "Rule 10",
                                   "rule", 2, status="superseded")  # fmt: skip
        replace_edges(conn, "CENTRAL", [
            Edge("HAS_PART", act, act, act, act, ids["s13"], "Section 13"),
            Edge("HAS_PART", act, ids["s13"], "Section 13", act, ids["s13_2"], "Section 13(2)"),
            Edge("HAS_PART", act, act, act, act, ids["s18"], "Section 18"),
            Edge("HAS_PART", act, act, act, act, ids["s99"], "Section 99"),
            Edge("REFERENCES", act, ids["s18"], "Section 18", act, ids["s13"], "Section 13",
                 ids["s18"], 40, 50, "section 13"),
        ])  # fmt: skip
        replace_edges(conn, "MAHARASHTRA", [
            Edge("HAS_PART", rules, rules, rules, rules, ids["r9"], "Rule 9"),
            Edge("HAS_PART", rules, rules, rules, rules, ids["fa"], "Form A"),
            Edge("REFERENCES", rules, ids["r9"], "Rule 9", act, ids["s13_2"], "Section 13(2)",
                 ids["r9"], 30, 42, TRICKY_PHRASE),
            Edge("DERIVED_FROM", rules, ids["r9"], "Rule 9", act, ids["s13"], "Section 13",
                 ids["r9"], 30, 42, TRICKY_PHRASE),
            Edge("EXTERNAL_REFERENCE", rules, ids["r9"], "Rule 9", None, None, EXTERNAL,
                 ids["r9"], 60, 79, EXTERNAL),
            Edge("REFERENCES", rules, ids["fa"], "Form A", rules, ids["r9"], "Rule 9",
                 ids["fa"], 5, 15, "See rule 9"),
            Edge("REFERENCES", rules, ids["r9"], "Rule 9", rules, ids["old"], "Rule 10",
                 ids["r9"], 90, 97, "rule 10"),
        ])  # fmt: skip
    yield store_db, ids


def test_read_snapshot_of_a_state_includes_cross_jurisdiction_targets(
    graph_db: tuple[str, dict[str, str]],
) -> None:
    url, ids = graph_db
    with connect(url) as conn:
        snap = read_snapshot(conn, "MAHARASHTRA")
    units = {u["chunk_id"]: u for u in snap.units}
    # Its own current units, plus exactly the Act units its edges reach; nothing superseded.
    assert set(units) == {ids["r9"], ids["fa"], ids["s13"], ids["s13_2"]}
    assert units[ids["s13"]]["jurisdiction"] == "CENTRAL"
    rule = dict(units[ids["r9"]])
    # every unit carries its Akoma Ntoso address, the expression with its eId (issue 39)
    assert rule.pop("uri").startswith(
        "/akn/in-mh/act/rules/2017/maharashtra-rera-rules-2017/eng@2017-05-01/!main~rule_"
    )
    assert {k: v for k, v in rule.items() if k not in ("legal_path", "eid", "valid_from")} == {
        "chunk_id": ids["r9"], "document_key": "maharashtra_rera_rules_2017",
        "jurisdiction": "MAHARASHTRA", "doc_type": "rules", "unit": "rule", "number": "9",
        "label": "Rule 9", "section_label": "Rule 9", "title": "Title of Rule 9",
        "page_start": 1, "page_end": 2,
    }  # fmt: skip
    assert [d["key"] for d in snap.documents] == [
        "maharashtra_rera_rules_2017",
        "central_rera_act_2016",  # the document of the Act units reached
    ]
    assert len(snap.edges) == 7 and {e["jurisdiction"] for e in snap.edges} == {"MAHARASHTRA"}
    phrase = next(e for e in snap.edges if e["edge_type"] == "DERIVED_FROM")["evidence_phrase"]
    assert phrase == TRICKY_PHRASE
    plan = plan_edges(snap)
    assert len(plan.edges) == 6  # every edge resolves...
    assert [e["target_id"] for e in plan.dangling] == [
        ids["old"]
    ]  # ...but one to a superseded unit
    derived = next(e for e in plan.edges if e.edge_type == "DERIVED_FROM")
    assert (derived.start_space, derived.end_id) == ("Unit", ids["s13"])
    has_part = next(e for e in plan.edges if e.edge_type == "HAS_PART")
    assert (has_part.start_space, has_part.start_id) == ("Document", "maharashtra_rera_rules_2017")


def test_read_snapshot_of_everything_and_parameterized(
    graph_db: tuple[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, ids = graph_db
    isolation: list[tuple[str, str]] = []
    real_fetch = neo4j_mirror._fetch

    def fetch(cur: Any, query: str, params: Any) -> list[dict[str, Any]]:
        row = cur.execute("SELECT current_setting('transaction_isolation'),"
                          " current_setting('transaction_read_only')").fetchone()  # fmt: skip
        isolation.append((row[0], row[1]))
        return real_fetch(cur, query, params)

    monkeypatch.setattr(neo4j_mirror, "_fetch", fetch)
    with connect(url) as conn:
        everything = read_snapshot(conn)
        assert set(isolation) == {("repeatable read", "on")}  # one consistent read-only view
        conn.execute("SELECT 1")  # now inside a transaction the caller began: still readable
        central = read_snapshot(conn, "CENTRAL")
        nothing = read_snapshot(conn, "X' OR '1'='1")
    assert {u["chunk_id"] for u in everything.units} == set(ids.values()) - {ids["old"]}
    assert len(everything.documents) == 2 and len(everything.edges) == 12
    assert len(central.edges) == 5 and {u["jurisdiction"] for u in central.units} == {"CENTRAL"}
    assert nothing == GraphSnapshot()
    assert not plan_edges(central).dangling


# --------------------------------------------------------------------------------------------
# CSV export for neo4j-admin database import full
# --------------------------------------------------------------------------------------------

ID_COLUMN = re.compile(r"^(?P<prop>[^:]*):ID\((?P<space>\w+)\)$")
END_COLUMN = re.compile(r"^:(?P<end>START|END)_ID\((?P<space>\w+)\)$")


def _read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0], [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]


def _check_export(files: dict[str, Path]) -> dict[str, dict[str, dict[str, str]]]:
    """Headers in the neo4j-admin format and referential integrity; nodes by ID space."""
    nodes: dict[str, dict[str, dict[str, str]]] = {}
    for name in ("documents", "units", "enactments"):
        header, rows = _read_csv(files[name])
        match = ID_COLUMN.match(header[0])
        assert match, header
        assert header[1] == ":LABEL"
        space = match["space"]
        assert all(row[":LABEL"] == space for row in rows)
        ids = [row[header[0]] for row in rows]
        assert len(ids) == len(set(ids)), f"duplicate ids in {name}"
        nodes[space] = {row[header[0]]: row for row in rows}
    relationship_files = [k for k in files if k not in {"documents", "units", "enactments",
                                                          "import"}]  # fmt: skip
    assert relationship_files
    for name in relationship_files:
        header, rows = _read_csv(files[name])
        start, end = END_COLUMN.match(header[0]), END_COLUMN.match(header[1])
        assert start and start["end"] == "START" and end and end["end"] == "END", header
        assert header[2] == ":TYPE"
        assert header[3:] == [
            "key", "jurisdiction", "source_document", "source_label", "target_document",
            "target_label", "evidence_chunk", "evidence_phrase", "evidence_start:int",
            "evidence_end:int", "confidence:double", "basis", "note",
        ]  # fmt: skip
        for row in rows:
            assert row[header[0]] in nodes[start["space"]], (name, row)
            assert row[header[1]] in nodes[end["space"]], (name, row)
            assert row[":TYPE"] in neo4j_mirror.EDGE_TYPES
            for column in ("evidence_start:int", "evidence_end:int"):
                assert row[column] == "" or row[column].isdigit()
            float(row["confidence:double"])
    return nodes


def test_export_csv_round_trips_and_refers_only_to_exported_ids(tmp_path: Path) -> None:
    snap = hand_snapshot("MAHARASHTRA", "CENTRAL")
    files = export_csv(snap, tmp_path / "graph")
    assert sorted(p.name for p in (tmp_path / "graph").iterdir()) == sorted(
        ["documents.csv", "units.csv", "enactments.csv", "has_part_document.csv",
         "edges_unit_unit.csv", "edges_unit_enactment.csv", "import.sh"]
    )  # fmt: skip
    assert all(path.parent == tmp_path / "graph" for path in files.values())
    nodes = _check_export(files)
    assert set(nodes["Enactment"]) == {EXTERNAL}
    assert len(nodes["Unit"]) == 3 and len(nodes["Document"]) == 2

    doc_header, docs = _read_csv(files["documents"])
    assert doc_header == ["key:ID(Document)", ":LABEL", "title", "jurisdiction", "doc_type",
                          "source_url"]  # fmt: skip
    assert docs[0]["source_url"] == ""  # NULL: no property (--ignore-empty-strings)
    unit_header, _ = _read_csv(files["units"])
    assert unit_header[0] == "chunk_id:ID(Unit)"
    assert "page_start:int" in unit_header and "page_end:int" in unit_header

    _, unit_edges = _read_csv(files["edges_unit_unit"])
    phrases = sorted(row["evidence_phrase"] for row in unit_edges)
    assert phrases == sorted([TRICKY_PHRASE, TRICKY_PHRASE, "See rule 9"])
    assert {row["key"] for row in unit_edges} <= {edge_key(e) for e in snap.edges}
    derived = next(row for row in unit_edges if row[":TYPE"] == "DERIVED_FROM")
    assert derived["evidence_start:int"] == "30" and derived["confidence:double"] == "1.0"
    _, external = _read_csv(files["edges_unit_enactment"])
    assert [(r[":END_ID(Enactment)"], r["evidence_phrase"]) for r in external] == [
        (EXTERNAL, f'the "{EXTERNAL}"')
    ]
    _, has_part = _read_csv(files["has_part_document"])
    assert {r[":START_ID(Document)"] for r in has_part} == {"maharashtra_rules"}
    assert has_part[0]["evidence_start:int"] == ""


def test_export_csv_from_postgres(graph_db: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    url, ids = graph_db
    with connect(url) as conn:
        snap = read_snapshot(conn, "MAHARASHTRA")
    files = export_csv(snap, tmp_path / "mh")
    nodes = _check_export(files)
    assert ids["old"] not in nodes["Unit"] and ids["s13"] in nodes["Unit"]
    rows = [row for name in ("has_part_document", "edges_unit_unit", "edges_unit_enactment")
            for row in _read_csv(files[name])[1]]  # fmt: skip
    assert len(rows) == 6  # the edge to the superseded Rule 10 is left out


def test_two_exports_of_one_jurisdiction_at_once_both_land(tmp_path: Path) -> None:
    """Two runs of one jurisdiction export at once: each replaces the directory whole, in
    turn (the move is done under a lock on its parent), and the last one's files are there."""
    from concurrent.futures import ThreadPoolExecutor

    snap = hand_snapshot("MAHARASHTRA", "CENTRAL")
    target = tmp_path / "graph"

    def export_often() -> None:
        for _ in range(10):
            export_csv(snap, target)

    with ThreadPoolExecutor(2) as pool:
        for done in [pool.submit(export_often) for _ in range(2)]:
            done.result()
    assert (target / "units.csv").is_file() and (target / "import.sh").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # nothing left over


def test_export_csv_is_byte_identical_and_order_independent(tmp_path: Path) -> None:
    snap = hand_snapshot("MAHARASHTRA", "CENTRAL")
    first = export_csv(snap, tmp_path / "a")
    before = {name: path.read_bytes() for name, path in first.items()}
    export_csv(snap, tmp_path / "a")  # replaces the earlier export in place
    shuffled = GraphSnapshot(
        documents=list(reversed(snap.documents)),
        units=list(reversed(snap.units)),
        edges=list(reversed(copy.deepcopy(snap.edges))),
    )
    other = export_csv(shuffled, tmp_path / "b")
    assert {name: path.read_bytes() for name, path in first.items()} == before
    assert {name: path.read_bytes() for name, path in other.items()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]  # no temporary leftovers


def test_export_csv_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snap = hand_snapshot("MAHARASHTRA", "CENTRAL")
    out = tmp_path / "graph"
    export_csv(snap, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    real_write_rows = neo4j_mirror._write_rows
    calls = []

    def failing(path: Path, header: Any, rows: Any) -> None:
        calls.append(path)
        if len(calls) == 4:
            raise OSError("disk full")
        real_write_rows(path, header, rows)

    monkeypatch.setattr(neo4j_mirror, "_write_rows", failing)
    changed = GraphSnapshot(snap.documents, snap.units, snap.edges[:2])
    with pytest.raises(OSError, match="disk full"):
        export_csv(changed, out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the old export, whole
    calls.clear()
    with pytest.raises(OSError, match="disk full"):
        export_csv(changed, tmp_path / "fresh")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph"]  # nothing half-written


def test_export_csv_never_replaces_an_unrelated_directory(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not an earlier graph export"):
        export_csv(hand_snapshot("S", "C"), precious)
    assert (precious / "notes.txt").read_text() == "keep me"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert export_csv(hand_snapshot("S", "C"), empty)["documents"].is_file()


def test_import_script_runs_the_neo4j_admin_full_import(tmp_path: Path) -> None:
    files = export_csv(hand_snapshot("MAHARASHTRA", "CENTRAL"), tmp_path / "graph")
    script = files["import"]
    assert script.stat().st_mode & stat.S_IXUSR
    text = script.read_text()
    assert 'neo4j-admin database import full "$DATABASE"' in text
    assert "--nodes=Document=documents.csv" in text
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "neo4j-admin"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$PWD" "$@"\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run(
        ["sh", str(script), "legal", "--overwrite-destination=true"],
        cwd=tmp_path, env=env, check=True, capture_output=True, text=True,
    ).stdout.splitlines()  # fmt: skip
    assert out == [
        str((tmp_path / "graph").resolve()),
        "database", "import", "full", "legal",
        "--id-type=string", "--multiline-fields=true", "--ignore-empty-strings=true",
        "--nodes=Document=documents.csv", "--nodes=Unit=units.csv",
        "--nodes=Enactment=enactments.csv",
        "--relationships=edges_unit_enactment.csv", "--relationships=edges_unit_unit.csv",
        "--relationships=has_part_document.csv",
        "--overwrite-destination=true",
    ]  # fmt: skip
    default = subprocess.run(["sh", str(script)], env=env, check=True, capture_output=True,
                             text=True).stdout.splitlines()  # fmt: skip
    assert default[4] == "neo4j" and default[-1] == "--relationships=has_part_document.csv"


# --------------------------------------------------------------------------------------------
# The Cypher the sync runs (its behaviour against a server is tested live, below)
# --------------------------------------------------------------------------------------------


def test_cypher_is_built_only_from_the_whitelist() -> None:
    assert set(MERGE_EDGES) == {
        (t, s, e) for t in neo4j_mirror.EDGE_TYPES for s in ("Document", "Unit")
        for e in ("Document", "Unit", "Enactment")
    }  # fmt: skip
    statements = [*SCHEMA_STATEMENTS, MERGE_DOCUMENTS, MERGE_UNITS, MERGE_ENACTMENTS,
                  *MERGE_EDGES.values(), *DELETE_STALE_EDGES.values(), DELETE_STALE_UNITS,
                  DELETE_STALE_DOCUMENTS, DELETE_ORPHAN_ENACTMENTS]  # fmt: skip
    for statement in statements:
        labels = set(re.findall(r"[(\[]\w*:(\w+)", statement))
        assert labels <= {"Document", "Unit", "Enactment", *neo4j_mirror.EDGE_TYPES}, statement
    merge = MERGE_EDGES[("REFERENCES", "Unit", "Unit")]
    assert merge == (
        "UNWIND $rows AS row MATCH (a:Unit {chunk_id: row.start}) "
        "MATCH (b:Unit {chunk_id: row.end}) MERGE (a)-[r:REFERENCES {key: row.key}]->(b) "
        "SET r += row.props RETURN count(r) AS written"
    )
    assert any("REQUIRE u.chunk_id IS UNIQUE" in s for s in SCHEMA_STATEMENTS)


# --------------------------------------------------------------------------------------------
# Live Neo4j (only with NEO4J_URI)
# --------------------------------------------------------------------------------------------


@pytest.fixture
def neo4j_driver() -> Iterator[tuple[Any, str | None]]:
    uri = os.environ.get("NEO4J_URI", "").strip()
    if not uri:
        pytest.skip(
            "no Neo4j server configured: set NEO4J_URI (and NEO4J_USER, NEO4J_PASSWORD) "
            "to run the live Neo4j tests"
        )
    import neo4j

    user = os.environ.get("NEO4J_USER") or os.environ.get("NEO4J_USERNAME")
    password = os.environ.get("NEO4J_PASSWORD")
    auth = (user or "neo4j", password) if password is not None else None
    driver = neo4j.GraphDatabase.driver(uri, auth=auth)
    try:
        driver.verify_connectivity()
        yield driver, os.environ.get("NEO4J_DATABASE") or None
    finally:
        driver.close()


def _live_query(driver: Any, database: str | None, query: str, **params: Any) -> list[Any]:
    records, _, _ = driver.execute_query(query, params, database_=database, routing_="r")
    return [record.data() for record in records]


def test_live_sync_twice_then_remove_an_edge(neo4j_driver: tuple[Any, str | None]) -> None:
    driver, database = neo4j_driver
    state = f"TEST_{uuid.uuid4().hex[:10].upper()}"
    central = f"{state}_CENTRAL"
    snap = hand_snapshot(state, central)
    external = f"{EXTERNAL} ({state})"  # not to touch a real enactment node
    for edge in snap.edges:
        if edge["edge_type"] == "EXTERNAL_REFERENCE":
            edge["target_label"] = external
    keys = sorted(edge_key(e) for e in snap.edges)
    unit_ids = [u["chunk_id"] for u in snap.units]
    edges_query = (
        "MATCH ()-[r]->() WHERE r.jurisdiction = $j RETURN r.key AS key, type(r) AS type, "
        "r.evidence_phrase AS phrase ORDER BY key"
    )
    try:
        first = sync_to_neo4j(driver, snap, state, database=database, batch_size=2)
        second = sync_to_neo4j(driver, snap, state, database=database, batch_size=2)
        # Equal counts; only the global clean-up of orphan enactments may differ on a shared server.
        assert {k: v for k, v in first.items() if k != "externals_removed"} == {
            k: v for k, v in second.items() if k != "externals_removed"
        }
        assert second["edges_removed"] == second["units_removed"] == 0
        assert (first["documents"], first["units"], first["externals"], first["edges"]) == (
            2, 3, 1, 6,
        )  # fmt: skip
        rels = _live_query(driver, database, edges_query, j=state)
        assert [r["key"] for r in rels] == keys  # each exactly once
        assert TRICKY_PHRASE in {r["phrase"] for r in rels}
        nodes = _live_query(
            driver, database,
            "MATCH (u:Unit) WHERE u.chunk_id IN $ids RETURN u.chunk_id AS id, count(*) AS n",
            ids=unit_ids,
        )  # fmt: skip
        assert sorted(n["id"] for n in nodes) == sorted(unit_ids)
        assert all(n["n"] == 1 for n in nodes)
        has_doc = _live_query(
            driver, database,
            "MATCH (d:Document {key: $k})-[r:HAS_PART]->(u:Unit) RETURN count(r) AS n",
            k=f"{state.lower()}_rules",
        )  # fmt: skip
        assert has_doc == [{"n": 2}]

        dropped = next(e for e in snap.edges if e["edge_type"] == "DERIVED_FROM")
        reduced = GraphSnapshot(snap.documents, snap.units, [e for e in snap.edges
                                                             if e is not dropped])  # fmt: skip
        third = sync_to_neo4j(driver, reduced, state, database=database)
        assert third["edges_removed"] == 1 and third["edges"] == 5
        gone = _live_query(
            driver, database, "MATCH ()-[r {key: $key}]->() RETURN count(r) AS n",
            key=edge_key(dropped),
        )  # fmt: skip
        assert gone == [{"n": 0}]
        assert len(_live_query(driver, database, edges_query, j=state)) == 5
    finally:
        driver.execute_query(
            "MATCH (n) WHERE (n:Unit OR n:Document) AND n.jurisdiction IN $js DETACH DELETE n",
            {"js": [state, central]},
            database_=database,
        )
        driver.execute_query(
            "MATCH (x:Enactment {name: $name}) DETACH DELETE x", {"name": external},
            database_=database,
        )  # fmt: skip

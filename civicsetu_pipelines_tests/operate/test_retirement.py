"""Removing a document retires its rows everywhere (issue 37): units and versions, catalog,
graph edges, provisions and divergence flags, in one transaction; the rows stay dated for
``history``; a second retirement and the next load of the jurisdiction find nothing more to
retire; the Neo4j mirror is told to delete what left. On a real (embedded) Postgres."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from civicsetu_pipelines.base import SetAside
from civicsetu_pipelines.graph import read_snapshot, replace_edges
from civicsetu_pipelines.graph.edges import Edge
from civicsetu_pipelines.operate import mirror_jurisdiction, retire_jurisdiction_documents
from civicsetu_pipelines.provisions import Flag, Provision, replace_divergences, replace_provisions
from civicsetu_pipelines.store import (
    jurisdictions_served,
    record_set_asides,
    replace_jurisdiction,
    unit_history,
)
from civicsetu_pipelines.store.database import connect
from civicsetu_pipelines_tests.store.test_store import (
    assert_one_current_per_chunk,
    doc_version,
    load,
    rows_of,
    synthetic_chunks,
    versions_of,
)

J = "MIZORAM"
GONE, KEPT, ELSEWHERE = "mizoram_rules_2018", "mizoram_order_2019", "gujarat_rules_2017"
TODAY = dt.date(2026, 11, 26)
LOADED = dt.date(2026, 1, 5)


def _catalog_row(key: str, jurisdiction: str = J) -> dict[str, Any]:
    return {"key": key, "jurisdiction": jurisdiction, "title": key, "doc_type": "rules",
            "status": "in_force", "language": "eng", "effective_date": dt.date(2018, 5, 1),
            "source_url": "file:///x.pdf", "sha256": "ab" * 32, "bytes": 10, "pages": 1,
            "pages_ingested": 1, "ocr_pages": 0, "needs_ocr_pages": 0, "sections": 2,
            "chunks": 2, "coverage": 1.0, "ingest_status": "ok", "error": None}  # fmt: skip


def _unit(key: str) -> dict[str, Any]:
    return {"document_key": key, "ordinal": 0, "unit": "rule", "number": "1",
            "label": "Rule 1", "title": "Title 1", "page_start": 1}  # fmt: skip


def _edge(kind: str, source: dict[str, Any], target: dict[str, Any] | None) -> Edge:
    return Edge(kind, source["document_key"], source["chunk_id"], source["label"],
                target["document_key"] if target else None,
                target["chunk_id"] if target else None,
                target["label"] if target else "section 3 of another Act")  # fmt: skip


def _count(url: str, query: str, *params: Any) -> int:
    with connect(url) as conn:
        row = conn.execute(query, params).fetchone()
    return int(row[0]) if row else 0


@pytest.fixture
def stored(store_db: str) -> Iterator[str]:
    """MIZORAM with two documents (one of them with a point in time an amendment makes later),
    its catalog, edges (one from GUJARAT citing the document to be removed), provisions, a
    divergence flag and a set-aside, as a run writes them."""
    gone = synthetic_chunks(GONE, J, 3, seed=1)
    gone[2]["amendment"] = {"kind": "substitute_words", "by": KEPT, "page": 1}
    gone[2]["in_force_from"] = TODAY + dt.timedelta(days=30)
    kept = synthetic_chunks(KEPT, J, 2, seed=2)
    elsewhere = synthetic_chunks(ELSEWHERE, "GUJARAT", 1, seed=3)
    load(store_db, J, [doc_version(GONE, "v1"), doc_version(KEPT, "v1")], gone + kept,
         today=LOADED)  # fmt: skip
    load(store_db, "GUJARAT", [doc_version(ELSEWHERE, "v1")], elsewhere, today=LOADED)
    with connect(store_db) as conn:
        replace_jurisdiction(conn, J, [_catalog_row(GONE), _catalog_row(KEPT)],
                             [_unit(GONE), _unit(KEPT)])  # fmt: skip
        replace_jurisdiction(conn, "GUJARAT", [_catalog_row(ELSEWHERE, "GUJARAT")], [])
        replace_edges(conn, J, [_edge("HAS_PART", gone[0], gone[1]),
                                _edge("REFERENCES", kept[0], gone[0]),
                                _edge("HAS_PART", kept[0], kept[1]),
                                _edge("EXTERNAL_REFERENCE", gone[1], None)])  # fmt: skip
        replace_edges(conn, "GUJARAT", [_edge("REFERENCES", elsewhere[0], gone[0])])
        replace_provisions(conn, J, [
            Provision(J, "interest_rate", "found", "two per cent", document_key=GONE),
            Provision(J, "refund_days", "found", "45", document_key=KEPT),
        ])  # fmt: skip
        theirs = Provision("GUJARAT", "interest_rate", "found", "one", document_key=ELSEWHERE)
        replace_provisions(conn, "GUJARAT", [theirs])
        replace_divergences(conn, [Flag("interest_rate", "GUJARAT", "differs", "departs",
                                        ({"jurisdiction": J, "document_key": GONE},)),
                                   Flag("refund_days", J, "unfilled", "left",
                                        ({"jurisdiction": J, "document_key": KEPT},))])  # fmt: skip
        record_set_asides(conn, J, "graph", [SetAside(GONE, "graph", "ValueError", "bad")])
    yield store_db


def test_removing_a_document_retires_its_rows_everywhere_and_the_next_load_agrees(
    stored: str,
) -> None:
    url = stored
    with connect(url) as conn:
        retired = retire_jurisdiction_documents(conn, J, registered=[KEPT], only=[GONE],
                                                today=TODAY)  # fmt: skip
    assert retired.documents == [GONE]
    assert (retired.versions, retired.units, retired.catalog) == (1, 3, 1)
    # its HAS_PART and external reference, the reference to it from MIZORAM and from GUJARAT
    assert retired.edges == 4
    assert (retired.provisions, retired.divergences) == (1, 1)
    assert "retired 3 unit(s) of 1 document version(s), 4 graph edge(s), 1 catalog entry" in (
        retired.summary()
    )

    # units: none of the removed document served (nor its scheduled point in time, ever);
    # every row kept, dated; the other documents untouched
    gone = rows_of(url, "document_key = %s", (GONE,))
    assert len(gone) == 3 and {r["status"] for r in gone} == {"superseded"}
    assert [r["valid_to"] for r in gone] == [TODAY, TODAY, TODAY + dt.timedelta(days=30)]
    assert {r["status"] for r in rows_of(url, "document_key <> %s", (GONE,))} == {"current"}
    versions = {v["document_key"]: v for v in versions_of(url)}
    assert (versions[GONE]["status"], versions[GONE]["valid_to"]) == ("retired", TODAY)
    assert versions[KEPT]["status"] == "current"
    assert_one_current_per_chunk(url)
    with connect(url) as conn:
        (history,) = unit_history(conn, GONE, "Rule 1")
        assert (history["valid_from"], history["valid_to"]) == (dt.date(2016, 10, 29), TODAY)
        snapshot = read_snapshot(conn, J)
    # catalog, graph, provisions, flags and set-asides: nothing of it left
    for query in ("SELECT count(*) FROM documents WHERE key = %s",
                  "SELECT count(*) FROM document_units WHERE document_key = %s",
                  "SELECT count(*) FROM document_set_asides WHERE document_key = %s",
                  "SELECT count(*) FROM graph_edges WHERE %s IN (source_document, "
                  "target_document)",
                  "SELECT count(*) FROM state_provisions WHERE document_key = %s",
                  "SELECT count(*) FROM state_divergences WHERE evidence::text LIKE "
                  "'%%' || %s || '%%'"):  # fmt: skip
        assert _count(url, query, GONE) == 0, query
    assert _count(url, "SELECT count(*) FROM documents WHERE key = %s", KEPT) == 1
    assert _count(url, "SELECT count(*) FROM graph_edges WHERE source_document = %s", KEPT) == 1
    assert _count(url, "SELECT count(*) FROM state_provisions WHERE jurisdiction = %s", J) == 1
    assert _count(url, "SELECT count(*) FROM state_provisions WHERE jurisdiction = 'GUJARAT'") == 1
    assert GONE not in {d["key"] for d in snapshot.documents}
    assert GONE not in {u["document_key"] for u in snapshot.units}

    # idempotent: again, nothing; the next load of the jurisdiction retires nothing more
    with connect(url) as conn:
        again = retire_jurisdiction_documents(conn, J, registered=[KEPT], only=[GONE],
                                              today=TODAY)  # fmt: skip
    assert (again.documents, again.units, again.edges, again.provisions) == ([], 0, 0, 0)
    stats = load(url, J, [doc_version(KEPT, "v1")], synthetic_chunks(KEPT, J, 2, seed=2),
                 today=TODAY)  # fmt: skip
    assert stats.retired_documents == [] and stats.superseded == 0 and stats.inserted == 0

    # the last document goes: nothing of the jurisdiction is served or left in its tables
    with connect(url) as conn:
        assert J in jurisdictions_served(conn)
        last = retire_jurisdiction_documents(conn, J, registered=[], today=TODAY)
        assert J not in jurisdictions_served(conn) and "GUJARAT" in jurisdictions_served(conn)
    assert (last.documents, last.units, last.catalog) == ([KEPT], 2, 1)
    assert last.edges == 1 and last.provisions == 1 and last.divergences == 1
    for query in ("SELECT count(*) FROM legal_chunks WHERE jurisdiction = %s "
                  "AND status <> 'superseded'",
                  "SELECT count(*) FROM documents WHERE jurisdiction = %s",
                  "SELECT count(*) FROM graph_edges WHERE jurisdiction = %s",
                  "SELECT count(*) FROM state_provisions WHERE jurisdiction = %s"):  # fmt: skip
        assert _count(url, query, J) == 0, query
    assert _count(url, "SELECT count(*) FROM legal_chunks WHERE jurisdiction = %s", J) == 5


class _Recorder:
    """A Neo4j driver that records the statements the sync runs (no server here): each
    ``remove`` returns 0 rows, so every DELETE runs exactly once."""

    def __init__(self) -> None:
        self.statements: list[tuple[str, dict[str, Any]]] = []

    def session(self, database: str | None = None) -> _Recorder:
        return self

    def __enter__(self) -> _Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def run(self, statement: str, **params: Any) -> _Recorder:
        self.statements.append((statement, params))
        return self

    def consume(self) -> None:
        return None

    def execute_write(self, work: Any, statement: str, params: dict[str, Any]) -> int:
        self.statements.append((statement, params))
        return 0


def test_the_neo4j_mirror_is_told_to_delete_the_retired_document(stored: str) -> None:
    from civicsetu_pipelines.graph.neo4j_mirror import (
        DELETE_STALE_DOCUMENTS,
        DELETE_STALE_EDGES,
        DELETE_STALE_UNITS,
    )

    with connect(stored) as conn:
        retire_jurisdiction_documents(conn, J, registered=[KEPT], only=[GONE], today=TODAY)
    with connect(stored) as conn:
        driver = _Recorder()
        mirror_jurisdiction(conn, J, driver=driver)
    params = {statement: p for statement, p in driver.statements}
    assert params[DELETE_STALE_DOCUMENTS]["jurisdiction"] == J
    assert params[DELETE_STALE_DOCUMENTS]["keys"] == [KEPT]  # GONE's node is deleted
    kept_units = set(params[DELETE_STALE_UNITS]["keys"])
    assert {c["chunk_id"] for c in synthetic_chunks(KEPT, J, 2, seed=2)} <= kept_units
    assert not {c["chunk_id"] for c in synthetic_chunks(GONE, J, 3, seed=1)} & kept_units
    assert all(DELETE_STALE_EDGES[t] in params for t in DELETE_STALE_EDGES)


def test_the_neo4j_mirror_of_a_removed_document_live(stored: str) -> None:
    if not os.environ.get("NEO4J_URI", "").strip():
        pytest.skip("no Neo4j server configured: set NEO4J_URI (and NEO4J_USER, NEO4J_PASSWORD) "
                    "to run the live Neo4j tests")  # fmt: skip
    import neo4j

    with connect(stored) as conn:
        assert mirror_jurisdiction(conn, J) is not None  # the mirror holds both documents
        retire_jurisdiction_documents(conn, J, registered=[KEPT], only=[GONE], today=TODAY)
        conn.commit()
        counts = mirror_jurisdiction(conn, J)
    assert counts is not None and counts["documents_removed"] == 1
    user = os.environ.get("NEO4J_USER") or os.environ.get("NEO4J_USERNAME") or "neo4j"
    password = os.environ.get("NEO4J_PASSWORD")
    auth = (user, password) if password else None
    with neo4j.GraphDatabase.driver(os.environ["NEO4J_URI"], auth=auth) as driver:
        records, _, _ = driver.execute_query(
            "MATCH (d:Document {key: $key}) RETURN count(d) AS n", key=GONE,
            database_=os.environ.get("NEO4J_DATABASE") or None)  # fmt: skip
    assert records[0]["n"] == 0


def test_materialize_retires_a_jurisdiction_left_without_documents_instead_of_refusing(
    stored: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MIZORAM's documents are not in the registry (removed while the database was down) but
    its rows are still served: `materialize -j MIZORAM` retires them (no Dagster run: it has no
    partition); asked again, with nothing left of it, it refuses as before."""
    from typer.testing import CliRunner

    from civicsetu_pipelines.cli import app

    monkeypatch.setenv("CIVICSETU_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("CIVICSETU_DATABASE_URL", stored)
    monkeypatch.setenv("CIVICSETU_OFFLINE", "1")
    runner = CliRunner()
    done = runner.invoke(app, ["materialize", "-j", "Mizoram", "--no-reports"])
    assert done.exit_code == 0, done.stdout + done.stderr
    assert ("MIZORAM: no registered documents left: retired 5 unit(s) of 2 document "
            "version(s)") in done.stdout  # fmt: skip
    assert f"({KEPT}, {GONE}); nothing of it is served" in done.stdout
    assert _count(stored, "SELECT count(*) FROM legal_chunks WHERE jurisdiction = %s AND "
                  "status <> 'superseded'", J) == 0  # fmt: skip
    assert _count(stored, "SELECT count(*) FROM graph_edges WHERE jurisdiction = %s", J) == 0
    assert not (tmp_path / "state" / "dagster_home").exists()  # no run was started
    again = runner.invoke(app, ["materialize", "-j", "Mizoram", "--no-reports"])
    assert again.exit_code == 2 and "MIZORAM has no registered documents" in again.stderr

"""Per-jurisdiction partial HNSW indexes (issue 46), on the real embedded Postgres (logic tier:
a fresh database per test, synthetic vectors, no model).

The index threshold is lowered from 1,000 rows to 300 so that a few hundred rows make a
jurisdiction "big"; at that size the planner would rightly search exactly itself, so the plan
assertions push it to the indexes (``enable_seqscan``/``enable_sort``/``enable_bitmapscan``
off, as ``store.explain_nearest`` does) and ``ef_search`` covers the whole partial graph, so the
index scan must return the exact top k.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import uuid
from typing import Any

import numpy as np
import pytest

from civicsetu_pipelines.store.database import connect
from civicsetu_pipelines.store.legal_chunks import (
    HNSW_INDEX,
    DocumentVersionInput,
    load_partition,
    row_sha256,
)
from civicsetu_pipelines.store.partial_indexes import (
    _create_sql,
    partial_index_name,
    sync_partial_index,
    sync_partial_indexes,
)

EFFECTIVE = dt.date(2016, 10, 29)
THRESHOLD = 300
PUSH_TO_INDEX = ("enable_seqscan", "enable_sort", "enable_bitmapscan")


def unit_vectors(count: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((count, 384)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def synthetic_chunks(
    document_key: str, jurisdiction: str, count: int, *, tag: str = "v1", seed: int = 0
) -> list[dict[str, Any]]:
    """``count`` chunks of one document (as test_store's, without its Dagster imports): ids
    stable across versions, ``tag`` in the text."""
    vectors = unit_vectors(count, seed)
    chunks = []
    for i in range(count):
        text = f"Rule {i + 1} of {document_key} ({tag})."
        chunk: dict[str, Any] = {
            "chunk_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{document_key}/{i}")),
            "document_key": document_key, "jurisdiction": jurisdiction, "doc_type": "rules",
            "unit": "rule", "number": str(i + 1), "legal_path": f"rule:{i + 1}",
            "label": f"Rule {i + 1}", "section_label": f"Rule {i + 1}", "title": None,
            "chapter": None, "text": text, "page_start": 1, "page_end": 1, "char_start": 0,
            "char_end": len(text), "parent_id": None, "ordinal": i, "level": 0, "flags": [],
        }  # fmt: skip
        chunk["row_sha256"] = row_sha256(chunk)
        chunk["content_sha256"] = hashlib.sha256(text.encode()).hexdigest()
        chunk["model_id"] = "synthetic"
        chunk["embedding"] = vectors[i]
        chunk["embedding_windows"] = 1
        chunks.append(chunk)
    return chunks


def doc_version(key: str, tag: str) -> DocumentVersionInput:
    return DocumentVersionInput(key, hashlib.sha256(f"{key}:{tag}".encode()).hexdigest(), EFFECTIVE)


def load(url: str, jurisdiction: str, version: DocumentVersionInput, chunks: list[Any]) -> None:
    with connect(url) as conn:
        load_partition(
            conn,
            jurisdiction,
            registry_keys=[version.document_key],
            documents=[version],
            chunks=chunks,
        )


def brute_force(vectors: np.ndarray, ids: list[str], query: np.ndarray, k: int) -> list[str]:
    order = np.argsort(-(vectors @ query), kind="stable")[:k]
    return [ids[i] for i in order]


def partial_indexes(url: str) -> dict[str, str]:
    """Index name -> definition, for the partial HNSW indexes of legal_chunks."""
    with connect(url) as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'legal_chunks' "
            "AND indexname LIKE 'legal\\_chunks\\_hnsw\\_%'"
        ).fetchall()
    return {str(r[0]): str(r[1]) for r in rows}


def test_index_names_are_safe() -> None:
    for code in ("GUJARAT", "DADRA_AND_NAGAR_HAVELI_AND_DAMAN_AND_DIU" * 3, "x'; DROP TABLE t; --"):
        name = partial_index_name(code)
        assert re.fullmatch(r"legal_chunks_hnsw_[a-z0-9_]+_[0-9a-f]{8}", name), name
        assert len(name.encode()) <= 63
    assert partial_index_name("A-B") != partial_index_name("A_B")  # the hash tells them apart


def test_partial_indexes_serve_filtered_search(
    store_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """load_partition gives a jurisdiction past the threshold its partial index (and takes it
    away when it shrinks); a filtered, parameterized query scans it -- also from a prepared
    statement past its 5th execution -- and returns the exact top k; a state plus another
    jurisdiction is one arm each, merged."""
    from civicsetu_pipelines.answer.retrieval import (
        prepare_session,
        vector_candidates,
        vector_statement,
    )
    from civicsetu_pipelines.store import legal_chunks

    # Every jurisdiction here is small enough to search exactly (1000): an indexed one is still
    # searched through its own graph.
    monkeypatch.setattr(legal_chunks, "EXACT_SCAN_MAX_ROWS", 1000)
    monkeypatch.setattr(legal_chunks, "PARTIAL_INDEX_MIN_ROWS", THRESHOLD)
    big = synthetic_chunks("doc_big", "BIG", 800, seed=30)
    mid = synthetic_chunks("doc_mid", "MID", 400, seed=31)
    small = synthetic_chunks("doc_small", "SMALL", 120, seed=32)
    load(store_db, "BIG", doc_version("doc_big", "v1"), big)
    load(store_db, "MID", doc_version("doc_mid", "v1"), mid)
    load(store_db, "SMALL", doc_version("doc_small", "v1"), small)

    big_index, mid_index = partial_index_name("BIG"), partial_index_name("MID")
    indexes = partial_indexes(store_db)
    assert set(indexes) == {big_index, mid_index}  # SMALL holds 120 rows: no index
    assert (
        "WHERE ((jurisdiction = 'BIG'::text) AND (status = 'current'::text))"
        in (indexes[big_index])
    )
    assert "hnsw (embedding vector_cosine_ops)" in indexes[big_index]

    def vectors_ids(*sets: list[dict[str, Any]]) -> tuple[np.ndarray, list[str]]:
        chunks = [c for s in sets for c in s]
        return np.stack([c["embedding"] for c in chunks]), [c["chunk_id"] for c in chunks]

    queries = unit_vectors(6, seed=33)
    with connect(store_db) as conn:  # one transaction: the scan counters are this one's
        conn.execute("ANALYZE legal_chunks")
        prepare_session(conn, 1000)  # ef_search >= the partial graph's rows: the exact top k
        assert legal_chunks.knn_strategy(conn, ["BIG"]) == "partial"
        assert legal_chunks.knn_strategy(conn, ["BIG", "SMALL"]) == "partial"  # SMALL: exact arm
        assert legal_chunks.knn_strategy(conn, ["BIG", "MID"]) == "partial"
        assert legal_chunks.knn_strategy(conn, ["SMALL"]) == "exact"
        # as_of: the partial index holds current rows only; 800 + 400 rows are exact, more not
        assert legal_chunks.knn_strategy(conn, ["BIG"], EFFECTIVE) == "exact"
        monkeypatch.setattr(legal_chunks, "EXACT_SCAN_MAX_ROWS", 1100)
        assert legal_chunks.knn_strategy(conn, ["BIG", "MID"], EFFECTIVE) == "hnsw"
        assert legal_chunks.knn_strategy(conn, ["BIG", "MID"]) == "partial"
        monkeypatch.setattr(legal_chunks, "EXACT_SCAN_MAX_ROWS", 1000)
        assert legal_chunks.knn_strategy(conn, None) == "hnsw"
        for setting in PUSH_TO_INDEX:
            conn.execute("SELECT set_config(%s, 'off', true)", (setting,))

        def plan(jurisdictions: list[str]) -> str:
            query, values, chosen = vector_statement(conn, 10, jurisdictions=jurisdictions)
            assert chosen == "partial"
            rows = conn.execute("EXPLAIN " + query, (queries[0], *values)).fetchall()
            return "\n".join(r[0] for r in rows)

        single = plan(["BIG"])
        assert f"Index Scan using {big_index}" in single and HNSW_INDEX + " " not in single
        pair = plan(["BIG", "SMALL"])
        assert f"Index Scan using {big_index}" in pair, pair
        assert "legal_chunks_jurisdiction_status" in pair  # SMALL's rows through the B-tree
        assert f"Index Scan using {mid_index}" in plan(["BIG", "MID"])

        def scans(index: str) -> int:
            row = conn.execute("SELECT pg_stat_get_xact_numscans(%s::regclass)", (index,))
            return int(row.fetchone()[0])  # type: ignore[index]

        # Through the production call, repeated past psycopg's prepare threshold (5): every
        # execution scans BIG's own graph, never the whole table's, and finds the exact top k.
        before = {i: scans(i) for i in (big_index, HNSW_INDEX)}
        runs = 0
        for _ in range(2):
            for q in queries:
                expected = brute_force(*vectors_ids(big), q, 10)
                rows = vector_candidates(conn, q, 10, jurisdictions=["BIG"])
                assert [r["chunk_id"] for r in rows] == expected
                assert all(r["jurisdiction"] == "BIG" for r in rows)
                runs += 1
        assert scans(big_index) - before[big_index] == runs
        assert scans(HNSW_INDEX) == before[HNSW_INDEX]

        for q in queries:  # a state plus another jurisdiction: merged by distance, exact
            for sets, codes in (((big, small), ["BIG", "SMALL"]), ((big, mid), ["BIG", "MID"])):
                expected = brute_force(*vectors_ids(*sets), q, 10)
                rows = vector_candidates(conn, q, 10, jurisdictions=codes)
                assert [r["chunk_id"] for r in rows] == expected
                rows = legal_chunks.nearest(conn, q, 10, jurisdictions=codes, ef_search=1000)
                assert [r["chunk_id"] for r in rows] == expected

        # A server-side prepared statement past its 5th execution: the custom plan still
        # matches the partial index; a generic plan (what the default plan_cache_mode would
        # switch to) cannot prove the predicate and does not.
        query, values, _ = vector_statement(conn, 10, jurisdictions=["BIG"])
        numbered = iter(range(1, 100))
        prepared = re.sub(r"%s", lambda _: f"${next(numbered)}", query)
        conn.execute(f"PREPARE knn_big AS {prepared}")  # type: ignore[arg-type]
        literal = "'[" + ",".join(f"{x:.6f}" for x in queries[0]) + "]'"
        args = ", ".join([literal, *(repr(v) if isinstance(v, str) else str(v) for v in values)])
        for _ in range(7):
            conn.execute(f"EXECUTE knn_big({args})")  # type: ignore[arg-type]
        explain = f"EXPLAIN EXECUTE knn_big({args})"
        custom = "\n".join(r[0] for r in conn.execute(explain).fetchall())  # type: ignore[arg-type]
        assert f"Index Scan using {big_index}" in custom, custom
        conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        generic = "\n".join(r[0] for r in conn.execute(explain).fetchall())  # type: ignore[arg-type]
        assert big_index not in generic, generic
        conn.execute("DEALLOCATE knn_big")

    # BIG shrinks to 200 current rows: its index goes; grows back: it returns.
    load(store_db, "BIG", doc_version("doc_big", "v2"), big[:200])
    assert set(partial_indexes(store_db)) == {mid_index}
    grown = synthetic_chunks("doc_big", "BIG", 500, tag="v3", seed=34)
    load(store_db, "BIG", doc_version("doc_big", "v3"), grown)
    assert set(partial_indexes(store_db)) == {big_index, mid_index}
    with connect(store_db) as conn:
        conn.execute("ANALYZE legal_chunks")
        prepare_session(conn, 1000)
        q = queries[1]
        rows = vector_candidates(conn, q, 10, jurisdictions=["BIG"])
        assert [r["chunk_id"] for r in rows] == brute_force(*vectors_ids(grown), q, 10)

        # Direct calls: idempotent; a higher threshold drops; an index left by a jurisdiction
        # no longer in the table is dropped by the full sync.
        assert sync_partial_index(conn, "BIG", min_rows=THRESHOLD) == "kept"
        assert sync_partial_index(conn, "SMALL", min_rows=THRESHOLD) == "absent"
        assert sync_partial_index(conn, "MID", min_rows=1000) == "dropped"
        # Another transaction writing to the table (a load of another jurisdiction not yet
        # committed): the build waits lock_timeout_s, then gives up and changes nothing; the
        # caller's transaction goes on.
        conn.commit()  # the DROP above holds the table until then
        with connect(store_db) as other:
            other.execute("LOCK TABLE legal_chunks IN ROW EXCLUSIVE MODE")
            action = sync_partial_index(conn, "MID", min_rows=THRESHOLD, lock_timeout_s=0.2)
            assert action == "deferred"
        assert conn.execute("SELECT current_setting('lock_timeout')").fetchone() == ("0",)
        conn.execute(_create_sql("GONE"))
        assert "'GONE'" in _create_sql("GONE").as_string(conn)
        assert "'O''X'" in _create_sql("O'X").as_string(conn)  # a literal, quoted
        actions = sync_partial_indexes(conn, min_rows=THRESHOLD)
        assert actions == {
            "BIG": "kept",
            "MID": "created",
            "SMALL": "absent",
            partial_index_name("GONE"): "dropped",
        }
    assert set(partial_indexes(store_db)) == {big_index, mid_index}

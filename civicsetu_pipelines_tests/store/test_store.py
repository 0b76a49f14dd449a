"""The versioned pgvector store, on the real embedded Postgres (a fresh database per test).

Two levels:

* Dagster level: the real ``ingest_job`` up to ``chunk_embeddings`` and ``legal_chunks``, with the
  real packaged model, on a temporary registry (``CIVICSETU_REGISTRY``) holding a copy of the
  smallest corpus document (gujrera_appellate_tribunal_rules_2016.pdf, 6 pages, 12 chunks) and a
  small generated one.
* Domain level: :func:`store.load_partition` and friends on synthetic chunks (random unit
  vectors, no model), for the transactional, locking and index properties.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg
import numpy as np
import pymupdf
import pytest

import civicsetu_pipelines.defs  # noqa: F401  (partitions built from the packaged registry)
from civicsetu_pipelines.store.database import connect
from civicsetu_pipelines.store.embedding import document_text
from civicsetu_pipelines.store.legal_chunks import (
    HNSW_INDEX,
    DocumentVersionInput,
    LoadStats,
    StoreError,
    chunk_filters,
    column_dimension,
    ensure_model,
    explain_nearest,
    in_force_clause,
    load_partition,
    nearest,
    prepare,
    row_sha256,
    rows_without_vectors,
    set_vectors,
    store_setting,
    store_stats,
)
from civicsetu_pipelines_tests.conftest import STORE_ASSETS, IngestEnv, StoreEnv
from civicsetu_pipelines_tests.pdfgen import Para, write_pdf

SMALL_PDF = "gujrera_appellate_tribunal_rules_2016.pdf"
SMALL_KEY = "gujarat_appellate_tribunal_rules_2016"
SMALL_EFFECTIVE = dt.date(2016, 10, 29)
GENERATED_KEY = "gujarat_test_generated_rules_2020"
BODY = (
    "The promoter shall upload the details of the project on the website of the Authority and "
    "keep them updated for the whole duration of the project."
)
LOCK_WAIT_S = 30.0


@pytest.fixture(autouse=True)
def _no_inherited_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests write their own registry; an inherited CIVICSETU_REGISTRY must not leak in."""
    monkeypatch.delenv("CIVICSETU_REGISTRY", raising=False)


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def registry_entry(
    key: str, filename: str, sha: str | None, effective: dt.date, pages: Any = None
) -> dict[str, Any]:
    return {
        "key": key,
        "title": f"Test document {key}",
        "jurisdiction": "GUJARAT",
        "doc_type": "rules",
        "effective_date": effective.isoformat(),
        "source_url": f"https://example.gov.in/{filename}",
        "filename": filename,
        "sha256": sha,
        "page_ranges": pages,
        "language": "eng",
        "status": "in_force",
    }


def small_entry(env: StoreEnv, effective: dt.date = SMALL_EFFECTIVE) -> dict[str, Any]:
    path = env.mirror / SMALL_PDF
    return registry_entry(SMALL_KEY, SMALL_PDF, sha256_of(path), effective, [[1, 6]])


def change_word(path: Path, old: str = "sixty", new: str = "forty") -> None:
    """Replace the one occurrence of ``old`` on page 2 by ``new`` (same font size and baseline).

    In the small rules this is rule 4(4): "within a period of sixty days" -- one chunk changes.
    """
    doc = pymupdf.open(path)
    page = doc[1]
    spans = [
        span
        for block in page.get_text("dict")["blocks"]
        for line in block.get("lines", [])
        for span in line["spans"]
        if old in span["text"]
    ]
    hits = page.search_for(old)
    assert len(spans) == 1 and len(hits) == 1, f"expected one {old!r} on page 2"
    page.add_redact_annot(hits[0])
    page.apply_redactions(
        images=pymupdf.PDF_REDACT_IMAGE_NONE, graphics=pymupdf.PDF_REDACT_LINE_ART_NONE
    )
    page.insert_text(
        (hits[0].x0, spans[0]["origin"][1]), new, fontname="tiro", fontsize=spans[0]["size"]
    )
    data = doc.tobytes()
    doc.close()
    path.write_bytes(data)


def rows_of(url: str, where: str = "TRUE", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    with connect(url) as conn:
        cur = conn.execute(
            "SELECT row_id, chunk_id::text AS chunk_id, version_id, document_key, jurisdiction, "
            "label, text, status, valid_from, valid_to, updated_at, model_id, "
            "embedding IS NOT NULL AS embedded "
            f"FROM legal_chunks WHERE {where} ORDER BY row_id",
            params,
        )
        names = [d.name for d in cur.description or []]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def versions_of(url: str) -> list[dict[str, Any]]:
    with connect(url) as conn:
        cur = conn.execute(
            "SELECT version_id, document_key, jurisdiction, sha256, valid_from, valid_to, "
            "status FROM document_versions ORDER BY version_id"
        )
        names = [d.name for d in cur.description or []]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def failed_checks(result: Any, asset: str) -> list[str]:
    return [
        ev.check_name
        for ev in result.get_asset_check_evaluations()
        if ev.asset_key.to_user_string() == asset and not ev.passed
    ]


def assert_one_current_per_chunk(url: str) -> None:
    with connect(url) as conn:
        dupes = conn.execute(
            "SELECT chunk_id FROM legal_chunks WHERE status = 'current' "
            "GROUP BY chunk_id HAVING count(*) > 1"
        ).fetchall()
        versions = conn.execute(
            "SELECT document_key FROM document_versions WHERE status = 'current' "
            "GROUP BY document_key HAVING count(*) > 1"
        ).fetchall()
        stray = conn.execute(
            "SELECT count(*) FROM legal_chunks c JOIN document_versions v USING (version_id) "
            "WHERE c.status = 'current' AND v.status <> 'current'"
        ).fetchone()
    assert dupes == [] and versions == [] and stray == (0,)


# ------------------------------------------------------------------------- synthetic chunks


def unit_vectors(count: int, dimension: int = 384, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((count, dimension)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def synthetic_chunks(
    document_key: str,
    jurisdiction: str,
    count: int,
    *,
    tag: str = "v1",
    seed: int = 0,
    dimension: int = 384,
    model_id: str = "synthetic",
) -> list[dict[str, Any]]:
    """``count`` chunks with ids stable across versions (per key and ordinal); ``tag`` in the
    text makes a different version's rows differ."""
    vectors = unit_vectors(count, dimension, seed)
    chunks = []
    for i in range(count):
        text = f"Rule {i + 1} of {document_key} ({tag}). {BODY}"
        chunk: dict[str, Any] = {
            "chunk_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{document_key}/{i}")),
            "document_key": document_key,
            "jurisdiction": jurisdiction,
            "doc_type": "rules",
            "unit": "rule",
            "number": str(i + 1),
            "legal_path": f"rule:{i + 1}",
            "label": f"Rule {i + 1}",
            "section_label": f"Rule {i + 1}",
            "title": f"Title {i + 1}",
            "chapter": None,
            "text": text,
            "page_start": 1,
            "page_end": 1,
            "char_start": 0,
            "char_end": len(text),
            "parent_id": None,
            "ordinal": i,
            "level": 0,
            "flags": [],
        }
        chunk["row_sha256"] = row_sha256(chunk)
        chunk["content_sha256"] = hashlib.sha256(text.encode()).hexdigest()
        chunk["model_id"] = model_id
        chunk["embedding"] = vectors[i]
        chunk["embedding_windows"] = 1
        chunks.append(chunk)
    return chunks


def doc_version(key: str, tag: str, effective: dt.date = SMALL_EFFECTIVE) -> DocumentVersionInput:
    return DocumentVersionInput(key, hashlib.sha256(f"{key}:{tag}".encode()).hexdigest(), effective)


def load(
    url: str,
    jurisdiction: str,
    versions: list[DocumentVersionInput],
    chunks: list[dict[str, Any]],
    *,
    registry_keys: list[str] | None = None,
    today: dt.date | None = None,
    application_name: str | None = None,
) -> LoadStats:
    kwargs = {"application_name": application_name} if application_name else {}
    with connect(url, **kwargs) as conn:
        return load_partition(
            conn,
            jurisdiction,
            registry_keys=registry_keys
            if registry_keys is not None
            else [v.document_key for v in versions],
            documents=versions,
            chunks=chunks,
            today=today,
        )


def wait_for(condition: Callable[[], Any], what: str, timeout: float = LOCK_WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")


def backend_state(url: str, application_name: str) -> tuple[int, str | None, str | None] | None:
    """(pid, wait_event_type, query) of the backend with ``application_name``, or None."""
    with connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT pid, wait_event_type, query FROM pg_stat_activity WHERE application_name = %s",
            (application_name,),
        ).fetchone()
    return None if row is None else (int(row[0]), row[1], row[2])


def waiting_locks(url: str, pid: int) -> list[str]:
    """Lock types ``pid`` is waiting for (not granted)."""
    with connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT locktype FROM pg_locks WHERE pid = %s AND NOT granted", (pid,)
        ).fetchall()
    return [str(r[0]) for r in rows]


def hold_loaded_row(url: str, jurisdiction: str) -> Any:
    """Open a connection that locks the ``loaded:<jurisdiction>`` setting FOR UPDATE: the
    loader upserts that row last, so a load blocks at the very end of its transaction."""
    holder = connect(url)
    row = holder.execute(
        "SELECT value FROM store_settings WHERE key = %s FOR UPDATE", (f"loaded:{jurisdiction}",)
    ).fetchone()
    assert row is not None, "the first load must have written loaded:<jurisdiction>"
    return holder


# ------------------------------------------------------------------------- Dagster level


@pytest.fixture
def small_store(store_env: StoreEnv, corpus_dir: Path) -> StoreEnv:
    """A store env whose registry holds a copy of the small Gujarat rules (pinned)."""
    shutil.copy(corpus_dir / SMALL_PDF, store_env.mirror / SMALL_PDF)
    store_env.write_registry([small_entry(store_env)])
    return store_env


def test_rematerialization_is_idempotent(small_store: StoreEnv) -> None:
    env = small_store
    first = env.run_store("GUJARAT")
    assert first.success
    assert failed_checks(first, "legal_chunks") == []
    chunks_first = env.frame("section_chunks", "GUJARAT")
    before = rows_of(env.database_url)
    assert len(before) == len(chunks_first) >= 10
    assert {r["status"] for r in before} == {"current"}
    assert all(r["embedded"] for r in before)
    assert env.metadata(first, "chunk_embeddings")["embedded_now"] == len(chunks_first)
    assert env.metadata(first, "legal_chunks")["inserted"] == len(chunks_first)

    second = env.run_store("GUJARAT")
    assert second.success
    chunks_second = env.frame("section_chunks", "GUJARAT")
    assert chunks_second["chunk_id"].tolist() == chunks_first["chunk_id"].tolist()

    embeddings = env.metadata(second, "chunk_embeddings")
    assert embeddings["embedded_now"] == 0
    assert embeddings["from_cache"] == len(chunks_first)
    loaded = env.metadata(second, "legal_chunks")
    assert (loaded["inserted"], loaded["updated"], loaded["superseded"]) == (0, 0, 0)
    assert loaded["unchanged"] == len(chunks_first)
    assert loaded["new_versions"] == []

    after = rows_of(env.database_url)
    key = ("row_id", "chunk_id", "version_id", "updated_at", "status", "text")
    assert [tuple(r[k] for k in key) for r in after] == [tuple(r[k] for k in key) for r in before]
    assert len(versions_of(env.database_url)) == 1

    store_checks = [
        ev for ev in second.get_asset_check_evaluations()
        if ev.asset_key.to_user_string() == "legal_chunks"
    ]  # fmt: skip
    assert len(store_checks) == 8 and all(ev.passed for ev in store_checks)
    # nothing changed, so nothing is recorded (issue 37: what changed, recorded)
    assert (loaded["units_added"], loaded["units_changed"], loaded["units_ended"]) == (0, 0, 0)


def test_changed_pdf_makes_a_new_version(small_store: StoreEnv) -> None:
    env = small_store
    first = env.run_store("GUJARAT")
    assert first.success
    old_chunks = env.frame("section_chunks", "GUJARAT")
    old_versions = versions_of(env.database_url)
    old_rows = rows_of(env.database_url)

    # The gazette is re-issued: one word of rule 4 changes; the registry pins the new bytes and
    # a later effective date, which becomes the boundary between the versions.
    change_word(env.mirror / SMALL_PDF)
    effective = dt.date(2020, 1, 1)
    env.write_registry([small_entry(env, effective)])
    second = env.run_store("GUJARAT")
    assert second.success
    # the re-issued gazette changed a unit's words with no instrument to explain it: the load
    # records it (issue 37) and changes_explained warns, naming the unit (the other checks pass)
    assert failed_checks(second, "legal_chunks") == ["changes_explained"]
    (warning,) = [ev for ev in second.get_asset_check_evaluations()
                  if ev.check_name == "changes_explained"]  # fmt: skip
    assert warning.severity == dg.AssetCheckSeverity.WARN
    (silent,) = warning.metadata["units"].value  # type: ignore[misc]
    assert silent["document"] == SMALL_KEY and str(silent["unit"]).startswith("Rule 4")
    new_chunks = env.frame("section_chunks", "GUJARAT")
    assert new_chunks["chunk_id"].tolist() == old_chunks["chunk_id"].tolist()

    def texts(frame: Any) -> set[str]:
        return {document_text(r.label, r.title, r.text) for r in frame.itertuples()}

    changed = texts(new_chunks) - texts(old_chunks)
    assert len(changed) == 1 and "forty days" in next(iter(changed))
    assert env.metadata(second, "chunk_embeddings")["embedded_now"] == len(changed)
    loaded = env.metadata(second, "legal_chunks")
    assert loaded["new_versions"] == [SMALL_KEY]
    assert (loaded["units_added"], loaded["units_changed"], loaded["units_ended"]) == (0, 1, 0)
    assert loaded["inserted"] == len(new_chunks)
    assert loaded["superseded"] == len(old_chunks)

    versions = versions_of(env.database_url)
    assert len(versions) == 2
    old_v, new_v = versions
    assert old_v["version_id"] == old_versions[0]["version_id"]
    assert (old_v["status"], old_v["valid_from"], old_v["valid_to"]) == (
        "superseded", SMALL_EFFECTIVE, effective,
    )  # fmt: skip
    assert (new_v["status"], new_v["valid_from"], new_v["valid_to"]) == (
        "current", effective, None,
    )  # fmt: skip
    assert new_v["sha256"] == sha256_of(env.mirror / SMALL_PDF) != old_v["sha256"]

    rows = rows_of(env.database_url)
    old = [r for r in rows if r["version_id"] == old_v["version_id"]]
    new = [r for r in rows if r["version_id"] == new_v["version_id"]]
    assert [r["row_id"] for r in old] == [r["row_id"] for r in old_rows]
    assert {(r["status"], r["valid_from"], r["valid_to"]) for r in old} == {
        ("superseded", SMALL_EFFECTIVE, effective)
    }
    assert {(r["status"], r["valid_from"], r["valid_to"]) for r in new} == {
        ("current", effective, None)
    }
    assert len(new) == len(new_chunks) and all(r["embedded"] for r in new)
    assert_one_current_per_chunk(env.database_url)

    # Reads: the default serves the new text, an as_of date before the change the old one.
    rule4 = next(r["chunk_id"] for r in new if "forty days" in r["text"])

    def rule4_text(as_of: dt.date | None) -> list[str]:
        where, params = in_force_clause(as_of)
        found = rows_of(env.database_url, f"{where} AND chunk_id = %s", (*params, rule4))
        return [r["text"] for r in found]

    (current_text,) = rule4_text(None)
    (before_text,) = rule4_text(effective - dt.timedelta(days=1))
    (on_text,) = rule4_text(effective)
    assert "forty days" in current_text and "sixty" not in current_text
    assert "sixty days" in before_text and "forty" not in before_text
    assert on_text == current_text
    assert rule4_text(SMALL_EFFECTIVE - dt.timedelta(days=1)) == []  # before the first version

    with connect(env.database_url) as conn:
        prepare(conn)
        old_vector = conn.execute(
            "SELECT embedding FROM legal_chunks WHERE chunk_id = %s AND version_id = %s",
            (rule4, old_v["version_id"]),
        ).fetchone()[0]
        old_vector = np.asarray(old_vector.to_numpy(), dtype=np.float32)  # a pgvector Vector
        k = len(new_chunks) + 5
        past = nearest(conn, old_vector, k, as_of=dt.date(2019, 6, 1))
        present = nearest(conn, old_vector, k)
    # The old rule 4 vector is served as of 2019 (distance 0), the re-embedded one today.
    assert len(past) == len(present) == len(new_chunks)
    assert past[0]["chunk_id"] == rule4 and past[0]["distance"] < 1e-5
    assert present[0]["chunk_id"] == rule4 and present[0]["distance"] > 1e-4


def generated_rules(path: Path, count: int = 3) -> Path:
    rows: list[Any] = [Para("THE GUJARAT TEST RULES, 2020", bold=True)]
    rows += [Para(f"{n}. Test rule {n}.- {BODY}") for n in range(1, count + 1)]
    return write_pdf(path, [rows])


def test_failed_document_keeps_rows_and_removed_document_is_retired(
    small_store: StoreEnv,
) -> None:
    env = small_store
    generated = generated_rules(env.mirror / "generated.pdf")
    small = small_entry(env)
    other = registry_entry(GENERATED_KEY, "generated.pdf", sha256_of(generated), SMALL_EFFECTIVE)
    env.write_registry([small, other])
    first = env.run_store("GUJARAT")
    assert first.success and failed_checks(first, "legal_chunks") == []
    before = rows_of(env.database_url)
    generated_rows = [r for r in before if r["document_key"] == GENERATED_KEY]
    assert len(generated_rows) >= 3 and {r["status"] for r in before} == {"current"}

    # The generated document fails this run (gone from the offline mirror): its rows stay served.
    generated.unlink()
    failing = env.run_store("GUJARAT")
    fetched = env.frame("raw_pdfs", "GUJARAT").set_index("document_key")["status"]
    assert fetched[GENERATED_KEY] == "failed" and fetched[SMALL_KEY] == "ok"
    assert failed_checks(failing, "raw_pdfs") == ["all_documents_fetched"]
    assert failed_checks(failing, "legal_chunks") == []
    stats = env.metadata(failing, "legal_chunks")
    assert stats["retired_documents"] == [] and stats["superseded"] == 0
    assert rows_of(env.database_url) == before
    assert {v["status"] for v in versions_of(env.database_url)} == {"current"}

    # Removed from the registry: retired, never left current.
    env.write_registry([small])
    removed = env.run_store("GUJARAT")
    assert removed.success and failed_checks(removed, "legal_chunks") == []
    stats = env.metadata(removed, "legal_chunks")
    assert stats["retired_documents"] == [GENERATED_KEY]
    assert stats["superseded"] == len(generated_rows)
    today = dt.date.today()
    versions = {v["document_key"]: v for v in versions_of(env.database_url)}
    assert (versions[GENERATED_KEY]["status"], versions[GENERATED_KEY]["valid_to"]) == (
        "retired", today,
    )  # fmt: skip
    assert versions[SMALL_KEY]["status"] == "current"
    after = {r["row_id"]: r for r in rows_of(env.database_url)}
    for row in before:
        now = after[row["row_id"]]
        if row["document_key"] == GENERATED_KEY:
            assert (now["status"], now["valid_to"]) == ("superseded", today)
        else:
            assert now == row
    assert_one_current_per_chunk(env.database_url)


def test_a_defect_stays_in_its_document(small_store: StoreEnv) -> None:
    """A new version of one document whose own chunks fail a blocking check (rule 2 runs 24,000
    characters with no sub-rule: a fee schedule flattened, over the chunks' length bound): that
    document is set aside, named by a failed check and in the catalog, its previous rows stay
    served; the jurisdiction's other document loads its new version in the same run."""
    env = small_store
    generated = generated_rules(env.mirror / "generated.pdf")
    other = registry_entry(GENERATED_KEY, "generated.pdf", sha256_of(generated), SMALL_EFFECTIVE)
    env.write_registry([small_entry(env), other])
    assert env.run_assets("GUJARAT", [*STORE_ASSETS, "graph_edges"]).success
    before = {r["row_id"]: r for r in rows_of(env.database_url)}
    edges_before = edges_of(env.database_url, GENERATED_KEY)
    assert edges_before
    served = {r["row_id"] for r in before.values() if r["document_key"] == GENERATED_KEY}
    assert served

    fees = f"{BODY} {BODY}"  # a row of about 290 characters; 16 a page
    pages: list[list[Any]] = [
        [Para("THE GUJARAT TEST RULES, 2020", bold=True), f"1. Test rule 1.- {BODY}",
         f"2. Schedule of fees.- {fees}", *[fees] * 14],
        *[[fees] * 16 for _ in range(5)],
        [f"3. Test rule 3.- {BODY}"],
    ]  # fmt: skip
    write_pdf(generated, pages)
    change_word(env.mirror / SMALL_PDF)  # the other document changes too, and must load
    env.write_registry([small_entry(env), {**other, "sha256": sha256_of(generated)}])
    result = env.run_assets("GUJARAT", [*STORE_ASSETS, "document_catalog", "graph_edges"])
    assert result.success  # the blocking checks pass on what loads
    checks = IngestEnv.checks(result)
    set_aside = checks[("section_chunks", "documents_set_aside")]
    assert not set_aside.passed and GENERATED_KEY in (set_aside.description or "")
    assert "non_empty_text" in (set_aside.description or "")
    assert checks[("section_chunks", "non_empty_text")].passed
    after = {r["row_id"]: r for r in rows_of(env.database_url)}
    for row_id in served:  # the set-aside document's previous rows: unchanged, still current
        assert after[row_id] == before[row_id]
    small_rows = [r for r in after.values() if r["document_key"] == SMALL_KEY]
    assert any("forty days" in r["text"] and r["status"] == "current" for r in small_rows)
    assert_one_current_per_chunk(env.database_url)
    with connect(env.database_url) as conn:
        status, error = conn.execute(
            "SELECT ingest_status, error FROM documents WHERE key = %s", (GENERATED_KEY,)
        ).fetchone()
    assert status == "set_aside" and "previous rows stay served" in error
    structure = env.frame("document_structure", "GUJARAT").set_index("document_key")
    assert "non_empty_text" in structure.loc[GENERATED_KEY, "set_aside"]
    assert structure.loc[SMALL_KEY, "set_aside"] == "[]"
    # the graph is the graph of what is served: the set-aside document's edges stay too
    assert edges_of(env.database_url, GENERATED_KEY) == edges_before


def edges_of(url: str, document: str) -> set[tuple[str, str, str]]:
    with connect(url) as conn:
        rows = conn.execute(
            "SELECT edge_type, source_label, target_label FROM graph_edges "
            "WHERE source_document = %s",
            (document,),
        ).fetchall()
    return {(str(a), str(b), str(c)) for a, b, c in rows}


# ------------------------------------------------------------------------- domain level


def test_same_effective_date_makes_the_ingestion_date_the_boundary(store_db: str) -> None:
    """store.py's rule: the new version's valid_from is the registry's effective date when it is
    later than the old version's, else the ingestion date."""
    key = "doc_a"
    load(store_db, "GUJARAT", [doc_version(key, "v1")], synthetic_chunks(key, "GUJARAT", 5))
    today = dt.date(2024, 5, 1)
    stats = load(
        store_db,
        "GUJARAT",
        [doc_version(key, "v2")],  # same effective date as v1
        synthetic_chunks(key, "GUJARAT", 5, tag="v2", seed=1),
        today=today,
    )
    assert stats.new_versions == [key] and stats.superseded == 5 and stats.inserted == 5
    old, new = versions_of(store_db)
    assert (old["status"], old["valid_from"], old["valid_to"]) == (
        "superseded", SMALL_EFFECTIVE, today,
    )  # fmt: skip
    assert (new["status"], new["valid_from"], new["valid_to"]) == ("current", today, None)
    for as_of, tag in [(today - dt.timedelta(days=1), "v1"), (today, "v2"), (None, "v2")]:
        where, params = in_force_clause(as_of)
        rows = rows_of(store_db, where, params)
        assert len(rows) == 5 and all(f"({tag})" in r["text"] for r in rows)


def test_reverting_to_an_earlier_version_keeps_history_consistent(store_db: str) -> None:
    key = "doc_a"
    v1 = doc_version(key, "v1")
    load(store_db, "GUJARAT", [v1], synthetic_chunks(key, "GUJARAT", 4))
    b_from = dt.date(2020, 1, 1)
    load(
        store_db,
        "GUJARAT",
        [doc_version(key, "v2", b_from)],
        synthetic_chunks(key, "GUJARAT", 4, tag="v2", seed=1),
    )
    # The registry goes back to the first file (e.g. the re-issue is withdrawn).
    revert_day = dt.date(2024, 5, 1)
    load(store_db, "GUJARAT", [v1], synthetic_chunks(key, "GUJARAT", 4), today=revert_day)
    assert_one_current_per_chunk(store_db)
    for as_of, tag in [
        (dt.date(2017, 1, 1), "v1"),
        (dt.date(2021, 1, 1), "v2"),  # B was the version in force then
        (revert_day, "v1"),
        (None, "v1"),
    ]:
        where, params = in_force_clause(as_of)
        rows = rows_of(store_db, where, params)
        assert sorted(r["text"] for r in rows) == sorted(
            c["text"] for c in synthetic_chunks(key, "GUJARAT", 4, tag=tag)
        ), f"as of {as_of}"


def test_document_moved_to_another_jurisdiction_stays_served(store_db: str) -> None:
    key = "doc_a"
    version = doc_version(key, "v1")
    load(store_db, "CENTRAL", [version], synthetic_chunks(key, "CENTRAL", 3))
    # The registry corrects the document's jurisdiction (same file, same chunk ids).
    load(store_db, "GUJARAT", [version], synthetic_chunks(key, "GUJARAT", 3))
    load(store_db, "CENTRAL", [], [], registry_keys=[])  # CENTRAL has no documents left
    current = rows_of(store_db, "status = 'current'")
    assert len(current) == 3 and {r["jurisdiction"] for r in current} == {"GUJARAT"}
    # The move is history: the CENTRAL version is superseded, the GUJARAT one is current.
    versions = versions_of(store_db)
    assert [v["status"] for v in versions] == ["superseded", "current"]
    assert versions[-1]["jurisdiction"] == "GUJARAT"


def test_past_versions_stay_searchable_after_a_model_switch(store_db: str) -> None:
    key = "doc_a"
    with connect(store_db) as conn:
        ensure_model(conn, "model-a", 384)
    load(store_db, "GUJARAT", [doc_version(key, "v1")], synthetic_chunks(key, "GUJARAT", 4))
    change = dt.date(2020, 1, 1)
    v2 = doc_version(key, "v2", change)
    load(store_db, "GUJARAT", [v2], synthetic_chunks(key, "GUJARAT", 4, tag="v2", seed=1))
    with connect(store_db) as conn:
        ensure_model(conn, "model-b", 384)
    # The next materialization re-embeds and reloads with the new model.
    chunks = synthetic_chunks(key, "GUJARAT", 4, tag="v2", seed=2, model_id="model-b")
    load(store_db, "GUJARAT", [v2], chunks)
    with connect(store_db) as conn:
        # What the legal_chunks asset does after a load: vectors of the new model for the
        # rows that still lack them (here v1's superseded rows).
        stale = rows_without_vectors(conn, "GUJARAT", "model-b")
        assert len(stale) == 4
        rng = np.random.default_rng(7)
        fresh = []
        for row_id, *_ in stale:
            vec = rng.normal(size=384).astype(np.float32)
            fresh.append((row_id, vec / np.linalg.norm(vec), 1))
        set_vectors(conn, "model-b", fresh)
        assert rows_without_vectors(conn, "GUJARAT", "model-b") == []
        assert len(nearest(conn, chunks[0]["embedding"], 10)) == 4
        past = nearest(conn, chunks[0]["embedding"], 10, as_of=change - dt.timedelta(days=1))
    assert len(past) == 4


_LOADER = """
import datetime as dt, json, sys
import dagster as dg
import numpy as np
from civicsetu_pipelines.store.database import connect
from civicsetu_pipelines.store.legal_chunks import DocumentVersionInput, load_partition
spec = json.load(open(sys.argv[1]))
chunks = spec["chunks"]
for chunk in chunks:
    chunk["embedding"] = np.asarray(chunk["embedding"], dtype=np.float32)
doc = DocumentVersionInput(spec["key"], spec["sha256"], dt.date.fromisoformat(spec["effective"]))
with connect(spec["url"], application_name=spec["application_name"]) as conn:
    print("loading", flush=True)
    load_partition(conn, spec["jurisdiction"], registry_keys=[spec["key"]], documents=[doc],
                   chunks=chunks)
print("committed", flush=True)
"""


def test_killed_load_leaves_the_old_data_served(store_db: str, tmp_path: Path) -> None:
    key, jurisdiction = "doc_a", "GUJARAT"
    load(store_db, jurisdiction, [doc_version(key, "v1")], synthetic_chunks(key, jurisdiction, 6))
    before = rows_of(store_db)
    versions_before = versions_of(store_db)
    with connect(store_db) as conn:
        loaded_before = store_setting(conn, f"loaded:{jurisdiction}")

    v2 = doc_version(key, "v2")
    chunks = synthetic_chunks(key, jurisdiction, 8, tag="v2", seed=1)
    app = f"civicsetu-test-loader-{uuid.uuid4().hex[:8]}"
    spec = {
        "url": store_db, "application_name": app, "jurisdiction": jurisdiction, "key": key,
        "sha256": v2.sha256, "effective": v2.effective_date.isoformat(),
        "chunks": [{**c, "embedding": c["embedding"].tolist()} for c in chunks],
    }  # fmt: skip
    (tmp_path / "load.json").write_text(json.dumps(spec))

    holder = hold_loaded_row(store_db, jurisdiction)
    child = subprocess.Popen(
        [sys.executable, "-c", _LOADER, str(tmp_path / "load.json")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Blocked at its very last statement: everything else of the load is done, uncommitted.
        pid, _, query = wait_for(
            lambda: (s := backend_state(store_db, app)) and s[1] == "Lock" and s,
            "the loader to block on the store_settings row",
        )
        assert "store_settings" in query
        assert waiting_locks(store_db, pid), "the loader should be waiting for a lock"
        assert rows_of(store_db) == before  # readers see the old rows meanwhile
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        holder.rollback()
        holder.close()
    assert child.returncode == -signal.SIGKILL
    assert "committed" not in (child.stdout.read() if child.stdout else "")
    # Released, its backend finds the client gone and rolls the transaction back.
    wait_for(lambda: backend_state(store_db, app) is None, "the killed loader's backend to end")

    after = rows_of(store_db)
    assert after == before
    assert not any(r["status"] == "superseded" for r in after)
    assert versions_of(store_db) == versions_before
    with connect(store_db) as conn:
        assert store_setting(conn, f"loaded:{jurisdiction}") == loaded_before
    # Nothing was left locked: the same load now goes through.
    stats = load(store_db, jurisdiction, [v2], chunks)
    assert stats.new_versions == [key] and stats.inserted == 8 and stats.superseded == 6


def test_concurrent_loads_of_one_jurisdiction_serialize(store_db: str) -> None:
    key, jurisdiction = "doc_a", "GUJARAT"
    load(store_db, jurisdiction, [doc_version(key, "v1")], synthetic_chunks(key, jurisdiction, 6))
    chunks_a = synthetic_chunks(key, jurisdiction, 7, tag="A", seed=1)
    chunks_b = synthetic_chunks(key, jurisdiction, 5, tag="B", seed=2)
    app_a, app_b = (f"civicsetu-test-load-{n}-{uuid.uuid4().hex[:8]}" for n in "ab")
    results: dict[str, Any] = {}
    finished: dict[str, float] = {}

    def run(name: str, tag: str, chunks: list[dict[str, Any]], app: str) -> None:
        try:
            results[name] = load(
                store_db, jurisdiction, [doc_version(key, tag)], chunks, application_name=app
            )
        except BaseException as exc:  # reported by the main thread
            results[name] = exc
        finished[name] = time.monotonic()

    holder = hold_loaded_row(store_db, jurisdiction)
    thread_a = threading.Thread(target=run, args=("A", "A", chunks_a, app_a), daemon=True)
    thread_b = threading.Thread(target=run, args=("B", "B", chunks_b, app_b), daemon=True)
    try:
        thread_a.start()
        pid_a, _, _ = wait_for(
            lambda: (s := backend_state(store_db, app_a)) and s[1] == "Lock" and s,
            "load A to block at the end of its transaction",
        )
        thread_b.start()
        pid_b = wait_for(
            lambda: (
                (s := backend_state(store_db, app_b))
                and "advisory" in waiting_locks(store_db, s[0])
                and s[0]
            ),
            "load B to wait on the jurisdiction's advisory lock",
        )
        with connect(store_db, autocommit=True) as conn:
            granted = conn.execute(
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
            ).fetchall()
        assert (pid_a,) in granted and (pid_b,) not in granted
        time.sleep(0.5)
        assert thread_a.is_alive() and thread_b.is_alive() and results == {}
        released = time.monotonic()
    finally:
        holder.rollback()
        holder.close()
    thread_a.join(LOCK_WAIT_S)
    thread_b.join(LOCK_WAIT_S)
    assert not thread_a.is_alive() and not thread_b.is_alive()
    stats_a, stats_b = results["A"], results["B"]
    assert isinstance(stats_a, LoadStats) and isinstance(stats_b, LoadStats), results
    assert released < finished["A"] and released < finished["B"]
    # B ran after A committed: it superseded A's rows, not the first load's.
    assert stats_a.new_versions == [key] and stats_a.superseded == 6 and stats_a.inserted == 7
    assert stats_b.new_versions == [key] and stats_b.superseded == 7 and stats_b.inserted == 5

    assert_one_current_per_chunk(store_db)
    versions = versions_of(store_db)
    assert [v["status"] for v in versions] == ["superseded", "superseded", "current"]
    assert versions[-1]["sha256"] == doc_version(key, "B").sha256
    current = rows_of(store_db, "status = 'current'")
    assert sorted(r["text"] for r in current) == sorted(c["text"] for c in chunks_b)
    assert len(rows_of(store_db)) == 6 + 7 + 5


def test_filtered_knn_returns_k_rows_through_the_hnsw_index(store_db: str) -> None:
    big = synthetic_chunks("doc_big", "BIG", 1500, seed=10)
    small = synthetic_chunks("doc_small", "SMALL", 40, seed=11)
    load(store_db, "BIG", [doc_version("doc_big", "v1")], big)
    load(store_db, "SMALL", [doc_version("doc_small", "v1")], small)
    query = unit_vectors(1, seed=12)[0]
    small_ids = {c["chunk_id"] for c in small}
    sql = (
        "SELECT chunk_id::text, jurisdiction FROM legal_chunks WHERE status = 'current' AND "
        "embedding IS NOT NULL AND jurisdiction = ANY(%s) ORDER BY embedding <=> %s LIMIT %s"
    )

    with connect(store_db) as conn:  # one transaction: the settings and the scan counters
        prepare(conn)
        for setting in ("enable_seqscan", "enable_sort", "enable_bitmapscan"):
            conn.execute(f"SET {setting} = off")
        plan = "\n".join(
            r[0] for r in conn.execute("EXPLAIN " + sql, (["SMALL"], query, 20)).fetchall()
        )
        assert f"Index Scan using {HNSW_INDEX}" in plan, plan

        # 40 rows would be searched exactly (test_small_filters_are_searched_exactly): force the
        # HNSW statement to test the iterative scan.
        rows = nearest(conn, query, 20, jurisdictions=["SMALL"], ef_search=10, strategy="hnsw")
        scans = conn.execute(
            "SELECT pg_stat_get_xact_numscans(%s::regclass)", (HNSW_INDEX,)
        ).fetchone()[0]
        assert scans >= 1, "nearest() did not scan the HNSW index"
        assert len(rows) == 20
        assert {r["chunk_id"] for r in rows} <= small_ids
        assert len({r["chunk_id"] for r in rows}) == 20
        distances = [r["distance"] for r in rows]
        assert distances == sorted(distances)

        def raw(iterative: str, ef_search: int, jurisdictions: list[str]) -> list[Any]:
            with conn.transaction():
                conn.execute(f"SET LOCAL hnsw.iterative_scan = {iterative}")
                conn.execute(f"SET LOCAL hnsw.ef_search = {ef_search}")
                return conn.execute(sql, (jurisdictions, query, 20)).fetchall()

        # Without the iterative scan the index yields at most ef_search candidates, and the
        # filter then throws away nearly all of them.
        assert len(raw("relaxed_order", 10, ["SMALL"])) == 20
        assert len(raw("off", 10, ["SMALL"])) < 20
        assert len(raw("off", 100, ["BIG", "SMALL"])) == 20  # enough candidates unfiltered ...
        assert len(raw("off", 100, ["SMALL"])) < 20  # ... but not once filtered
        assert HNSW_INDEX in explain_nearest(conn, 384)


def brute_force(vectors: np.ndarray, ids: list[str], query: np.ndarray, k: int) -> list[str]:
    """The ``k`` ids nearest ``query`` by cosine (unit vectors), nearest first (numpy)."""
    order = np.argsort(-(vectors @ query), kind="stable")[:k]
    return [ids[i] for i in order]


def test_small_filters_are_searched_exactly(store_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A filter on few rows is searched exactly (the brute-force top-k, no HNSW scan, even when
    the planner is pushed to the index); a filter on many goes through the index; ``as_of``
    reads apply on both paths, in ``retrieval.vector_candidates`` and ``store.nearest`` alike."""
    from civicsetu_pipelines.answer.retrieval import (
        prepare_session,
        vector_candidates,
        vector_statement,
    )
    from civicsetu_pipelines.store import legal_chunks

    # The real threshold is thousands of rows; at test size 1000 separates the two filters.
    monkeypatch.setattr(legal_chunks, "EXACT_SCAN_MAX_ROWS", 1000)
    later = SMALL_EFFECTIVE + dt.timedelta(days=400)
    past = SMALL_EFFECTIVE + dt.timedelta(days=10)
    big_v1 = synthetic_chunks("doc_big", "BIG", 1500, seed=20)
    big_v2 = synthetic_chunks("doc_big", "BIG", 400, tag="v2", seed=21)
    small_v1 = synthetic_chunks("doc_small", "SMALL", 200, seed=22)
    small_v2 = synthetic_chunks("doc_small", "SMALL", 200, tag="v2", seed=23)
    load(store_db, "BIG", [doc_version("doc_big", "v1")], big_v1)
    load(store_db, "BIG", [doc_version("doc_big", "v2", later)], big_v2)
    load(store_db, "SMALL", [doc_version("doc_small", "v1")], small_v1)
    load(store_db, "SMALL", [doc_version("doc_small", "v2", later)], small_v2)

    def vectors_ids(chunks: list[dict[str, Any]]) -> tuple[np.ndarray, list[str]]:
        return np.stack([c["embedding"] for c in chunks]), [c["chunk_id"] for c in chunks]

    queries = unit_vectors(5, seed=24)
    with connect(store_db) as conn:  # one transaction: the scan counters are this one's
        conn.execute("ANALYZE legal_chunks")  # the strategy reads the planner's statistics
        prepare_session(conn, 100)
        assert legal_chunks.knn_strategy(conn, ["SMALL"]) == "exact"  # 400 rows, every status
        assert legal_chunks.knn_strategy(conn, ["BIG"]) == "hnsw"  # 1900 rows
        assert legal_chunks.knn_strategy(conn, ["BIG", "SMALL"]) == "hnsw"
        assert legal_chunks.knn_strategy(conn, ["NOWHERE"]) == "exact"
        assert legal_chunks.knn_strategy(conn, None) == "hnsw"

        def hnsw_scans() -> int:
            row = conn.execute("SELECT pg_stat_get_xact_numscans(%s::regclass)", (HNSW_INDEX,))
            return int(row.fetchone()[0])

        def ids(rows: list[dict[str, Any]]) -> list[str]:
            return [r["chunk_id"] for r in rows]

        # From here on the planner is pushed to the index, as explain_nearest does: at test size
        # it would rightly scan a big filter's rows exactly itself.
        for setting in ("enable_seqscan", "enable_sort", "enable_bitmapscan"):
            conn.execute("SELECT set_config(%s, 'off', true)", (setting,))

        def in_force(rows: list[dict[str, Any]], chunks: list[dict[str, Any]], q: Any) -> None:
            """Every row of ``chunks`` (one version: the ids are shared across versions) at the
            distance of that version's vector."""
            vectors = {c["chunk_id"]: c["embedding"] for c in chunks}
            for row in rows:
                assert row["jurisdiction"] == chunks[0]["jurisdiction"]
                expected = 1.0 - float(vectors[row["chunk_id"]] @ q)
                assert abs(row["distance"] - expected) < 1e-5, (row["chunk_id"], expected)

        # The exact path: the brute-force top-k, in order, and the index never scanned.
        before = hnsw_scans()
        for q in queries:
            for as_of, chunks in ((None, small_v2), (past, small_v1)):
                expected = brute_force(*vectors_ids(chunks), q, 10)
                for rows in (
                    vector_candidates(conn, q, 10, jurisdictions=["SMALL"], as_of=as_of),
                    nearest(conn, q, 10, jurisdictions=["SMALL"], as_of=as_of),
                ):
                    assert ids(rows) == expected
                    in_force(rows, chunks, q)
        assert hnsw_scans() == before, "a small filter scanned the HNSW index"

        # The HNSW path: k rows in force on the day, each at its version's distance; a stored
        # vector finds itself (random 384-d vectors are too uniform to test recall on).
        before = hnsw_scans()
        for i in (0, 7, 321):
            for as_of, chunks in ((None, big_v2), (past, big_v1)):
                q = chunks[i]["embedding"]
                for rows in (
                    vector_candidates(conn, q, 10, jurisdictions=["BIG"], as_of=as_of),
                    nearest(conn, q, 10, jurisdictions=["BIG"], as_of=as_of),
                ):
                    assert len(rows) == 10 and len(set(ids(rows))) == 10
                    assert rows[0]["chunk_id"] == chunks[i]["chunk_id"]
                    assert rows[0]["distance"] < 1e-5
                    in_force(rows, chunks, q)
        assert hnsw_scans() > before, "a big filter did not scan the HNSW index"

        # The plans: the exact statement cannot use the index, the HNSW one of the same filter
        # would.
        def plan(jurisdictions: list[str], strategy: Any = None, as_of: Any = None) -> str:
            query, values, chosen = vector_statement(
                conn, 10, jurisdictions=jurisdictions, as_of=as_of, strategy=strategy
            )
            assert strategy is None or chosen == strategy
            rows = conn.execute("EXPLAIN " + query, (queries[0], *values)).fetchall()
            return "\n".join(r[0] for r in rows)

        for as_of in (None, past):
            small_plan = plan(["SMALL"], as_of=as_of)
            assert HNSW_INDEX not in small_plan and "Sort" in small_plan, small_plan
            assert f"Index Scan using {HNSW_INDEX}" in plan(["SMALL"], "hnsw", as_of)
            assert f"Index Scan using {HNSW_INDEX}" in plan(["BIG"], as_of=as_of)


def test_ensure_model_switches_models_and_dimensions(store_db: str) -> None:
    key = "doc_a"
    with connect(store_db) as conn:
        assert ensure_model(conn, "model-a", 384) is True
        assert ensure_model(conn, "model-a", 384) is False
        with pytest.raises(StoreError, match="invalid embedding dimension"):
            ensure_model(conn, "model-a", 0)
    load(store_db, "GUJARAT", [doc_version(key, "v1")], synthetic_chunks(key, "GUJARAT", 5))
    load(
        store_db,
        "GUJARAT",
        [doc_version(key, "v2")],
        synthetic_chunks(key, "GUJARAT", 5, tag="v2", seed=1),
    )
    assert all(r["embedded"] for r in rows_of(store_db)) and len(rows_of(store_db)) == 10

    # Another model of the same dimension: every vector is cleared, the column stays.
    with connect(store_db) as conn:
        assert ensure_model(conn, "model-b", 384) is True
        assert column_dimension(conn) == 384
        assert store_setting(conn, "embedding_model") == "model-b"
    rows = rows_of(store_db)
    assert len(rows) == 10 and not any(r["embedded"] or r["model_id"] for r in rows)

    # Another dimension: the column type changes and the HNSW index is rebuilt on it.
    with connect(store_db) as conn:
        assert ensure_model(conn, "model-c", 8) is True
        assert column_dimension(conn) == 8
        assert store_setting(conn, "embedding_dimension") == "8"
        column_type = conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'legal_chunks'::regclass AND attname = 'embedding'"
        ).fetchone()[0]
        index = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'legal_chunks' AND indexname = %s",
            (HNSW_INDEX,),
        ).fetchone()
    assert column_type == "vector(8)"
    assert index is not None and "hnsw" in index[0] and "vector_cosine_ops" in index[0]

    chunks = synthetic_chunks(key, "GUJARAT", 5, tag="v2", seed=1, dimension=8, model_id="model-c")
    stats = load(store_db, "GUJARAT", [doc_version(key, "v2")], chunks)
    assert stats.updated == 5 and stats.new_versions == []  # same version, re-embedded rows
    with connect(store_db) as conn:
        hits = nearest(conn, chunks[2]["embedding"], 3)
        assert hits[0]["chunk_id"] == chunks[2]["chunk_id"] and hits[0]["distance"] < 1e-5
        assert HNSW_INDEX in explain_nearest(conn, 8)
        with pytest.raises(Exception, match="expected 8 dimensions"):
            load_partition(
                conn,
                "GUJARAT",
                registry_keys=[key],
                documents=[doc_version(key, "v2")],
                chunks=synthetic_chunks(key, "GUJARAT", 5, tag="v3"),  # 384-d: refused
            )


def test_store_stats(store_db: str) -> None:
    with connect(store_db) as conn:
        ensure_model(conn, "model-a", 384)
        assert store_stats(conn) == []
    load(store_db, "GUJARAT", [doc_version("doc_a", "v1")], synthetic_chunks("doc_a", "GUJARAT", 4))
    load(
        store_db,
        "GUJARAT",
        [doc_version("doc_a", "v2")],
        synthetic_chunks("doc_a", "GUJARAT", 6, tag="v2", seed=1),
    )
    karnataka = synthetic_chunks("doc_k", "KARNATAKA", 3)
    karnataka[0]["embedding"] = None  # not embedded yet
    load(store_db, "KARNATAKA", [doc_version("doc_k", "v1")], karnataka)
    with connect(store_db) as conn:
        stats = store_stats(conn)
    assert stats == [
        {"jurisdiction": "GUJARAT", "current_rows": 6, "superseded_rows": 4,
         "embedded_rows": 6, "model_id": "model-a", "dimension": 384},
        {"jurisdiction": "KARNATAKA", "current_rows": 3, "superseded_rows": 0,
         "embedded_rows": 2, "model_id": "model-a", "dimension": 384},
    ]  # fmt: skip


def test_load_rejects_chunks_of_documents_without_a_version(store_db: str) -> None:
    with connect(store_db) as conn, pytest.raises(StoreError, match="doc_b"):
        load_partition(
            conn,
            "GUJARAT",
            registry_keys=["doc_a", "doc_b"],
            documents=[doc_version("doc_a", "v1")],
            chunks=synthetic_chunks("doc_b", "GUJARAT", 2),
        )
    assert rows_of(store_db) == [] and versions_of(store_db) == []


def test_an_amendment_dated_later_is_scheduled_then_current_and_the_text_it_replaces_ends(
    store_db: str,
) -> None:
    """A point in time an amendment makes from a later date is loaded 'scheduled' (the text it
    replaces stays current, valid until then); loaded again on or after its date, it is current
    and the old text superseded; the law of a day reads the right one either side."""
    key, jurisdiction, day = "doc_a", "GUJARAT", dt.date(2030, 1, 1)
    chunks = synthetic_chunks(key, jurisdiction, 3)
    old = chunks[1]
    new = {
        **old,
        "chunk_id": str(uuid.uuid5(uuid.NAMESPACE_URL, "amended")),
        "in_force_from": day,
        "text": "Rule 2 as amended.",
        "amendment": {"by": "notice", "date": str(day)},
    }
    new["row_sha256"] = row_sha256(new)
    dated = [chunks[0], {**old, "in_force_to": day}, new, chunks[2]]
    load(store_db, jurisdiction, [doc_version(key, "v1")], dated, today=dt.date(2029, 6, 1))
    status = {r["chunk_id"]: (r["status"], r["valid_to"]) for r in rows_of(store_db)}
    assert status[old["chunk_id"]] == ("current", day) and status[new["chunk_id"]][0] == "scheduled"
    with connect(store_db) as conn:
        for as_of, text in ((dt.date(2029, 12, 31), old["text"]), (day, "Rule 2 as amended.")):
            where, params = chunk_filters([jurisdiction], as_of)
            served = conn.execute(f"SELECT text FROM legal_chunks c WHERE {where} AND "
                                  "c.label = 'Rule 2'", params).fetchall()  # fmt: skip
            assert served == [(text,)]
    load(store_db, jurisdiction, [doc_version(key, "v1")], dated, today=day)
    status = {r["chunk_id"]: (r["status"], r["valid_to"]) for r in rows_of(store_db)}
    assert status[old["chunk_id"]] == ("superseded", day)
    assert status[new["chunk_id"]] == ("current", None)

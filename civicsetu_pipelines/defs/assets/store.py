"""Store assets: chunk embeddings (cached, incremental) and the versioned pgvector table.

Thin wrappers over :mod:`civicsetu_pipelines.store.embedding` and
:mod:`civicsetu_pipelines.store.legal_chunks`.
"""

import datetime as dt
import json
import time
from collections.abc import Sequence
from functools import partial
from typing import Any

import dagster as dg
import numpy as np
import pandas as pd

from civicsetu_pipelines.base import SetAside, contained
from civicsetu_pipelines.defs.assets import EAGER, OWNERS, set_aside_check
from civicsetu_pipelines.defs.partitions import jurisdiction_partitions
from civicsetu_pipelines.defs.resources import EmbeddingResource, PostgresResource
from civicsetu_pipelines.ingest import load_registry
from civicsetu_pipelines.store import (
    HNSW_INDEX,
    Change,
    DocumentVersionInput,
    cache_lookup,
    cache_store,
    column_dimension,
    document_text,
    ensure_model,
    explain_nearest,
    load_partition,
    prepare,
    record_set_asides,
    row_sha256,
    rows_without_vectors,
    served_on,
    set_vectors,
    store_setting,
    text_sha256,
    unexplained,
)

EMBEDDING_TAGS = {"civicsetu/embedding": "true"}
EMBED_SLICE = 4096  # texts per call of the model's worker (one slice's windows held at a time)
POINT_IN_TIME = ("in_force_from", "in_force_to", "amendment")  # section_chunks' dating columns


def _check(name: str, asset: str, description: str, blocking: bool = False) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(name, asset=asset, description=description, blocking=blocking)


@dg.asset(
    partitions_def=jurisdiction_partitions,
    io_manager_key="parquet_io",
    group_name="core",
    automation_condition=EAGER,
    kinds={"sentence-transformers", "parquet"},
    owners=OWNERS,
    op_tags=EMBEDDING_TAGS,
    check_specs=[
        _check("dimension", "chunk_embeddings", "Vectors have the model's dimension", True),
        _check("no_nan", "chunk_embeddings", "No NaN or infinite component", True),
        _check("unit_norm", "chunk_embeddings", "Vectors are normalized (|v| = 1)", True),
        _check(
            "documents_set_aside",
            "chunk_embeddings",
            "No document was set aside: a "
            "document whose texts the model could not encode is left out (its previous rows "
            "stay served), named here with the error, and the others are embedded",
        ),
    ],
)
def chunk_embeddings(
    context: dg.AssetExecutionContext,
    section_chunks: pd.DataFrame,
    embedder: EmbeddingResource,
    postgres: PostgresResource,
):
    """One normalized vector per chunk of label + title + text. Texts longer than the model's
    window are embedded as overlapping windows and averaged (nothing truncated). Cached in
    Postgres by (model id, sha256 of the embedded text): only new or changed texts are
    encoded."""
    config = embedder.config()
    model_id = config.model_id
    if section_chunks.empty:  # no document processed in this run: nothing to embed
        section_chunks = pd.DataFrame(
            columns=["chunk_id", "document_key", "label", "title", "text"]
        )
    texts = [document_text(row.label, row.title, row.text) for row in section_chunks.itertuples()]
    keys = section_chunks["document_key"].astype(str).tolist()
    started = time.monotonic()
    with postgres.connect() as conn:
        cached, embedded_now, asides = embed_documents(context, conn, embedder, keys, texts)
        record_set_asides(conn, context.partition_key, "embedding", asides)
    seconds = time.monotonic() - started
    if asides:
        dropped = {a.document_key for a in asides}
        kept = [k not in dropped for k in keys]
        section_chunks = section_chunks[kept]
        texts = [t for t, keep in zip(texts, kept, strict=True) if keep]
    shas = [text_sha256(text) for text in texts]
    matrix = (
        np.stack([cached[sha][0] for sha in shas])
        if shas
        else np.zeros((0, config.dimension), dtype=np.float32)
    )
    frame = pd.DataFrame(
        {
            "chunk_id": section_chunks["chunk_id"].tolist(),
            "content_sha256": shas,
            "model_id": model_id,
            "embedding": list(matrix.astype(np.float32, copy=False)),  # views, not copies
            "embedding_windows": [cached[sha][1] for sha in shas],
        }
    )
    del cached, texts  # while the frame is written, its matrix is the one copy of the vectors
    yield dg.Output(
        frame,
        metadata={
            "chunks": len(frame),
            "embedded_now": embedded_now,
            "from_cache": len(frame) - embedded_now,
            "windows": int(frame["embedding_windows"].sum()) if len(frame) else 0,
            "model_id": model_id,
            "dimension": config.dimension,
            "encode_seconds": round(seconds, 2),
            "chunks_per_second": round(embedded_now / seconds, 1) if embedded_now else 0.0,
        },
    )
    yield set_aside_check(asides)
    norms = np.linalg.norm(matrix, axis=1) if len(matrix) else np.ones(0)
    yield dg.AssetCheckResult(
        check_name="dimension",
        passed=matrix.shape[1] == config.dimension,
        metadata={"dimension": int(matrix.shape[1]), "expected": config.dimension},
    )
    yield dg.AssetCheckResult(
        check_name="no_nan", passed=bool(np.isfinite(matrix).all()),
        metadata={"non_finite_rows": int((~np.isfinite(matrix)).any(axis=1).sum())},
    )  # fmt: skip
    yield dg.AssetCheckResult(
        check_name="unit_norm",
        passed=bool(np.all(np.abs(norms - 1.0) < 1e-3)),
        metadata={"max_norm_error": float(np.max(np.abs(norms - 1.0))) if len(norms) else 0.0},
    )


def embed_with_cache(
    context: dg.AssetExecutionContext,
    conn: Any,
    embedder: EmbeddingResource,
    texts: list[str],
) -> tuple[dict[str, tuple[np.ndarray, int]], int]:
    """Vectors for ``texts`` by sha256: from the cache, encoding (and caching) only the rest,
    :data:`EMBED_SLICE` texts at a time: the model's worker holds one slice's windows, not a
    whole state's, and each slice is cached as it is encoded (a run stopped halfway keeps what
    it encoded)."""
    model_id = embedder.config().model_id
    prepare(conn)
    shas = [text_sha256(text) for text in texts]
    cached = cache_lookup(conn, model_id, shas)
    todo = list({sha: text for sha, text in zip(shas, texts, strict=True) if sha not in cached}
                .items())  # fmt: skip
    if todo:
        context.log.info(f"embedding {len(todo)} new or changed texts with {model_id}")
        model = embedder.embedder()
        for start in range(0, len(todo), EMBED_SLICE):
            part = todo[start : start + EMBED_SLICE]
            where = "" if len(todo) <= EMBED_SLICE else (
                f" of texts {start + 1}-{start + len(part)}/{len(todo)}"
            )  # fmt: skip

            def progress(done: int, total: int, where: str = where) -> None:
                context.log.info(f"encoded {done}/{total} windows{where}")

            vectors, windows = model.embed_documents([text for _, text in part], progress)
            fresh = list(zip((sha for sha, _ in part), vectors, windows, strict=True))
            cache_store(conn, model_id, fresh)
            cached.update({sha: (vec, n) for sha, vec, n in fresh})
    return cached, len(todo)


def embed_documents(
    context: dg.AssetExecutionContext,
    conn: Any,
    embedder: EmbeddingResource,
    keys: list[str],
    texts: list[str],
) -> tuple[dict[str, tuple[np.ndarray, int]], int, list[SetAside]]:
    """:func:`embed_with_cache` of every text in one batch (the fast path); when that raises,
    document by document, so one document the model cannot encode is set aside (named with
    the error) and the others are embedded. Returns the vectors, how many texts were encoded
    and the documents set aside."""
    try:
        cached, now = embed_with_cache(context, conn, embedder, texts)
        return cached, now, []
    except Exception as exc:  # noqa: BLE001 - found below, document by document
        context.log.warning(f"embedding all texts failed ({type(exc).__name__}: {exc}); "
                            "embedding document by document")  # fmt: skip
    cached, now, asides = {}, 0, []
    for key in dict.fromkeys(keys):
        own = [t for k, t in zip(keys, texts, strict=True) if k == key]
        done, aside = contained("embedding", key, partial(embed_with_cache, context, conn,
                                                          embedder, own))  # fmt: skip
        if done is None:
            assert aside is not None
            context.log.error(f"{key}: set aside (its previous rows stay served): "
                              f"{aside.reason()}")  # fmt: skip
            asides.append(aside)
            continue
        cached.update(done[0])
        now += done[1]
    return cached, now, asides


STORE_CHECKS = [
    _check("store_dimension", "legal_chunks", "The table's vector dimension and model match"),
    _check("current_count", "legal_chunks", "Current rows equal the chunks of loaded documents"),
    _check("all_current_embedded", "legal_chunks", "Every current chunk has an embedding"),
    _check("unit_norm_stored", "legal_chunks", "Stored current vectors have unit norm"),
    _check("hnsw_index_used", "legal_chunks", "The HNSW index exists and a k-NN query uses it"),
    _check("no_duplicate_ids", "legal_chunks", "No chunk id is current twice"),
    _check("no_orphans", "legal_chunks", "No rows without their document version or parent"),
    _check(
        "changes_explained",
        "legal_chunks",
        "Every unit whose served text changed in this load has an amending instrument to "
        "explain it (warns on a re-printed gazette with other words; `civicsetu changes`)",
    ),
]


@dg.asset(
    partitions_def=jurisdiction_partitions,
    group_name="out",
    automation_condition=EAGER,
    kinds={"postgres", "pgvector"},
    owners=OWNERS,
    check_specs=STORE_CHECKS,
)
def legal_chunks(
    context: dg.AssetExecutionContext,
    raw_pdfs: pd.DataFrame,
    section_chunks: pd.DataFrame,
    chunk_embeddings: pd.DataFrame,
    embedder: EmbeddingResource,
    postgres: PostgresResource,
):
    """The serving table: versioned chunks with vectors (HNSW) and full-text vectors (GIN),
    loaded per jurisdiction in one transaction under an advisory lock. Documents that failed
    this run keep their previous rows; removed documents are retired."""
    jurisdiction = context.partition_key
    registry = load_registry()
    config = embedder.config()
    if section_chunks.empty:  # no document processed in this run: nothing to load
        section_chunks = pd.DataFrame(columns=["chunk_id", "document_key", "flags"])
        chunk_embeddings = pd.DataFrame(columns=["chunk_id", "embedding"])
    merged = section_chunks.merge(chunk_embeddings, on="chunk_id", how="left", validate="1:1")
    if merged["embedding"].isna().any():
        # a document chunk_embeddings set aside (its check names why) is not loaded: its
        # previous rows stay served
        unembedded = sorted(set(merged.loc[merged["embedding"].isna(), "document_key"]))
        context.log.error(f"not loaded, their chunks have no embedding (chunk_embeddings' "
                          f"documents_set_aside check says why): {unembedded}")  # fmt: skip
        merged = merged[~merged["document_key"].isin(unembedded)]
        section_chunks = section_chunks[~section_chunks["document_key"].isin(unembedded)]
    loaded = set(section_chunks["document_key"]) if len(section_chunks) else set()
    documents = [
        DocumentVersionInput(
            row["document_key"], row["sha256"], registry.get(row["document_key"]).effective_date
        )
        for row in raw_pdfs.to_dict("records")
        if row["status"] == "ok" and row["document_key"] in loaded
    ]
    commencing = {s.key: s for s in registry.documents() if s.commencement}
    rows: list[dict[str, Any]] = []
    for row in merged.to_dict("records"):
        row["flags"] = json.loads(row["flags"]) if isinstance(row["flags"], str) else row["flags"]
        for name in ("number", "title", "chapter", "parent_id", *POINT_IN_TIME):
            if row.get(name) is not None and row[name] != row[name]:  # NaN from Parquet
                row[name] = None
        for name in ("in_force_from", "in_force_to"):  # an amendment's point in time
            row[name] = dt.date.fromisoformat(row[name]) if row.get(name) else None
        row["row_sha256"] = row_sha256(row)
        spec = commencing.get(row["document_key"])
        if spec is not None and row.get("number") and not row.get("amendment"):
            row["in_force_from"] = spec.in_force_from(str(row["number"]))
        rows.append(row)
    today = dt.date.today()
    started = time.monotonic()
    with postgres.connect() as conn:
        ensure_model(conn, config.model_id, config.dimension)
        stats = load_partition(
            conn,
            jurisdiction,
            registry_keys=[spec.key for spec in registry.documents(jurisdiction)],
            documents=documents,
            chunks=rows,
            today=today,
            run_id=context.run.run_id,
        )
        seconds = time.monotonic() - started
        # After a model switch, superseded rows need vectors of the new model too.
        stale = rows_without_vectors(conn, jurisdiction, config.model_id)
        if stale:
            stale_texts = [document_text(label, title, text) for _, label, title, text in stale]
            vectors, _ = embed_with_cache(context, conn, embedder, stale_texts)
            set_vectors(
                conn,
                config.model_id,
                [
                    (row_id, *vectors[text_sha256(text)])
                    for (row_id, *_rest), text in zip(stale, stale_texts, strict=True)
                ],
            )
        serving = sum(served_on(row, today) for row in rows)
        checks = _store_checks(conn, jurisdiction, sorted(loaded), serving, config)
    context.log.info(
        f"{jurisdiction}: {stats.inserted} inserted, {stats.updated} updated, "
        f"{stats.unchanged} unchanged, {stats.superseded} superseded in {seconds:.2f}s"
    )
    yield dg.MaterializeResult(
        metadata={
            "inserted": stats.inserted,
            "updated": stats.updated,
            "unchanged": stats.unchanged,
            "superseded": stats.superseded,
            "new_versions": dg.MetadataValue.json(stats.new_versions),
            "retired_documents": dg.MetadataValue.json(stats.retired_documents),
            "load_seconds": round(seconds, 3),
            "rows_per_second": round(len(rows) / seconds, 1) if seconds else 0.0,
            "model_id": config.model_id,
            "re_embedded_past_rows": len(stale),
            # amendments and repeals (section_chunks' amendments_applied check has the detail)
            "amended_points_in_time": sum(1 for row in rows if row.get("amendment")),
            "ended_by_instruments": sum(1 for row in rows if row.get("in_force_to")),
            # what changed, recorded (store_changes; `civicsetu changes -j J`)
            "units_added": sum(c.kind == "added" for c in stats.changes),
            "units_changed": sum(c.kind == "changed" for c in stats.changes),
            "units_ended": sum(c.kind == "ended" for c in stats.changes),
        }
    )
    yield from checks
    yield changes_explained_check(stats.changes)


def changes_explained_check(changes: Sequence[Change]) -> dg.AssetCheckResult:
    """``changes_explained``: a WARN when a unit's served text changed in this load with no
    instrument to explain it (no amendment recorded: a re-printed gazette with other words),
    naming each unit with its text's sha256 before and after."""
    silent = unexplained(changes)
    named = [{"document": c.document_key, "unit": c.unit_label,
              "old_sha256": c.old_sha256, "new_sha256": c.new_sha256}
             for c in silent if isinstance(c, Change)]  # fmt: skip
    return dg.AssetCheckResult(
        check_name="changes_explained",
        passed=not silent,
        severity=dg.AssetCheckSeverity.WARN,
        description=(
            f"{len(silent)} unit(s) changed text with no amending instrument: "
            + "; ".join(f"{n['document']} {n['unit']}" for n in named)
        )[:1000]
        if silent
        else None,
        metadata={
            "unexplained": len(silent),
            "changed": sum(c.kind == "changed" for c in changes),
            "units": dg.MetadataValue.json(named[:50]),
        },
    )


def _store_checks(
    conn: Any, jurisdiction: str, loaded: list[str], expected: int, config: Any
) -> list[dg.AssetCheckResult]:
    with conn.cursor() as cur:
        cur.execute(
            "SELECT count(*), count(*) FILTER (WHERE embedding IS NULL OR model_id IS DISTINCT "
            "FROM %s), count(*) FILTER (WHERE abs(vector_norm(embedding) - 1) > 1e-3) "
            "FROM legal_chunks WHERE status = 'current' AND document_key = ANY(%s)",
            (config.model_id, loaded),
        )
        current, unembedded, off_norm = cur.fetchone()
        # The integrity checks read the rows of the documents this run loaded (a duplicate or
        # an orphan a load makes involves one of its rows; the others' rows were checked by the
        # runs that loaded them): a run costs what changed (issue 46).
        cur.execute(
            "SELECT count(*) FROM (SELECT chunk_id FROM legal_chunks WHERE status = 'current' "
            "AND chunk_id IN (SELECT chunk_id FROM legal_chunks WHERE status = 'current' AND "
            "document_key = ANY(%s)) GROUP BY chunk_id HAVING count(*) > 1) d",
            (loaded,),
        )
        duplicates = cur.fetchone()[0]
        cur.execute(
            "SELECT count(*) FROM legal_chunks c LEFT JOIN document_versions v "
            "ON v.version_id = c.version_id WHERE c.jurisdiction = %s AND c.document_key = "
            "ANY(%s) AND (v.version_id IS NULL OR v.document_key <> c.document_key OR "
            "(c.status = 'current' AND v.status <> 'current'))",
            (jurisdiction, loaded),
        )
        orphan_versions = cur.fetchone()[0]
        cur.execute(
            "SELECT count(*) FROM legal_chunks c WHERE c.jurisdiction = %s AND c.document_key = "
            "ANY(%s) AND c.status = 'current' AND c.parent_id IS NOT NULL AND NOT EXISTS "
            "(SELECT 1 FROM legal_chunks p WHERE p.chunk_id = c.parent_id AND p.status = "
            "'current')",
            (jurisdiction, loaded),
        )
        orphan_parents = cur.fetchone()[0]
    plan = explain_nearest(conn, config.dimension)
    dimension = column_dimension(conn)
    model = store_setting(conn, "embedding_model")
    return [
        dg.AssetCheckResult(
            check_name="store_dimension",
            passed=dimension == config.dimension and model == config.model_id,
            metadata={"column_dimension": dimension, "model_id": str(model)},
        ),
        dg.AssetCheckResult(
            check_name="current_count",
            passed=current == expected,
            metadata={"current_rows": current, "chunks": expected},
        ),  # fmt: skip
        dg.AssetCheckResult(
            check_name="all_current_embedded",
            passed=unembedded == 0,
            metadata={"without_embedding": unembedded},
        ),  # fmt: skip
        dg.AssetCheckResult(
            check_name="unit_norm_stored", passed=off_norm == 0, metadata={"off_norm": off_norm}
        ),
        dg.AssetCheckResult(
            check_name="hnsw_index_used",
            passed=HNSW_INDEX in plan,
            metadata={"plan": dg.MetadataValue.md(f"```\n{plan}\n```")},
        ),  # fmt: skip
        dg.AssetCheckResult(
            check_name="no_duplicate_ids",
            passed=duplicates == 0,
            metadata={"duplicated_ids": duplicates},
        ),  # fmt: skip
        dg.AssetCheckResult(
            check_name="no_orphans",
            passed=orphan_versions == 0 and orphan_parents == 0,
            metadata={"bad_version_rows": orphan_versions, "missing_parents": orphan_parents},
        ),
    ]

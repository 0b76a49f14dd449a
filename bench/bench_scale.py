"""pgvector at scale: N synthetic chunks vs the real corpus size, one run (issues 7, 16, 46).

Usage: .venv/bin/python bench/bench_scale.py [--rows 100000] [--jurisdictions 36|7]
       [--sample-rows 600] [--queries 200] [--ef 40,100,200] [--modes planner,hnsw]
       [--maintenance-work-mem 1GB] [--build-workers 1] [--crossover QUERIES]
       [--layout grouped|random] [--truth sql|numpy] [--no-real] [--keep]

Everything happens in a NEW database (``--database``, default ``bench_scale``) on the project's
server (``resolve_database_url(Settings.from_env())``: the embedded one unless
``CIVICSETU_DATABASE_URL`` is set), with the project's own migrations applied, dropped at the end
unless ``--keep``. The default database is only ever read (the real vectors, in a read-only
session, for the real-corpus row).

Corpora, measured one after the other in the same table ``legal_chunks``:

* ``sample``: ``--sample-rows`` synthetic chunks (600: the size of the real corpus);
* ``real``: the real ``legal_chunks`` vectors and jurisdictions of the default database, when it
  has them (``--no-real`` skips it); text columns synthetic;
* ``scale``: ``--rows`` synthetic chunks (100k by default; 1M with ``--rows 1000000``).

Synthetic data: 384-d unit vectors, each one or two of 500 cluster centres (Zipf-like
popularity) plus noise: centres and most of the noise in a 96-d topic subspace with a decaying
spectrum around one common direction, some in a 16-d subspace of the centre's own, a little
isotropic. Not uniform noise: the shape is calibrated on the real corpus's vectors (cosine of
random pairs, to the 1st and 10th neighbour, variance in the top principal components; the run
prints them for every corpus). Jurisdictions, independent of the clusters (the hard case for a
filtered HNSW scan): ``--jurisdictions 36`` (the default, issue 16): the Union, the 28 states
and 7 union territories with Zipf shares 1/rank (24% ... 0.67%), the 8th holding 3%;
``--jurisdictions 7`` (issue 7): 30% ... 3%. ``--layout grouped`` (the default) writes each
jurisdiction's rows together, as one ``load_partition`` per jurisdiction does; ``random``
interleaves them row by row (the worst case for the exact search of a filter; the only layout
before issue 16). Rows have every NOT NULL column of ``document_versions`` / ``legal_chunks``
(one current version per 200 chunks; texts of ~400-1800 characters, so the generated
``tsvector`` and its GIN index cost what they cost in production).

Per corpus:

1. load: ``TRUNCATE``, the HNSW index dropped, binary ``COPY`` of versions and chunks (rows/s),
   ``VACUUM ANALYZE``; then the index re-created from its own definition in ``sql/0002_store.sql``
   (``pg_get_indexdef``: m=16, ef_construction=64, cosine) with ``maintenance_work_mem`` and
   ``max_parallel_maintenance_workers`` set for that session: build seconds, index size;
2. exact top-10 (the ground truth): the same filters with index scans disabled
   (``enable_indexscan``/``enable_bitmapscan``/``enable_indexonlyscan`` off: a sequential scan and
   a top-N sort, checked with EXPLAIN), cross-checked against numpy brute force; with ``--truth
   numpy`` the scale corpus's truth is numpy brute force alone (at 1M rows a sequential scan
   takes ~3 s a query);
3. ANN top-10 through the production call ``retrieval.vector_candidates`` on a session set up by
   ``retrieval.prepare_session(conn, ef_search)`` (``hnsw.iterative_scan = relaxed_order``), for
   each ef_search, unfiltered and filtered five ways: ``small`` (the jurisdiction nearest 3% of
   the rows), ``big`` (the biggest), ``tiny`` (the smallest, 0.67% with 36 jurisdictions) and
   ``pair`` (small and big together: a state and the Act, the answer path's usual scope), in
   modes: ``planner`` (what production gets: ``store.knn_strategy`` searches jurisdictions with
   their own partial HNSW index through it (issue 46), a filter on at most
   ``store.EXACT_SCAN_MAX_ROWS`` rows otherwise exactly, anything else with the whole-table
   HNSW statement, for which the planner may still prefer a sequential scan on a small
   table), ``partial`` (the partial-index statement forced: one arm per jurisdiction, its
   partial index or, without one, exact),
   ``planner16`` (production before issue 46: the same strategy with no partial index built),
   ``hnsw`` (the HNSW
   statement forced, with ``enable_seqscan``/``enable_sort``/``enable_bitmapscan`` off as
   ``store.explain_nearest`` does: the index is used whatever the size; the production path
   before issue 16) and ``exact`` (the exact statement forced: the filter's rows, every
   distance, a top-k sort). The plan of each is captured from the server with ``auto_explain``
   (so it is the plan of the production SQL) and shown as hnsw / seq / btree.
   ``--modes planner,hnsw,strict`` adds ``strict``: the index forced with
   ``hnsw.iterative_scan = strict_order`` (a comparison; production runs relaxed_order).
   Every mode but ``planner`` and ``partial`` runs first, on the whole-table index alone; then
   every jurisdiction over ``PARTIAL_INDEX_MIN_ROWS`` rows gets its partial index
   (``partial_indexes.sync_partial_index``, as ``load_partition`` calls it; build seconds and
   MB each) and ``planner`` and ``partial`` run;
4. with ``--crossover QUERIES`` (scale corpus only): every jurisdiction filtered alone, the exact
   and the HNSW statement interleaved per query at the first ``--ef``: p50/p95, their ratio,
   recall@10 against numpy brute force and the plans, by jurisdiction size: where the exact
   search stops beating HNSW places ``EXACT_SCAN_MAX_ROWS``.

Latency is wall time around the call (Unix socket round trip, rows fetched into dicts), p50/p95 of
``--queries`` queries per cell after 20 untimed warm-up queries; queries are fresh draws of the
same generator (perturbed centres; for ``real``, real vectors perturbed to cosine ~0.85), and the
four filters are interleaved per query. Each cell also reports ``small/unfilt p95``: the small
filter's p95 over the unfiltered p95 of the same cell (issue 16's target: at most 2). The load
average is printed at each phase: the machine is shared. With ``--rows`` below 1M the run ends
with an estimate of a 1M run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import hashlib
import math
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import psycopg
from psycopg import sql

from civicsetu_pipelines.answer.retrieval import (
    prepare_session,
    vector_candidates,
    vector_statement,
)
from civicsetu_pipelines.base.settings import Settings
from civicsetu_pipelines.store.database import (
    apply_migrations,
    connect,
    ensure_database,
    redact_url,
    resolve_database_url,
    with_database,
)
from civicsetu_pipelines.store.legal_chunks import (
    EXACT_SCAN_MAX_ROWS,
    HNSW_INDEX,
    PARTIAL_INDEX_MIN_ROWS,
    KnnStrategy,
    prepare,
)
from civicsetu_pipelines.store.partial_indexes import (
    PARTIAL_INDEX_PREFIX,
    partial_index_name,
    sync_partial_index,
    sync_partial_indexes,
)

DIM = 384
K = 10
# The generator's shape, calibrated on the real corpus (583 all-MiniLM-L6-v2 vectors): mean
# cosine of random pairs 0.36, to the 1st/10th neighbour 0.84/0.66, 45%/80%/92% of the variance
# in the top 10/50/100 principal components; this generator at 600 rows: 0.39, 0.82/0.64,
# 50%/81%/92% (the bench prints both).
CENTRES = 500
TOPIC_RANK = 96
LOCAL_RANK = 16
COMMON = 0.78
NOISE_TOPIC = 0.27
NOISE_LOCAL = 0.33
NOISE_ISOTROPIC = 0.11
CHUNKS_PER_DOCUMENT = 200
WARMUP = 20
ONE_MILLION = 1_000_000
BUDGET_S = 20 * 60
SMALL_SHARE = 0.03  # the "small" filter: the jurisdiction whose share of rows is nearest this
# 7 jurisdictions (issue 7): skewed 30% ... 3%, the smallest is the small filter.
SKEW_7 = (
    ("CENTRAL", 0.30), ("MAHARASHTRA", 0.25), ("KARNATAKA", 0.15), ("GUJARAT", 0.12),
    ("TAMIL_NADU", 0.09), ("UTTAR_PRADESH", 0.06), ("CHANDIGARH", 0.03),
)  # fmt: skip
# 36 jurisdictions (issue 16): the Union, the 28 states and 7 union territories (the codes of
# data/jurisdictions.yaml), Zipf shares 1/rank (24.0%, 12.0%, 8.0% ... 0.67%): rank 8 (GUJARAT)
# holds 3.01%, the small filter; the smallest holds 0.67%.
NAMES_36 = (
    "CENTRAL", "ANDHRA_PRADESH", "ARUNACHAL_PRADESH", "ASSAM", "BIHAR", "CHHATTISGARH", "GOA",
    "GUJARAT", "HARYANA", "HIMACHAL_PRADESH", "JHARKHAND", "KARNATAKA", "KERALA",
    "MADHYA_PRADESH", "MAHARASHTRA", "MANIPUR", "MEGHALAYA", "MIZORAM", "NAGALAND", "ODISHA",
    "PUNJAB", "RAJASTHAN", "SIKKIM", "TAMIL_NADU", "TELANGANA", "TRIPURA", "UTTAR_PRADESH",
    "UTTARAKHAND", "WEST_BENGAL", "ANDAMAN_AND_NICOBAR_ISLANDS", "CHANDIGARH",
    "DADRA_AND_NAGAR_HAVELI_AND_DAMAN_AND_DIU", "DELHI", "JAMMU_AND_KASHMIR", "LADAKH",
    "PUDUCHERRY",
)  # fmt: skip
_HARMONIC_36 = sum(1.0 / r for r in range(1, len(NAMES_36) + 1))
SKEW_36 = tuple((name, 1.0 / (rank * _HARMONIC_36)) for rank, name in enumerate(NAMES_36, start=1))
SKEWS = {7: SKEW_7, 36: SKEW_36}
FILTERS = ("unfiltered", "small", "big", "tiny", "pair")
FILTER_ABBREV = "u/s/b/t/p"
MODES = ("planner", "partial", "planner16", "hnsw", "strict", "exact")
# Modes measured after the partial indexes are built (issue 46); the others run before, on the
# whole-table index alone (as every filter did before issue 46).
AFTER_PARTIAL = ("planner", "partial")
FORCE_INDEX = ("enable_seqscan", "enable_sort", "enable_bitmapscan")
MODE_SETTINGS = {
    "planner": (), "partial": (), "planner16": (), "hnsw": FORCE_INDEX, "strict": FORCE_INDEX,
    "exact": (),
}  # fmt: skip
# The strategy passed to vector_candidates: None lets production choose (store.knn_strategy).
MODE_STRATEGY: dict[str, KnnStrategy | None] = {
    "planner": None, "partial": "partial", "planner16": None, "hnsw": "hnsw", "strict": "hnsw",
    "exact": "exact",
}  # fmt: skip
EXACT_OFF = ("enable_indexscan", "enable_bitmapscan", "enable_indexonlyscan")
MODEL_ID = "synthetic-384"
WORDS_TEXT = (
    "promoter allottee authority registration project real estate agent apartment building "
    "carpet area common areas completion certificate occupancy sale agreement deposit refund "
    "interest compensation penalty appellate tribunal adjudicating officer complaint order "
    "section rule regulation form application fee quarterly update website disclosure escrow "
    "account seventy per cent withdrawal engineer architect chartered accountant certificate "
    "possession delay defect liability structural insurance title land encumbrance sanction "
    "plan layout approval competent revocation extension lapse association maintenance "
    "conveyance deed schedule payment instalment default cancellation forfeiture notice hearing "
    "inquiry inspection investigation direction imprisonment fine contravention offence "
    "composition appeal pre-deposit limitation days months year prescribed manner state central "
    "government notification gazette jurisdiction planning area phase garage parking amenities"
)
WORDS = WORDS_TEXT.split()


# ---------------------------------------------------------------------------------------------
# Data


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


class Generator:
    """Clustered 384-d unit vectors (see the module docstring) and chunk texts."""

    def __init__(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        common = _unit(rng.standard_normal(DIM))
        # A TOPIC_RANK-d subspace with a decaying spectrum: centres and shared noise live there.
        basis = np.linalg.qr(rng.standard_normal((DIM, TOPIC_RANK)))[0].T  # (rank, DIM)
        spectrum = 1.0 / np.sqrt(np.arange(1, TOPIC_RANK + 1))
        spectrum /= np.linalg.norm(spectrum)  # E|spectrum * z| = 1
        self.topic_basis = (spectrum[:, None] * basis).astype(np.float32)
        offsets = rng.standard_normal((CENTRES, TOPIC_RANK)) @ self.topic_basis
        self.centres = _unit(COMMON * common + offsets).astype(np.float32)
        popularity = 1.0 / np.arange(1, CENTRES + 1) ** 0.7
        self.popularity = rng.permutation(popularity / popularity.sum())
        self.local_bases = (
            rng.standard_normal((CENTRES, LOCAL_RANK, DIM)) / math.sqrt(LOCAL_RANK * DIM)
        ).astype(np.float32)
        sentences = []
        for _ in range(3000):
            words = rng.choice(WORDS, int(rng.integers(8, 24)))
            sentences.append(" ".join(str(w) for w in words).capitalize() + ".")
        self.sentences = sentences

    def vectors(self, n: int, rng: np.random.Generator, block: int = 50_000) -> np.ndarray:
        out = np.empty((n, DIM), dtype=np.float32)
        for start in range(0, n, block):
            m = min(block, n - start)
            main = rng.choice(CENTRES, m, p=self.popularity)
            second = rng.choice(CENTRES, m, p=self.popularity)
            weight = rng.uniform(0.0, 0.5, m) * (rng.random(m) < 0.5)
            v = self.centres[main] + weight[:, None] * self.centres[second]
            v += NOISE_TOPIC * (rng.standard_normal((m, TOPIC_RANK)) @ self.topic_basis)
            order = np.argsort(main, kind="stable")
            bounds = np.flatnonzero(np.diff(main[order])) + 1
            for group in np.split(order, bounds):
                z = rng.standard_normal((len(group), LOCAL_RANK)).astype(np.float32)
                v[group] += NOISE_LOCAL * (z @ self.local_bases[main[group[0]]])
            v += NOISE_ISOTROPIC * rng.standard_normal((m, DIM)) / math.sqrt(DIM)
            out[start : start + m] = _unit(v)
        return out

    def texts(self, n: int, rng: np.random.Generator) -> list[str]:
        counts = rng.integers(3, 14, n)
        picks = rng.integers(0, len(self.sentences), int(counts.sum()))
        texts, at = [], 0
        for c in counts:
            texts.append(" ".join(self.sentences[i] for i in picks[at : at + c]))
            at += c
        return texts


@dataclass
class Corpus:
    label: str
    vectors: np.ndarray  # (n, DIM) float32, unit norm
    jurisdiction: np.ndarray  # (n,) index into names
    names: tuple[str, ...]
    queries: np.ndarray  # (q, DIM)
    texts: list[str]
    note: str = ""

    @property
    def rows(self) -> int:
        return len(self.vectors)

    def sizes(self) -> dict[str, int]:
        counts = np.bincount(self.jurisdiction, minlength=len(self.names))
        return {name: int(c) for name, c in zip(self.names, counts, strict=True) if c}

    def filters(self) -> dict[str, list[str] | None]:
        """No filter; the jurisdiction nearest SMALL_SHARE of the rows; the biggest; the
        smallest ("tiny": the same as small with 7 jurisdictions); ``pair``: small and big
        together (a state and the Act, the answer path's usual scope)."""
        sizes = self.sizes()
        ranked = sorted(sizes, key=lambda name: (sizes[name], name))
        small = min(ranked, key=lambda name: (abs(sizes[name] - SMALL_SHARE * self.rows), name))
        return {"unfiltered": None, "small": [small], "big": [ranked[-1]],
                "tiny": [ranked[0]], "pair": [small, ranked[-1]]}  # fmt: skip

    def members(self, flt: list[str] | None) -> np.ndarray:
        """Row positions a filter keeps."""
        if flt is None:
            return np.arange(self.rows)
        return np.flatnonzero(np.isin(self.jurisdiction, [self.names.index(n) for n in flt]))


def synthetic_corpus(
    label: str,
    rows: int,
    queries: int,
    gen: Generator,
    seed: int,
    skew: Sequence[tuple[str, float]] = SKEW_36,
    layout: str = "grouped",
) -> Corpus:
    rng = np.random.default_rng(seed)
    weights = np.array([w for _, w in skew])
    corpus = Corpus(
        label=label,
        vectors=gen.vectors(rows, rng),
        jurisdiction=rng.choice(len(skew), rows, p=weights / weights.sum()),
        names=tuple(name for name, _ in skew),
        queries=gen.vectors(queries, rng),
        texts=gen.texts(rows, rng),
        note=f"synthetic, {layout} layout",
    )
    if layout == "grouped":  # one jurisdiction after the other, as load_partition writes them
        order = np.argsort(corpus.jurisdiction, kind="stable")
        corpus.vectors = corpus.vectors[order]
        corpus.jurisdiction = corpus.jurisdiction[order]
        corpus.texts = [corpus.texts[i] for i in order]
    return corpus


def real_corpus(base_url: str, queries: int, gen: Generator, seed: int) -> Corpus | None:
    """The default database's current vectors (read-only), or None when it has none."""
    with connect(base_url, autocommit=True) as conn:
        conn.execute("SET default_transaction_read_only = on")
        if conn.execute("SELECT to_regclass('legal_chunks')").fetchone() in (None, (None,)):
            return None
        prepare(conn)
        rows = conn.execute(
            "SELECT embedding, jurisdiction FROM legal_chunks WHERE status = 'current' "
            "AND embedding IS NOT NULL ORDER BY row_id"
        ).fetchall()
    rows = [r for r in rows if len(r[0].to_numpy()) == DIM]
    if len(rows) < 2 * K:
        return None
    vectors = _unit(np.stack([r[0].to_numpy() for r in rows]).astype(np.float32))
    names = tuple(sorted({str(r[1]) for r in rows}))
    jurisdiction = np.array([names.index(str(r[1])) for r in rows])
    rng = np.random.default_rng(seed)
    base = vectors[rng.integers(0, len(vectors), queries)]
    noise = 0.6 * rng.standard_normal(base.shape) / math.sqrt(DIM)
    return Corpus(
        label="real",
        vectors=vectors,
        jurisdiction=jurisdiction,
        names=names,
        queries=_unit(base + noise).astype(np.float32),
        texts=gen.texts(len(vectors), rng),
        note="real vectors, read-only from the default database",
    )


# ---------------------------------------------------------------------------------------------
# Loading


VERSION_COLUMNS = ("version_id", "document_key", "jurisdiction", "sha256", "valid_from", "status")
VERSION_TYPES = ("int8", "text", "text", "text", "date", "text")
CHUNK_COLUMNS = (
    "chunk_id", "version_id", "document_key", "jurisdiction", "doc_type", "unit", "number",
    "legal_path", "label", "section_label", "title", "chapter", "text", "page_start", "page_end",
    "char_start", "char_end", "ordinal", "level", "row_sha256", "content_sha256", "model_id",
    "embedding", "embedding_windows", "status", "valid_from",
)  # fmt: skip
CHUNK_TYPES = (
    "uuid", "int8", "text", "text", "text", "text", "text", "text", "text", "text", "text",
    "text", "text", "int4", "int4", "int4", "int4", "int4", "int4", "text", "text", "text",
    "vector", "int4", "text", "date",
)  # fmt: skip
VALID_FROM = dt.date(2017, 5, 1)


@dataclass
class LoadResult:
    load_s: float = 0.0
    vacuum_s: float = 0.0
    build_s: float = 0.0
    index_mb: float = 0.0
    table_mb: float = 0.0
    notices: list[str] = field(default_factory=list)
    # issue 46: the partial indexes (jurisdiction -> build seconds, MB), built after phase one
    partial: dict[str, tuple[float, float]] = field(default_factory=dict)


def _documents(corpus: Corpus) -> tuple[np.ndarray, list[tuple[int, str, str]]]:
    """Version id per chunk, and (version_id, document_key, jurisdiction) per document."""
    version = np.empty(corpus.rows, dtype=np.int64)
    docs: list[tuple[int, str, str]] = []
    for j, name in enumerate(corpus.names):
        members = np.flatnonzero(corpus.jurisdiction == j)
        for start in range(0, len(members), CHUNKS_PER_DOCUMENT):
            docs.append(
                (len(docs) + 1, f"{name.lower()}_doc_{start // CHUNKS_PER_DOCUMENT:05d}", name)
            )
            version[members[start : start + CHUNKS_PER_DOCUMENT]] = len(docs)
    return version, docs


def _chunk_rows(
    corpus: Corpus, version: np.ndarray, docs: list[tuple[int, str, str]]
) -> Iterator[tuple[Any, ...]]:
    ids = np.random.default_rng(len(version)).bytes(16 * corpus.rows)
    for i in range(corpus.rows):
        _, key, jurisdiction = docs[int(version[i]) - 1]
        text = corpus.texts[i]
        number = str(i % CHUNKS_PER_DOCUMENT + 1)
        digest = hashlib.sha256(f"{corpus.label}:{i}".encode()).hexdigest()
        yield (
            uuid.UUID(bytes=ids[16 * i : 16 * i + 16]), int(version[i]), key, jurisdiction,
            "rules", "rule", number, f"rule:{number}", f"Rule {number}", f"Rule {number}",
            f"Synthetic rule {number}", "Chapter I", text, 1 + i % 40, 1 + i % 40, 0, len(text),
            i % CHUNKS_PER_DOCUMENT, 1, digest, digest, MODEL_ID, corpus.vectors[i], 1,
            "current", VALID_FROM,
        )  # fmt: skip


def load(url: str, corpus: Corpus, index_def: str, args: argparse.Namespace) -> LoadResult:
    result = LoadResult()
    version, docs = _documents(corpus)
    with connect(url, autocommit=True) as conn:
        prepare(conn)
        conn.add_notice_handler(lambda d: result.notices.append(str(d.message_primary)))
        conn.execute("TRUNCATE legal_chunks, document_versions RESTART IDENTITY")
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(HNSW_INDEX)))
        sync_partial_indexes(conn, min_rows=EXACT_SCAN_MAX_ROWS)  # the table is empty: drops all
        started = time.perf_counter()
        with conn.transaction(), conn.cursor() as cur:
            columns = sql.SQL(", ").join(map(sql.Identifier, VERSION_COLUMNS))
            copy_sql = sql.SQL("COPY document_versions ({}) FROM STDIN (FORMAT BINARY)")
            with cur.copy(copy_sql.format(columns)) as copy:
                copy.set_types(list(VERSION_TYPES))
                for version_id, key, jurisdiction in docs:
                    copy.write_row((version_id, key, jurisdiction, "0" * 64, VALID_FROM, "current"))
            cur.execute(
                "SELECT setval(pg_get_serial_sequence('document_versions', 'version_id'), %s)",
                (len(docs),),
            )
            columns = sql.SQL(", ").join(map(sql.Identifier, CHUNK_COLUMNS))
            copy_sql = sql.SQL("COPY legal_chunks ({}) FROM STDIN (FORMAT BINARY)")
            with cur.copy(copy_sql.format(columns)) as copy:
                copy.set_types(list(CHUNK_TYPES))
                for row in _chunk_rows(corpus, version, docs):
                    copy.write_row(row)
        result.load_s = time.perf_counter() - started
        started = time.perf_counter()
        conn.execute("VACUUM ANALYZE legal_chunks")
        conn.execute("ANALYZE document_versions")
        result.vacuum_s = time.perf_counter() - started
        conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (args.mwm,))
        conn.execute(
            "SELECT set_config('max_parallel_maintenance_workers', %s, false)",
            (str(args.build_workers),),
        )
        started = time.perf_counter()
        conn.execute(index_def)  # type: ignore[arg-type]
        result.build_s = time.perf_counter() - started
        size = conn.execute(
            "SELECT pg_relation_size(%s::regclass), pg_total_relation_size('legal_chunks')",
            (HNSW_INDEX,),
        ).fetchone()
        assert size is not None
        result.index_mb, result.table_mb = size[0] / 2**20, size[1] / 2**20
        conn.execute("ANALYZE legal_chunks")
    return result


# ---------------------------------------------------------------------------------------------
# Queries


EXACT_SQL = (
    "SELECT chunk_id::text FROM legal_chunks WHERE status = 'current' AND embedding IS NOT NULL"
    " {filter} ORDER BY embedding <=> %s LIMIT %s"
)


@dataclass
class Cell:
    """One (mode, ef_search): per filter, latencies (ms), recall@10 and the plan used."""

    mode: str
    ef: int
    latency: dict[str, list[float]] = field(default_factory=dict)
    recall: dict[str, float] = field(default_factory=dict)
    plans: dict[str, str] = field(default_factory=dict)


@dataclass
class CorpusResult:
    corpus: Corpus
    loaded: LoadResult
    exact_latency: dict[str, list[float]] = field(default_factory=dict)
    exact_plans: dict[str, str] = field(default_factory=dict)
    numpy_agreement: dict[str, float] = field(default_factory=dict)
    shape: tuple[float, ...] = ()  # see shape_of
    cells: list[Cell] = field(default_factory=list)
    loadavg: list[tuple[str, float]] = field(default_factory=list)

    def cell(self, mode: str, ef: int) -> Cell:
        return next(c for c in self.cells if c.mode == mode and c.ef == ef)


def build_partials(url: str, corpus: Corpus, args: argparse.Namespace) -> LoadResult:
    """Issue 46: every jurisdiction over ``PARTIAL_INDEX_MIN_ROWS`` current rows gets its partial
    HNSW index (``partial_indexes.sync_partial_index``, as ``load_partition`` calls it), one
    after the other: build seconds and MB each."""
    out: dict[str, tuple[float, float]] = {}
    with connect(url, autocommit=True) as conn:
        conn.execute(
            "SELECT set_config('max_parallel_maintenance_workers', %s, false)",
            (str(args.build_workers),),
        )
        for name in sorted(corpus.sizes(), key=lambda n: -corpus.sizes()[n]):
            started = time.perf_counter()
            action = sync_partial_index(conn, name, min_rows=PARTIAL_INDEX_MIN_ROWS)
            seconds = time.perf_counter() - started
            if action == "created":
                row = conn.execute(
                    "SELECT pg_relation_size(%s::regclass)", (partial_index_name(name),)
                ).fetchone()
                assert row is not None
                out[name] = (seconds, row[0] / 2**20)
        conn.execute("ANALYZE legal_chunks")
    result = LoadResult()
    result.partial = out
    return result


def plan_kind(plan: str) -> str:
    if PARTIAL_INDEX_PREFIX in plan:
        return "partial"
    if HNSW_INDEX in plan:
        return "hnsw"
    if "legal_chunks_jurisdiction_status" in plan:
        return "btree"
    if "Seq Scan on legal_chunks" in plan:
        return "seq"
    return "other"


def numpy_truth(result: CorpusResult, chunk_ids: list[str]) -> dict[str, list[list[str]]]:
    """Exact top-10 ids per filter and query by numpy brute force (float32 dot products of the
    unit vectors): the ground truth of ``--truth numpy`` (SQL and numpy agreed 1.000 on every
    corpus so far, and at 1M rows the SQL scans take ~3 s a query)."""
    corpus = result.corpus
    truth: dict[str, list[list[str]]] = {}
    for name, flt in corpus.filters().items():
        rows = corpus.members(flt)
        ids: list[list[str]] = []
        for start in range(0, len(corpus.queries), 25):
            scores = corpus.queries[start : start + 25] @ corpus.vectors[rows].T
            k = min(K, len(rows))
            top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
            for i in range(len(top)):
                order = top[i][np.argsort(-scores[i, top[i]])]
                ids.append([chunk_ids[rows[j]] for j in order])
        truth[name] = ids
        result.exact_plans[name] = "numpy"
        result.numpy_agreement[name] = 1.0
    return truth


def _exact_query(flt: list[str] | None) -> tuple[str, list[Any]]:
    if flt is None:
        return EXACT_SQL.format(filter=""), []
    return EXACT_SQL.format(filter="AND jurisdiction = ANY(%s)"), [flt]


def exact_truth(url: str, result: CorpusResult) -> dict[str, list[list[str]]]:
    """Exact top-10 ids per filter and query (sequential scan; plan checked)."""
    corpus = result.corpus
    truth: dict[str, list[list[str]]] = {}
    with connect(url, autocommit=True) as conn:
        prepare(conn)
        for setting in EXACT_OFF:
            conn.execute("SELECT set_config(%s, 'off', false)", (setting,))
        for name, flt in corpus.filters().items():
            query, values = _exact_query(flt)
            plan = "\n".join(
                str(r[0])
                for r in conn.execute(
                    "EXPLAIN " + query,  # type: ignore[arg-type]
                    (*values, corpus.queries[0], K),
                ).fetchall()
            )
            result.exact_plans[name] = plan_kind(plan)
            if HNSW_INDEX in plan or "Seq Scan on legal_chunks" not in plan:
                raise SystemExit(f"exact path for {name} does not scan sequentially:\n{plan}")
            ids, times = [], []
            for q in corpus.queries:
                started = time.perf_counter()
                rows = conn.execute(query, (*values, q, K)).fetchall()  # type: ignore[arg-type]
                times.append((time.perf_counter() - started) * 1e3)
                ids.append([str(r[0]) for r in rows])
            truth[name] = ids
            result.exact_latency[name] = times
    return truth


def numpy_agreement(
    result: CorpusResult, truth: dict[str, list[list[str]]], chunk_ids: list[str]
) -> None:
    """Share of the SQL exact top-10 that numpy brute force (float32 dot products) agrees on."""
    corpus = result.corpus
    for name, flt in corpus.filters().items():
        rows = corpus.members(flt)
        scores = corpus.queries @ corpus.vectors[rows].T
        k = min(K, len(rows))
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        hits = [
            len({chunk_ids[rows[j]] for j in top[i]} & set(truth[name][i]))
            / max(1, len(truth[name][i]))
            for i in range(len(corpus.queries))
        ]
        result.numpy_agreement[name] = float(np.mean(hits))


def shape_of(vectors: np.ndarray, seed: int = 0) -> tuple[float, ...]:
    """Mean cosine of random pairs; of a row to its 1st and 10th neighbour (1000 rows at most,
    against all); share of the variance in the top 10/50/100 principal components (20k rows)."""
    rng = np.random.default_rng(seed)
    n = len(vectors)
    a, b = rng.integers(0, n, (2, 5000))
    keep = a != b
    pair = float(np.einsum("ij,ij->i", vectors[a[keep]], vectors[b[keep]]).mean())
    probe = rng.choice(n, min(n, 1000), replace=False)
    tops = []
    for start in range(0, len(probe), 100):  # blocks: 1000 x 1M scores would be 4 GB
        block = probe[start : start + 100]
        sims = vectors[block] @ vectors.T
        sims[np.arange(len(block)), block] = -2.0  # not itself
        tops.append(-np.sort(-np.partition(sims, -K, axis=1)[:, -K:], axis=1))
    top = np.concatenate(tops)
    sample = vectors[rng.choice(n, min(n, 20_000), replace=False)].astype(np.float64)
    variance = np.linalg.svd(sample - sample.mean(0), compute_uv=False) ** 2
    share = np.cumsum(variance) / variance.sum()
    return (pair, float(top[:, 0].mean()), float(top[:, K - 1].mean()),
            *(float(share[min(c, len(share)) - 1]) for c in (10, 50, 100)))  # fmt: skip


def chunk_ids_in_order(url: str) -> list[str]:
    with connect(url, autocommit=True) as conn:
        return [str(r[0]) for r in conn.execute(
            "SELECT chunk_id::text FROM legal_chunks ORDER BY row_id"
        ).fetchall()]  # fmt: skip


def _capture_plans(
    conn: psycopg.Connection[Any],
    corpus: Corpus,
    query: np.ndarray,
    strategy: KnnStrategy | None = None,
) -> dict[str, str]:
    """The plan the server ran for vector_candidates, per filter (auto_explain notices)."""
    notices: list[str] = []

    def handler(diag: psycopg.errors.Diagnostic) -> None:
        notices.append(str(diag.message_primary))

    conn.add_notice_handler(handler)
    plans: dict[str, str] = {}
    try:
        conn.execute("LOAD 'auto_explain'")
        conn.execute("SELECT set_config('auto_explain.log_level', 'notice', false)")
        for name, flt in corpus.filters().items():
            notices.clear()
            conn.execute("SELECT set_config('auto_explain.log_min_duration', '0', false)")
            vector_candidates(conn, query, K, jurisdictions=flt, strategy=strategy)
            conn.execute("SELECT set_config('auto_explain.log_min_duration', '-1', false)")
            found = [n for n in notices if "legal_chunks c" in n]  # not the statistics
            plans[name] = plan_kind(found[0]) if found else "?"
    except psycopg.Error:  # not a superuser on an external server: no auto_explain
        plans = dict.fromkeys(FILTERS, "?")
    finally:
        conn.remove_notice_handler(handler)
    return plans


def run_cells(
    url: str,
    result: CorpusResult,
    truth: dict[str, list[list[str]]],
    efs: Sequence[int],
    modes: Sequence[str],
) -> None:
    corpus = result.corpus
    filters = corpus.filters()
    for mode in modes:
        with connect(url, autocommit=True) as conn:
            for setting in MODE_SETTINGS[mode]:
                conn.execute("SELECT set_config(%s, 'off', false)", (setting,))
            for ef in efs:
                prepare_session(conn, ef)
                if mode == "strict":  # a comparison only: production runs relaxed_order
                    conn.execute("SELECT set_config('hnsw.iterative_scan', 'strict_order', false)")
                strategy = MODE_STRATEGY[mode]
                plans = _capture_plans(conn, corpus, corpus.queries[0], strategy)
                cell = Cell(mode, ef, plans=plans)
                for q in corpus.queries[:WARMUP]:
                    for flt in filters.values():
                        vector_candidates(conn, q, K, jurisdictions=flt, strategy=strategy)
                found: dict[str, list[list[str]]] = {name: [] for name in filters}
                times: dict[str, list[float]] = {name: [] for name in filters}
                for q in corpus.queries:
                    for name, flt in filters.items():
                        started = time.perf_counter()
                        rows = vector_candidates(conn, q, K, jurisdictions=flt, strategy=strategy)
                        times[name].append((time.perf_counter() - started) * 1e3)
                        found[name].append([str(r["chunk_id"]) for r in rows])
                cell.latency = times
                for name in filters:
                    hits = [
                        len(set(a) & set(e)) / max(1, len(e))
                        for a, e in zip(found[name], truth[name], strict=True)
                    ]
                    cell.recall[name] = float(np.mean(hits))
                result.cells.append(cell)


@dataclass
class Crossing:
    """One jurisdiction filter: the exact and the HNSW strategies, interleaved per query."""

    name: str
    rows: int
    latency: dict[str, list[float]] = field(default_factory=dict)  # strategy -> ms
    recall: dict[str, float] = field(default_factory=dict)
    plans: dict[str, str] = field(default_factory=dict)


CROSSOVER_STRATEGIES: tuple[KnnStrategy, ...] = ("exact", "hnsw")


def crossover(
    url: str, corpus: Corpus, chunk_ids: list[str], ef: int, queries: int
) -> list[Crossing]:
    """Every jurisdiction of ``corpus`` filtered alone, through ``vector_candidates`` with each
    strategy forced, on a production session (``prepare_session(conn, ef)``): latency, recall@10
    against numpy brute force, and the plan (EXPLAIN of the statement each strategy runs)."""
    sizes = corpus.sizes()
    names = sorted(sizes, key=lambda name: (sizes[name], name))
    qs = corpus.queries[:queries]
    out = []
    with connect(url, autocommit=True) as conn:
        prepare_session(conn, ef)
        for name in names:
            members = np.flatnonzero(corpus.jurisdiction == corpus.names.index(name))
            scores = qs @ corpus.vectors[members].T
            top = np.argsort(-scores, axis=1)[:, :K]
            truth = [{chunk_ids[members[j]] for j in row} for row in top]
            cross = Crossing(name, sizes[name])
            for strategy in CROSSOVER_STRATEGIES:
                query, values, _ = vector_statement(
                    conn, K, jurisdictions=[name], strategy=strategy
                )
                plan = "\n".join(
                    str(r[0])
                    for r in conn.execute(
                        "EXPLAIN " + query,  # type: ignore[arg-type]
                        (qs[0], *values),
                    ).fetchall()
                )
                cross.plans[strategy] = plan_kind(plan)
                if strategy == "exact" and HNSW_INDEX in plan:
                    raise SystemExit(f"the exact statement for {name} scans the index:\n{plan}")
                cross.latency[strategy] = []
            for q in corpus.queries[:5]:  # warm-up
                for strategy in CROSSOVER_STRATEGIES:
                    vector_candidates(conn, q, K, jurisdictions=[name], strategy=strategy)
            hits: dict[str, list[float]] = {s: [] for s in CROSSOVER_STRATEGIES}
            for i, q in enumerate(qs):
                for strategy in CROSSOVER_STRATEGIES:
                    started = time.perf_counter()
                    rows = vector_candidates(conn, q, K, jurisdictions=[name], strategy=strategy)
                    cross.latency[strategy].append((time.perf_counter() - started) * 1e3)
                    found = {str(r["chunk_id"]) for r in rows}
                    hits[strategy].append(len(found & truth[i]) / max(1, len(truth[i])))
            cross.recall = {s: float(np.mean(v)) for s, v in hits.items()}
            out.append(cross)
    return out


def report_crossover(crossings: list[Crossing], ef: int, queries: int) -> None:
    print()
    print(
        f"crossover: each jurisdiction alone, exact vs hnsw (ef_search {ef}), {queries} queries "
        f"interleaved; production searches exactly up to EXACT_SCAN_MAX_ROWS = "
        f"{EXACT_SCAN_MAX_ROWS} rows"
    )
    rows: list[tuple[str, ...]] = [(
        "jurisdiction", "rows", "exact p50/p95 ms", "hnsw p50/p95 ms", "exact/hnsw p50",
        "exact/hnsw p95", "recall@10 exact/hnsw", "plan exact/hnsw",
    )]  # fmt: skip
    for c in crossings:
        e, h = c.latency["exact"], c.latency["hnsw"]
        rows.append((
            c.name, str(c.rows), p50_p95(e), p50_p95(h),
            f"{pct(e, 0.5) / pct(h, 0.5):.2f}", f"{pct(e, 0.95) / pct(h, 0.95):.2f}",
            f"{c.recall['exact']:.3f}/{c.recall['hnsw']:.3f}",
            f"{c.plans['exact']}/{c.plans['hnsw']}",
        ))  # fmt: skip
    table(rows)


# ---------------------------------------------------------------------------------------------
# Reporting


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def p50_p95(values: Sequence[float]) -> str:
    return f"{pct(values, 0.5):.2f}/{pct(values, 0.95):.2f}"


def p95_ratio(latency: dict[str, list[float]]) -> str:
    """The small filter's p95 over the unfiltered p95 of the same cell (the same run)."""
    return f"{pct(latency['small'], 0.95) / pct(latency['unfiltered'], 0.95):.2f}"


def loadavg(label: str, into: list[tuple[str, float]]) -> None:
    one = os.getloadavg()[0]
    into.append((label, one))
    print(f"  [{time.strftime('%H:%M:%S')}] {label}: load average {one:.2f}", flush=True)


def table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for n, row in enumerate(rows):
        print(
            "  ".join(
                cell.rjust(w) if i else cell.ljust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            print("  ".join("-" * w for w in widths))


def report(results: list[CorpusResult], efs: Sequence[int], args: argparse.Namespace) -> None:
    print()
    print(
        f"maintenance_work_mem {args.mwm}, max_parallel_maintenance_workers {args.build_workers}"
        f", top-{K}, {args.queries} queries per cell, "
        "hnsw.iterative_scan = relaxed_order (strict: strict_order)"
    )
    for r in results:
        sizes = r.corpus.sizes()
        named = ", ".join(
            f"{name} = {'+'.join(flt)} ({sum(sizes[f] for f in flt)} rows)"
            for name, flt in r.corpus.filters().items()
            if flt is not None
        )
        print(
            f"{r.corpus.label}: {r.corpus.rows} rows ({r.corpus.note}), {len(sizes)} "
            f"jurisdictions; {named}; load average "
            + ", ".join(f"{label} {v:.2f}" for label, v in r.loadavg)
        )
    print()
    rows: list[tuple[str, ...]] = [(
        "corpus", "rows", "load s", "rows/s", "build s", "index MB", "mode", "ef",
        *(f"{f[:6]} p50/p95 ms" for f in FILTERS), f"recall@10 {FILTER_ABBREV}",
        "small/unfilt p95", f"plan {FILTER_ABBREV}",
    )]  # fmt: skip
    for r in results:
        ld = r.loaded
        head = (
            r.corpus.label,
            str(r.corpus.rows),
            f"{ld.load_s:.2f}",
            f"{r.corpus.rows / ld.load_s:.0f}",
            f"{ld.build_s:.2f}",
            f"{ld.index_mb:.1f}",
        )
        timed = bool(r.exact_latency)  # --truth numpy: no SQL timings
        rows.append(
            (
                *head,
                "truth",
                "-",
                *(p50_p95(r.exact_latency[f]) if timed else "-" for f in FILTERS),
                "/".join("1" for _ in FILTERS),
                p95_ratio(r.exact_latency) if timed else "-",
                "/".join(r.exact_plans[f] for f in FILTERS),
            )
        )
        for c in r.cells:
            rows.append(
                (
                    *("",) * len(head),
                    c.mode,
                    str(c.ef),
                    *(p50_p95(c.latency[f]) for f in FILTERS),
                    "/".join(f"{c.recall[f]:.3f}" for f in FILTERS),
                    p95_ratio(c.latency),
                    "/".join(c.plans[f] for f in FILTERS),
                )
            )
    table(rows)
    print()
    for r in results:
        agree = "/".join(f"{r.numpy_agreement[f]:.3f}" for f in FILTERS)
        if not r.exact_latency:
            agree = "n/a (--truth numpy: numpy is the truth)"
        print(
            f"{r.corpus.label}: VACUUM ANALYZE {r.loaded.vacuum_s:.2f} s, table+indexes "
            f"{r.loaded.table_mb:.0f} MB; SQL exact vs numpy exact top-{K} agreement "
            f"{FILTER_ABBREV} "
            f"{agree}; shape: cosine random pair {r.shape[0]:.2f}, 1st/10th neighbour "
            f"{r.shape[1]:.2f}/{r.shape[2]:.2f}, variance in top 10/50/100 PCs "
            + "/".join(f"{v:.2f}" for v in r.shape[3:])
            + (f"; build notices: {r.loaded.notices}" if r.loaded.notices else "")
        )
    for r in results:
        built = r.loaded.partial
        if not built:
            continue
        sizes = r.corpus.sizes()
        single = {f: flt[0] for f, flt in r.corpus.filters().items() if flt and len(flt) == 1}
        print(
            f"{r.corpus.label}: partial HNSW indexes (over {PARTIAL_INDEX_MIN_ROWS} current rows): "
            f"{len(built)} of {len(sizes)} jurisdictions, build "
            f"{sum(s for s, _ in built.values()):.1f} s, {sum(mb for _, mb in built.values()):.1f}"
            " MB in all (whole-table index: "
            f"{r.loaded.build_s:.1f} s, {r.loaded.index_mb:.1f} MB); "
            + ", ".join(
                f"{f} {code} ({sizes[code]} rows) {built[code][0]:.1f} s {built[code][1]:.1f} MB"
                for f, code in single.items()
                if code in built
            )
        )

    scale = next((r for r in results if r.corpus.label == "scale"), None)
    sample = next((r for r in results if r.corpus.label == "sample"), None)
    if scale is None or sample is None:
        return
    print()
    print(f"latency ratios {scale.corpus.rows} / {sample.corpus.rows} rows (p50 / p95)")
    ratio_rows: list[tuple[str, ...]] = [("mode", "ef", *FILTERS)]
    if scale.exact_latency and sample.exact_latency:
        ratio_rows.append(
            (
                "truth",
                "-",
                *(
                    f"{pct(scale.exact_latency[f], 0.5) / pct(sample.exact_latency[f], 0.5):.1f}"
                    f" / "
                    f"{pct(scale.exact_latency[f], 0.95) / pct(sample.exact_latency[f], 0.95):.1f}"
                    for f in FILTERS
                ),
            )
        )
    for mode in dict.fromkeys(c.mode for c in scale.cells):
        for ef in efs:
            a, b = scale.cell(mode, ef), sample.cell(mode, ef)
            ratio_rows.append(
                (
                    mode,
                    str(ef),
                    *(
                        f"{pct(a.latency[f], 0.5) / pct(b.latency[f], 0.5):.2f} / "
                        f"{pct(a.latency[f], 0.95) / pct(b.latency[f], 0.95):.2f}"
                        for f in FILTERS
                    ),
                )
            )
    table(ratio_rows)


def estimate_million(scale: CorpusResult, gen_s: float, args: argparse.Namespace) -> None:
    n = scale.corpus.rows
    if n >= ONE_MILLION:
        return
    f = ONE_MILLION / n
    graph_mb = scale.loaded.index_mb * f
    mwm_mb = _megabytes(args.mwm)
    build = scale.loaded.build_s * f * math.log(ONE_MILLION) / math.log(n)
    exact = sum(sum(v) for v in scale.exact_latency.values()) / 1e3 * f
    anns = sum(sum(sum(v) for v in c.latency.values()) for c in scale.cells) / 1e3
    parts = {
        "generate": gen_s * f,
        "load": scale.loaded.load_s * f,
        "vacuum": scale.loaded.vacuum_s * f,
        "hnsw build (in memory)": build,
        "exact ground truth": exact,
        "ANN queries (x1.5)": anns * 1.5,
    }
    total = sum(parts.values())
    print()
    print(f"estimate for {ONE_MILLION} rows from this {n}-row run (linear, build x N log N):")
    for name, seconds in parts.items():
        print(f"  {name:24s} {seconds / 60:6.1f} min")
    print(f"  {'total':24s} {total / 60:6.1f} min (budget {BUDGET_S // 60} min)")
    fits = total <= BUDGET_S
    if graph_mb > mwm_mb:
        need = 2 ** math.ceil(math.log2(graph_mb * 1.25 / 1024))
        print(
            f"  the graph (~{graph_mb:.0f} MB) would not fit in maintenance_work_mem ({args.mwm}):"
            " pgvector would switch to a slower on-disk build part-way; the figure above assumes"
            f" --mwm {need}GB"
        )
    verdict = "fits" if fits else "does not fit"
    print(f"  -> a 1M run {verdict} the {BUDGET_S // 60}-minute budget on this machine")


def _megabytes(setting: str) -> float:
    units = {"kb": 1 / 1024, "mb": 1.0, "gb": 1024.0, "tb": 1024.0**2}
    text = setting.strip().lower()
    for suffix, factor in units.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    return float(text) / 1024  # bare number: kB


# ---------------------------------------------------------------------------------------------


def _timed(label: str, fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - started
    print(f"  {label}: {seconds:.2f} s", flush=True)
    return seconds, value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=100_000, help="synthetic rows at scale")
    parser.add_argument(
        "--jurisdictions",
        type=int,
        choices=sorted(SKEWS),
        default=36,
        help="36: Zipf shares, the small filter at 3%% (issue 16); 7: 30%% ... 3%% (issue 7)",
    )
    parser.add_argument(
        "--layout",
        choices=("grouped", "random"),
        default="grouped",
        help="grouped: each jurisdiction's rows together on disk, as one load_partition per "
        "jurisdiction writes them; random: interleaved row by row (the worst case for the "
        "exact search of a filter, and the only layout before issue 16)",
    )
    parser.add_argument("--sample-rows", type=int, default=600, help="the corpus-size sample")
    parser.add_argument("--queries", type=int, default=200, help="queries per cell")
    parser.add_argument("--ef", default="40,100,200", help="hnsw.ef_search values")
    parser.add_argument("--mwm", "--maintenance-work-mem", default="1GB", dest="mwm")
    parser.add_argument(
        "--build-workers",
        type=int,
        default=1,
        help="max_parallel_maintenance_workers for the build",
    )
    parser.add_argument(
        "--modes",
        default="planner,hnsw",
        help="planner (production plan), hnsw (index forced), strict (index forced, "
        "hnsw.iterative_scan = strict_order instead of relaxed_order)",
    )
    parser.add_argument(
        "--crossover",
        type=int,
        default=0,
        metavar="QUERIES",
        help="also time every jurisdiction of the scale corpus alone, exact vs hnsw, with this "
        "many queries each (at the first --ef), to place EXACT_SCAN_MAX_ROWS",
    )
    parser.add_argument(
        "--truth",
        choices=("sql", "numpy"),
        default="sql",
        help="ground truth of the scale corpus: sql (index scans off, a sequential scan per "
        "query; cross-checked against numpy) or numpy (brute force only: at 1M rows the SQL "
        "scans take ~3 s a query)",
    )
    parser.add_argument("--database", default="bench_scale", help="scratch database (bench_*)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-real", action="store_true", help="skip the real-corpus row")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    return parser.parse_args(argv)


def _drop(base_url: str, name: str) -> None:
    with connect(base_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    efs = [int(v) for v in args.ef.split(",")]
    modes = [m for m in args.modes.split(",") if m]
    if not set(modes) <= set(MODES):
        raise SystemExit(f"--modes: choose from {', '.join(MODES)}")
    base_url = resolve_database_url(Settings.from_env())
    default_db = urlsplit(base_url).path.lstrip("/") or "postgres"
    if args.database == default_db or not args.database.startswith("bench_"):
        raise SystemExit(f"--database must be a scratch database named bench_*, not {default_db}")
    print(
        f"server {redact_url(base_url)}; scratch database {args.database}; "
        f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )

    skew = SKEWS[args.jurisdictions]
    gen = Generator(args.seed)
    corpora: list[Corpus] = []
    gen_s, scale = _timed(
        f"generate {args.rows} rows",
        lambda: synthetic_corpus(
            "scale", args.rows, args.queries, gen, args.seed + 2, skew, args.layout
        ),
    )
    corpora.append(
        synthetic_corpus(
            "sample", args.sample_rows, args.queries, gen, args.seed + 1, skew, args.layout
        )
    )
    real = None if args.no_real else real_corpus(base_url, args.queries, gen, args.seed + 3)
    if real is not None:
        corpora.append(real)
    corpora.append(scale)

    _drop(base_url, args.database)
    ensure_database(base_url, args.database)
    url = with_database(base_url, args.database)
    results: list[CorpusResult] = []
    crossings: list[Crossing] = []
    try:
        apply_migrations(url)
        with connect(url, autocommit=True) as conn:
            row = conn.execute("SELECT pg_get_indexdef(%s::regclass)", (HNSW_INDEX,)).fetchone()
            version = conn.execute(
                "SELECT current_setting('server_version'), current_setting('shared_buffers'), "
                "(SELECT extversion FROM pg_extension WHERE extname = 'vector')"
            ).fetchone()
        assert row is not None and version is not None
        index_def = str(row[0])
        print(f"PostgreSQL {version[0]}, pgvector {version[2]}, shared_buffers {version[1]}")
        print(f"index: {index_def}", flush=True)
        for corpus in corpora:
            print(f"{corpus.label}: {corpus.rows} rows", flush=True)
            result = CorpusResult(corpus, LoadResult())
            loadavg("before load", result.loadavg)
            result.loaded = load(url, corpus, index_def, args)
            print(
                f"  load {result.loaded.load_s:.2f} s, vacuum {result.loaded.vacuum_s:.2f} s, "
                f"hnsw build {result.loaded.build_s:.2f} s",
                flush=True,
            )
            loadavg("after build", result.loadavg)
            chunk_ids = chunk_ids_in_order(url)
            if args.truth == "numpy" and corpus.label == "scale":
                _, truth = _timed(
                    "numpy ground truth", functools.partial(numpy_truth, result, chunk_ids)
                )
            else:
                _, truth = _timed("exact ground truth", functools.partial(exact_truth, url, result))
                numpy_agreement(result, truth, chunk_ids)
            result.shape = shape_of(corpus.vectors)
            before = [m for m in modes if m not in AFTER_PARTIAL]
            after = [m for m in modes if m in AFTER_PARTIAL]
            if before:
                _timed(
                    "ANN queries, whole-table index only",
                    functools.partial(run_cells, url, result, truth, efs, before),
                )
                loadavg("after queries (whole-table index only)", result.loadavg)
            if after:
                _, built = _timed(
                    "partial indexes", functools.partial(build_partials, url, corpus, args)
                )
                result.loaded.partial = built.partial
                loadavg("after partial indexes", result.loadavg)
                _timed(
                    "ANN queries, partial indexes",
                    functools.partial(run_cells, url, result, truth, efs, after),
                )
                loadavg("after queries", result.loadavg)
            if args.crossover and corpus.label == "scale":
                with connect(url, autocommit=True) as conn:  # exact vs the whole-table graph
                    sync_partial_indexes(conn, min_rows=corpus.rows)
                _, crossings = _timed(
                    "crossover",
                    functools.partial(crossover, url, corpus, chunk_ids, efs[0], args.crossover),
                )
                loadavg("after crossover", result.loadavg)
            results.append(result)
    finally:
        if args.keep:
            print(f"kept database {args.database}")
        else:
            _drop(base_url, args.database)
    report(results, efs, args)
    if crossings:
        report_crossover(crossings, efs[0], args.crossover)
    scale_result = next(r for r in results if r.corpus.label == "scale")
    estimate_million(scale_result, gen_s, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

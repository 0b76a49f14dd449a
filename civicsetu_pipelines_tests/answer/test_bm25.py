"""Full text weighed by how rare a word is (issue 47): Okapi BM25 over the full-text index, on the
real embedded Postgres (logic tier: a fresh database per test, synthetic vectors, no model).

A tribunal's regulations repeat its name in every unit; the one on its seal says "seal" once.
Ranked by ``ts_rank_cd`` (every word alike) the units that repeat the name win; by BM25 the rare
word decides. The weights are read within the scope searched, so another jurisdiction's words
never move an answer."""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from typing import Any

import numpy as np

from civicsetu_pipelines.answer.candidates import term_overlap
from civicsetu_pipelines.answer.retrieval import (
    bm25_candidates,
    fulltext_candidates,
    term_weights,
)
from civicsetu_pipelines.store.database import connect
from civicsetu_pipelines.store.legal_chunks import DocumentVersionInput, load_partition, row_sha256

NAME = "the Maharashtra Real Estate Appellate Tribunal"
HUB = (
    f"In these regulations {NAME} means {NAME} established under section 43, and the Registrar "
    f"of {NAME} shall place every appeal presented to {NAME} before {NAME} for hearing."
)
SEAL = f"The seal of {NAME} shall be in the custody of the Registrar."
QUESTION = ["charge", "seal", "real", "estate", "appellate", "tribunal"]


def chunks(jurisdiction: str, texts: list[str]) -> list[dict[str, Any]]:
    """One regulations document of ``jurisdiction``, a unit per text."""
    key = f"{jurisdiction.lower()}_regulations"
    vectors = np.random.default_rng(0).standard_normal((len(texts), 384)).astype(np.float32)
    out = []
    for i, text in enumerate(texts):
        chunk: dict[str, Any] = {
            "chunk_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{key}/{i}")),
            "document_key": key, "jurisdiction": jurisdiction, "doc_type": "regulations",
            "unit": "regulation", "number": str(i + 1), "legal_path": f"regulation:{i + 1}",
            "label": f"Regulation {i + 1}", "section_label": f"Regulation {i + 1}",
            "title": None, "chapter": None, "text": text, "page_start": 1, "page_end": 1,
            "char_start": 0, "char_end": len(text), "parent_id": None, "ordinal": i, "level": 0,
            "flags": [], "model_id": "synthetic", "embedding_windows": 1,
            "content_sha256": hashlib.sha256(text.encode()).hexdigest(),
            "embedding": vectors[i] / np.linalg.norm(vectors[i]),
        }  # fmt: skip
        chunk["row_sha256"] = row_sha256(chunk)
        out.append(chunk)
    return out


def load(url: str, jurisdiction: str, texts: list[str]) -> None:
    rows = chunks(jurisdiction, texts)
    key = rows[0]["document_key"]
    version = DocumentVersionInput(key, hashlib.sha256(key.encode()).hexdigest(),
                                   dt.date(2019, 1, 1))  # fmt: skip
    with connect(url) as conn:
        load_partition(conn, jurisdiction, registry_keys=[key], documents=[version], chunks=rows)


def test_a_rare_word_decides_where_every_unit_repeats_the_common_ones(store_db: str) -> None:
    load(store_db, "MAHARASHTRA", [HUB] * 9 + [SEAL])
    with connect(store_db) as conn:
        weights = term_weights(conn, [*QUESTION, "of"], jurisdictions=["MAHARASHTRA"])
        assert weights.units == 10
        assert weights.frequency["seal"] == 1 and weights.frequency["tribun"] == 10
        assert weights.frequency["charg"] == 0  # no unit holds it: it finds and adds nothing
        assert weights.idf("seal") > 3 * weights.idf("tribun") > 0
        assert weights.of("Seal") == weights.idf("seal") and weights.of("of") == 0.0

        best = bm25_candidates(conn, QUESTION, weights, 3, jurisdictions=["MAHARASHTRA"])
        assert best[0]["text"] == SEAL and float(best[0]["rank"]) > 2 * float(best[1]["rank"])
        alike = fulltext_candidates(conn, QUESTION, 3, jurisdictions=["MAHARASHTRA"])
        assert alike[0]["text"] == HUB  # every word alike: the repeated name wins
        assert bm25_candidates(conn, ["charge"], weights, 3, jurisdictions=["MAHARASHTRA"]) == []


def test_the_weights_are_the_scopes_own(store_db: str) -> None:
    """A word common in another jurisdiction is still rare in the one searched, and a search
    of both counts both."""
    load(store_db, "MAHARASHTRA", [HUB] * 9 + [SEAL])
    load(store_db, "GOA", [f"The seal of the Authority, rule {i}." for i in range(30)])
    with connect(store_db) as conn:
        alone = term_weights(conn, QUESTION, jurisdictions=["MAHARASHTRA"])
        both = term_weights(conn, QUESTION, jurisdictions=["MAHARASHTRA", "GOA"])
        every = term_weights(conn, QUESTION)
    assert (alone.units, alone.frequency["seal"]) == (10, 1)
    assert (
        (both.units, both.frequency["seal"]) == (40, 31) == (every.units, every.frequency["seal"])
    )
    assert both.idf("seal") < both.idf("tribun") < alone.idf("seal")


def test_odd_words_are_matched_as_lexemes_never_parsed(store_db: str) -> None:
    """Apostrophes, backslashes and tsquery operators in a question are words or nothing,
    never a query error."""
    load(store_db, "MAHARASHTRA", [HUB, SEAL, "The promoter's account: O'Brien & Co. | a\\b"])
    odd = ["promoter's", "O'Brien", "&", "|", "a\\b", "!seal", "(custody)"]
    with connect(store_db) as conn:
        weights = term_weights(conn, odd, jurisdictions=["MAHARASHTRA"])
        found = bm25_candidates(conn, odd, weights, 5, jurisdictions=["MAHARASHTRA"])
    assert weights.of("&") == 0.0 and weights.frequency["promot"] == 1
    assert {r["label"] for r in found} == {"Regulation 2", "Regulation 3"}


def test_overlap_weighs_a_rare_word_over_common_ones(store_db: str) -> None:
    load(store_db, "MAHARASHTRA", [HUB] * 9 + [SEAL])
    with connect(store_db) as conn:
        weights = term_weights(conn, QUESTION, jurisdictions=["MAHARASHTRA"])
    named = "Establishment of Real Estate Appellate Tribunal"
    assert term_overlap(QUESTION, named) > term_overlap(QUESTION, "Seal")  # each word once
    assert term_overlap(QUESTION, "Seal", weights) > term_overlap(QUESTION, named, weights)
    assert term_overlap(QUESTION, " ".join(QUESTION), weights) == 1.0

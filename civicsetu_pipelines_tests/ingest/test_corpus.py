"""Acceptance tests on the real corpus (``config.DEFAULT_MIRROR`` = ../shared/corpus/pdfs).

Missing corpus: the tests fail when ``CI`` is set, else they are skipped (``corpus_dir``).
Every registry document is parsed and chunked once per module with the same functions the
assets use (``parse_rows`` + ``chunk_rows``); one slow test materializes the real
``ingest_job`` twice against the embedded Postgres.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from civicsetu_pipelines.base.settings import Settings
from civicsetu_pipelines.ingest.documents import (
    chunk_rows,
    page_records,
    parse_ledger,
    parse_rows,
    parse_rows_cached,
)
from civicsetu_pipelines.ingest.pages import tesseract_available
from civicsetu_pipelines.ingest.registry import DocumentSpec, load_registry
from civicsetu_pipelines.store.database import connect
from civicsetu_pipelines.store.embedding import sha256_file
from civicsetu_pipelines_tests.conftest import RUN_STARTED, repeated_ocr
from civicsetu_pipelines_tests.ingest.test_registry import running_in_ci

pytestmark = pytest.mark.corpus

DEVANAGARI = re.compile(r"[\u0900-\u097F]")
KANNADA = re.compile(r"[\u0C80-\u0CFF]")
OCR_KEY = "karnataka_penalty_order_2017"


@dataclass
class Ingested:
    spec: DocumentSpec
    pages: list[dict[str, Any]]
    chunks: list[dict[str, Any]]
    report: dict[str, Any]

    @property
    def numbers(self) -> list[str]:
        return list(json.loads(self.report["numbers"]))

    @property
    def top(self) -> list[dict[str, Any]]:
        return list(json.loads(self.report["top_level_units"]))

    def titles(self) -> dict[str | None, str]:
        return {u["number"]: u["title"] for u in self.top if u["unit"] != "form"}


def ingest(spec: DocumentSpec, corpus: Path, *, cached: bool = True) -> Ingested:
    """Parse (from the run's parse cache unless ``cached`` is false) and chunk one document."""
    assert spec.filename is not None
    path = corpus / spec.filename
    if cached:
        rows, _ = parse_rows_cached(spec, path, sha256_file(path), Settings.from_env().parse_cache)
    else:
        rows = parse_rows(spec, path)
    pages = page_records(rows)
    chunks, report = chunk_rows(spec, pages)
    return Ingested(spec, pages, chunks, report)


def specs() -> list[DocumentSpec]:
    # The default registry only: seed documents have no file in the corpus.
    return load_registry(include_seed=False).documents()


@pytest.fixture(scope="module")
def corpus(corpus_dir: Path, corpus_parse_cache: Path) -> dict[str, Ingested]:
    return {spec.key: ingest(spec, corpus_dir) for spec in specs()}


def numbers(first: int, last: int) -> list[str]:
    return [str(n) for n in range(first, last + 1)]


# ----------------------------------------------------------------------------- the Act


def test_rera_act_has_all_92_sections_once_in_order(corpus: dict[str, Ingested]) -> None:
    act = corpus["rera_act_2016"]
    assert act.numbers == numbers(1, 92)
    sections = [u for u in act.top if u["unit"] == "section"]
    assert [u["label"] for u in sections] == [f"Section {n}" for n in range(1, 93)]
    assert json.loads(act.report["gaps"]) == [] and json.loads(act.report["duplicates"]) == []
    assert json.loads(act.report["untitled"]) == []
    pages = [u["page_start"] for u in sections]
    assert pages == sorted(pages) and pages[0] == 1 and pages[-1] == 37


def test_rera_act_titles_come_from_the_margin_notes(corpus: dict[str, Ingested]) -> None:
    titles = corpus["rera_act_2016"].titles()
    assert titles["1"] == "Short title, extent and commencement"
    assert titles["13"] == (
        "No deposit or advance to be taken by promoter without first entering into agreement "
        "for sale"
    )
    assert titles["18"] == "Return of amount and compensation"
    assert titles["58"] == "Appeal to High Court"
    assert titles["66"]  # present and non-empty
    assert all(titles[n] for n in numbers(1, 92))


def test_rera_act_chunks_point_at_their_section(corpus: dict[str, Ingested]) -> None:
    act = corpus["rera_act_2016"]
    s18 = [c for c in act.chunks if c["section_label"] == "Section 18"]
    assert s18 and s18[0]["text"].startswith("18. (1) If the promoter fails to complete")
    assert all(c["title"] == "Return of amount and compensation" for c in s18)
    assert all(c["chapter"] and c["chapter"].startswith("Chapter") for c in s18)
    assert all(c["doc_type"] == "act" and c["jurisdiction"] == "CENTRAL" for c in act.chunks)


# ------------------------------------------------------------------------------- rules


def test_gujarat_general_rules_are_rules_1_to_20(corpus: dict[str, Ingested]) -> None:
    rules = corpus["gujarat_general_rules_2017"]
    assert rules.numbers == numbers(1, 20)
    assert [u["label"] for u in rules.top if u["unit"] == "rule"] == [
        f"Rule {n}" for n in range(1, 21)
    ]


def test_gujarat_general_rules_forms_are_units_after_the_rules(
    corpus: dict[str, Ingested],
) -> None:
    rules = corpus["gujarat_general_rules_2017"]
    labels = [u["label"] for u in rules.top]
    forms = [label for label in labels if label.startswith("Form ")]
    assert forms == [f"Form {letter}" for letter in "ABCDEFGHIJK"]
    last_rule = labels.index("Rule 20")
    assert all(labels.index(form) > last_rule for form in forms)
    assert "Annexure A" in labels and labels.index("Annexure A") > last_rule
    # Numbered rows inside the forms and the model agreement were not taken for rules.
    assert all(u["unit"] == "form" for u in rules.top[last_rule + 1 :])
    form_a = next(u for u in rules.top if u["label"] == "Form A")
    assert form_a["page_start"] >= 26


def test_gujarat_appellate_rules_are_rules_1_to_9(corpus: dict[str, Ingested]) -> None:
    assert corpus["gujarat_appellate_tribunal_rules_2016"].numbers == numbers(1, 9)


def test_gujarat_authority_rules_are_rules_1_to_14(corpus: dict[str, Ingested]) -> None:
    assert corpus["gujarat_authority_rules_2016"].numbers == numbers(1, 14)


def test_chandigarh_general_rules_from_the_english_pages(corpus: dict[str, Ingested]) -> None:
    rules = corpus["chandigarh_general_rules_2016"]
    assert rules.numbers == numbers(1, 37)
    assert [p["page"] for p in rules.pages] == list(range(42, 81))
    assert not [c["label"] for c in rules.chunks if DEVANAGARI.search(c["text"])]
    assert not [c["label"] for c in rules.chunks if DEVANAGARI.search(c["title"])]


# --------------------------------------------------------------------------------- FAQ


def test_faq_questions_are_numbered_1_to_n(corpus: dict[str, Ingested]) -> None:
    faq = corpus["rera_faq_2017"]
    questions = [u for u in faq.top if u["unit"] == "question"]
    assert faq.numbers == numbers(1, len(questions))
    assert len(questions) == 92  # the registry notes: Q&A 1-92
    assert all(u["title"].endswith("?") for u in questions)
    assert all(not re.match(r"^\d+\.", u["title"]) for u in questions)


# ------------------------------------------------------------------------------ every document


def test_every_document_is_covered(corpus: dict[str, Ingested]) -> None:
    coverage = {key: doc.report["coverage"] for key, doc in corpus.items()}
    assert {k: v for k, v in coverage.items() if v < 0.99} == {}
    assert set(coverage) == {spec.key for spec in specs()}


def test_no_duplicate_labels_or_ids_within_a_document(corpus: dict[str, Ingested]) -> None:
    for key, doc in corpus.items():
        labels = Counter(c["label"] for c in doc.chunks)
        assert [label for label, n in labels.items() if n > 1] == [], key
        ids = [c["chunk_id"] for c in doc.chunks]
        assert len(ids) == len(set(ids)), key
        assert {c["parent_id"] for c in doc.chunks if c["parent_id"]} <= set(ids), key
        assert all(c["document_key"] == key for c in doc.chunks)


def test_no_ids_shared_between_documents(corpus: dict[str, Ingested]) -> None:
    owners: dict[str, str] = {}
    for key, doc in corpus.items():
        for c in doc.chunks:
            assert owners.setdefault(c["chunk_id"], key) == key, c["label"]


def test_rerun_yields_identical_chunk_ids(corpus: dict[str, Ingested], corpus_dir: Path) -> None:
    """Chunking again from the same pages gives every document the same ids; parsing again,
    without the cache, gives the same pages, ids and texts: of each kind, its shortest document
    with a text layer (the 330-page judgment parsed again was most of this test's time; scanned
    pages, OCR taking minutes, are found by their pages' flags, not by a list of names)."""
    scanned = [key for key, doc in corpus.items() if any("ocr" in p["flags"] for p in doc.pages)]
    assert OCR_KEY in scanned
    every = specs()
    by_kind: dict[str, list[DocumentSpec]] = {}
    for spec in every:
        if spec.key not in scanned:
            by_kind.setdefault(str(spec.doc_type), []).append(spec)
    shortest = {min(group, key=lambda s: len(corpus[s.key].pages)).key
                for group in by_kind.values()}  # fmt: skip
    assert len(shortest) >= 6  # act, faq, rules, orders, notifications, judgments
    for spec in every:
        first = corpus[spec.key]
        rows, _ = chunk_rows(first.spec, first.pages)
        assert [r["chunk_id"] for r in rows] == [c["chunk_id"] for c in first.chunks]
        if spec.key not in shortest:
            continue
        again = ingest(spec, corpus_dir, cached=False)
        assert again.pages == first.pages  # the cached parse is the parse
        assert [c["chunk_id"] for c in again.chunks] == [c["chunk_id"] for c in first.chunks]
        assert [c["text"] for c in again.chunks] == [c["text"] for c in first.chunks]


def test_scanned_documents_are_ocrd_at_most_once_per_run(
    corpus: dict[str, Ingested], corpus_dir: Path, corpus_parse_cache: Path
) -> None:
    """Every fixture and process of a run reads scanned pages from one parse cache: its ledger
    holds at most one OCR parse of each scanned document since the run began, and a parse
    asked for again (as the next fixture or process would) comes from the cache."""
    since = float(os.environ[RUN_STARTED])
    assert repeated_ocr(since) == {}
    scanned = [doc for doc in corpus.values() if any("ocr" in p["flags"] for p in doc.pages)]
    assert len(scanned) >= 2  # the Karnataka order and the UP Rules
    for doc in scanned:
        path = corpus_dir / str(doc.spec.filename)
        _, reused = parse_rows_cached(doc.spec, path, sha256_file(path), corpus_parse_cache)
        assert reused, f"{doc.spec.key} was parsed again"
    made = parse_ledger(corpus_parse_cache, since=since)
    for doc in scanned:
        ocr_parses = [r for r in made if r["document"] == doc.spec.key and r["ocr_pages"]]
        assert len(ocr_parses) <= 1, ocr_parses


def test_kannada_order_is_ocrd_in_kannada(corpus: dict[str, Ingested]) -> None:
    if not tesseract_available() and not running_in_ci():
        pytest.skip("tesseract is not installed")
    order = corpus[OCR_KEY]
    assert len(order.pages) == 1
    page = order.pages[0]
    assert page["method"] == "ocr" and "ocr" in page["flags"]
    assert page["ocr_confidence"] is not None and 50 < page["ocr_confidence"] <= 100
    text = " ".join(c["text"] for c in order.chunks)
    kannada = len(KANNADA.findall(text))
    letters = sum(1 for ch in text if ch.isalpha())
    assert kannada > 200 and kannada / letters > 0.5
    assert all("ocr" in json.loads(c["flags"]) for c in order.chunks)
    assert order.report["ocr_pages"] == 1 and order.report["needs_ocr_pages"] == 0


# ------------------------------------------------------------------------------ end to end


@pytest.mark.slow
def test_ingest_job_twice_on_postgres_is_idempotent(
    ingest_env: Any, corpus_dir: Path, pg_url: str
) -> None:
    env = ingest_env
    env.use_database(pg_url)
    env.seed(False)
    central = [s.key for s in specs() if s.jurisdiction == "CENTRAL"]
    for key in central:
        filename = load_registry(include_seed=False).get(key).filename
        assert filename is not None
        (env.mirror / filename).symlink_to(corpus_dir / filename)

    def run() -> tuple[Any, list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        result = env.run("CENTRAL", catalog=True)
        assert result.success
        failed = [
            (ev.asset_key.to_user_string(), ev.check_name)
            for ev in result.get_asset_check_evaluations()
            if not ev.passed
        ]
        assert failed == []
        with connect(pg_url) as conn:
            docs = conn.execute(
                "SELECT key, ingest_status, sections, chunks, coverage, updated_at "
                "FROM documents WHERE jurisdiction = 'CENTRAL' ORDER BY key"
            ).fetchall()
            units = conn.execute(
                "SELECT u.document_key, u.ordinal, u.label FROM document_units u "
                "JOIN documents d ON d.key = u.document_key WHERE d.jurisdiction = 'CENTRAL' "
                "ORDER BY 1, 2"
            ).fetchall()
        return env.frame("section_chunks", "CENTRAL"), docs, units

    chunks_1, docs_1, units_1 = run()
    chunks_2, docs_2, units_2 = run()

    assert chunks_1["chunk_id"].tolist() == chunks_2["chunk_id"].tolist()
    assert chunks_1["label"].tolist() == chunks_2["label"].tolist()
    assert chunks_1["chunk_id"].is_unique

    assert [d[0] for d in docs_1] == sorted(central)
    assert [d[:5] for d in docs_1] == [d[:5] for d in docs_2]  # same rows, not duplicated
    assert all(d[1] == "ok" for d in docs_2)
    by_key = {d[0]: d for d in docs_2}
    assert by_key["rera_act_2016"][2] == 92
    per_doc = chunks_2.groupby("document_key").size().to_dict()
    assert {k: d[3] for k, d in by_key.items()} == per_doc
    assert all(d2[5] >= d1[5] for d1, d2 in zip(docs_1, docs_2, strict=True))  # rewritten
    assert units_1 == units_2
    assert len(units_2) == len(set((u[0], u[1]) for u in units_2))
    with connect(pg_url) as conn:
        dupes = conn.execute(
            "SELECT key, count(*) FROM documents GROUP BY key HAVING count(*) > 1"
        ).fetchall()
    assert dupes == []

"""The parse cache and the input fingerprint: reuse only when nothing they depend on changed."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pymupdf
import pytest

from civicsetu_pipelines.base.settings import DEFAULT_MIRROR
from civicsetu_pipelines.ingest.documents import (
    pages_fingerprint,
    parse_fingerprint,
    parse_ledger,
    parse_rows_cached,
)
from civicsetu_pipelines.ingest.registry import load_registry
from civicsetu_pipelines.operate.freshness import partition_fingerprint
from civicsetu_pipelines.store.embedding import sha256_file

KEY = "gujarat_appellate_tribunal_rules_2016"


@pytest.fixture
def corpus() -> Path:
    if not DEFAULT_MIRROR.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"corpus missing at {DEFAULT_MIRROR} (CI must have ../shared)")
        pytest.skip(f"corpus missing at {DEFAULT_MIRROR}")
    return Path(DEFAULT_MIRROR)


def test_parse_cache_reuses_identical_rows(corpus: Path, tmp_path: Path) -> None:
    spec = load_registry(include_seed=False).get(KEY)
    path = corpus / str(spec.filename)
    sha = sha256_file(path)
    heard: list[tuple[int, int]] = []
    first, reused_first = parse_rows_cached(
        spec, path, sha, tmp_path, progress=lambda *p: heard.append(p)
    )
    # the parse says each page read (a scan's OCR takes minutes); a reuse reads no page
    assert heard == [(n, len(first)) for n in range(1, len(first) + 1)]
    second, reused_second = parse_rows_cached(spec, path, sha, tmp_path, progress=heard.append)
    assert (reused_first, reused_second) == (False, True)
    assert len(heard) == len(first)
    assert first == second
    assert len(list(tmp_path.glob("*.json"))) == 1


def test_concurrent_parses_of_one_document_parse_it_once(corpus: Path, tmp_path: Path) -> None:
    """The prefetch thread and a run reaching the same document: the second waits for the
    first's parse and reads it from the cache instead of parsing (and OCR'ing) it again."""
    spec = load_registry(include_seed=False).get(KEY)
    path = corpus / str(spec.filename)
    sha = sha256_file(path)
    start = threading.Barrier(3)
    results: list[tuple[list[dict[str, object]], bool]] = []

    def parse() -> None:
        start.wait()
        results.append(parse_rows_cached(spec, path, sha, tmp_path))

    threads = [threading.Thread(target=parse) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(reused for _, reused in results) == [False, True, True]
    assert results[0][0] == results[1][0] == results[2][0]
    assert len(list(tmp_path.glob("*.json"))) == 1


def test_parse_fingerprint_follows_what_the_parse_depends_on(corpus: Path) -> None:
    spec = load_registry(include_seed=False).get(KEY)
    base = parse_fingerprint(spec, "a" * 64, ocr=True, page_count=10)
    assert parse_fingerprint(spec, "a" * 64, ocr=True, page_count=10) == base
    assert parse_fingerprint(spec, "b" * 64, ocr=True, page_count=10) != base
    assert parse_fingerprint(spec, "a" * 64, ocr=False, page_count=10) != base
    narrower = spec.model_copy(update={"page_ranges": ((1, 2),)})
    assert parse_fingerprint(narrower, "a" * 64, ocr=True, page_count=10) != base
    # the same pages of the same file are one parse, whichever registry entry reads them
    same = pages_fingerprint("a" * 64, spec.pages_to_ingest(10), spec.language, ocr=True)
    assert same == base


def test_the_tesseract_that_reads_scans_is_part_of_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Tesseract upgrade (or new language data) parses again: another ``tesseract`` on PATH,
    here one printing another version, gives another fingerprint; none at all, another too."""
    real = shutil.which("tesseract")
    if real is None:
        pytest.skip("tesseract is not installed")
    base = pages_fingerprint("a" * 64, [0], "eng", ocr=True)
    fake = tmp_path / "bin"
    fake.mkdir()
    script = fake / "tesseract"
    script.write_text(
        f'#!/bin/sh\nif [ "$1" = --version ]; then echo "tesseract 9.9.9"; exit 0; fi\n'
        f'exec {real} "$@"\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    upgraded = pages_fingerprint("a" * 64, [0], "eng", ocr=True)
    assert upgraded != base
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert pages_fingerprint("a" * 64, [0], "eng", ocr=True) not in {base, upgraded}
    # a parse that never OCRs does not depend on Tesseract
    assert pages_fingerprint("a" * 64, [0], "eng", ocr=False) == pages_fingerprint(
        "a" * 64, [0], "eng", ocr=False
    )


def test_the_ledger_records_each_parse_made_and_no_reuse(corpus: Path, tmp_path: Path) -> None:
    spec = load_registry(include_seed=False).get(KEY)
    path = corpus / str(spec.filename)
    sha = sha256_file(path)
    before = time.time()
    parse_rows_cached(spec, path, sha, tmp_path)
    parse_rows_cached(spec, path, sha, tmp_path)
    ledger = parse_ledger(tmp_path, since=before)
    assert [(r["document"], r["cached"], r["ocr_pages"]) for r in ledger] == [(KEY, True, 0)]
    assert ledger[0]["pages"] > 0 and ledger[0]["seconds"] >= 0
    assert parse_ledger(tmp_path, since=time.time() + 1) == []


def test_partition_fingerprint_changes_with_a_document_or_a_setting(
    corpus: Path, tmp_path: Path
) -> None:
    registry = load_registry(include_seed=False)
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    for spec in registry.documents("GUJARAT"):
        shutil.copy(corpus / str(spec.filename), mirror / str(spec.filename))
    settings = {"CIVICSETU_EMBED_MODEL": ""}
    base = partition_fingerprint("GUJARAT", registry, [mirror], settings)
    assert base is not None
    assert partition_fingerprint("GUJARAT", registry, [mirror], settings) == base
    other = {"CIVICSETU_EMBED_MODEL": "nomic-ai/nomic-embed-text-v1.5"}
    assert partition_fingerprint("GUJARAT", registry, [mirror], other) != base
    spec = registry.get(KEY)
    with (mirror / str(spec.filename)).open("ab") as handle:
        handle.write(b"\n%changed\n")
    assert partition_fingerprint("GUJARAT", registry, [mirror], settings) != base
    (mirror / str(spec.filename)).unlink()
    # A document not in any mirror would be downloaded: no fingerprint, the run always happens.
    assert partition_fingerprint("GUJARAT", registry, [mirror], settings) is None


def test_a_document_held_only_by_the_pdf_store_counts_by_its_pinned_sha256(
    corpus: Path, tmp_path: Path
) -> None:
    """`documents add` keeps the PDF in the content-addressed store, not a mirror: a run with
    nothing changed is still known to be up to date (it had no fingerprint: every no-op
    `materialize` re-ran the jurisdiction)."""
    registry = load_registry(include_seed=False)
    store = tmp_path / "pdfs"
    store.mkdir()
    settings = {"CIVICSETU_EMBED_MODEL": ""}
    specs = registry.documents("GUJARAT")
    assert all(s.sha256 for s in specs)
    assert partition_fingerprint("GUJARAT", registry, [], settings, pdf_store=store) is None
    for spec in specs:
        shutil.copy(corpus / str(spec.filename), store / f"{spec.sha256}.pdf")
    held = partition_fingerprint("GUJARAT", registry, [], settings, pdf_store=store)
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    for spec in specs:
        shutil.copy(corpus / str(spec.filename), mirror / str(spec.filename))
    # the same bytes, whichever place holds them: the same fingerprint
    assert held is not None
    assert held == partition_fingerprint("GUJARAT", registry, [mirror], settings)
    (store / f"{specs[0].sha256}.pdf").unlink()
    assert partition_fingerprint("GUJARAT", registry, [], settings, pdf_store=store) is None


def test_the_read_ahead_reads_the_scans_in_a_lane_of_their_own_most_pages_first(
    tmp_path: Path,
) -> None:
    """A run's read-ahead (``prefetch_parses``) OCRs the scans, most pages to OCR first, in a
    lane of their own beside the text documents in the runs' order: their OCR is the longest
    wait of the runs ahead (the UP Rules' 44 scanned pages were read last, in the last
    partition's order, and waited for)."""
    from civicsetu_pipelines.ingest import DocumentSpec
    from civicsetu_pipelines.ingest.documents import split_scans
    from civicsetu_pipelines.ingest.pages import pages_without_text
    from civicsetu_pipelines_tests.pdfgen import Para, scanned_pdf, write_pdf

    page = [Para("1. Short title.- These rules may be called the Test Rules, 2020.")]
    paths = {
        "text": write_pdf(tmp_path / "text.pdf", [page, page]),
        "one_scan": scanned_pdf(tmp_path / "one_scan.pdf", [page], dpi=72),
        "mixed": tmp_path / "mixed.pdf",
        "three_scans": scanned_pdf(tmp_path / "three_scans.pdf", [page] * 3, dpi=72),
        "broken": tmp_path / "broken.pdf",
    }
    mixed = pymupdf.open(paths["text"])
    mixed.insert_pdf(pymupdf.open(paths["three_scans"]), from_page=0, to_page=1)
    mixed.save(paths["mixed"])
    paths["broken"].write_bytes(b"%PDF-1.4 not really")
    assert {k: pages_without_text(p) for k, p in paths.items()} == {
        "text": 0, "one_scan": 1, "mixed": 2, "three_scans": 3, "broken": 0}  # fmt: skip
    fetched = [
        (DocumentSpec(key=k, title=k, jurisdiction="GOA", doc_type="rules",
                      effective_date="2020-01-31", source_url=p.as_uri(), filename=p.name),
         p, "0" * 64)
        for k, p in paths.items()
    ]  # fmt: skip
    scans, texts = split_scans(fetched)
    assert [spec.key for spec, _, _ in scans] == ["three_scans", "mixed", "one_scan"]
    assert [spec.key for spec, _, _ in texts] == ["text", "broken"]
    # both lanes parse into the cache: every document but the broken one, whose run says why
    from civicsetu_pipelines.ingest import prefetch_parses

    cache = tmp_path / "parse-cache"
    specs = [spec for spec, _, _ in fetched]
    done = prefetch_parses(specs, mirror_dirs=[tmp_path], pdf_cache=tmp_path / "pdfs",
                           parse_cache=cache, offline=True)  # fmt: skip
    assert done == 4
    parsed = parse_ledger(cache)
    assert sorted(r["document"] for r in parsed) == ["mixed", "one_scan", "text", "three_scans"]
    assert {r["document"]: r["ocr_pages"] for r in parsed} == {
        "mixed": 2, "one_scan": 1, "text": 0, "three_scans": 3}  # fmt: skip

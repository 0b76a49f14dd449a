"""The parse cache and the input fingerprint: reuse only when nothing they depend on changed."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from civicsetu_pipelines.base.settings import DEFAULT_MIRROR
from civicsetu_pipelines.ingest.documents import (
    pages_fingerprint,
    parse_fingerprint,
    parse_ledger,
    parse_rows_cached,
    prefetch_parses,
)
from civicsetu_pipelines.ingest.ocr import tesseract_available
from civicsetu_pipelines.ingest.pages import scan_pages
from civicsetu_pipelines.ingest.registry import DocumentSpec, load_registry
from civicsetu_pipelines.operate.freshness import partition_fingerprint
from civicsetu_pipelines.store.embedding import sha256_file
from civicsetu_pipelines_tests.pdfgen import scanned_pdf, write_pdf

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
    first, reused_first = parse_rows_cached(spec, path, sha, tmp_path)
    second, reused_second = parse_rows_cached(spec, path, sha, tmp_path)
    assert (reused_first, reused_second) == (False, True)
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


def _rules(n: int) -> list[list[str]]:
    return [[f"{n}. The promoter shall file the return of rule {n} within thirty days."]]


def test_scan_pages_counts_a_scans_pages_and_nothing_else(tmp_path: Path) -> None:
    text = write_pdf(tmp_path / "text.pdf", [*_rules(1), *_rules(2)])
    scan = scanned_pdf(tmp_path / "scan.pdf", [*_rules(1), *_rules(2), *_rules(3)])
    (tmp_path / "not.pdf").write_text("<html>a listing page</html>")
    assert scan_pages("text", text) == 0
    assert scan_pages("scan", scan) == 3
    assert scan_pages("not", tmp_path / "not.pdf") == 0  # its parse says why


def test_a_scan_is_parsed_ahead_before_the_documents_listed_before_it(tmp_path: Path) -> None:
    if not tesseract_available():
        if os.environ.get("CI"):
            pytest.fail("tesseract missing (CI installs it)")
        pytest.skip("tesseract missing")
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    paths = [write_pdf(mirror / "a.pdf", _rules(1)), write_pdf(mirror / "b.pdf", _rules(2)),
             scanned_pdf(mirror / "c.pdf", _rules(3), dpi=200)]  # fmt: skip
    specs = [
        DocumentSpec(
            key=f"goa_{p.stem}",
            title=f"Goa rules {p.stem}",
            jurisdiction="GOA",
            effective_date="2019-01-01",
            doc_type="rules",
            source_url=p.as_uri(),
            filename=p.name,
        )  # fmt: skip
        for p in paths
    ]
    cache = tmp_path / "parses"
    done = prefetch_parses(specs, mirror_dirs=[mirror], pdf_cache=tmp_path / "pdfs",
                           parse_cache=cache, offline=True)  # fmt: skip
    assert done == 3
    ledger = parse_ledger(cache)
    assert [r["document"] for r in ledger] == ["goa_c", "goa_a", "goa_b"]
    assert [r["ocr_pages"] for r in ledger] == [1, 0, 0]

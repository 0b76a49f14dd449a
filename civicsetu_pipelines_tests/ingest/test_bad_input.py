"""Bad inputs fail or flag only their own document, naming it; the others still materialize.

Two levels:

* Domain level, on a temporary registry YAML (``load_registry(paths=[...])``) holding generated
  good documents next to every kind of bad one, through ``fetch_rows`` / ``parse_rows`` /
  ``chunk_rows`` -- the functions the assets call.
* Dagster level, through the real ``ingest_job``. The assets call ``load_registry()`` with no
  arguments and no setting selects another registry file, so these runs use the packaged
  registry and inject the bad bytes through the settings that do exist: a temporary
  ``CIVICSETU_MIRROR_DIRS`` (offline) holding files under the registry's file names, and
  ``CIVICSETU_ENABLE_SEED_STATES`` to add the unpinned seed document
  ``rera_act_2016_indiacode`` to the CENTRAL partition (unpinned, so any bytes pass the fetch
  and reach the parser).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from civicsetu_pipelines.ingest.documents import chunk_rows, fetch_rows, page_records, parse_rows
from civicsetu_pipelines.ingest.pages import PdfError, parse_pdf, tesseract_available
from civicsetu_pipelines.ingest.registry import load_registry
from civicsetu_pipelines.store.catalog import read_stats
from civicsetu_pipelines.store.database import connect
from civicsetu_pipelines_tests.pdfgen import (
    HTML_ERROR_PAGE,
    Heading,
    Para,
    Section,
    encrypted_pdf,
    gazette_pages,
    pdf_bytes,
    scanned_pdf,
    truncated_pdf,
    write_bytes,
    write_pdf,
    zero_page_pdf_bytes,
)

BODY = (
    "The promoter shall upload the details of the project on the website of the Authority and "
    "keep them updated for the whole duration of the project."
)
SEED_KEY = "rera_act_2016_indiacode"  # unpinned seed document of the CENTRAL partition
# open_pdf's message when MuPDF cannot open it, or parse_pdf's when a page cannot be read
TRUNCATED = (
    r"is corrupt or truncated: |is damaged \(truncated or corrupt\)|page \d+ cannot be read: "
)


def rules_pages(name: str, count: int = 4) -> list[list[Any]]:
    rows: list[Any] = [Para(f"THE {name.upper()} RULES, 2020", bold=True)]
    rows += [Para(f"{n}. {name.title()} rule {n}.- {BODY}") for n in range(1, count + 1)]
    return [rows]


def act_pages(sections: int = 12) -> list[list[Any]]:
    items: list[Any] = [
        Para("THE TEST REAL ESTATE ACT, 2016", bold=True),
        Heading("CHAPTER I"),
        Heading("PRELIMINARY"),
    ]
    for n in range(1, sections + 1):
        items.append(Section(str(n), f"Heading of section {n}.", [f"(1) {BODY}", f"(2) {BODY}"]))
    return gazette_pages(items)  # type: ignore[return-value]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------------- domain level


def _entry(key: str, filename: str, sha: str | None) -> dict[str, Any]:
    return {
        "key": key,
        "title": f"Test document {key}",
        "jurisdiction": "GUJARAT",
        "doc_type": "rules",
        "effective_date": "2020-01-31",
        "source_url": f"https://example.gov.in/{filename}",
        "filename": filename,
        "sha256": sha,
        "page_ranges": None,
        "language": "eng",
        "status": "in_force",
    }


@pytest.fixture
def bad_registry(tmp_path: Path) -> tuple[Path, Path]:
    """A registry YAML with two good documents and one document per kind of bad input."""
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    good_a = write_pdf(mirror / "good_a.pdf", rules_pages("alpha"))
    good_b = write_pdf(mirror / "good_b.pdf", rules_pages("beta", 6))
    truncated_pdf(mirror / "truncated.pdf", pdf_bytes(rules_pages("gamma")), keep=0.5)
    write_bytes(mirror / "html.pdf", HTML_ERROR_PAGE)
    encrypted_pdf(mirror / "encrypted.pdf", rules_pages("delta"))
    write_bytes(mirror / "zero.pdf", zero_page_pdf_bytes())
    scanned_pdf(mirror / "scanned.pdf", [[("1. Scanned rule.- " + BODY[:60], 72, 100, 14, False)]])
    wrong = write_pdf(mirror / "wrong_pin.pdf", rules_pages("epsilon"))
    entries = [
        _entry("good_a_rules", "good_a.pdf", None),
        _entry("truncated_rules", "truncated.pdf", None),
        _entry("html_rules", "html.pdf", None),
        _entry("encrypted_rules", "encrypted.pdf", None),
        _entry("zero_page_rules", "zero.pdf", None),
        _entry("scanned_rules", "scanned.pdf", None),
        _entry("wrong_pin_rules", "wrong_pin.pdf", hashlib.sha256(b"other bytes").hexdigest()),
        _entry("good_b_rules", "good_b.pdf", sha256(good_b)),  # pinned and matching
    ]
    assert sha256(wrong) != entries[-2]["sha256"]
    assert good_a.is_file()
    registry = tmp_path / "registry.yaml"
    registry.write_text(yaml.safe_dump({"schema_version": 1, "documents": entries}), "utf-8")
    return registry, mirror


def test_each_bad_document_fails_alone_at_the_domain_level(
    bad_registry: tuple[Path, Path], tmp_path: Path
) -> None:
    registry_file, mirror = bad_registry
    registry = load_registry(include_seed=False, paths=[registry_file])
    specs = registry.documents()
    keys = [s.key for s in specs]

    fetched = fetch_rows(specs, mirror_dirs=[mirror], cache_dir=tmp_path / "cache", offline=True)
    assert [r["document_key"] for r in fetched] == keys
    status = {r["document_key"]: r for r in fetched}
    failed = {k for k, r in status.items() if r["status"] == "failed"}
    assert failed == {"html_rules", "wrong_pin_rules"}
    for key in failed:
        error = status[key]["error"]
        assert f"'{key}'" in error
        assert not [other for other in keys if other != key and f"'{other}'" in error]
    assert "HTML page, not a PDF" in status["html_rules"]["error"]
    assert "sha256 mismatch" in status["wrong_pin_rules"]["error"]
    assert all(status[k]["path"] is None for k in failed)

    parse_errors: dict[str, str] = {}
    pages_of: dict[str, list[dict[str, Any]]] = {}
    for spec in specs:
        row = status[spec.key]
        if row["status"] != "ok":
            continue
        try:
            pages_of[spec.key] = page_records(parse_rows(spec, Path(row["path"])))
        except PdfError as exc:
            assert exc.key == spec.key
            parse_errors[spec.key] = str(exc)
    assert set(parse_errors) == {"truncated_rules", "encrypted_rules", "zero_page_rules"}
    for key, message in parse_errors.items():
        assert message.startswith(f"{key}: ")
        assert not [other for other in keys if other != key and other in message]
    assert "encrypted" in parse_errors["encrypted_rules"]
    assert "zero pages" in parse_errors["zero_page_rules"]
    assert re.search(TRUNCATED, parse_errors["truncated_rules"])

    scanned = pages_of["scanned_rules"]
    assert len(scanned) == 1
    if tesseract_available():
        assert scanned[0]["flags"] == ["ocr"] and scanned[0]["method"] == "ocr"
        assert scanned[0]["ocr_confidence"] > 50
        assert "Scanned rule" in scanned[0]["text"]
    else:
        assert scanned[0]["flags"] == ["needs_ocr"] and scanned[0]["text"] == ""

    for key, count in (("good_a_rules", 4), ("good_b_rules", 6)):
        rows, report = chunk_rows(registry.get(key), pages_of[key])
        assert json.loads(report["numbers"]) == [str(n) for n in range(1, count + 1)]
        assert report["coverage"] >= 0.99
        assert {r["document_key"] for r in rows} == {key}


def test_scanned_page_without_ocr_is_flagged_needs_ocr(tmp_path: Path) -> None:
    path = scanned_pdf(tmp_path / "scan.pdf", [[("1. Scanned rule.- text", 72, 100, 14, False)]])
    pages = parse_pdf("scan_key", path, ocr=False)
    assert [(p.flags, p.method, p.text) for p in pages] == [(["needs_ocr"], "none", "")]


def test_pdf_truncated_in_its_last_page_is_not_silently_accepted(tmp_path: Path) -> None:
    pages = rules_pages("alpha", 8) * 3  # three identical pages
    full = write_pdf(tmp_path / "full.pdf", pages)
    data = full.read_bytes()
    complete = [p.text for p in parse_pdf("doc_key", full, ocr=False)]
    cut = tmp_path / "cut.pdf"
    silent: list[tuple[int, list[int]]] = []
    damaged = 0
    # Cut the file at points in its last 3000 bytes (a download that stopped near the end).
    for size in range(len(data) - 3000, len(data), 50):
        write_bytes(cut, data[:size])
        try:
            parsed = parse_pdf("doc_key", cut, ocr=False)
        except PdfError as exc:  # failing, naming the document, is right
            assert exc.key == "doc_key"
            damaged += 1
            continue
        if [p.text for p in parsed] != complete:
            damaged += 1
            if not any(p.flags for p in parsed):  # neither failed nor flagged: silent loss
                silent.append((size, [len(p.text) for p in parsed]))
    assert damaged, "no cut damaged the document; the test would prove nothing"
    assert silent == [], f"{len(data)} bytes, full pages {[len(t) for t in complete]}: {silent[:3]}"


# ------------------------------------------------------------------------- Dagster level


def _mirror_name(key: str) -> str:
    filename = load_registry(include_seed=True).get(key).filename
    assert filename is not None
    return filename


def _check(env: Any, result: Any, asset: str, name: str) -> Any:
    checks = env.checks(result)
    assert (asset, name) in checks, sorted(checks)
    return checks[(asset, name)]


CENTRAL_OTHERS = ("rera_removal_of_difficulties_order_2016", "rera_commencement_notification_2017")


def _copy_from_corpus(env: Any, corpus_dir: Path, keys: Sequence[str]) -> None:
    for key in keys:
        shutil.copy(corpus_dir / _mirror_name(key), env.mirror)


def test_fetch_failures_flag_only_their_document(
    ingest_env: Any, pg_url: str, corpus_dir: Path
) -> None:
    """CENTRAL: the Act's file fails its pin, the FAQ's is an HTML page, the seed Act and the
    other documents are good."""
    env = ingest_env
    env.seed()
    env.use_database(pg_url)
    _copy_from_corpus(env, corpus_dir, CENTRAL_OTHERS)
    write_pdf(env.mirror / _mirror_name("rera_act_2016"), act_pages(3))  # not the pinned bytes
    write_bytes(env.mirror / _mirror_name("rera_faq_2017"), HTML_ERROR_PAGE)
    write_pdf(env.mirror / _mirror_name(SEED_KEY), act_pages(12))

    result = env.run("CENTRAL", catalog=True)
    assert result.success  # a bad document never fails the partition's steps

    fetched = _check(env, result, "raw_pdfs", "all_documents_fetched")
    assert not fetched.passed
    errors = fetched.metadata["failed"].value
    assert len(errors) == 2
    act_error = next(e for e in errors if "'rera_act_2016'" in e)
    faq_error = next(e for e in errors if "'rera_faq_2017'" in e)
    assert "sha256 mismatch" in act_error and "rera_faq_2017" not in act_error
    assert "HTML page, not a PDF" in faq_error and "rera_act_2016" not in faq_error
    assert SEED_KEY not in fetched.description
    raw = env.frame("raw_pdfs", "CENTRAL").set_index("document_key")
    assert raw["status"].to_dict() == {
        "rera_act_2016": "failed",
        "rera_faq_2017": "failed",
        SEED_KEY: "ok",
        **dict.fromkeys(CENTRAL_OTHERS, "ok"),
    }

    assert _check(env, result, "parsed_pages", "all_documents_parsed").passed
    chunks = env.frame("section_chunks", "CENTRAL")
    assert set(chunks["document_key"]) == {SEED_KEY, *CENTRAL_OTHERS}
    top = chunks[chunks["level"] == 0]
    assert [x for x in top["label"] if x.startswith("Section")] == [
        f"Section {n}" for n in range(1, 13)
    ]
    assert set(top["title"][top["unit"] == "section"]) == {
        f"Heading of section {n}" for n in range(1, 13)
    }
    structure = env.frame("document_structure", "CENTRAL").set_index("document_key")
    assert set(structure.index) == {SEED_KEY, *CENTRAL_OTHERS}
    assert structure.loc[SEED_KEY, "coverage"] >= 0.99

    with connect(pg_url) as conn:
        stats = {r["key"]: r for r in read_stats(conn) if r["jurisdiction"] == "CENTRAL"}
    assert set(stats) == {"rera_act_2016", "rera_faq_2017", SEED_KEY, *CENTRAL_OTHERS}
    assert stats[SEED_KEY]["ingest_status"] == "ok" and stats[SEED_KEY]["error"] is None
    assert stats[SEED_KEY]["sections"] == 12
    for key in ("rera_act_2016", "rera_faq_2017"):
        assert stats[key]["ingest_status"] == "failed"
        assert f"'{key}'" in stats[key]["error"]
        assert stats[key]["chunks"] == 0


BAD_SEED_FILES = {
    "truncated": lambda path: truncated_pdf(path, pdf_bytes(act_pages(12)), keep=0.5),
    "encrypted": lambda path: encrypted_pdf(path, act_pages(3)),
    "zero_pages": lambda path: write_bytes(path, zero_page_pdf_bytes()),
}
EXPECTED_REASON = {
    "truncated": TRUNCATED,
    "encrypted": re.escape("is encrypted (password protected)"),
    "zero_pages": "has zero pages",
}


@pytest.mark.corpus
@pytest.mark.parametrize("kind", list(BAD_SEED_FILES))
def test_unreadable_pdf_fails_only_its_document(
    ingest_env: Any, corpus_dir: Path, kind: str
) -> None:
    """CENTRAL: the real Act and FAQ next to an unreadable seed document."""
    env = ingest_env
    env.seed()
    _copy_from_corpus(env, corpus_dir, ("rera_act_2016", "rera_faq_2017", *CENTRAL_OTHERS))
    BAD_SEED_FILES[kind](env.mirror / _mirror_name(SEED_KEY))

    result = env.run("CENTRAL")
    assert result.success
    assert _check(env, result, "raw_pdfs", "all_documents_fetched").passed
    parsed = _check(env, result, "parsed_pages", "all_documents_parsed")
    assert not parsed.passed
    errors = parsed.metadata["errors"].value
    assert len(errors) == 1
    assert errors[0].startswith(f"{SEED_KEY}: ")
    assert re.search(EXPECTED_REASON[kind], errors[0]), errors[0]

    pages = env.frame("parsed_pages", "CENTRAL")
    bad = pages[pages["document_key"] == SEED_KEY]
    assert len(bad) == 1 and bad["error"].iloc[0] == errors[0]
    assert pages[pages["document_key"] != SEED_KEY]["error"].isna().all()

    chunks = env.frame("section_chunks", "CENTRAL")
    assert set(chunks["document_key"]) == {"rera_act_2016", "rera_faq_2017", *CENTRAL_OTHERS}
    structure = env.frame("document_structure", "CENTRAL").set_index("document_key")
    assert structure.loc["rera_act_2016", "sections"] == 92
    assert (structure["coverage"] >= 0.99).all()
    assert _check(env, result, "document_structure", "sections_contiguous").passed

    if kind == "truncated":
        # Another partition materializes in the same state directory, untouched by CENTRAL's.
        for spec in load_registry(include_seed=False).documents("GUJARAT"):
            assert spec.filename is not None
            shutil.copy(corpus_dir / spec.filename, env.mirror)
        gujarat = env.run("GUJARAT")
        assert gujarat.success
        assert all(ev.passed for ev in gujarat.get_asset_check_evaluations())
        guj_chunks = env.frame("section_chunks", "GUJARAT")
        assert set(guj_chunks["document_key"]) == {
            "gujarat_general_rules_2017",
            "gujarat_authority_rules_2016",
            "gujarat_appellate_tribunal_rules_2016",
        }
        assert env.frame("section_chunks", "CENTRAL").equals(chunks)


@pytest.mark.corpus
def test_scanned_document_is_ocrd_or_flagged(ingest_env: Any, corpus_dir: Path) -> None:
    """CENTRAL: the real Act and FAQ next to an image-only PDF of a short Act."""
    env = ingest_env
    env.seed()
    _copy_from_corpus(env, corpus_dir, ("rera_act_2016", "rera_faq_2017", *CENTRAL_OTHERS))
    scanned_pdf(
        env.mirror / _mirror_name(SEED_KEY),
        [
            [
                ("THE SCANNED ACT, 2016", 72, 100, 14, True),
                ("1. Short title.- This Act may be called the Scanned Act.", 72, 130, 13, False),
                ("2. Definitions.- In this Act the Authority means the", 72, 160, 13, False),
                ("Authority established under section 20.", 72, 180, 13, False),
            ]
        ],
    )

    result = env.run("CENTRAL")
    assert result.success
    assert _check(env, result, "raw_pdfs", "all_documents_fetched").passed
    assert _check(env, result, "parsed_pages", "all_documents_parsed").passed
    all_pages = env.frame("parsed_pages", "CENTRAL")
    pages = all_pages[all_pages["document_key"] == SEED_KEY]
    assert len(pages) == 1
    # the other documents are untouched by the scan: no OCR, no flag
    others = all_pages[all_pages["document_key"] != SEED_KEY]
    assert set(others["method"]) == {"pymupdf"}
    assert not any("ocr" in f or "needs_ocr" in f for f in others["flags"])
    flags = json.loads(pages["flags"].iloc[0])
    need_ocr = _check(env, result, "parsed_pages", "no_pages_need_ocr")
    structures = env.frame("document_structure", "CENTRAL").set_index("document_key")
    assert structures.loc["rera_act_2016", "sections"] == 92
    structure = structures.loc[SEED_KEY]
    if tesseract_available():
        assert flags == ["ocr"] and pages["method"].iloc[0] == "ocr"
        assert pages["ocr_confidence"].iloc[0] > 50
        assert need_ocr.passed
        assert structure["ocr_pages"] == 1 and structure["needs_ocr_pages"] == 0
        all_chunks = env.frame("section_chunks", "CENTRAL")
        chunks = all_chunks[all_chunks["document_key"] == SEED_KEY]
        assert "This Act may be called the Scanned Act" in " ".join(chunks["text"])
        assert all("ocr" in json.loads(f) for f in chunks["flags"])
        others_flags = all_chunks[all_chunks["document_key"] != SEED_KEY]["flags"]
        assert not any("ocr" in json.loads(f) for f in others_flags)
    else:
        assert flags == ["needs_ocr"] and pages["method"].iloc[0] == "none"
        assert not need_ocr.passed
        assert structure["needs_ocr_pages"] == 1


def test_a_broken_structure_fails_loudly_and_is_kept_page_by_page(
    ingest_env: Any, pg_url: str
) -> None:
    """A document whose numbering breaks (sections 6 and 7 never found) fails the
    structure_sound check naming it and the place, and is served page by page, never as
    units the parser cannot vouch for (issue 13)."""
    env = ingest_env
    env.seed()
    env.use_database(pg_url)
    items: list[Any] = [Para("THE TEST REAL ESTATE ACT, 2016", bold=True), Heading("CHAPTER I")]
    for n in (1, 2, 3, 4, 5, 8, 9, 10, 11, 12):
        items.append(Section(str(n), f"Heading of section {n}.", [f"(1) {BODY}", f"(2) {BODY}"]))
    write_pdf(env.mirror / _mirror_name(SEED_KEY), gazette_pages(items))

    result = env.run("CENTRAL")
    assert result.success
    sound = _check(env, result, "document_structure", "structure_sound")
    assert not sound.passed
    failing = sound.metadata["documents"].value
    assert list(failing) == [SEED_KEY]
    assert "sequence" in failing[SEED_KEY][0] and "Section 8" in failing[SEED_KEY][0]
    assert SEED_KEY in (sound.description or "")
    chunks = env.frame("section_chunks", "CENTRAL")
    seed = chunks[chunks["document_key"] == SEED_KEY]
    assert set(seed["unit"]) == {"page"} and len(seed) >= 2
    assert all("structure_failed" in json.loads(f) for f in seed["flags"])
    structure = env.frame("document_structure", "CENTRAL").set_index("document_key")
    assert not structure.loc[SEED_KEY, "structure_ok"]


def test_a_garbage_text_layer_is_read_again_from_the_page_image(tmp_path: Path) -> None:
    """A scanned page under someone else's bad text layer ("lqfo/kk dk f'k;e": a legacy font
    or a poor OCR) would be served as it reads. The layer is judged first (few of its words
    are English words): the page is OCR'd from its image instead, flagged, and the layer's text
    kept in the page's record of what was removed."""
    import pymupdf

    if not tesseract_available():
        if os.environ.get("CI"):
            pytest.fail("tesseract is not installed (scripts/setup.sh installs it)")
        pytest.skip("tesseract is not installed")
    lines = [f"{n}. The promoter shall refund the amount received with interest, rule {n}."
             for n in range(1, 9)]  # fmt: skip
    scan = scanned_pdf(tmp_path / "scan.pdf", [lines], dpi=200)
    doc = pymupdf.open(scan)
    for k in range(8):  # an invisible text layer of gibberish, where the scanned lines are
        doc[0].insert_text((72, 110 + 18 * k), "lqfo/kk dk f'k;e vkSj mlds xzkgd fu;e ykxw",
                           fontsize=10, render_mode=3)  # fmt: skip
    garbage = tmp_path / "garbage_layer.pdf"
    doc.save(garbage)
    doc.close()
    (page,) = parse_pdf("garbage_layer", garbage)
    assert page.method == "ocr" and "text_layer_replaced" in page.flags
    assert "The promoter shall refund the amount received with interest" in " ".join(
        page.text.split()
    )
    replaced = [r for r in page.removed if r["reason"].startswith("text layer replaced by OCR")]
    assert replaced and all("lqfo/kk" in r["text"] for r in replaced)
    # civicsetu inspect says which pages and why
    from civicsetu_pipelines.ingest.inspection import inspect_pdf

    (judged,) = inspect_pdf(garbage, kind="rules")["text_layers_not_trusted"]
    assert (judged["page"], judged["verdict"]) == (1, "replaced")
    assert "of its words are English words" in judged["why"]
    # a good text layer is trusted as it is
    (good,) = parse_pdf("good", write_pdf(tmp_path / "good.pdf", [lines]))
    assert good.method == "pymupdf" and "text_layer_replaced" not in good.flags

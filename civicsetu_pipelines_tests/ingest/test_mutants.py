"""The mutation corpus (``civicsetu_pipelines_tests/mutants.py``): nothing a real document does
can stop a run.

Each mutant of a corpus PDF (truncated, a corrupt content stream, pages shuffled, a page rotated,
no text layer, glyphs drawn twice, encrypted with an empty and with a real password, zero pages,
3,000 blank pages, an image renamed .pdf, a huge page image, amending instruments naming a unit
that does not exist or with no numbered paragraph) goes through ``documents add``, ``inspect``
and a run's per-document steps, in a forked child under a per-document time budget. Each is
refused with one line naming the file, or loaded, or set aside with a reason: never an exception
a run does not expect, never past the budget. The OCR budgets (pages, seconds, a page's seconds,
pixels) flag the pages they leave unread, and ``inspect`` says so.

Logic tier: the corpus PDFs only (the test fails under CI when they are missing), no services.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from civicsetu_pipelines.base.settings import (
    ENV_OCR_MAX_PAGES,
    ENV_OCR_MAX_PIXELS,
    ENV_OCR_MAX_SECONDS,
    ENV_OCR_PAGE_TIMEOUT,
    ENV_OCR_PAGES_AT_ONCE,
)
from civicsetu_pipelines.ingest.inspection import inspect_pdf
from civicsetu_pipelines.ingest.ocr import tesseract_available
from civicsetu_pipelines.ingest.pages import parse_pdf
from civicsetu_pipelines_tests.mutants import (
    BLANK_PAGES,
    MUTANTS,
    Mutant,
    Outcome,
    Sources,
    huge_page_image,
    make_mutants,
    markdown_table,
    rendered_copy,
    run_with_timeout,
    try_mutant,
    warm_up,
)

BUDGET = 60.0  # seconds a mutant may take, all steps (its slowest takes about 6 here)
HUGE_PIXELS = 6000  # the huge page's image here (bench_mutants.py: 20000 square)
TEST_MAX_PIXELS = 4_000_000  # and the pixels OCR may render it at here (default 25 million)
# what each refusal must say, besides the file's name
REFUSALS = {
    "truncated": "damaged (truncated or corrupt)",
    "encrypted_password": "encrypted (password protected)",
    "zero_pages": "has zero pages",
    "png_renamed": "is not a PDF (it is a PNG image)",
    "jpeg_renamed": "is not a PDF (it is a JPEG image)",
}


@pytest.fixture(scope="module")
def sources(corpus_dir: Path) -> Sources:
    if not tesseract_available() and os.environ.get("CI", "").lower() in {"", "0", "false", "no"}:
        pytest.skip("tesseract is not installed (the text-layer-free mutants need it)")
    return Sources.from_corpus(corpus_dir)


@pytest.fixture(scope="module")
def outcomes(
    sources: Sources, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[Mutant, Outcome]]:
    """Every mutant made and run once, each in a forked child killed past :data:`BUDGET`."""
    root = tmp_path_factory.mktemp("mutants")
    names = [name for name in MUTANTS if name != "huge_page_image"]
    mutants = make_mutants(root / "pdfs", sources, names)
    mutants.append(huge_page_image(root / "pdfs", sources, pixels=HUGE_PIXELS))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_OCR_MAX_PIXELS, str(TEST_MAX_PIXELS))
        warm_up(sources, root / "warm_up")  # libraries loaded once, before the forks
        ran = {
            m.name: (
                m,
                run_with_timeout(
                    try_mutant,
                    m,
                    root / "work" / m.name,
                    timeout=BUDGET,
                    name=m.name,
                    expected=m.expected,
                ),
            )  # fmt: skip
            for m in mutants
        }
    print(markdown_table([outcome for _, outcome in ran.values()]))
    return ran


@pytest.mark.parametrize("name", list(MUTANTS))
def test_each_mutant_is_refused_loaded_or_set_aside_never_an_exception(
    outcomes: dict[str, tuple[Mutant, Outcome]], name: str
) -> None:
    mutant, outcome = outcomes[name]
    table = markdown_table([outcome])
    assert not outcome.exceptions, f"{name} raised what a run does not expect:\n{table}"
    assert outcome.seconds < BUDGET, table
    assert mutant.allows(outcome.outcome), f"{name} must be {mutant.expected}:\n{table}"
    assert outcome.reason.strip(), table  # whatever happened, it says why
    if outcome.outcome == "refused":
        line = str(outcome.refusal)
        assert "\n" not in line and "Traceback" not in line, line
        assert mutant.path.name in line and REFUSALS[name] in line, line
        assert outcome.inspect.startswith("refused: ") and mutant.path.name in outcome.inspect


def test_what_each_mutant_made(outcomes: dict[str, tuple[Mutant, Outcome]]) -> None:
    """Beyond its outcome class: the damage is found and said, and what is intact still reads."""
    got = {name: outcome for name, (_m, outcome) in outcomes.items()}
    # an empty user password opens: the rules read as the source's do (9 rules, Form A)
    assert got["encrypted_empty_password"].inspect.startswith("rules, 7 pages, 11 units")
    # thousands of blank pages: never OCR'd nor re-read, flagged, and quick
    blank = got["blank_pages"]
    assert blank.flags.get("empty") == BLANK_PAGES and "ocr" not in blank.flags
    assert blank.stages["add"] + blank.stages["inspect"] + blank.stages["steps"] < 20, blank
    assert "9 units" in blank.reason, blank.reason
    # no text layer: read by OCR; a huge page: read at the resolution the pixel budget allows
    assert got["image_only"].flags.get("ocr") == 1, got["image_only"]
    assert got["huge_page_image"].flags.get("ocr_downscaled") == 1, got["huge_page_image"]
    assert "ocr_downscaled_pages: 1" in got["huge_page_image"].inspect
    # glyphs drawn twice: each is read once, so the rules read as the source's do
    for doubled in ("glyphs_doubled", "seam_doubled"):
        assert got[doubled].flags.get("doubled_glyphs"), got[doubled]
    # (22 chunks: its forms' numbered paragraphs each a unit of their own)
    assert "22 chunks, 9 units" in got["glyphs_doubled"].reason, got["glyphs_doubled"].reason
    # amending instruments: the instruction that cannot apply is named, and changes nothing
    missing = got["amend_missing_unit"].reason
    assert "0 instruction(s) applied" in missing and "Rule 40(2)" in missing, missing
    unnumbered = got["amend_unnumbered"].reason
    assert "0 instruction(s) applied" in unnumbered and "Rule 18(2)" in unnumbered, unnumbered
    # the words print broke across lines are mended: the instruction is read (and named: the
    # rules have no Rule 18(2)), never "an instruction not read"
    broken = got["amend_broken_lines"].reason
    assert "Rule 18(2)" in broken and "not read" not in broken, broken


@pytest.fixture(scope="module")
def scanned_rules(sources: Sources, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The main source with no text layer (its pages rendered to images)."""
    return rendered_copy(sources.main.path, tmp_path_factory.mktemp("scanned") / "scanned.pdf")


def _flags(path: Path, pages: list[int]) -> list[list[str]]:
    return [p.flags for p in parse_pdf(path.stem, path, pages=pages)]


def test_ocr_page_budget_leaves_later_pages_flagged_and_inspect_says_so(
    scanned_rules: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(ENV_OCR_MAX_PAGES, "1")
    flags = _flags(scanned_rules, [0, 1, 2])
    assert flags[0][:1] == ["ocr"]
    for left in flags[1:]:
        assert left == ["needs_ocr", "ocr_skipped_budget", "ocr_budget_pages"], flags
    found = inspect_pdf(scanned_rules, kind="rules", pages=[0, 1, 2],
                        parse_cache=tmp_path / "cache")  # fmt: skip
    assert [s["page"] for s in found["ocr_skipped_budget_pages"]] == [2, 3]
    assert "CIVICSETU_OCR_MAX_PAGES" in found["ocr_skipped_budget_pages"][0]["why"]
    assert found["needs_ocr_pages"] == 2
    # a parse a budget cut short is not cached: a larger budget reads the pages next time
    assert not list((tmp_path / "cache").glob("*.json"))
    assert json.loads((tmp_path / "cache" / "parses.jsonl").read_text())["cached"] is False


class _Readings:
    """Tesseract's readings counted (the real ones): how many ran at once at the most, and
    each one's layout (psm)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import threading

        import civicsetu_pipelines.ingest.ocr as ocr

        self._read = ocr._tesseract_words
        self._lock = threading.Lock()
        self._running = 0
        self.most = 0
        self.layouts: list[str] = []
        monkeypatch.setattr(ocr, "_tesseract_words", self)

    def __call__(self, *args: object, **kwargs: object) -> list[object]:
        with self._lock:
            self._running += 1
            self.most = max(self.most, self._running)
            self.layouts.append(str(args[2]))
        try:
            return self._read(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            with self._lock:
                self._running -= 1

    def reset(self) -> None:
        self.most, self.layouts = 0, []


def test_a_scans_pages_are_read_two_at_a_time_word_for_word_as_one_at_a_time(
    scanned_rules: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """OcrAhead: the next page's first reading runs beside this page's (two Tesseract
    processes at once: both cores), and every page reads exactly as when read alone; the
    rendered images it made are removed."""
    import tempfile

    readings = _Readings(monkeypatch)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    pages = [0, 1, 2]
    monkeypatch.setenv(ENV_OCR_PAGES_AT_ONCE, "1")
    alone = parse_pdf("scanned", scanned_rules, pages=pages)
    assert readings.most == 1
    monkeypatch.setenv(ENV_OCR_PAGES_AT_ONCE, "2")
    readings.reset()
    at_once = parse_pdf("scanned", scanned_rules, pages=pages)
    assert readings.most == 2, readings.most
    assert at_once == alone and all(p.method == "ocr" for p in at_once)
    assert not list(tmp_path.glob("civicsetu-ocr-*"))


def test_second_readings_share_the_workers_and_the_pages_read_as_alone(
    scanned_rules: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every page read in both layouts (no reading is ever enough): at two at once the second
    readings go through the same two workers while later pages are begun, never a third
    Tesseract process, and every page reads as one page at a time reads it."""
    import civicsetu_pipelines.ingest.ocr as ocr

    readings = _Readings(monkeypatch)
    monkeypatch.setattr(ocr, "MAX_UNREAD", -1)
    pages = [0, 1, 2]
    monkeypatch.setenv(ENV_OCR_PAGES_AT_ONCE, "1")
    alone = parse_pdf("scanned", scanned_rules, pages=pages)
    assert readings.most == 1 and sorted(readings.layouts) == ["3", "3", "3", "6", "6", "6"]
    monkeypatch.setenv(ENV_OCR_PAGES_AT_ONCE, "2")
    readings.reset()
    at_once = parse_pdf("scanned", scanned_rules, pages=pages)
    assert readings.most == 2, readings.most
    assert sorted(readings.layouts) == ["3", "3", "3", "6", "6", "6"]
    assert at_once == alone


def test_ocr_time_budgets_kill_tesseract_and_flag_the_pages(
    scanned_rules: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a page's budget: Tesseract is killed past it (a page takes a second or more)
    monkeypatch.setenv(ENV_OCR_PAGE_TIMEOUT, "0.3")
    flags = _flags(scanned_rules, [0, 1])
    assert flags == [["needs_ocr", "ocr_skipped_budget", "ocr_page_timeout"]] * 2, flags
    # the document's budget: spent on the first page, the next is not tried
    monkeypatch.setenv(ENV_OCR_PAGE_TIMEOUT, "120")
    monkeypatch.setenv(ENV_OCR_MAX_SECONDS, "0.3")
    flags = _flags(scanned_rules, [0, 1])
    assert flags == [["needs_ocr", "ocr_skipped_budget", "ocr_budget_seconds"]] * 2, flags

"""Inspecting one PDF without registering it: its kind, its units and its structure checks.

Pure domain code behind ``civicsetu inspect``: the same page parser, structure decoder and
checks the pipeline runs, on any file, so a new gazette can be tried before it is added.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from civicsetu_pipelines.base import sha256_file
from civicsetu_pipelines.ingest.documents import parse_pages_cached
from civicsetu_pipelines.ingest.headings import UNIT_WORD
from civicsetu_pipelines.ingest.kinds import kind_names, load_kinds
from civicsetu_pipelines.ingest.legal_structure import Chunk, build_chunks, read_structure
from civicsetu_pipelines.ingest.ocr_numbers import parse_read_flag
from civicsetu_pipelines.ingest.pages import open_pdf, parse_pdf
from civicsetu_pipelines.ingest.registry import page_spans
from civicsetu_pipelines.ingest.structure_types import Unit

KINDS = kind_names()
DETECT_PAGES = 4  # the kind is read from the first pages with body text (not a bilingual
# gazette's pages in another language or a legacy font, which parsing leaves empty)


def detect_kind(text: str) -> tuple[str, str]:
    """The kind of a document from its first pages' text, and why (the signals that matched)."""
    upper = text.upper()
    scores: dict[str, float] = {}
    reasons: dict[str, list[str]] = {}
    for kind, spec in load_kinds().items():
        for pattern, weight in spec.signals:
            match = re.search(pattern, upper)
            if match:
                scores[kind] = scores.get(kind, 0.0) + weight
                reasons.setdefault(kind, []).append(repr(" ".join(match.group(0).split())))
    if not scores:
        return "rules", "no signal of any kind in the first pages; rules assumed"
    kind = max(KINDS, key=lambda k: (scores.get(k, 0.0), -KINDS.index(k)))
    others = ", ".join(f"{k} {v:g}" for k, v in sorted(scores.items(), key=lambda kv: -kv[1]))
    return kind, f"matched {', '.join(reasons[kind])} (scores: {others})"


def inspect_pdf(
    path: Path,
    *,
    kind: str = "auto",
    language: str = "eng",
    pages: Sequence[int] | None = None,
    ocr: bool = True,
    parse_cache: Path | None = None,
) -> dict[str, Any]:
    """Parse ``path`` as the pipeline would and report its units, coverage and checks.

    ``pages`` are 0-based page indexes (all by default). With ``parse_cache``, the pages come
    from (and go to) the pipeline's parse cache: a scanned PDF is OCR'd once, whether a run or
    ``inspect`` read it first. Raises the parser's
    :class:`~civicsetu_pipelines.ingest.pages.PdfError` for a file that cannot be read.
    """
    if kind != "auto" and kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; one of auto, {', '.join(KINDS)}")
    if parse_cache is None:
        parsed = [dataclasses.asdict(p) for p in parse_pdf(path.stem, path, pages, language, ocr)]
    else:
        if pages is None:
            with open_pdf(path.stem, path) as doc:
                pages = list(range(doc.page_count))
        parsed, _ = parse_pages_cached(path.stem, path, sha256_file(path), parse_cache,
                                       pages=pages, language=language, ocr=ocr)  # fmt: skip
    reason = "given"
    if kind == "auto":
        read = [p["text"] for p in parsed if p["text"].strip()][:DETECT_PAGES]
        kind, reason = detect_kind("\n".join(read))
    structure = read_structure(parsed, kind)
    chunks, report = build_chunks(parsed, document_key=path.stem, jurisdiction="INSPECT",
                                  doc_type=kind, structure=structure)  # fmt: skip
    units = []
    for unit in structure.decoded.units:
        first, _ = structure.stream.locate(unit.start)
        last, _ = structure.stream.locate(max(unit.start, unit.end - 1))
        units.append({"label": unit.label, "number": unit.number, "title": unit.title,
                      "first_page": first, "last_page": last,
                      "flags": list(unit.flags)})  # fmt: skip
    return {
        "path": str(path),
        "kind": kind,
        "kind_reason": reason,
        "unit_word": UNIT_WORD.get(kind, ("unit", "Unit"))[1],
        "pages": len(parsed),
        "ocr_pages": sum(1 for p in parsed if "ocr" in p["flags"]),
        "needs_ocr_pages": sum(1 for p in parsed if "needs_ocr" in p["flags"]),
        "ocr_unread_pages": [p["page"] for p in parsed if "ocr_unread" in p["flags"]],
        "text_layers_not_trusted": _untrusted_layers(parsed),
        # pages an OCR budget left unread (or a text layer left unjudged), and why; pages read
        # at a lower resolution than they wanted (the pixel budget): never silent
        "ocr_skipped_budget_pages": [
            {"page": p["page"], "why": _OCR_BUDGETS.get(f, f)}
            for p in parsed
            if "ocr_skipped_budget" in p["flags"]
            for f in p["flags"]
            if f in _OCR_BUDGETS
        ],
        "ocr_downscaled_pages": [p["page"] for p in parsed if "ocr_downscaled" in p["flags"]],
        # pages whose text layer drew glyphs twice (strips, overlapping boxes): each read once
        "doubled_glyph_pages": [
            {"page": p["page"], "glyphs": int(f.partition(":")[2])}
            for p in parsed
            for f in p["flags"]
            if f.startswith("doubled_glyphs:")
        ],
        "units": units,
        "ocr_number_reads": _number_reads(chunks, structure.decoded.units),
        "coverage": round(report.coverage, 4),
        "structure_ok": report.structure_ok,
        "checks": [c.as_dict() for c in report.checks],
    }


def _number_reads(chunks: Sequence[Chunk], units: Sequence[Unit]) -> list[dict[str, Any]]:
    """Every number read through an OCR'd layer's confusions ("2," as 2., "(l)" as (1)): the
    unit whose number it is, or the first chunk of the sub-unit; as printed and as read."""
    own = {(u.label, flag) for u in units for flag in u.flags}
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for chunk in chunks:
        for flag in chunk.flags:
            read = parse_read_flag(flag)
            if read is None or (chunk.section_label, flag) in seen:
                continue
            seen.add((chunk.section_label, flag))
            where = chunk.section_label if (chunk.section_label, flag) in own else chunk.label
            out.append({"label": where, "printed": read[0], "read": read[1]})
    return out


_OCR_BUDGETS = {
    "ocr_budget_pages": "the document's OCR page budget was spent (CIVICSETU_OCR_MAX_PAGES)",
    "ocr_budget_seconds": "the document's OCR time budget was spent (CIVICSETU_OCR_MAX_SECONDS)",
    "ocr_page_timeout": "Tesseract ran past the page's time budget (CIVICSETU_OCR_PAGE_TIMEOUT)",
}


def _untrusted_layers(parsed: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pages whose text layer was judged untrustworthy: replaced by OCR, or unreadable; or
    someone else's OCR layer read again (re-read, or checked and kept); why, with the figures."""
    verdicts = {"text_layer_replaced": "replaced", "text_layer_unreadable": "unreadable",
                "text_layer_reread": "re-read", "text_layer_kept": "checked, kept"}  # fmt: skip
    out = []
    for page in parsed:
        verdict = next((v for flag, v in verdicts.items() if flag in page["flags"]), None)
        if verdict is None:
            continue
        why = next((r["reason"] for r in page["removed"]
                    if "text layer" in r["reason"] or "OCR layer" in r["reason"]), "")  # fmt: skip
        out.append({"page": page["page"], "verdict": verdict, "why": why})
    return out


def parse_page_ranges(text: str) -> list[int]:
    """``"42-80"`` or ``"1-3,7"`` (1-based, inclusive) as 0-based page indexes, in order."""
    return sorted({i for first, last in page_spans(text) for i in range(first - 1, last)})

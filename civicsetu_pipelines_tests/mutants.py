"""A mutation corpus: real gazette PDFs damaged the ways real documents are damaged.

Every mutant is made at test or bench time from a corpus PDF into a directory the caller owns
(never committed), one function each (:data:`MUTANTS`), and carries the outcome it must have:

* ``refused`` -- ``civicsetu documents add`` refuses it with one line naming the file and the
  problem (and a run that meets the bytes anyway fails that document alone, naming it);
* ``loaded`` -- it parses and chunks, and its units load;
* ``set_aside`` -- the run sets it aside with a reason, and the other documents load;
* ``loaded_or_set_aside`` -- either, as long as it is never a failed partition, a traceback or a
  hang past the per-document time budget.

:func:`make_mutants` builds them; :func:`try_mutant` runs one through the domain steps a run and
``civicsetu inspect`` take (the refusal check of ``documents add``, ``inspect_pdf``, the
per-document ``parse_rows`` and ``chunk_rows``, the set-aside check and, for an amending
instrument, the partition's amendments) and says what happened; :func:`run_with_timeout` runs it
in a forked child under a time budget; :func:`register_mutants` registers mutants as documents of
one jurisdiction in an isolated state directory, for a real ``materialize``.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime as dt
import hashlib
import os
import random
import time
import traceback
import zlib
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymupdf

from civicsetu_pipelines_tests.pdfgen import write_bytes, write_pdf, zero_page_pdf_bytes

OUTCOMES = ("refused", "loaded", "set_aside", "loaded_or_set_aside")
MAIN = "gujrera_appellate_tribunal_rules_2016.pdf"  # 7 pages of rules with a text layer
SMALL = "rera_commencement_notification_2017.pdf"  # one page (the OCR'd mutants)
BLANK_PAGES = 3000
HUGE_PIXELS = 20000  # the huge page's image is this many pixels square ...
HUGE_INCHES = 200  # ... on a page this many inches square (the largest a PDF page may be)
AMENDMENT_TITLE = "{short} (Amendment) Rules, 2024"
MISSING_UNIT = "2. In rule 40 of the said rules, sub-rule (2) shall be omitted."
UNNUMBERED = ("In sub-rule (2) of rule 18, for the word \u201cthree\u201d the word "
              "\u201cfive\u201d shall be substituted.")  # fmt: skip


@dataclass(frozen=True)
class Source:
    """A corpus PDF mutants are made from: its file, title and kind (from MANIFEST.tsv)."""

    path: Path
    title: str
    kind: str = "rules"

    @property
    def short_title(self) -> str:
        """The title up to its year: "... Rules, 2016" (what an amending instrument names)."""
        head, sep, _rest = self.title.partition(" (GH/")
        return head if sep else self.title.split(" (G.S.R.")[0]


@dataclass(frozen=True)
class Sources:
    """The corpus PDFs the mutants are made from: ``main`` (a multi-page text-layer document)
    and ``small`` (one page, for the mutants that must be OCR'd whole)."""

    main: Source
    small: Source

    @classmethod
    def from_corpus(cls, corpus_dir: Path, main: str = MAIN, small: str = SMALL) -> Sources:
        manifest = _manifest(corpus_dir)
        return cls(_source(corpus_dir, main, manifest), _source(corpus_dir, small, manifest))


_KINDS = {"act", "rules", "regulations", "faq", "order", "notification", "circular", "judgment"}


def _manifest(corpus_dir: Path) -> dict[str, dict[str, str]]:
    """MANIFEST.tsv beside (or above) the corpus PDFs, by file name ({} when there is none)."""
    for where in (corpus_dir / "MANIFEST.tsv", corpus_dir.parent / "MANIFEST.tsv"):
        if where.is_file():
            with where.open(encoding="utf-8", newline="") as handle:
                return {row["file"]: row for row in csv.DictReader(handle, delimiter="\t")}
    return {}


def _source(corpus_dir: Path, name: str, manifest: dict[str, dict[str, str]]) -> Source:
    path = corpus_dir / name
    if not path.is_file():
        raise FileNotFoundError(f"corpus PDF {path} not found")
    row = manifest.get(name, {})
    kind = row.get("doc_type", "rules")
    return Source(path, row.get("title") or path.stem, kind if kind in _KINDS else "order")


@dataclass(frozen=True)
class Mutant:
    """One damaged document: where it is, what was done to it and the outcome it must have;
    the kind and title it is registered (and inspected) under. An amending instrument names
    ``amends`` (by its title, in its own words), which must be in the same load."""

    name: str
    path: Path
    what: str
    expected: str  # one of OUTCOMES
    kind: str
    title: str
    amends: Source | None = None

    def allows(self, outcome: str) -> bool:
        """Whether ``outcome`` (refused | loaded | set_aside) is what this mutant may have."""
        if self.expected == "loaded_or_set_aside":
            return outcome in {"loaded", "set_aside"}
        return outcome == self.expected


def _mutant(name: str, path: Path, what: str, expected: str, source: Source, **kw: Any) -> Mutant:
    assert expected in OUTCOMES, expected
    title = kw.pop("title", f"Mutant {name.replace('_', ' ')} of {source.title}")
    return Mutant(name, path, what, expected, kw.pop("kind", source.kind), title, **kw)


# -- The mutants --------------------------------------------------------------------------------


def truncated(out: Path, sources: Sources) -> Mutant:
    data = sources.main.path.read_bytes()
    path = write_bytes(out / "truncated.pdf", data[: int(len(data) * 0.6)])
    return _mutant("truncated", path, "the first 60% of the bytes (a download cut off)",
                   "refused", sources.main)  # fmt: skip


def corrupt_stream(out: Path, sources: Sources) -> Mutant:
    """The compressed content stream of page 2 overwritten in its middle with junk of the same
    length (the file's cross-reference table stays right: only the page is damaged)."""
    data = bytearray(sources.main.path.read_bytes())
    with pymupdf.open(sources.main.path) as doc:
        raw = b"".join(doc.xref_stream_raw(x) for x in doc[1].get_contents()[:1])
    at = data.find(raw)
    assert raw and at >= 0, "page 2's content stream not found in the file"
    junk = random.Random(2).randbytes(len(raw) // 2)
    start = at + len(raw) // 4
    data[start : start + len(junk)] = junk
    path = write_bytes(out / "corrupt_stream.pdf", bytes(data))
    return _mutant("corrupt_stream", path, "page 2's content stream half overwritten with junk",
                   "loaded_or_set_aside", sources.main)  # fmt: skip


def shuffled(out: Path, sources: Sources) -> Mutant:
    path = out / "shuffled.pdf"
    with pymupdf.open(sources.main.path) as doc:
        order = list(range(doc.page_count))
        random.Random(7).shuffle(order)
        doc.select(order)
        doc.save(path, garbage=3, deflate=True)
    return _mutant("shuffled", path, "pages in a random order", "loaded_or_set_aside",
                   sources.main)  # fmt: skip


def rotated(out: Path, sources: Sources) -> Mutant:
    path = out / "rotated.pdf"
    with pymupdf.open(sources.main.path) as doc:
        doc[1].set_rotation(90)
        doc.save(path, garbage=3, deflate=True)
    return _mutant("rotated", path, "page 2 rotated 90 degrees", "loaded_or_set_aside",
                   sources.main)  # fmt: skip


def rendered_copy(source: Path, out: Path, dpi: int = 150) -> Path:
    """Every page of ``source`` rendered to a greyscale image: no text layer at all."""
    with pymupdf.open(source) as doc, pymupdf.open() as scan:
        for page in doc:
            pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
            scan.new_page(width=page.rect.width, height=page.rect.height).insert_image(
                page.rect, pixmap=pix
            )
        scan.save(out, garbage=3, deflate=True)
    return out


def image_only(out: Path, sources: Sources) -> Mutant:
    path = out / "image_only.pdf"
    rendered_copy(sources.small.path, path)
    return _mutant("image_only", path, "text layer removed: pages rendered to images (150 dpi)",
                   "loaded", sources.small)  # fmt: skip


def _overlay(source: Path, out: Path, strips: Callable[[pymupdf.Rect], list[pymupdf.Rect]]) -> None:
    """Each page of ``source`` drawn onto a fresh page once per clip rectangle ``strips`` gives,
    each in its own place: where clips overlap, the page's glyphs are drawn twice."""
    with pymupdf.open(source) as doc, pymupdf.open() as copy:
        for page in doc:
            new = copy.new_page(width=page.rect.width, height=page.rect.height)
            for clip in strips(page.rect):
                new.show_pdf_page(clip, doc, page.number, clip=clip)
        copy.save(out, garbage=3, deflate=True)


def glyphs_doubled(out: Path, sources: Sources) -> Mutant:
    path = out / "glyphs_doubled.pdf"
    _overlay(sources.main.path, path, lambda r: [r, r])
    return _mutant("glyphs_doubled", path, "every glyph drawn twice at the same place",
                   "loaded_or_set_aside", sources.main)  # fmt: skip


def seam_doubled(out: Path, sources: Sources) -> Mutant:
    """Each page drawn as two clipped strips, top and bottom, that overlap by 14 pt at the
    middle: the glyphs of the lines at the seam are drawn twice (once by each strip)."""

    def strips(r: pymupdf.Rect) -> list[pymupdf.Rect]:
        mid = r.height / 2
        return [pymupdf.Rect(0, 0, r.width, mid + 7), pymupdf.Rect(0, mid - 7, r.width, r.height)]

    path = out / "seam_doubled.pdf"
    _overlay(sources.main.path, path, strips)
    return _mutant("seam_doubled", path, "two clipped strips; glyphs at the seam drawn twice",
                   "loaded_or_set_aside", sources.main)  # fmt: skip


def _encrypted(source: Path, out: Path, user_pw: str) -> None:
    with pymupdf.open(source) as doc:
        doc.save(out, encryption=pymupdf.mupdf.PDF_ENCRYPT_AES_256, user_pw=user_pw,
                 owner_pw="owner-secret", permissions=0)  # fmt: skip


def encrypted_empty_password(out: Path, sources: Sources) -> Mutant:
    path = out / "encrypted_empty_password.pdf"
    _encrypted(sources.main.path, path, "")
    return _mutant("encrypted_empty_password", path, "AES-256, empty user password "
                   "(opens without one), owner password set", "loaded", sources.main)  # fmt: skip


def encrypted_password(out: Path, sources: Sources) -> Mutant:
    path = out / "encrypted_password.pdf"
    _encrypted(sources.main.path, path, "user-secret")
    return _mutant("encrypted_password", path, "AES-256 with a user password", "refused",
                   sources.main)  # fmt: skip


def zero_pages(out: Path, sources: Sources) -> Mutant:
    path = write_bytes(out / "zero_pages.pdf", zero_page_pdf_bytes())
    return _mutant("zero_pages", path, "a well-formed PDF with an empty page tree", "refused",
                   sources.main)  # fmt: skip


def blank_pages(out: Path, sources: Sources, count: int = BLANK_PAGES) -> Mutant:
    path = out / "blank_pages.pdf"
    with pymupdf.open(sources.main.path) as doc:
        width, height = doc[0].rect.width, doc[0].rect.height
        for _ in range(count):
            doc.new_page(width=width, height=height)
        doc.save(path, garbage=3, deflate=True)
    return _mutant("blank_pages", path, f"{count:,} blank pages after the document's own",
                   "loaded", sources.main)  # fmt: skip


def _page_image(source: Path, fmt: str) -> bytes:
    with pymupdf.open(source) as doc:
        return doc[0].get_pixmap(dpi=100).tobytes(fmt)


def png_renamed(out: Path, sources: Sources) -> Mutant:
    path = write_bytes(out / "png_renamed.pdf", _page_image(sources.main.path, "png"))
    return _mutant("png_renamed", path, "a PNG image of page 1 named .pdf", "refused",
                   sources.main)  # fmt: skip


def jpeg_renamed(out: Path, sources: Sources) -> Mutant:
    path = write_bytes(out / "jpeg_renamed.pdf", _page_image(sources.main.path, "jpeg"))
    return _mutant("jpeg_renamed", path, "a JPEG image of page 1 named .pdf", "refused",
                   sources.main)  # fmt: skip


def huge_page_image(out: Path, sources: Sources, pixels: int = HUGE_PIXELS) -> Mutant:
    """One page 200 inches square, wholly one ``pixels`` square greyscale image (no text layer):
    the small source's page scaled up into it. Written as a Flate stream compressed row by row,
    so making it never holds the 400 MB of pixels."""
    side = HUGE_INCHES * 72.0
    with pymupdf.open(sources.small.path) as doc:
        page = doc[0]
        scale = pixels / 10 / max(page.rect.width, page.rect.height)
        small = page.get_pixmap(matrix=pymupdf.Matrix(scale, scale), colorspace=pymupdf.csGRAY)
    packed = _upscaled_flate(small, pixels, 10)
    path = out / "huge_page_image.pdf"
    with pymupdf.open() as big:
        new = big.new_page(width=side, height=side)
        stub = pymupdf.Pixmap(pymupdf.csGRAY, pymupdf.IRect(0, 0, 1, 1), False)
        xref = new.insert_image(new.rect, pixmap=stub)
        big.update_stream(xref, packed, compress=0)
        for key, value in (("Filter", "/FlateDecode"), ("Width", str(pixels)),
                           ("Height", str(pixels)), ("ColorSpace", "/DeviceGray"),
                           ("BitsPerComponent", "8"), ("DecodeParms", "null"),
                           ("SMask", "null")):  # fmt: skip
            big.xref_set_key(xref, key, value)
        big.save(path)
    return _mutant("huge_page_image", path, f"one {HUGE_INCHES}-inch page, one {pixels} x "
                   f"{pixels} px image, no text layer", "loaded_or_set_aside",
                   sources.small)  # fmt: skip


def _upscaled_flate(pix: pymupdf.Pixmap, side: int, factor: int) -> bytes:
    """``pix`` (greyscale) enlarged ``factor`` times on a white ``side`` x ``side`` canvas, as
    Flate-compressed 8-bit rows."""
    import numpy as np

    gray = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.stride)
    gray = gray[:, : pix.width]
    packer = zlib.compressobj(1)
    chunks = []
    white = bytes([255]) * side
    for y in range(side):
        source_row = y // factor
        if source_row < gray.shape[0]:
            row = np.full(side, 255, dtype=np.uint8)
            wide = np.repeat(gray[source_row], factor)[:side]
            row[: len(wide)] = wide
            chunks.append(packer.compress(row.tobytes()))
        else:
            chunks.append(packer.compress(white))
    chunks.append(packer.flush())
    return b"".join(chunks)


def _amending(out: Path, name: str, target: Source, instructions: Sequence[str]) -> Path:
    """A G.O. of the State naming ``target`` as the rules it amends, with ``instructions``."""
    short = target.short_title
    rows = [
        "GOVERNMENT OF GUJARAT",
        "URBAN DEVELOPMENT AND URBAN HOUSING DEPARTMENT",
        "NOTIFICATION",
        "Gandhinagar, the 1st March, 2024.",
        "The Government of Gujarat hereby makes the following rules further to amend the "
        f"{short}, namely:-",
        *instructions,
        "By order and in the name of the Governor of Gujarat,",
        "Under Secretary to the Government.",
    ]
    return write_pdf(out / f"{name}.pdf", [rows])


def amend_missing_unit(out: Path, sources: Sources) -> Mutant:
    short = sources.main.short_title
    path = _amending(out, "amend_missing_unit", sources.main, [
        f"1. Short title.- These rules may be called the "
        f"{AMENDMENT_TITLE.format(short=_stem(short))}.",
        MISSING_UNIT,
    ])  # fmt: skip
    return _mutant("amend_missing_unit", path, "an amending G.O. whose instruction names rule "
                   "40, which the rules do not have", "loaded", sources.main,
                   kind="notification", title=AMENDMENT_TITLE.format(short=_stem(short)),
                   amends=sources.main)  # fmt: skip


def amend_unnumbered(out: Path, sources: Sources) -> Mutant:
    short = sources.main.short_title
    path = _amending(out, "amend_unnumbered", sources.main, [UNNUMBERED])
    title = AMENDMENT_TITLE.format(short=_stem(short)).replace("(Amendment)", "(Second Amendment)")
    return _mutant("amend_unnumbered", path, "an amending G.O. whose only instruction is one "
                   "unnumbered paragraph", "loaded", sources.main, kind="notification",
                   title=title, amends=sources.main)  # fmt: skip


def amend_broken_lines(out: Path, sources: Sources) -> Mutant:
    short = sources.main.short_title
    path = _amending(out, "amend_broken_lines", sources.main, [
        "In the said rules,-", "in sub-",
        "rule (2) of rule 18, for the word \u201cthree\u201d the word \u201cfive\u201d shall be "
        "substi-", "tuted.",
    ])  # fmt: skip
    title = AMENDMENT_TITLE.format(short=_stem(short)).replace("(Amendment)", "(Third Amendment)")
    return _mutant("amend_broken_lines", path, "an amending G.O. with a lead-in whose instruction "
                   "print broke across lines ('sub-' / 'rule', 'substi-' / 'tuted')", "loaded",
                   sources.main, kind="notification", title=title,
                   amends=sources.main)  # fmt: skip


def _stem(short: str) -> str:
    """ "X Rules, 2016" -> "X" (the amending rules' title is built on it)."""
    return short.rsplit(" Rules", 1)[0] if " Rules" in short else short


_ALL = (truncated, corrupt_stream, shuffled, rotated, image_only, glyphs_doubled, seam_doubled,
        encrypted_empty_password, encrypted_password, zero_pages, blank_pages, png_renamed,
        jpeg_renamed, huge_page_image, amend_missing_unit, amend_unnumbered,
        amend_broken_lines)  # fmt: skip
MUTANTS: dict[str, Callable[[Path, Sources], Mutant]] = {fn.__name__: fn for fn in _ALL}


def make_mutants(
    out_dir: Path, sources: Sources, names: Collection[str] | None = None
) -> list[Mutant]:
    """Make the mutants ``names`` (default: all of :data:`MUTANTS`) in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    unknown = set(names or ()) - set(MUTANTS)
    if unknown:
        raise ValueError(f"unknown mutants {sorted(unknown)}; known: {', '.join(MUTANTS)}")
    return [make(out_dir, sources) for name, make in MUTANTS.items() if not names or name in names]


# -- Running one through the domain steps ---------------------------------------------------------

JURISDICTION = "MIZORAM"  # not in the shipped registry: a mutant's partition holds only mutants
EFFECTIVE = dt.date(2024, 3, 1)


@dataclass
class Outcome:
    """What the domain steps made of a mutant. ``outcome``: refused | loaded | set_aside (as
    :data:`OUTCOMES`), or ``exception`` (a step raised what it must not) or ``timeout``.
    ``refusal``: the line ``documents add`` refused it with (None: accepted); ``inspect``: what
    ``civicsetu inspect`` said; ``flags``: its pages' flags, counted; ``stages``: seconds of
    each step; ``raised``: what the run's per-document steps raised (``Type: message
    (file:line function)``: the document's own ``PdfError``, which the run records as its
    failure); ``exceptions``: ``step: Type: message (file:line function)`` of every exception
    a step raised that a run does not expect (anything but ``PdfError``, or ``AddError`` from
    ``documents add``)."""

    name: str
    expected: str
    outcome: str
    reason: str
    seconds: float
    refusal: str | None = None
    inspect: str = ""
    flags: dict[str, int] = field(default_factory=dict)
    stages: dict[str, float] = field(default_factory=dict)
    raised: str | None = None
    exceptions: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The outcome the mutant must have, and no exception a run does not expect."""
        allowed = {"loaded", "set_aside"} if self.expected == "loaded_or_set_aside" else {
            self.expected}  # fmt: skip
        return self.outcome in allowed and not self.exceptions


def spec_of(mutant: Mutant | Source, key: str, jurisdiction: str = JURISDICTION) -> Any:
    """The registry entry (``DocumentSpec``) a mutant (or a source) has once added."""
    from civicsetu_pipelines.ingest.registry import DocumentSpec

    title = mutant.title if isinstance(mutant, Mutant) else mutant.short_title
    return DocumentSpec.model_validate({
        "key": key, "title": title, "jurisdiction": jurisdiction, "doc_type": mutant.kind,
        "effective_date": EFFECTIVE.isoformat(),
        "source_url": f"https://example.gov.in/{key}.pdf", "filename": mutant.path.name,
        "sha256": None, "language": "eng",
    })  # fmt: skip


def _where(exc: BaseException) -> str:
    """``Type: message (file:line function)``, at the innermost frame of this project."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "civicsetu_pipelines" in f.filename] or frames
    last = ours[-1] if ours else None
    place = f"{Path(last.filename).name}:{last.lineno} {last.name}" if last else "?"
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]} ({place})"


@contextlib.contextmanager
def _environment(**values: str) -> Iterator[None]:
    """The environment with ``values`` set, restored afterwards."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def isolated(work_dir: Path) -> contextlib.AbstractContextManager[None]:
    """``CIVICSETU_STATE_DIR`` and ``CIVICSETU_PARSE_CACHE`` under ``work_dir`` (the shared
    caches of a test run or of the user never see a mutant)."""
    from civicsetu_pipelines.base.settings import ENV_PARSE_CACHE, ENV_STATE_DIR

    return _environment(**{ENV_STATE_DIR: str(work_dir / "state"),
                           ENV_PARSE_CACHE: str(work_dir / "parse_cache")})  # fmt: skip


class _Stage:
    """Times one step into ``outcome.stages``; an exception it must not raise is recorded."""

    def __init__(self, outcome: Outcome, name: str, expected: tuple[type[BaseException], ...]):
        self.outcome, self.name, self.expected = outcome, name, expected
        self.caught: BaseException | None = None

    def __enter__(self) -> _Stage:
        self.began = time.monotonic()
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        self.outcome.stages[self.name] = round(time.monotonic() - self.began, 2)
        if exc is None or not isinstance(exc, Exception):
            return False
        self.caught = exc
        if not isinstance(exc, self.expected):
            self.outcome.exceptions.append(f"{self.name}: {_where(exc)}")
        return True


def try_mutant(mutant: Mutant, work_dir: Path, *, ocr: bool = True) -> Outcome:
    """Run ``mutant`` through what a user and a run do with a document, in ``work_dir``
    (:func:`isolated`): ``documents add`` (``add_document``), ``civicsetu inspect``
    (``inspect_pdf``) and a run's per-document steps (``parse_rows_cached``, ``chunk_rows``, the
    set-aside check of ``section_chunks``; for an amending instrument, the partition's
    amendments with the document it amends). Never raises: what a step raised that it must not
    is in :attr:`Outcome.exceptions`."""
    from civicsetu_pipelines.base import DocumentError
    from civicsetu_pipelines.ingest.inspection import inspect_pdf
    from civicsetu_pipelines.ingest.user_documents import AddError, add_document

    began = time.monotonic()
    result = Outcome(mutant.name, mutant.expected, "exception", "", 0.0)
    with isolated(work_dir):
        with _Stage(result, "add", (AddError,)) as add:
            add_document(mutant.path, jurisdiction=JURISDICTION, kind=mutant.kind,
                         title=mutant.title, key=f"mutant_{mutant.name}",
                         effective_from=EFFECTIVE, state_dir=work_dir / "state")  # fmt: skip
        if isinstance(add.caught, AddError):
            result.refusal = str(add.caught)
        with _Stage(result, "inspect", (DocumentError,)) as looked:
            found = inspect_pdf(mutant.path, kind=mutant.kind, ocr=ocr,
                                parse_cache=work_dir / "parse_cache")  # fmt: skip
            result.inspect = (f"{found['kind']}, {found['pages']} pages, "
                              f"{len(found['units'])} units, structure_ok="
                              f"{found['structure_ok']}")  # fmt: skip
            for what in ("ocr_skipped_budget_pages", "ocr_downscaled_pages"):
                if found.get(what):
                    result.inspect += f", {what}: {len(found[what])}"
        if looked.caught is not None:
            result.inspect = f"refused: {looked.caught}"
        with _Stage(result, "steps", ()) as steps:
            _run_steps(mutant, work_dir, result, ocr=ocr)
        if steps.caught is not None:
            result.outcome, result.reason = "exception", _where(steps.caught)
    if result.refusal is not None:
        result.outcome, result.reason = "refused", result.refusal
    result.seconds = round(time.monotonic() - began, 2)
    return result


def _parse_and_chunk(spec: Any, path: Path, cache: Path, ocr: bool) -> tuple[Any, ...]:
    """A run's parse (through the parse cache) and chunk of one document: its chunk rows, its
    structure report and its pages."""
    from civicsetu_pipelines.base import sha256_file
    from civicsetu_pipelines.ingest.documents import chunk_rows, page_records, parse_rows_cached

    parsed, _ = parse_rows_cached(spec, path, sha256_file(path), cache, ocr=ocr)
    pages = page_records(parsed)
    rows, report = chunk_rows(spec, pages)
    return rows, report, pages


def _run_steps(mutant: Mutant, work_dir: Path, result: Outcome, *, ocr: bool) -> None:
    import pandas as pd

    from civicsetu_pipelines.ingest.amendments import (
        amend_partition,
        amendable_titles,
        instrument_of,
    )
    from civicsetu_pipelines.ingest.pages import PdfError
    from civicsetu_pipelines.ingest.quality import CHUNKS, set_aside_documents

    cache = work_dir / "parse_cache"
    spec = spec_of(mutant, f"mutant_{mutant.name}")
    try:
        rows, report, pages = _parse_and_chunk(spec, mutant.path, cache, ocr)
    except PdfError as exc:  # the run sets the document aside with this reason
        result.outcome, result.reason, result.raised = "set_aside", f"parse: {exc}", _where(exc)
        return
    for page in pages:
        for flag in page["flags"]:
            name = flag.partition(":")[0]  # "doubled_glyphs:12"
            result.flags[name] = result.flags.get(name, 0) + 1
    notes = [f"{report['pages']} pages, {report['chunks']} chunks, {report['sections']} units"]
    notes += [f"{n} {flag}" for flag, n in sorted(result.flags.items())]
    if not report["structure_ok"]:
        notes.append("structure unsound (kept page by page)")
    if mutant.amends is not None:
        base = spec_of(mutant.amends, "amended_rules")
        base_rows, _report, _pages = _parse_and_chunk(base, mutant.amends.path, cache, ocr)
        instrument = instrument_of(spec.key, spec.title, spec.effective_date,
                                   [(int(p["page"]), str(p["text"] or "")) for p in pages],
                                   kind=str(spec.doc_type), amends=spec.amends,
                                   repeals=spec.repeals,
                                   titles=amendable_titles([base, spec]))  # fmt: skip
        if instrument is None:
            notes.append("not read as an amending instrument")
        else:
            amended = amend_partition([*base_rows, *rows], [instrument])
            notes.append(f"{len(amended.done)} instruction(s) applied")
            notes += amended.problems
    set_aside = set_aside_documents(CHUNKS, pd.DataFrame(rows)).reasons
    if set_aside:
        result.outcome = "set_aside"
        result.reason = "; ".join(set_aside.get(spec.key, [])) or str(set_aside)
        return
    result.outcome, result.reason = "loaded", "; ".join(notes)


def warm_up(sources: Sources, work_dir: Path) -> None:
    """Run the steps once on a source, in this process: the libraries they load on first use
    (Great Expectations, wordfreq, ...) are then loaded before :func:`run_with_timeout` forks,
    so each mutant's time is its own."""
    source = sources.main
    try_mutant(Mutant("warm_up", source.path, "the source itself", "loaded", source.kind,
                      f"Warm up {source.title}"), work_dir)  # fmt: skip


def run_with_timeout(
    fn: Callable[..., Outcome], *args: Any, timeout: float, name: str = "", expected: str = ""
) -> Outcome:
    """``fn(*args)`` in a forked child, killed after ``timeout`` seconds with the processes it
    started (its own process group: Tesseract too) -- an Outcome ``timeout``; an exception the
    child could not report is an Outcome ``exception``."""
    import multiprocessing
    import signal

    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)

    def child() -> None:
        os.setsid()
        try:
            send.send(dataclasses.asdict(fn(*args)))
        except BaseException as exc:  # noqa: BLE001 - report it to the parent
            send.send({"error": _where(exc)})

    began = time.monotonic()
    process = context.Process(target=child, daemon=True)
    process.start()
    send.close()
    try:
        got = receive.recv() if receive.poll(timeout) else None
    except EOFError:
        got = {"error": f"the child died (exit code {process.exitcode})"}
    finally:
        if process.is_alive() and process.pid:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        process.join(5)
        receive.close()
    seconds = round(time.monotonic() - began, 2)
    if got is None:
        return Outcome(name, expected, "timeout", f"no result within {timeout:.0f} s", seconds,
                       exceptions=[f"timeout after {timeout:.0f} s"])  # fmt: skip
    if "error" in got:
        return Outcome(name, expected, "exception", got["error"], seconds,
                       exceptions=[got["error"]])  # fmt: skip
    return Outcome(**got)


# -- Registering mutants for a real run -------------------------------------------------------


@dataclass(frozen=True)
class Registered:
    """A mutant as registered: its key, or the line ``documents add`` refused it with (and
    whether it was then written to the registry anyway, past the check)."""

    mutant: Mutant
    key: str
    refusal: str | None = None
    forced: bool = False


def register_mutants(
    mutants: Sequence[Mutant],
    *,
    jurisdiction: str,
    state_dir: Path,
    force_refused: bool = False,
) -> list[Registered]:
    """Register ``mutants`` as documents of ``jurisdiction`` in ``state_dir`` with
    ``add_document`` (``civicsetu documents add``), as a user would; then ``civicsetu
    materialize -j JURISDICTION`` (with ``CIVICSETU_STATE_DIR=state_dir``) ingests them.

    Choose a jurisdiction the shipped registry does not hold (MIZORAM, ASSAM ...): an amending
    mutant names the document it amends by its title, and that document is registered here
    too (a copy, saved again so that its sha256 is not the shipped one's). A mutant ``documents
    add`` refuses is returned with its refusal; with ``force_refused`` its bytes are also
    stored and its entry written to the user registry as ``add`` would have, past the check
    (a file damaged after it was added), so the run meets them. ``CIVICSETU_STATE_DIR`` is
    ``state_dir`` only while registering.
    """
    from civicsetu_pipelines.base.settings import ENV_STATE_DIR
    from civicsetu_pipelines.ingest.user_documents import AddError, add_document

    state_dir.mkdir(parents=True, exist_ok=True)
    copies = state_dir / "mutant_sources"
    copies.mkdir(exist_ok=True)
    done: list[Registered] = []
    amended: set[Path] = set()
    with _environment(**{ENV_STATE_DIR: str(state_dir)}):
        for mutant in mutants:
            target = mutant.amends
            if target is not None and target.path not in amended:
                amended.add(target.path)
                copy = copies / target.path.name
                with pymupdf.open(target.path) as doc:
                    doc.save(copy, garbage=4, deflate=True)
                add_document(copy, jurisdiction=jurisdiction, kind=target.kind,
                             title=target.short_title, key=f"amended_{target.path.stem}",
                             effective_from=dt.date(2016, 10, 29), state_dir=state_dir)  # fmt: skip
            key = f"mutant_{mutant.name}"
            try:
                add_document(mutant.path, jurisdiction=jurisdiction, kind=mutant.kind,
                             title=mutant.title, key=key, effective_from=dt.date(2024, 3, 1),
                             state_dir=state_dir)  # fmt: skip
            except AddError as exc:
                if force_refused:
                    _force(mutant, key, jurisdiction, state_dir)
                done.append(Registered(mutant, key, str(exc), force_refused))
            else:
                done.append(Registered(mutant, key))
    return done


def _force(mutant: Mutant, key: str, jurisdiction: str, state_dir: Path) -> None:
    """Store ``mutant``'s bytes and write its entry to the user registry, with no check."""
    import yaml

    from civicsetu_pipelines.base import jurisdiction_code, pdf_cache_dir
    from civicsetu_pipelines.ingest.registry import SCHEMA_VERSION, user_registry_path

    data = mutant.path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    stored = pdf_cache_dir(state_dir) / f"{sha}.pdf"
    stored.parent.mkdir(parents=True, exist_ok=True)
    stored.write_bytes(data)
    registry = user_registry_path(state_dir)
    registry.parent.mkdir(parents=True, exist_ok=True)
    entries = []
    if registry.is_file():
        entries = list((yaml.safe_load(registry.read_text(encoding="utf-8")) or {}).get(
            "documents") or [])  # fmt: skip
    entries.append({
        "key": key, "title": mutant.title, "jurisdiction": jurisdiction_code(jurisdiction),
        "doc_type": mutant.kind, "effective_date": "2024-03-01",
        "source_url": mutant.path.as_uri(), "filename": f"{sha}.pdf", "sha256": sha,
        "language": "eng", "status": "in_force",
        "notes": f"mutant {mutant.name}: {mutant.what} (written past `documents add`)",
    })  # fmt: skip
    body = yaml.safe_dump({"schema_version": SCHEMA_VERSION, "documents": entries},
                          sort_keys=False, allow_unicode=True)  # fmt: skip
    registry.write_text(body, encoding="utf-8")


def markdown_table(outcomes: Sequence[Outcome]) -> str:
    """The outcomes as a markdown table: mutant, expected, outcome, reason, seconds."""
    lines = ["| mutant | expected | outcome | reason | seconds |", "|---|---|---|---|---:|"]
    for o in outcomes:
        mark = "" if o.ok else " **(!)**"
        reason = " ".join(o.reason.split()).replace("|", "\\|")[:220]
        lines.append(f"| {o.name} | {o.expected} | {o.outcome}{mark} | {reason} | "
                     f"{o.seconds:.1f} |")  # fmt: skip
    return "\n".join(lines)


__all__ = ["MUTANTS", "OUTCOMES", "Mutant", "Outcome", "Registered", "Source", "Sources",
           "isolated", "make_mutants", "markdown_table", "register_mutants", "rendered_copy",
           "run_with_timeout", "spec_of", "try_mutant", "warm_up"]  # fmt: skip

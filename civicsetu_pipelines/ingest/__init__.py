"""Stage 1, ingest: gazette PDFs to verified legal units.

The document registry, fetching (mirror or download, sha256 pins), PDF pages (layout, running
headers, margin notes, other scripts), OCR, the legal structure of a document (units along its
own numbering), the per-document steps the assets call, and the quality schemas of its tables.

Modules, in the order they build on each other:

* ``registry`` -- the document registry (data/documents.yaml) and curated derivations
* ``fetch`` -- offline mirrors and downloads with retries, size caps and sha256 pins
* ``pages`` -- PDF pages to clean, positioned body text
* ``ocr`` -- Tesseract OCR of pages without a text layer
* ``sequence`` -- the best path through candidate headings: the document's numbering
* ``headings`` -- the heading grammar: candidate unit headings, titles, appendices
* ``ocr_numbers`` -- numbers as an OCR'd text layer prints them ("2," "I0." "(l)"), read as
  numbers only where the sequence expects one, and flagged
* ``structure_types`` -- the stream, units and decoded structure (legal_structure builds them,
  structure_checks checks them)
* ``unit_parts`` -- how a piece of a longer unit is spelled in its path (`` (part N)``, a
  form's `` para N``): legal_structure writes it, the AKN eIds and the later stages read it
* ``legal_structure`` -- a document's numbered units (sections, rules, forms ...) and chunks
* ``structure_checks`` -- self-checks of a decoded structure (sequence, swallowed, titles ...)
* ``documents`` -- the per-document steps: fetch, parse (cached), chunk
* ``amendments`` -- amending instruments' instructions read, and the points in time they make
* ``akn`` -- Akoma Ntoso addresses: work and expression URIs (``cobalt``) and unit eIds
* ``inspection`` -- one PDF's kind, units and checks, unregistered (civicsetu inspect)
* ``quality`` -- Great Expectations suites generated from one schema per table
* ``quality_process`` -- the suites validated in a process of its own, shared by the commands
  of a state directory (`documents add` and `materialize` start it)
* ``quality_service`` -- where the shared validator listens; starting, reaching, stopping it
* ``worklist`` -- documents as the unit of incremental work: which a run processes, which it
  leaves as served (issue 46)

The names below are what the rest of the code may use (``__init__.pyi`` lists them for the
type checker; they are imported on first use, so importing the package costs nothing). The
import contracts in ``.importlinter`` keep other packages off the modules themselves.
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)

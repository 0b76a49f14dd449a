"""civicsetu-pipelines: official legal gazettes into a cited legal knowledge base (README.md)."""

import sys

# PyMuPDF 2.0 imports its bundled layout analyzer when it is imported, and that loads an ONNX
# model: 0.5 s and 54 MiB of every process here that reads a PDF (`documents add`,
# `materialize`, `inspect`). Its one use is Page.get_layout(), which this project never calls
# (pages are read with get_text, which does not consult it). A None entry makes PyMuPDF's own
# optional import of it fail as when it is not installed; a process that imported PyMuPDF first
# keeps it.
sys.modules.setdefault("pymupdf.layout", None)  # type: ignore[arg-type]

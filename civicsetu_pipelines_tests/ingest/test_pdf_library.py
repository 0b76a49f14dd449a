"""PyMuPDF without its layout analyzer (an ONNX model it loads on import, which this project
never uses): not loaded by the package, and pages read as they are with it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from civicsetu_pipelines_tests.pdfgen import write_pdf

READ = """
import json, sys
from pathlib import Path
from civicsetu_pipelines.ingest.pages import parse_pdf
pages = parse_pdf("doc", Path(sys.argv[1]), pages=[0, 1], language="eng", ocr=False)
loaded = sys.modules.get("pymupdf.layout") is not None
print(json.dumps({"layout": loaded, "pages": [p.text for p in pages]}))
"""


def test_pages_read_the_same_without_the_layout_analyzer_which_is_not_loaded(
    tmp_path: Path,
) -> None:
    pdf = write_pdf(tmp_path / "rules.pdf", [
        ["THE GUJARAT REAL ESTATE RULES, 2017", "1. Short title.- These rules may be called",
         "the Gujarat Real Estate Rules, 2017."],
        ["2. Definitions.- (1) In these rules, unless the context otherwise requires,-",
         "(a) \"Act\" means the Real Estate (Regulation and Development) Act, 2016;"],
    ])  # fmt: skip

    def read(prelude: str) -> dict[str, object]:
        done = subprocess.run([sys.executable, "-c", prelude + READ, str(pdf)],
                              capture_output=True, text=True, check=True, timeout=120)  # fmt: skip
        return dict(json.loads(done.stdout))

    ours = read("")
    theirs = read("import pymupdf\n")  # PyMuPDF imported first: its analyzer loaded
    assert ours["layout"] is False and theirs["layout"] is True
    assert ours["pages"] == theirs["pages"] and "Definitions" in str(ours["pages"])

"""Every corpus PDF's own date, title and kind as `documents add` reads them, saved, and two saves
compared: what a change to ``ingest/detection.py`` reads differently.

Usage:
    .venv/bin/python bench/bench_dates.py save OUT.json      # this checkout's detector
    .venv/bin/python bench/bench_dates.py compare OLD.json NEW.json

``save`` reads every PDF of ``../shared/corpus/pdfs`` (the registered ones with their pages and
language as the registry gives them, the rest whole, in English) through the parse cache and
``detect_document`` (against their jurisdiction's registered titles), and records each field's
value, confidence, page and words. For the commit before a change, run ``save`` from a worktree
of it (``PYTHONPATH=/tmp/before .venv/bin/python /tmp/before/bench/bench_dates.py save ...``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench_inspect import save_or_compare

from civicsetu_pipelines.base import DEFAULT_MIRROR, Settings, sha256_file
from civicsetu_pipelines.ingest import load_registry
from civicsetu_pipelines.ingest.detection import detect_document
from civicsetu_pipelines.ingest.documents import parse_pages_cached
from civicsetu_pipelines.ingest.pages import open_pdf

FIELDS = ("kind", "title", "date", "in_force")


def save(out: Path) -> None:
    registry = load_registry(include_seed=False)
    named = {str(s.filename): s for s in registry.documents()}
    results: dict[str, Any] = {}
    for path in sorted(Path(DEFAULT_MIRROR).glob("*.pdf")):
        spec = named.get(path.name)
        with open_pdf(path.name, path) as doc:
            pages = spec.pages_to_ingest(doc.page_count) if spec else list(range(doc.page_count))
        parsed, _ = parse_pages_cached(path.name, path, sha256_file(path),
                                       Settings.from_env().parse_cache, pages=pages,
                                       language=spec.language if spec else "eng")  # fmt: skip
        titles = ({s.key: s.title for s in registry.documents(spec.jurisdiction)
                   if s.key != spec.key} if spec else {})  # fmt: skip
        found = detect_document(parsed, titles=titles)
        results[path.name] = {
            name: {"value": str(f.value) if f.value is not None else None,
                   "confidence": f.confidence, "page": f.page, "words": f.words}
            for name in FIELDS for f in [getattr(found, name)]
        }  # fmt: skip
        date = results[path.name]["date"]
        print(f"{path.name}: date {date['value']} ({date['confidence']})")
    out.write_text(json.dumps(results, indent=1, ensure_ascii=False))


def compare(old_path: Path, new_path: Path) -> None:
    old, new = json.loads(old_path.read_text()), json.loads(new_path.read_text())
    changed = 0
    for name in sorted(set(old) | set(new)):
        lines = []
        for field in FIELDS:
            a, b = old.get(name, {}).get(field), new.get(name, {}).get(field)
            if (
                a is None
                or b is None
                or (a["value"], a["confidence"]) != (b["value"], b["confidence"])
            ):
                was, now = (x and (x["value"], x["confidence"]) for x in (a, b))
                lines.append(f"  {field}: {was} -> {now} {b and b['words']!r}")
        changed += bool(lines)
        print(f"{name}: " + ("unchanged" if not lines else "\n" + "\n".join(lines)))
    print(f"{changed} of {len(set(old) | set(new))} PDFs read differently")


if __name__ == "__main__":
    save_or_compare(__doc__.splitlines()[0], save, compare)

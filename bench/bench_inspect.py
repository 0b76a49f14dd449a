"""`civicsetu inspect` on every corpus PDF, saved, and two saves compared: units lost or gained,
titles changed, first pages moved, checks that changed verdict.

Usage:
    .venv/bin/python bench/bench_inspect.py save OUT.json      # this checkout's parser
    .venv/bin/python bench/bench_inspect.py compare OLD.json NEW.json

``save`` inspects every default-registry document (its kind, language and page ranges from the
registry, as the pipeline reads it) and the PDFs of ``../shared/corpus/pdfs`` the registry does
not name (kind detected, as a user's `civicsetu inspect` would). To measure a change, run ``save``
in a worktree of the commit before it (``git worktree add /tmp/before REV`` and
``PYTHONPATH=/tmp/before .venv/bin/python /tmp/before/bench/bench_inspect.py save before.json``;
older checkouts have no parse cache to share, so their scanned pages are OCR'd again) and in this
one, then ``compare``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from civicsetu_pipelines.base import DEFAULT_MIRROR
from civicsetu_pipelines.ingest import inspect_pdf, load_registry


def _pages(spec: Any) -> list[int] | None:
    ranges = getattr(spec, "page_ranges", None)
    if not ranges:
        return None
    return [p - 1 for first, last in ranges for p in range(first, last + 1)]


def save(out: Path) -> None:
    registry = load_registry(include_seed=False)
    named = {str(s.filename): s for s in registry.documents()}
    options: dict[str, Any] = {}
    if "parse_cache" in inspect.signature(inspect_pdf).parameters and os.environ.get(
        "CIVICSETU_PARSE_CACHE"
    ):
        options["parse_cache"] = Path(os.environ["CIVICSETU_PARSE_CACHE"])
    results = {}
    for path in sorted(Path(DEFAULT_MIRROR).glob("*.pdf")):
        spec = named.get(path.name)
        started = time.perf_counter()
        report = inspect_pdf(
            path,
            kind=str(spec.doc_type) if spec else "auto",
            language=str(getattr(spec, "language", None) or "eng") if spec else "eng",
            pages=_pages(spec) if spec else None,
            **options,
        )
        results[path.name] = {
            "kind": report["kind"],
            "units": [
                {k: u[k] for k in ("label", "title", "first_page", "last_page")}
                for u in report["units"]
            ],
            "checks": {c["name"]: c["passed"] for c in report["checks"]},
        }
        print(f"{path.name}: {report['kind']}, {len(report['units'])} units, "
              f"{time.perf_counter() - started:.1f} s", file=sys.stderr)  # fmt: skip
    out.write_text(json.dumps(results, indent=1, ensure_ascii=False))


def compare(old_path: Path, new_path: Path) -> None:
    old, new = json.loads(old_path.read_text()), json.loads(new_path.read_text())
    for name in sorted(set(old) | set(new)):
        if name not in old or name not in new:
            print(f"{name}: only in {'new' if name in new else 'old'}")
            continue
        before = {u["label"]: u for u in old[name]["units"]}
        after = {u["label"]: u for u in new[name]["units"]}
        lines = []
        if old[name]["kind"] != new[name]["kind"]:
            # the same units under the kind's unit word ("Rule 5" read as "Regulation 5")
            lines.append(f"  kind {old[name]['kind']} -> {new[name]['kind']}")
            word = {u["label"].split(" ")[0] for u in new[name]["units"] if " " in u["label"]}
            renamed = {}
            for label, unit in before.items():
                number = label.split(" ", 1)[-1]
                twin = next((f"{w} {number}" for w in word if f"{w} {number}" in after), None)
                if label not in after and twin is not None:
                    renamed[twin] = unit
            before = {k: v for k, v in before.items() if k in after or k not in
                      {u["label"] for u in renamed.values()}} | renamed  # fmt: skip
            if renamed:
                lines.append(f"  {len(renamed)} units relabelled by the kind's unit word")
        lines += [f"  lost {label}" for label in before if label not in after]
        lines += [f"  gained {label}: {after[label]['title']!r} (page {after[label]['first_page']})"
                  for label in after if label not in before]  # fmt: skip
        for label in before.keys() & after.keys():
            a, b = before[label], after[label]
            if a["title"] != b["title"]:
                lines.append(f"  title of {label}: {a['title']!r} -> {b['title']!r}")
            if (a["first_page"], a["last_page"]) != (b["first_page"], b["last_page"]):
                lines.append(f"  pages of {label}: {a['first_page']}-{a['last_page']} -> "
                             f"{b['first_page']}-{b['last_page']}")  # fmt: skip
        for check, passed in new[name]["checks"].items():
            if old[name]["checks"].get(check, passed) != passed:
                lines.append(f"  check {check}: {old[name]['checks'][check]} -> {passed}")
        units = f"{len(before)} -> {len(after)} units"
        print(f"{name}: {units}" + ("" if lines else ", unchanged"))
        print("\n".join(sorted(lines))) if lines else None


def save_or_compare(
    description: str, save: Callable[[Path], None], compare: Callable[[Path, Path], None]
) -> None:
    """The command line of a bench that saves what it reads and compares two saves:
    ``save OUT.json`` or ``compare OLD.json NEW.json`` (bench_inspect, bench_dates)."""
    parser = argparse.ArgumentParser(description=description)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("save").add_argument("out", type=Path)
    both = sub.add_parser("compare")
    both.add_argument("old", type=Path)
    both.add_argument("new", type=Path)
    args = parser.parse_args()
    if args.command == "save":
        save(args.out)
    else:
        compare(args.old, args.new)


if __name__ == "__main__":
    save_or_compare(__doc__.splitlines()[0], save, compare)

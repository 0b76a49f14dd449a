"""The mutation corpus: corpus PDFs damaged the ways real documents are, each run through what a
user and a run do with a document, under a per-document time budget.

Usage:
    .venv/bin/python bench/bench_mutants.py [--timeout 300] [--only NAME ...] [--keep DIR]

The mutants (civicsetu_pipelines_tests/mutants.py: truncated, a corrupt content stream, pages
shuffled, a page rotated, the text layer removed, glyphs drawn twice, encrypted with an empty and
with a real password, zero pages, 3,000 blank pages, an image renamed .pdf, a huge page image,
amending instruments naming a unit that does not exist or with no numbered paragraph) are made
from ../shared/corpus/pdfs into a temporary directory (``--keep DIR``: there, kept). Each runs in
a forked child killed after ``--timeout`` seconds, with its own state directory and parse cache,
through (a) ``documents add`` (``add_document``: refused with one line, or accepted), (b)
``civicsetu inspect`` (``inspect_pdf``) and (c) a run's per-document steps (``parse_rows_cached``,
``chunk_rows``, the set-aside check of ``section_chunks`` and, for an amending instrument, the
partition's amendments). Prints a markdown table (mutant, expected, outcome, reason, seconds),
the seconds of each step, and every exception a step raised that a run does not expect (what
containment must catch). Exit 1 when a mutant's outcome is not the one it must have.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from civicsetu_pipelines.base.settings import DEFAULT_MIRROR
from civicsetu_pipelines_tests.mutants import (
    MUTANTS,
    Outcome,
    Sources,
    make_mutants,
    markdown_table,
    run_with_timeout,
    try_mutant,
    warm_up,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per document")
    parser.add_argument("--only", nargs="*", choices=sorted(MUTANTS), help="these mutants only")
    parser.add_argument("--keep", type=Path, help="make the mutants here, and keep them")
    parser.add_argument("--corpus", type=Path, default=Path(DEFAULT_MIRROR))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="civicsetu-mutants-") as tmp:
        root = args.keep or Path(tmp)
        sources = Sources.from_corpus(args.corpus)
        began = time.perf_counter()
        mutants = make_mutants(root / "mutants", sources, args.only)
        made = time.perf_counter() - began
        print(f"{len(mutants)} mutants made from {sources.main.path.name} and "
              f"{sources.small.path.name} in {made:.1f} s", file=sys.stderr)  # fmt: skip
        warm_up(sources, root / "warm_up")
        outcomes: list[Outcome] = []
        for mutant in mutants:
            outcome = run_with_timeout(try_mutant, mutant, root / "work" / mutant.name,
                                       timeout=args.timeout, name=mutant.name,
                                       expected=mutant.expected)  # fmt: skip
            print(f"{mutant.name}: {outcome.outcome} in {outcome.seconds:.1f} s",
                  file=sys.stderr)  # fmt: skip
            outcomes.append(outcome)
    print(markdown_table(outcomes))
    print()
    print("| mutant | add (s) | inspect (s) | parse + chunk (s) | inspect says | page flags |")
    print("|---|---:|---:|---:|---|---|")
    for o in outcomes:
        flags = ", ".join(f"{name} x{n}" for name, n in sorted(o.flags.items()))
        stages = [f"{o.stages[s]:.1f}" if s in o.stages else "-" for s in ("add", "inspect",
                                                                           "steps")]  # fmt: skip
        print(f"| {o.name} | {' | '.join(stages)} | {o.inspect[:90]} | {flags} |")
    print()
    print("What the per-document parse + chunk steps raised (a run records a PdfError as the "
          "document's failure):")  # fmt: skip
    for o in outcomes:
        if o.raised or o.exceptions:
            print(f"- {o.name}: {o.raised or ''} {'; '.join(o.exceptions)}".rstrip())
    unexpected = [(o.name, e) for o in outcomes for e in o.exceptions]
    print()
    print(f"Exceptions a run does not expect: {len(unexpected) or 'none'}")
    for name, exception in unexpected:
        print(f"- {name}: {exception}")
    if not all(o.ok for o in outcomes):
        sys.exit(1)


if __name__ == "__main__":
    main()

"""One state rules PDF added as the README says, against its own parse and embedding (issue 46).

Usage: .venv/bin/python bench/bench_rules_add.py [--source daman_diu_general_rules_2016.pdf]
                                                 [--jurisdiction ANDHRA_PRADESH] [--keep]

On a fresh state directory (its own embedded Postgres, parse cache and Dagster home; the model
kept under ``~/.cache/civicsetu/bench-large-models``, exported once, in no figure):

1. ``civicsetu documents add <pdf> -j J --kind rules --title ... --effective-from ...`` and
   ``civicsetu materialize -j J``: each command's wall time (a process of its own, as a user
   runs them);
2. the document's own work, in this process: its parse (``ingest.parse_rows``, the pipeline's
   parser, OCR included, no cache) and the encoding of the windows of the chunks the run made
   (the same model and runtime);
3. the ratio of (1) to (2). The done-when of issue 46: at most 2.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_large import bare_encoding, civicsetu, finish, materialize, setup_state  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "pdfs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default="daman_diu_general_rules_2016.pdf")
    parser.add_argument("--title", default="Andhra Pradesh Real Estate (Regulation and "
                        "Development) Rules, 2017")  # fmt: skip
    parser.add_argument("--jurisdiction", default="ANDHRA_PRADESH")
    parser.add_argument("--keep", action="store_true", help="keep the state directory")
    args = parser.parse_args()
    source = SHARED / args.source
    if not source.is_file():
        raise SystemExit(f"{source}: not found (the shared corpus sits beside the repository)")
    state = Path(tempfile.mkdtemp(prefix="civicsetu-bench-rules-"))
    setup_state(state, "~/.cache/civicsetu/bench-large-models")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        bench(state, source, args.jurisdiction, args.title)
    finally:
        finish(state, keep=args.keep)


def bench(state: Path, source: Path, j: str, title: str) -> None:
    from civicsetu_pipelines.base.settings import Settings, models_dir
    from civicsetu_pipelines.ingest import load_registry
    from civicsetu_pipelines.ingest.documents import parse_rows
    from civicsetu_pipelines.store.embedders import open_embedder
    from civicsetu_pipelines.store.embedding import embedding_config_from_env

    config = embedding_config_from_env()
    embedder = open_embedder(config, models_dir(state, Settings.from_env().models_override))
    embedder.encode(["warm-up"])  # the export and load, once per machine: in no figure
    key = f"{j.lower()}_general_rules_2017"
    added = civicsetu("documents", "add", str(source), "-j", j, "--kind", "rules", "--title",
                      title, "--effective-from", "2017-05-01", "--key", key)  # fmt: skip
    run = materialize(j)
    served = added.seconds + run.seconds
    print(f"documents add                 {added}", flush=True)
    print(f"materialize -j {j:<15}{run}", flush=True)
    spec = load_registry().get(key)
    started = time.perf_counter()
    pages = parse_rows(spec, source)
    parse_s = time.perf_counter() - started
    encode_s, chunks, windows = bare_encoding(state, j, embedder)
    own = parse_s + encode_s
    print(f"its own parse                 {parse_s:8.2f} s  ({len(pages)} pages)")
    print(f"its own encoding              {encode_s:8.2f} s  ({chunks} chunks, {windows} windows)")
    print(f"served after                  {served:8.2f} s = {served / own:.2f} x its own parse "
          f"and encoding ({own:.2f} s)")  # fmt: skip


if __name__ == "__main__":
    main()

"""One state rules PDF added as the README says, against its own parse and embedding (issue 46).

Usage: .venv/bin/python bench/bench_rules_add.py [--source daman_diu_general_rules_2016.pdf]
                                                 [--jurisdiction ANDHRA_PRADESH] [--keep]

Twice, each on a state directory of its own (its own embedded Postgres, parse cache and Dagster
home; the model kept under ``~/.cache/civicsetu/bench-large-models``, exported once, in no
figure):

* **a fresh state**: nothing has run in it; the add's ``materialize`` starts its Postgres and
  creates its Dagster instance;
* **a state in use**: the state's base registry (the Gujarat rules) materialized first, in no
  figure, as a user's state is after the README's first command: its Postgres running, its
  Dagster instance made, the checks' validator the commands share left running by that run.

In each:

1. ``civicsetu documents add <pdf> -j J --kind rules --title ... --effective-from ...`` and
   ``civicsetu materialize -j J``: each command's wall time (a process of its own, as a user
   runs them);
2. the document's own work, in this process (after the fresh state's run): its parse
   (``ingest.parse_rows``, the pipeline's parser, OCR included, no cache) and the encoding of the
   windows of the chunks the run made (the same model and runtime);
3. the ratio of (1) to (2). The done-when of issue 46: at most 2.

The shared validator is not a child of either command: its memory is printed on its own.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_large import Run, bare_encoding, civicsetu, finish, materialize, setup_state  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "pdfs"
MODELS = "~/.cache/civicsetu/bench-large-models"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default="daman_diu_general_rules_2016.pdf")
    parser.add_argument("--title", default="Andhra Pradesh Real Estate (Regulation and "
                        "Development) Rules, 2017")  # fmt: skip
    parser.add_argument("--jurisdiction", default="ANDHRA_PRADESH")
    parser.add_argument("--keep", action="store_true", help="keep the state directories")
    args = parser.parse_args()
    source = SHARED / args.source
    if not source.is_file():
        raise SystemExit(f"{source}: not found (the shared corpus sits beside the repository)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    fresh = Path(tempfile.mkdtemp(prefix="civicsetu-bench-rules-"))
    setup_state(fresh, MODELS)
    try:
        served_fresh = served(source, args.jurisdiction, args.title)
        own = own_work(fresh, source, args.jurisdiction)
    finally:
        finish(fresh, keep=args.keep)
    used = Path(tempfile.mkdtemp(prefix="civicsetu-bench-rules-used-"))
    setup_state(used, MODELS)
    try:
        first = materialize("GUJARAT")
        print(f"(the state in use: GUJARAT materialized first in {first.seconds:.1f} s, in no "
              "figure)")  # fmt: skip
        served_used = served(source, args.jurisdiction, args.title)
    finally:
        finish(used, keep=args.keep)
    for name, (add, run) in (("a fresh state", served_fresh), ("a state in use", served_used)):
        total = add.seconds + run.seconds
        print(f"{name}: served after {total:8.2f} s = {total / own:.2f} x its own parse and "
              f"encoding ({own:.2f} s)")  # fmt: skip


def served(source: Path, j: str, title: str) -> tuple[Run, Run]:
    """``documents add`` and ``materialize -j`` as the README says, each timed."""
    key = f"{j.lower()}_general_rules_2017"
    added = civicsetu("documents", "add", str(source), "-j", j, "--kind", "rules", "--title",
                      title, "--effective-from", "2017-05-01", "--key", key)  # fmt: skip
    run = materialize(j)
    print(f"documents add                 {added}", flush=True)
    print(f"materialize -j {j:<15}{run}", flush=True)
    print(f"the shared checks' validator  {validator_rss()}", flush=True)
    return added, run


def validator_rss() -> str:
    import psutil

    from civicsetu_pipelines.base.settings import Settings

    pids = [int(p.read_text()) for p in Settings.from_env().run_dir.glob("validator-*.pid")]
    try:
        rss = sum(psutil.Process(pid).memory_info().rss for pid in pids)
    except psutil.Error:
        return "gone"
    return f"{rss / 2**20:.0f} MiB (pid {', '.join(map(str, pids))})" if pids else "none"


def own_work(state: Path, source: Path, j: str) -> float:
    """The document's own parse and encoding, in this process (the model loaded first)."""
    from civicsetu_pipelines.base.settings import Settings, models_dir
    from civicsetu_pipelines.ingest import load_registry
    from civicsetu_pipelines.ingest.documents import parse_rows
    from civicsetu_pipelines.store.embedders import open_embedder
    from civicsetu_pipelines.store.embedding import embedding_config_from_env

    config = embedding_config_from_env()
    embedder = open_embedder(config, models_dir(state, Settings.from_env().models_override))
    embedder.encode(["warm-up"])  # the export and load, once per machine: in no figure
    spec = load_registry().get(f"{j.lower()}_general_rules_2017")
    started = time.perf_counter()
    pages = parse_rows(spec, source)
    parse_s = time.perf_counter() - started
    encode_s, chunks, windows = bare_encoding(state, j, embedder)
    print(f"its own parse                 {parse_s:8.2f} s  ({len(pages)} pages)")
    print(f"its own encoding              {encode_s:8.2f} s  ({chunks} chunks, {windows} windows)")
    return parse_s + encode_s


if __name__ == "__main__":
    main()

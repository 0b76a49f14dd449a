"""A question from a cold process: ``civicsetu ask`` against ``civicsetu --help``, in one run.

Usage: .venv/bin/python bench/bench_cold_ask.py [--rounds 3] [--no-golden]

On the default store (``scripts/main.sh`` or ``civicsetu materialize`` first), each round starts
fresh processes, interleaved so the machine's load falls on all of them alike:

* ``civicsetu --help`` (the floor: Python, the CLI and its light imports);
* ``civicsetu ask QUESTION`` with the ONNX runtime (the default);
* ``civicsetu ask QUESTION`` with ``CIVICSETU_EMBED_RUNTIME=torch`` (what ``ask`` ran before);
* a bare question (``python -c``, no CLI and no project code): what any answer from this store
  must do at least -- import numpy, psycopg, onnxruntime and tokenizers, open the ONNX session
  and the tokenizer of the model's export, encode the question, connect to the store and fetch
  the five nearest rows -- the least a cold ``ask`` can take here.

Wall time is measured around each process; peak RSS is the child's own ``ru_maxrss`` (``wait4``).
Prints the median of the rounds, the ratio ask / help (target <= 2.0) and the peak RSS (target
<= 350 MiB).

Then (unless ``--no-golden``), in this process, every golden question is answered twice on the
same store -- query vectors from the ONNX runtime and from torch -- and the answers compared:
status, refusal reason, answer text and cited units. Differences are listed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CLI = str(Path(sys.executable).with_name("civicsetu"))
QUESTION = "My builder has delayed possession by two years. Can I get my money back with interest?"
TARGET_RATIO = 2.0  # issue 40 (2.5 before it)
TARGET_RSS_MIB = 350


def run_cold(args: Sequence[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MiB) and stdout of one fresh process (``civicsetu ARGS``, or
    ``ARGS`` itself when it starts with the Python executable)."""
    command = list(args) if args and args[0] == sys.executable else [CLI, *args]
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    stdout = process.stdout.read().decode() if process.stdout else ""
    stderr = process.stderr.read().decode() if process.stderr else ""
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {process.returncode}: {stderr[-2000:]}")
    return wall, usage.ru_maxrss / 1024, stdout


BARE_QUESTION = """
import sys
import numpy as np, onnxruntime, psycopg
from tokenizers import Tokenizer
folder, url, question = sys.argv[1:4]
options = onnxruntime.SessionOptions()
options.intra_op_num_threads = 1
options.log_severity_level = 3
options.add_session_config_entry("session.intra_op.allow_spinning", "0")
session = onnxruntime.InferenceSession(folder + "/model.onnx", options,
                                       providers=["CPUExecutionProvider"])
tokenizer = Tokenizer.from_file(folder + "/tokenizer.json")
encoding = tokenizer.encode(question)
ids = np.array([encoding.ids], dtype=np.int64)
mask = np.array([encoding.attention_mask], dtype=np.int64)
feeds = {i.name: ids if "input_ids" in i.name else mask if "mask" in i.name
         else np.zeros_like(ids) for i in session.get_inputs()}
hidden = session.run(None, feeds)[0]
vector = (hidden * mask[..., None]).sum(1)[0] / mask.sum()
vector /= np.linalg.norm(vector)
with psycopg.connect(url) as conn:
    rows = conn.execute("SELECT chunk_id FROM legal_chunks ORDER BY embedding <=> %s::vector "
                        "LIMIT 5", ("[" + ",".join(map(str, vector)) + "]",)).fetchall()
print(len(rows))
"""


def bare_question_args() -> list[str]:
    """``python -c BARE_QUESTION`` with the configured model's export and the store's URL,
    found in a child process: imported here, the project would swell this process, and a
    forked child's peak RSS counts its parent's pages from before ``exec``."""
    find = (
        "from civicsetu_pipelines.base import Settings\n"
        "from civicsetu_pipelines.store import embedding_config_from_env, resolve_database_url\n"
        "from civicsetu_pipelines.store.onnx_model import export_dir\n"
        "s = Settings.from_env()\n"
        "print(export_dir(embedding_config_from_env(), s.models_dir))\n"
        "print(resolve_database_url(s))\n"
    )
    found = subprocess.run([sys.executable, "-c", find], capture_output=True, text=True,
                           check=True).stdout.split("\n")  # fmt: skip
    return [sys.executable, "-c", BARE_QUESTION, found[0], found[1], QUESTION]


def cold_runs(rounds: int) -> dict[str, list[tuple[float, float, str]]]:
    base = dict(os.environ, HF_HUB_OFFLINE="1")
    torch_env = dict(base, CIVICSETU_EMBED_RUNTIME="torch")
    onnx_env = dict(base, CIVICSETU_EMBED_RUNTIME="onnx")
    cases = {
        "help": (["--help"], base),
        "ask (onnx)": (["ask", QUESTION, "--json"], onnx_env),
        "ask (torch)": (["ask", QUESTION, "--json"], torch_env),
        "bare question": (bare_question_args(), base),
    }
    run_cold(["ask", QUESTION], onnx_env)  # the export exists and the page cache is warm
    results: dict[str, list[tuple[float, float, str]]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, (args, env) in cases.items():
            results[name].append(run_cold(args, env))
    return results


def answer_key(result: dict[str, Any]) -> tuple[Any, ...]:
    cited = tuple((c["jurisdiction"], c["document"], c["label"]) for c in result["citations"])
    return result["status"], result.get("refusal_reason"), result["answer"], cited


def golden_identity() -> tuple[int, list[str]]:
    """Answer every golden question with ONNX and with torch query vectors: how many, and the
    ids whose answers differ."""
    from civicsetu_pipelines.answer import QueryEmbedder, QueryEngine, settings_from_env
    from civicsetu_pipelines.base import Settings
    from civicsetu_pipelines.evaluate import load_golden
    from civicsetu_pipelines.store import (
        embedding_config_from_env,
        open_embedder,
        resolve_database_url,
    )

    settings = Settings.from_env()
    url = resolve_database_url(settings)
    config = embedding_config_from_env()
    models = settings.models_dir
    answer_settings = dataclasses.replace(settings_from_env(), llm=None)
    answers: dict[str, dict[str, tuple[Any, ...]]] = {}
    golden = load_golden()
    for runtime in ("onnx", "torch"):
        embed = QueryEmbedder(
            open_embedder(dataclasses.replace(config, runtime=runtime), models, threads=1)
        )
        with QueryEngine(url, embed, answer_settings) as engine:
            answers[runtime] = {
                q.id: answer_key(
                    engine.answer(
                        q.query, jurisdictions=[q.jurisdiction] if q.jurisdiction else None
                    )
                )
                for q in golden
            }
    differ = [qid for qid in answers["onnx"] if answers["onnx"][qid] != answers["torch"][qid]]
    return len(golden), differ


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-golden", action="store_true")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    results = cold_runs(args.rounds)
    print(f"command: .venv/bin/python bench/bench_cold_ask.py --rounds {args.rounds}")
    print(f"machine: {os.cpu_count()} cores; 1-min load average {load:.2f} at start, "
          f"{os.getloadavg()[0]:.2f} at end; question: {QUESTION!r}")  # fmt: skip
    medians = {}
    for name, runs in results.items():
        walls = [w for w, _, _ in runs]
        rss = max(r for _, r, _ in runs)
        medians[name] = statistics.median(walls)
        print(f"{name:12} wall median {medians[name]:6.2f} s  (runs "
              f"{', '.join(f'{w:.2f}' for w in walls)})  peak RSS {rss:6.0f} MiB")  # fmt: skip
    help_s = medians["help"]
    for name in ("ask (onnx)", "ask (torch)"):
        print(f"ratio {name} / help: {medians[name] / help_s:5.2f}  (target <= {TARGET_RATIO})")
    print(f"ratio bare question / help: {medians['bare question'] / help_s:5.2f}  (the least a "
          f"cold ask can take here, against the same --help)")  # fmt: skip
    onnx_rss = max(r for _, r, _ in results["ask (onnx)"])
    print(f"peak RSS ask (onnx): {onnx_rss:.0f} MiB  (target <= {TARGET_RSS_MIB})")
    asks = [results["ask (onnx)"], results["ask (torch)"]]
    keys = {answer_key(json.loads(out)) for runs in asks for *_, out in runs}
    print(f"cold ask answers across runtimes and rounds: {len(keys)} distinct (1: identical)")
    if not args.no_golden:
        started = time.perf_counter()
        total, differ = golden_identity()
        seconds = time.perf_counter() - started
        print(f"golden questions answered identically by ONNX and torch query vectors: "
              f"{total - len(differ)} of {total} ({seconds:.0f} s)")  # fmt: skip
        for qid in differ:
            print(f"  differs: {qid}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Steps per minute on Celery workers: 1 worker against 2, on the corpus and on a synthetic
registry of 36 jurisdictions (issue 17).

Usage: .venv/bin/python bench/bench_workers.py [--workers 1,2] [--synthetic 36] [--no-corpus]

For each corpus and each worker count, in a fresh state directory (its own embedded Postgres and
Redis; the packaged model extracted and exported once, outside the timing, and linked in), with
the commands an operator types:

    civicsetu workers start -n W --detach
    civicsetu materialize --executor celery --json      (timed)
    civicsetu workers stop

A step is one executed op of ``ingest_job`` (an asset; checks run inside their asset's step),
counted from Dagster's event log (STEP_SUCCESS and STEP_FAILURE of the runs). The synthetic
registry gives every jurisdiction of ``data/jurisdictions.yaml`` (in force, not merged) one
generated rules PDF of 12 rules with a text layer: many small runs, where per-step overhead
shows. ``materialize`` orchestrates as many runs at once as workers answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import yaml
from psycopg.conninfo import make_conninfo

from civicsetu_pipelines.base import DEFAULT_MIRROR, load_jurisdictions
from civicsetu_pipelines.store import embedding_config_from_env, open_embedder
from civicsetu_pipelines_tests.pdfgen import Heading, Para, Section, write_gazette_pdf

BIN = Path(sys.executable).parent
SENTENCE = ("The promoter shall furnish the particulars to the Authority in the form specified "
            "by it, within the period it fixes, and shall keep them up to date.")  # fmt: skip


def synthetic_registry(root: Path, count: int) -> tuple[Path, Path, list[str]]:
    """A mirror of generated rules PDFs and a registry naming them, one per jurisdiction."""
    codes = [j.code for j in load_jurisdictions().items if j.kind != "union" and not j.merged_into]
    codes = codes[:count]
    mirror = root / "mirror"
    mirror.mkdir(parents=True)
    entries = []
    for code in codes:
        name = f"{code.lower()}_rules.pdf"
        items = [Para(f"{code.replace('_', ' ').title()} Real Estate Rules, 2017", bold=True),
                 Heading("CHAPTER I")]  # fmt: skip
        items += [Section(str(n), f"Rule heading {n}.", [f"(1) {SENTENCE}", f"(2) {SENTENCE}"])
                  for n in range(1, 13)]  # fmt: skip
        path = write_gazette_pdf(mirror / name, items)
        entries.append({
            "key": f"{code.lower()}_rules_2017", "title": f"{code} Rules, 2017",
            "jurisdiction": code, "doc_type": "rules", "effective_date": "2017-05-01",
            "source_url": f"https://example.gov.in/{name}", "filename": name,
            "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest(),
            "language": "eng", "status": "in_force",
        })  # fmt: skip
    registry = root / "registry.yaml"
    registry.write_text(yaml.safe_dump({"schema_version": 1, "documents": entries}))
    return mirror, registry, codes


def civicsetu(env: dict[str, str], *args: str, timeout: float = 3600) -> str:
    done = subprocess.run([str(BIN / "civicsetu"), *args], env=env, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"civicsetu {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def one_run(label: str, workers: int, base_env: dict[str, str], models: Path) -> dict[str, float]:
    state = Path(tempfile.mkdtemp(prefix=f"civicsetu-bench-workers-{workers}-"))
    (state / "models").symlink_to(models, target_is_directory=True)
    env = {**base_env, "CIVICSETU_STATE_DIR": str(state)}
    try:
        civicsetu(env, "workers", "start", "-n", str(workers), "--detach", timeout=300)
        began = time.perf_counter()
        out = civicsetu(env, "materialize", "--executor", "celery", "--json")
        seconds = time.perf_counter() - began
        outcomes = json.loads(out)
        runs = [o["run_id"] for o in outcomes if o["run_id"]]
        failed = [o["jurisdiction"] for o in outcomes if o["status"] == "failed"]
        used = sorted({w for o in outcomes for w in o["workers"]})
        url = make_conninfo(civicsetu(env, "db", "url").strip(), dbname="dagster")
        with psycopg.connect(url) as conn:
            row = conn.execute(
                "SELECT count(*) FROM event_logs WHERE run_id = ANY(%s) "
                "AND dagster_event_type = ANY(%s)",
                (runs, ["STEP_SUCCESS", "STEP_FAILURE"]),
            ).fetchone()
        steps = int(row[0]) if row else 0
    finally:
        subprocess.run([str(BIN / "civicsetu"), "workers", "stop"], env=env, capture_output=True,
                       timeout=120)  # fmt: skip
        subprocess.run([str(BIN / "civicsetu"), "db", "stop"], env=env, capture_output=True,
                       timeout=120)  # fmt: skip
        shutil.rmtree(state, ignore_errors=True)
    rate = steps / (seconds / 60)
    print(f"{label:<22} {workers:>7} {len(runs):>5} {steps:>6} {seconds:>9.1f} {rate:>9.1f}  "
          f"workers used {used}; failed runs {failed or 'none'}", flush=True)  # fmt: skip
    return {"steps": steps, "seconds": seconds, "rate": rate}


def main() -> None:
    args = sys.argv[1:]
    counts = [int(n) for n in (args[args.index("--workers") + 1] if "--workers" in args
                               else "1,2").split(",")]  # fmt: skip
    synthetic = int(args[args.index("--synthetic") + 1]) if "--synthetic" in args else 36
    root = Path(tempfile.mkdtemp(prefix="civicsetu-bench-workers-"))
    models = root / "models"
    base = {**os.environ, "CIVICSETU_OFFLINE": "1", "CIVICSETU_ENABLE_SEED_STATES": "0"}
    for name in ("CIVICSETU_DATABASE_URL", "DAGSTER_HOME", "CIVICSETU_CELERY_BROKER_URL",
                 "CIVICSETU_STATE_DIR"):  # fmt: skip
        base.pop(name, None)
    # The model extracted and exported once, outside the timings, and linked into every state.
    open_embedder(embedding_config_from_env(), models).encode(["warm up"])
    print(f"cores {os.cpu_count()}; load average {os.getloadavg()[0]:.2f} at start")
    print(f"{'corpus':<22} {'workers':>7} {'runs':>5} {'steps':>6} {'seconds':>9} "
          f"{'steps/min':>9}")  # fmt: skip
    results: dict[str, dict[int, dict[str, float]]] = {}
    if "--no-corpus" not in args:
        env = {**base, "CIVICSETU_MIRROR_DIRS": str(DEFAULT_MIRROR)}
        results["corpus"] = {w: one_run("corpus (7 jur.)", w, env, models) for w in counts}
    if synthetic:
        mirror, registry, codes = synthetic_registry(root / "synthetic", synthetic)
        env = {**base, "CIVICSETU_MIRROR_DIRS": str(mirror), "CIVICSETU_REGISTRY": str(registry)}
        label = f"synthetic ({len(codes)} jur.)"
        results["synthetic"] = {w: one_run(label, w, env, models) for w in counts}
    for corpus, by_count in results.items():
        if 1 in by_count and 2 in by_count:
            print(f"{corpus}: 2 workers / 1 worker, steps per minute: "
                  f"{by_count[2]['rate'] / by_count[1]['rate']:.2f}")  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

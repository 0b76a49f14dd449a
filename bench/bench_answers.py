"""Warm latency of the extractive answer path against its floor, on the full corpus.

Usage: .venv/bin/python bench/bench_answers.py [--rounds 5]

In ONE process, on the default embedded store (``resolve_database_url(Settings.from_env())``,
which must already be materialized):

* one query embedder, built as the project builds it
  (:func:`~civicsetu_pipelines.answer.answers.default_query_embedder`: the configured model in
  the configured runtime -- ONNX by default, ``CIVICSETU_EMBED_RUNTIME=torch`` for torch -- on
  one thread, loaded once) and one
  :class:`~civicsetu_pipelines.answer.answers.QueryEngine`
  (extractive: no LLM, default reranker);
* a warm-up pass over every question (not timed);
* ``rounds`` timed passes over the fixed question set below, interleaving per question:
  ``engine.answer(...)`` (wall time, ``perf_counter``), then the FLOOR for the same question:
  ``embed_query(question)`` plus ONE bare pgvector top-k statement
  (``SELECT chunk_id FROM legal_chunks WHERE status = 'current' ORDER BY embedding <=> %s
  LIMIT 5``) on a separate connection set up once (``register_vector``, statement prepared);
  no joins, no filters, no extra round trips.

Refusals are part of the answer path and count in its latency; they are also reported apart.
Prints p50/p95/max of the answer path, p50/p95 of the floor, the ratios, per-stage p50/p95 from
``timings_ms``, and the targets (p95 <= 100 ms; p95 <= 3x the floor's p95).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from civicsetu_pipelines.answer.answers import (
    QueryEngine,
    default_query_embedder,
    settings_from_env,
)
from civicsetu_pipelines.base.settings import Settings
from civicsetu_pipelines.store.database import connect, resolve_database_url
from civicsetu_pipelines.store.embedding import embedding_config_from_env

TARGET_P95_MS = 100.0
TARGET_RATIO = 3.0
FLOOR_SQL = (
    "SELECT chunk_id FROM legal_chunks WHERE status = 'current' ORDER BY embedding <=> %s LIMIT 5"
)


@dataclass(frozen=True)
class Question:
    text: str
    kind: str  # fact | reference | penalty | cross_reference | comparison | out_of_scope
    jurisdictions: tuple[str, ...] | None = None


GUJ = ("GUJARAT",)
QUESTIONS: tuple[Question, ...] = (
    # fact lookups
    Question("What must a promoter disclose when registering a real estate project?", "fact"),
    Question(
        "Within how many days must the Authority decide an application for registration?", "fact"
    ),
    Question(
        "How much of the money collected from allottees must be deposited in a separate account?",
        "fact",
    ),
    Question(
        "Can a promoter accept more than ten percent of the cost as advance before an "
        "agreement for sale?",
        "fact",
    ),
    Question("What are the functions of the Real Estate Regulatory Authority?", "fact"),
    Question("Who can file a complaint with the Authority?", "fact"),
    Question("What is the definition of carpet area?", "fact"),
    Question(
        "Is registration required for projects where the land is less than 500 square metres?",
        "fact",
    ),
    Question("What are the duties of a real estate agent?", "fact"),
    Question("What is the fee for registration of a real estate agent?", "fact", GUJ),
    Question("How does an allottee apply to the Appellate Tribunal?", "fact", GUJ),
    Question("What interest is payable by the promoter on refund to the allottee?", "fact", GUJ),
    # explicit references
    Question("What does Section 18(2) say?", "reference"),
    Question("What does Section 4 of the Act provide?", "reference"),
    Question("rule 16 of the Gujarat rules", "reference"),
    Question("What does rule 5 of the Chandigarh general rules say?", "reference"),
    Question("Annexure A of the Gujarat rules", "reference"),
    # penalties
    Question("What is the penalty for not registering a project under section 3?", "penalty"),
    Question(
        "What penalty applies if a promoter contravenes an order of the Authority?", "penalty"
    ),
    Question(
        "What is the punishment for an allottee who fails to comply with orders of the "
        "Appellate Tribunal?",
        "penalty",
    ),
    Question("What penalty can be imposed on a real estate agent?", "penalty"),
    # cross-references and implementation
    Question("Which sections does Section 18 refer to?", "cross_reference"),
    Question("Which rules implement section 4 of the Act in Gujarat?", "cross_reference"),
    Question(
        "How do the Chandigarh rules implement section 19 on rights of allottees?",
        "cross_reference",
    ),
    # comparison
    Question("Compare the registration fees for projects in Gujarat and Chandigarh.", "comparison"),
    # out of scope (expected refusals)
    Question("What is the stamp duty on property in Goa?", "out_of_scope"),
    Question("How do I file my income tax return?", "out_of_scope"),
    Question("Who won the cricket world cup in 2011?", "out_of_scope"),
    Question("What is the best recipe for butter chicken?", "out_of_scope"),
    Question("What are the RERA rules in Kerala?", "out_of_scope"),
)


@dataclass
class Samples:
    answer_ms: list[float] = field(default_factory=list)
    floor_ms: list[float] = field(default_factory=list)
    stages: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    by_status: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: dict[str, str] = field(default_factory=dict)  # question -> last status/reason


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), ``q`` in 0..100."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def cpu_busy_s() -> float:
    """CPU seconds spent busy (not idle or iowait) on the whole machine since boot."""
    with open("/proc/stat") as handle:
        fields = [int(v) for v in handle.readline().split()[1:9]]
    ticks = os.sysconf("SC_CLK_TCK")
    return (sum(fields) - fields[3] - fields[4]) / ticks


def process_cpu_s(pids: Sequence[int]) -> float:
    """CPU seconds (user + system) used so far by processes ``pids`` (0 for any gone)."""
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def store_rows(url: str) -> int:
    try:
        with connect(url) as conn, conn.cursor() as cur:
            cur.execute(
                "SELECT count(*) FROM legal_chunks WHERE status = 'current' "
                "AND embedding IS NOT NULL"
            )
            row = cur.fetchone()
    except psycopg.errors.UndefinedTable:
        return 0
    return int(row[0]) if row else 0


def floor_query(
    conn: psycopg.Connection[Any], embed: Callable[[str], np.ndarray]
) -> Callable[[str], float]:
    """The floor for one question, in ms: query embedding + one bare top-k round trip."""
    cur = conn.cursor()

    def run(text: str) -> float:
        t0 = time.perf_counter()
        vector = np.asarray(embed(text), dtype=np.float32)
        cur.execute(FLOOR_SQL, (vector,), prepare=True)
        cur.fetchall()
        return (time.perf_counter() - t0) * 1000

    return run


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=5, help="timed passes (default 5)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    settings = Settings.from_env()
    url = resolve_database_url(settings)
    rows = store_rows(url)
    if rows == 0:
        print(
            "the store is empty (no current chunks with embeddings): run `bash scripts/main.sh` "
            "or `civicsetu materialize` first",
            file=sys.stderr,
        )
        return 1

    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    embed_query = default_query_embedder()
    embed_query("warm-up")  # loads the model
    load_s = time.perf_counter() - t0

    answer_settings = settings_from_env()
    if answer_settings.llm is not None:
        print("note: CIVICSETU_LLM_BASE_URL is set; this bench measures the extractive path only")
    answer_settings = dataclasses.replace(answer_settings, llm=None)
    engine = QueryEngine(url, embed_query, answer_settings)
    floor_conn = connect(url, autocommit=True)
    register_vector(floor_conn)
    floor = floor_query(floor_conn, embed_query)

    def ask(q: Question) -> dict[str, Any]:
        jurisdictions = list(q.jurisdictions) if q.jurisdictions else None
        return engine.answer(q.text, jurisdictions=jurisdictions)

    for q in QUESTIONS:  # warm-up, not timed
        ask(q)
        floor(q.text)

    samples = Samples()
    # The two Postgres backends serving this process (the engine's and the floor's).
    backends = [engine._conn.info.backend_pid, floor_conn.info.backend_pid]
    busy0, own0, pg0 = cpu_busy_s(), time.process_time(), process_cpu_s(backends)
    wall0 = time.perf_counter()
    for _ in range(args.rounds):
        for q in QUESTIONS:
            t = time.perf_counter()
            result = ask(q)
            elapsed = (time.perf_counter() - t) * 1000
            samples.answer_ms.append(elapsed)
            samples.floor_ms.append(floor(q.text))
            status = str(result["status"])
            samples.by_status[status].append(elapsed)
            reason = result.get("refusal_reason")
            samples.statuses[q.text] = f"{status} ({reason})" if reason else status
            for stage, ms in result["timings_ms"].items():
                samples.stages[stage].append(float(ms))
    wall = time.perf_counter() - wall0
    own = time.process_time() - own0
    backend = process_cpu_s(backends) - pg0
    others = max(0.0, cpu_busy_s() - busy0 - own - backend)
    engine.close()
    floor_conn.close()

    n = len(samples.answer_ms)
    a50, a95 = percentile(samples.answer_ms, 50), percentile(samples.answer_ms, 95)
    f50, f95 = percentile(samples.floor_ms, 50), percentile(samples.floor_ms, 95)
    runtime = embedding_config_from_env().runtime
    print(f"command: .venv/bin/python bench/bench_answers.py --rounds {args.rounds}")
    print(f"machine: {os.cpu_count()} cores; {runtime} runtime, 1 thread; "
          f"model loaded once in {load_s:.2f} s; "
          f"1-min load average {load_before:.2f} at start, "
          f"{os.getloadavg()[0]:.2f} at end")  # fmt: skip
    print(f"timed phase {wall:.1f} s, cores busy on average: this process {own / wall:.2f}, its "
          f"2 Postgres backends {backend / wall:.2f}, everything else {others / wall:.2f} "
          f"(of {os.cpu_count()})")  # fmt: skip
    print(f"store: {rows} current chunks; {len(QUESTIONS)} questions x {args.rounds} rounds "
          f"= {n} samples (after 1 untimed warm-up pass)")  # fmt: skip
    print()
    print(f"{'':34}{'p50':>9}{'p95':>9}{'max':>9}  ms")
    print(f"{'answer path (engine.answer)':34}{a50:9.1f}{a95:9.1f}"
          f"{max(samples.answer_ms):9.1f}")  # fmt: skip
    print(f"{'floor (embed + bare top-5)':34}{f50:9.1f}{f95:9.1f}{max(samples.floor_ms):9.1f}")
    for status in sorted(samples.by_status):
        values = samples.by_status[status]
        label = f"  {status} ({len(values)} samples)"
        print(f"{label:34}{percentile(values, 50):9.1f}{percentile(values, 95):9.1f}"
              f"{max(values):9.1f}")  # fmt: skip
    print()
    print("per stage (timings_ms; a stage counts only in the samples that reach it)")
    print(f"{'stage':34}{'p50':>9}{'p95':>9}{'n':>6}")
    for stage in sorted(samples.stages, key=lambda s: (s == "total", s)):
        values = samples.stages[stage]
        print(f"{stage:34}{percentile(values, 50):9.2f}{percentile(values, 95):9.2f}"
              f"{len(values):6d}")  # fmt: skip
    print()
    statuses: dict[str, int] = defaultdict(int)
    for status in samples.statuses.values():
        statuses[status] += 1
    print("questions by outcome (last round): "
          + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())))  # fmt: skip
    unexpected = [
        q.text
        for q in QUESTIONS
        if (q.kind == "out_of_scope") != samples.statuses[q.text].startswith("refused")
    ]
    for text in unexpected:
        print(f"  note: {samples.statuses[text]}: {text}")
    print()
    ratio95, ratio50 = a95 / f95, a50 / f50
    print(f"ratio p95(answer) / p95(floor)    {ratio95:6.2f}")
    print(f"ratio p50(answer) / p50(floor)    {ratio50:6.2f}")
    print(f"target p95 <= {TARGET_P95_MS:.0f} ms               "
          f"{'PASS' if a95 <= TARGET_P95_MS else 'FAIL'}  ({a95:.1f} ms)")  # fmt: skip
    print(f"target p95 ratio <= {TARGET_RATIO:.0f}             "
          f"{'PASS' if ratio95 <= TARGET_RATIO else 'FAIL'}  ({ratio95:.2f})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

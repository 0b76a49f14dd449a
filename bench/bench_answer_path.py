"""The answer path followed call by call: which modules a question enters, and how often it
comes back to one it had left.

Usage: .venv/bin/python bench/bench_answer_path.py ["QUESTION" ...]

A question of its own warms the engine (model, connections, caches), then each question is
answered under ``answer.stages.follow`` (a module entry is a call from one module of the answer
package into another, data accessors and the shared leaf modules aside; a *return* is an entry
into a module the question had already left). Prints, per question, the entries in order, the
stages and the returns per module. Default questions: a buyer's question the engine answers, one
it refuses for want of evidence, one naming a section, one comparing two states.
"""

from __future__ import annotations

import sys

from civicsetu_pipelines.answer.answers import answer
from civicsetu_pipelines.answer.stages import follow, returns, stage_order

WARM = "How is a real estate agent registered?"
QUESTIONS = (
    "Where must the money I pay the builder be kept?",
    "What is the best recipe for mango pickle?",
    "What does Section 18 of the Act say about refunds?",
    "Compare the refund rules of Gujarat and Maharashtra",
)


def main() -> int:
    print("command: .venv/bin/python bench/bench_answer_path.py")
    answer(WARM)
    for question in sys.argv[1:] or QUESTIONS:
        entries = follow(lambda q=question: answer(q))
        back = returns(entries)
        print(f"{question!r}\n  {len(entries)} entries into {len(set(entries))} modules, "
              f"{sum(back.values())} returns {dict(sorted(back.items()))}")  # fmt: skip
        print(f"  stages: {' -> '.join(stage_order(entries))}\n  modules: {' -> '.join(entries)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The golden set's dev/test split, grouped by governing provision (issue 47).

A rule or weight chosen on the dev half must meet the test half's answers unseen. Split by
question (a hash of each id, as before), 154 of the 241 answerable test questions shared a
governing provision with a dev question and 143 had every governing provision already in dev.
Here every question of one provision goes to one side: a question's group is its first
governing provision (what governs it most directly; its first expected unit when it names
none; the question alone when it expects a refusal). A question governed by several provisions
can still meet one of its others on the other side: the groups are placed one by one, largest
first, each on the side where fewer of its questions' provisions already lie, as long as the
halves and the strata (jurisdiction, question type, phrasing) stay near even. The figures of
what is left (:func:`split_overlap`) are printed by ``python -m
civicsetu_pipelines.evaluate.splits`` and recorded in BENCHMARKS.md.

Connected components of the provisions (a question joining all of its provisions) were tried
first: the packaged set has one component of 184 questions, which no split can balance.

A question that has a half keeps it (the test half never moves to dev once dev has been tuned
on); a new question joins the side its group is on, and only a new group is placed. Pure
domain code, deterministic: the same questions give the same halves in any order.
"""

from __future__ import annotations

import hashlib
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from civicsetu_pipelines.evaluate.scoring import (
    GOLDEN_JSONL,
    SPLITS,
    GoldenQuestion,
    load_golden,
    write_golden,
)
from civicsetu_pipelines.ingest import whole_form

# Each provision of a group already governing a question on the other side costs half a
# question of imbalance: overlap is avoided unless the halves or a stratum would drift by more.
# (Weights 0.5-5 were compared on the packaged set, by the overlap and strata figures alone, no
# score: 0.5 left the least overlap, 41 of 243, at the same largest stratum gap, 8.)
CONFLICT_WEIGHT = 0.5


def provision_group(q: GoldenQuestion) -> str:
    """The group a question is split with: its first governing provision (a form's paragraph:
    the form: the clauses of one model agreement read alike, so the whole agreement sits on one
    side), else its first expected unit, else the question itself (a refusal)."""
    if q.governing:
        return whole_form(q.governing[0])
    if q.expected_sections:
        return whole_form(q.expected_sections[0])
    return f"question:{q.id}"


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class _Halves:
    """What is placed so far: questions per half and per stratum, and where each provision
    governs a question."""

    total: Counter[str]
    strata: dict[tuple[str, str, str], Counter[str]]
    provisions: dict[str, Counter[str]]

    def add(self, q: GoldenQuestion, side: str) -> None:
        self.total[side] += 1
        self.strata.setdefault(q.stratum, Counter())[side] += 1
        for g in q.governing:
            self.provisions.setdefault(g, Counter())[side] += 1

    def cost(self, group: Sequence[GoldenQuestion], side: str) -> float:
        other = SPLITS[1 - SPLITS.index(side)]
        conflicts = sum(
            self.provisions.get(g, Counter())[other] > 0 for q in group for g in q.governing
        )
        drift = abs(self.total[side] + len(group) - self.total[other]) - abs(
            self.total[side] - self.total[other]
        )
        for stratum, n in Counter(q.stratum for q in group).items():
            halves = self.strata.get(stratum, Counter())
            drift += abs(halves[side] + n - halves[other]) - abs(halves[side] - halves[other])
        return CONFLICT_WEIGHT * conflicts + drift


def assign_splits(questions: Sequence[GoldenQuestion]) -> list[GoldenQuestion]:
    """Every question with a dev/test split, grouped by :func:`provision_group` and balanced
    by :attr:`GoldenQuestion.stratum` (see the module docstring). Questions that have a split
    keep it; a new one joins its group's side (the side most of the group is on)."""
    groups: dict[str, list[GoldenQuestion]] = {}
    for q in questions:
        groups.setdefault(provision_group(q), []).append(q)
    halves = _Halves(Counter(), {}, {})
    for q in questions:
        if q.split is not None:
            halves.add(q, q.split)
    assigned: dict[str, str] = {}
    open_groups: list[tuple[str, list[GoldenQuestion]]] = []
    for key, members in groups.items():
        sides: Counter[str] = Counter(q.split for q in members if q.split is not None)
        new = [q for q in members if q.split is None]
        if not new:
            continue
        if sides:
            side = max(SPLITS, key=lambda s: (sides[s], -SPLITS.index(s)))
            for q in new:
                assigned[q.id] = side
                halves.add(q, side)
        else:
            open_groups.append((key, new))
    open_groups.sort(key=lambda item: (-len(item[1]), _hash(item[0])))
    for key, members in open_groups:
        members.sort(key=lambda q: _hash(q.id))
        order = SPLITS if int(_hash(key)[:8], 16) % 2 == 0 else SPLITS[::-1]
        side = min(order, key=lambda s: (halves.cost(members, s), halves.total[s]))
        for q in members:
            assigned[q.id] = side
            halves.add(q, side)
    return [q.model_copy(update={"split": assigned[q.id]}) if q.id in assigned else q
            for q in questions]  # fmt: skip


@dataclass(frozen=True)
class SplitOverlap:
    """How unseen the test half is: its answerable questions, those sharing a governing
    provision with a dev question, and those whose every governing provision a dev question
    has; the halves' sizes and the largest stratum imbalance."""

    test_answerable: int
    share_with_dev: int
    all_in_dev: int
    dev: int
    test: int
    worst_stratum_gap: int

    def __str__(self) -> str:
        return (
            f"dev {self.dev}, test {self.test}; of {self.test_answerable} answerable test "
            f"questions, {self.share_with_dev} share a governing provision with dev and "
            f"{self.all_in_dev} have every one in dev; largest stratum gap "
            f"{self.worst_stratum_gap}"
        )


def split_overlap(questions: Sequence[GoldenQuestion]) -> SplitOverlap:
    """The figures of :class:`SplitOverlap` for split questions."""
    dev = {g for q in questions if q.split == "dev" for g in q.governing}
    test = [q for q in questions if q.split == "test" and q.governing]
    strata = Counter((q.stratum, q.split) for q in questions)
    gap = max(
        (abs(strata[(s, "dev")] - strata[(s, "test")]) for s in {q.stratum for q in questions}),
        default=0,
    )
    halves = Counter(q.split for q in questions)
    return SplitOverlap(
        test_answerable=len(test),
        share_with_dev=sum(any(g in dev for g in q.governing) for q in test),
        all_in_dev=sum(all(g in dev for g in q.governing) for q in test),
        dev=halves["dev"],
        test=halves["test"],
        worst_stratum_gap=gap,
    )


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m civicsetu_pipelines.evaluate.splits [FILE] [--resplit]``: print how unseen
    the file's test half is; with ``--resplit``, split every question again by provision and
    write the file (done once for the packaged set, issue 47: its halves were by question)."""
    args = list(sys.argv[1:] if argv is None else argv)
    resplit = "--resplit" in args
    paths = [a for a in args if a != "--resplit"]
    path = Path(paths[0]) if paths else GOLDEN_JSONL
    questions = load_golden(path)
    print(f"{path}: {split_overlap(questions)}")
    if resplit:
        again = assign_splits([q.model_copy(update={"split": None}) for q in questions])
        write_golden(path, again)
        print(f"{path}: split again by provision: {split_overlap(again)}")


if __name__ == "__main__":
    main()

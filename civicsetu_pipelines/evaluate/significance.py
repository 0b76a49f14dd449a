"""Telling a change from noise: bootstrap intervals over questions and paired tests.

Pure domain code (numpy only). With 85 questions a half, one question moving one place moves
MRR by about 0.012, and a 95% interval on MRR is about +-0.07: a point figure cannot say whether
a ranking is better. :func:`bootstrap_ci` is the 95% percentile interval of a mean over
questions (resampled with replacement); :func:`paired_test` compares two runs on the *same*
questions, question by question: the mean difference, its bootstrap interval and the two-sided
p-value of Fisher's randomization test (each question's difference flipped in sign at random,
as ranx's ``compare`` does). Every draw comes from a seeded generator, so the same scores give
the same interval and p-value on any machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SEED = 20161  # the Act's year and number, for a fixed, arbitrary stream
BOOTSTRAP_TRIALS = 2000
RANDOMIZATION_TRIALS = 10000
ALPHA = 0.05  # a difference is a change when p < ALPHA


def _values(values: Sequence[float | None]) -> np.ndarray:
    return np.asarray([float(v) for v in values if v is not None], dtype=float)


def bootstrap_ci(
    values: Sequence[float | None], *, trials: int = BOOTSTRAP_TRIALS, seed: int = SEED
) -> tuple[float, float] | None:
    """The 95% percentile bootstrap interval of the mean of ``values`` (None ones left out);
    None when there are none. Rounded to 4 places."""
    x = _values(values)
    if x.size == 0:
        return None
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(trials, x.size))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return (round(float(low), 4), round(float(high), 4))


@dataclass(frozen=True)
class PairedTest:
    """Run ``b`` against run ``a`` on the same questions: the mean of ``b - a``, its 95%
    bootstrap interval, the two-sided randomization p-value and how many questions."""

    difference: float
    ci95: tuple[float, float]
    p_value: float
    questions: int

    @property
    def significant(self) -> bool:
        """Whether the difference is outside the noise (p < ALPHA)."""
        return self.p_value < ALPHA

    def __str__(self) -> str:
        low, high = self.ci95
        return (f"{self.difference:+.3f} (95% CI {low:+.3f} to {high:+.3f}, "
                f"p = {self.p_value:.3f}, {self.questions} questions)")  # fmt: skip

    def as_dict(self) -> dict[str, object]:
        return {"difference": self.difference, "ci95": list(self.ci95),
                "p_value": self.p_value, "questions": self.questions}  # fmt: skip


def paired_test(
    a: Sequence[float],
    b: Sequence[float],
    *,
    trials: int = RANDOMIZATION_TRIALS,
    seed: int = SEED,
) -> PairedTest:
    """``b`` against ``a``, question by question (the two sequences hold one score per question,
    in the same order): Fisher's randomization test on the mean difference (two-sided, the
    observed assignment counted among the trials) and a bootstrap interval of it."""
    if len(a) != len(b):
        raise ValueError(f"paired scores differ in length: {len(a)} and {len(b)}")
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    if d.size == 0:
        return PairedTest(0.0, (0.0, 0.0), 1.0, 0)
    observed = abs(d.mean())
    rng = np.random.default_rng(seed)
    signs = rng.choice((-1.0, 1.0), size=(trials, d.size))
    at_least = int((np.abs((signs * d).mean(axis=1)) >= observed - 1e-12).sum())
    p = (at_least + 1) / (trials + 1)
    ci = bootstrap_ci(list(d), seed=seed) or (0.0, 0.0)
    return PairedTest(round(float(d.mean()), 4), ci, round(p, 4), int(d.size))
